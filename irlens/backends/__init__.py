"""Backends: importing a module registers it (one line per file)."""
from irlens.backends.base import BACKENDS, Backend, get_backend  # noqa: F401
from irlens.backends import eager  # noqa: F401
