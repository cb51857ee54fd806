"""The backend `irlens repro` runs, and its path: how a standalone file runs it, and how the reducer
runs a candidate graph (`irlens.backends.repro_path.ReproPath`, the backend's attribute
`repro_path`: each backend declares its own, a built-in in its folder as one named by reference)."""
from __future__ import annotations

from irlens.errors import UsageError


def find_backend(name_or_ref: str):
    """(the backend, its path): a registered backend by name, or one by reference
    (`irlens.backends.get_backend`: UnknownName lists the choices, BadReference says why not).
    A backend with no path is bad input too."""
    from irlens.backends import BACKENDS, get_backend

    backend = get_backend(name_or_ref)
    if backend.repro_path is None:
        runs = ", ".join(b.name for b in BACKENDS.values() if b.repro_path is not None)
        raise UsageError(f"irlens repro has no path for backend {backend.name!r} (it runs {runs}); "
                         f"a backend of your own gives one as its attribute `repro_path` "
                         f"(irlens.backends.repro_path.ReproPath)")
    return backend, backend.repro_path
