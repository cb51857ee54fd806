"""User code: objects defined outside irlens, named by reference, `path/to/file.py:NAME` or
`package.module:NAME`: a user's own workload (or backend) that irlens finds without being edited.

A name with a `:` is a reference, any other name a registered entry. A file is loaded as a
module of its own (never added to irlens or its registries), once per process; a worker
process resolves the same reference in its own process (and is handed the parent's weights
and inputs, so weights drawn at random when the file loads agree). Every failure is a
`BadReference` (a UsageError: exit 2) saying which reference and why.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any, TypeVar

from irlens.errors import UsageError
from irlens.core.registry import Registry, UnknownName
from irlens.workloads.workload import WORKLOADS, Workload
from irlens.wording import article

T = TypeVar("T")

_FILE_MODULES: dict[str, ModuleType] = {}  # absolute path -> loaded module


class BadReference(UsageError):
    """A reference that does not name what it should; the message says which and why."""


def is_reference(name: str) -> bool:
    return ":" in name


def load_object(ref: str, kind: type = Workload) -> Any:
    """The object a reference names (a missing name's message lists the file's objects of `kind`)."""
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr:
        raise BadReference(f"{ref!r} is not a reference of the form path/to/file.py:NAME or package.module:NAME")
    _import_torchvision_first()
    module = _load_file(target) if _is_path(target) else _import(target)
    try:
        return getattr(module, attr)
    except AttributeError:
        found = [k for k, v in vars(module).items() if isinstance(v, kind)]
        hint = f"; {kind.__name__}s it defines: {', '.join(found)}" if found else f"; it defines no {kind.__name__}"
        raise BadReference(f"{target} has no name {attr!r}{hint}") from None


def resolve(name_or_ref: str, registry: Registry[T], kind: type, declare: str) -> T:
    """A registered entry by name, or by reference an object of type `kind` (`declare` says how
    to make one); raises UnknownName or BadReference."""
    if not is_reference(name_or_ref):
        if name_or_ref not in registry:
            raise UnknownName(registry.kind, name_or_ref, registry.names(),
                              " (or give your own as path/to/file.py:NAME)")
        return registry.get(name_or_ref)
    obj = load_object(name_or_ref, kind)
    if not isinstance(obj, kind):
        raise BadReference(f"{name_or_ref} is {article(type(obj).__name__)}, not an irlens {kind.__name__} ({declare})")
    return obj


def load_workload_ref(ref: str) -> Workload:
    """The Workload a reference names; BadReference says why not (missing file, missing name, not a Workload)."""
    return resolve(ref, WORKLOADS, Workload, "declare one with irlens.Workload.from_module(...)")


GRAPHNET = "graphnet:"  # `graphnet:PATH`, a GraphNet sample folder (irlens.workloads.graphnet): its path made absolute


def absolute_reference(name_or_ref: str) -> str:
    """The same reference, resolvable from any working directory."""
    if not is_reference(name_or_ref):
        return name_or_ref
    if name_or_ref.startswith(GRAPHNET):
        return GRAPHNET + os.path.abspath(name_or_ref.removeprefix(GRAPHNET))
    target, _, attr = name_or_ref.rpartition(":")
    return f"{os.path.abspath(target)}:{attr}" if _is_path(target) else name_or_ref


def reference_of(obj: Any, registry: Registry | None = None) -> str | None:
    """A reference another process can resolve to `obj`, or None (e.g. one built in a function).

    Registered entries are found by name; others as a module-level name of a loaded file or
    module (a script run as __main__ is named by its file).
    """
    name = getattr(obj, "name", None)
    if registry is not None and name in registry and registry.get(name) is obj:
        return name
    for path, module in _FILE_MODULES.items():
        for attr, value in vars(module).items():
            if value is obj:
                return f"{path}:{attr}"
    for module in list(sys.modules.values()):
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is obj:
                module_name = getattr(module, "__name__", None)
                if module_name == "__main__":
                    file = getattr(module, "__file__", None)
                    return f"{os.path.abspath(file)}:{attr}" if file else None
                return f"{module_name}:{attr}" if module_name else None
    return None


def _import_torchvision_first() -> None:
    """A user's file may `import timm` (which imports torchvision) where the installed torchvision
    cannot load its extension beside this torch: irlens's import of it gets through there
    (irlens._compat.import_torchvision), and the file's import then finds it loaded."""
    if "torchvision" not in sys.modules and importlib.util.find_spec("torchvision") is not None:
        from irlens._compat import import_torchvision

        import_torchvision()


def _is_path(target: str) -> bool:
    return target.endswith(".py") or os.sep in target


def _load_file(path: str) -> ModuleType:
    path = os.path.abspath(path)
    if path in _FILE_MODULES:
        return _FILE_MODULES[path]
    if not os.path.isfile(path):
        raise BadReference(f"no such file: {path}")
    stem = os.path.splitext(os.path.basename(path))[0]
    name = f"irlens_user_{stem}_{hashlib.sha1(path.encode()).hexdigest()[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as e:
        del sys.modules[name]
        raise _failed_to_load(path, e) from e
    _FILE_MODULES[path] = module
    return module


def _import(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name is not None and (module == e.name or module.startswith(e.name + ".")):
            raise BadReference(f"cannot import module {module!r}: {e}") from e
        raise _failed_to_load(f"module {module!r}", e) from e  # it imports a module that is not there
    except (Exception, SystemExit) as e:
        raise _failed_to_load(f"module {module!r}", e) from e


def _failed_to_load(what: str, e: BaseException) -> BadReference:
    """A file or module that raised, or exited (`sys.exit`, 0 included), while it loaded: its
    loading ends, not irlens."""
    if isinstance(e, SystemExit):
        return BadReference(f"{what} failed to load: SystemExit: {e.code} (it calls sys.exit while it loads)")
    return BadReference(f"{what} failed to load: {type(e).__name__}: {e}")
