"""Backends: importing a module registers it; irlens.names.BACKENDS names each built-in and its
module (one line per backend, read without torch by the command line). `get_backend` finds a
registered backend by name, or one defined outside irlens by reference (`path/to/file.py:NAME`,
a `Backend` instance: e.g. a test's deliberately broken backend)."""
from irlens import names
from irlens.backends.base import BACKENDS, Backend
from irlens.workloads.user_code import resolve

names.import_declared(names.BACKENDS)


def get_backend(name_or_ref: str) -> Backend:
    """UnknownName lists the registered backends; BadReference says why a reference names none."""
    return resolve(name_or_ref, BACKENDS, Backend, "an instance of a subclass of irlens.backends.base.Backend")
