"""Workloads (and test-only backends) named by reference: `path/to/file.py:NAME` or `package.module:NAME`.

A file is loaded as a module of its own (never added to irlens or its registries), once per
process; the compare worker re-resolves the same reference in its own process (and is handed
the parent's weights and inputs, so weights drawn at random when the file loads agree).
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
from types import ModuleType
from typing import Any

from irlens.workload import WORKLOADS, Workload, get_workload

_FILE_MODULES: dict[str, ModuleType] = {}  # absolute path -> loaded module


class BadReference(ValueError):
    """A reference that does not name a Workload; the message says which and why."""


def is_reference(name: str) -> bool:
    return ":" in name


def load_object(ref: str) -> Any:
    """The object a reference names."""
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr:
        raise BadReference(f"{ref!r} is not a reference of the form path/to/file.py:NAME or package.module:NAME")
    module = _load_file(target) if _is_path(target) else _import(target)
    try:
        return getattr(module, attr)
    except AttributeError:
        found = [k for k, v in vars(module).items() if isinstance(v, Workload)]
        hint = f"; Workloads it defines: {', '.join(found)}" if found else "; it defines no Workload"
        raise BadReference(f"{target} has no name {attr!r}{hint}") from None


def load_workload_ref(ref: str) -> Workload:
    """The Workload a reference names; BadReference says why not (missing file, missing name, not a Workload)."""
    obj = load_object(ref)
    if not isinstance(obj, Workload):
        raise BadReference(f"{ref} is a {type(obj).__name__}, not an irlens Workload "
                           f"(declare one with irlens.Workload.from_module(...))")
    return obj


def resolve_workload(name_or_ref: str) -> Workload:
    """A built-in workload by name, or a user's by reference."""
    return load_workload_ref(name_or_ref) if is_reference(name_or_ref) else get_workload(name_or_ref)


def absolute_reference(name_or_ref: str) -> str:
    """The same reference, resolvable from any working directory."""
    if not is_reference(name_or_ref):
        return name_or_ref
    target, _, attr = name_or_ref.rpartition(":")
    return f"{os.path.abspath(target)}:{attr}" if _is_path(target) else name_or_ref


def reference_of(workload: Workload) -> str | None:
    """A reference another process can resolve to `workload`, or None (e.g. one built in a function).

    Built-ins are found by name; others as a module-level name of a loaded file or module
    (a script run as __main__ is named by its file).
    """
    if workload.name in WORKLOADS and WORKLOADS.get(workload.name) is workload:
        return workload.name
    for path, module in _FILE_MODULES.items():
        for attr, value in vars(module).items():
            if value is workload:
                return f"{path}:{attr}"
    for module in list(sys.modules.values()):
        for attr, value in list(getattr(module, "__dict__", {}).items()):
            if value is workload:
                module_name = getattr(module, "__name__", None)
                if module_name == "__main__":
                    file = getattr(module, "__file__", None)
                    return f"{os.path.abspath(file)}:{attr}" if file else None
                return f"{module_name}:{attr}" if module_name else None
    return None


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
    except Exception as e:
        del sys.modules[name]
        raise BadReference(f"{path} failed to load: {type(e).__name__}: {e}") from e
    _FILE_MODULES[path] = module
    return module


def _import(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise BadReference(f"cannot import module {module!r}: {e}") from e
