"""Built-in workloads: importing a module registers its workloads (one line per file)."""
from irlens.models import gelu  # noqa: F401
from irlens.models import tinyhead  # noqa: F401
from irlens.models import attention  # noqa: F401
from irlens.models import block  # noqa: F401
from irlens.models import minigpt  # noqa: F401
# the corpus of ordinary model code (tagged "corpus"; tests/test_corpus.py)
from irlens.models import llama  # noqa: F401
from irlens.models import lm  # noqa: F401
from irlens.models import masked_attention  # noqa: F401
from irlens.models import moe  # noqa: F401
from irlens.models import mamba  # noqa: F401
from irlens.models import prenorm  # noqa: F401
