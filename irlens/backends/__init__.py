"""Backends: importing a module registers it (one line per file)."""
from irlens.backends.base import BACKENDS, Backend, get_backend  # noqa: F401
from irlens.backends import eager  # noqa: F401
from irlens.backends import inductor  # noqa: F401
from irlens.backends import thunder  # noqa: F401
from irlens.backends import xla  # noqa: F401
