"""Built-in workloads: importing a module registers its workloads (one line per file)."""
from irlens.models import gelu  # noqa: F401
