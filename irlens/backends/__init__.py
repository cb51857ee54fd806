"""Backends: importing a module registers it (one line per file). `get_backend` finds a
registered backend by name, or one defined outside irlens by reference (`path/to/file.py:NAME`,
a `Backend` instance: e.g. a test's deliberately broken backend)."""
from irlens.backends.base import BACKENDS, Backend
from irlens.user_code import resolve
from irlens.backends import eager  # noqa: F401
from irlens.backends import inductor  # noqa: F401
from irlens.backends import thunder  # noqa: F401
from irlens.backends import xla  # noqa: F401


def get_backend(name_or_ref: str) -> Backend:
    """UnknownName lists the registered backends; BadReference says why a reference names none."""
    return resolve(name_or_ref, BACKENDS, Backend, "an instance of a subclass of irlens.backends.base.Backend")
