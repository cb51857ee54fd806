"""Built-in workloads: importing a module registers its workloads (one line per file)."""
from irlens.models import gelu  # noqa: F401
from irlens.models import tinyhead  # noqa: F401
from irlens.models import attention  # noqa: F401
from irlens.models import block  # noqa: F401
from irlens.models import minigpt  # noqa: F401
