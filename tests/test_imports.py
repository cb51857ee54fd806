"""The package's shape holds: no import circle (lazy imports included), no module importing
another's private names, and no submodule that would hide an API function of the same name."""
from __future__ import annotations

import ast
from pathlib import Path

import irlens

PACKAGE = Path(irlens.__file__).resolve().parent


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(path: Path, known: dict[str, Path]) -> list[tuple[str, str]]:
    """(module, name) for each `import irlens...` and `from irlens... import name`, anywhere in the file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.split(".")[0] == "irlens"]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "irlens":
            out += [(node.module, a.name) for a in node.names]
    return out


def module_of(name: str, known: dict[str, Path]) -> str:
    while name not in known:
        name = name.rpartition(".")[0]
    return name


def test_no_import_circle():
    known = modules()
    edges = {m: set() for m in known}
    for m, path in known.items():
        for module, name in imports(path, known):
            target = f"{module}.{name}" if f"{module}.{name}" in known else module_of(module, known)
            if target != m:
                edges[m].add(target)
    # every module's reach; a module that reaches itself is on a circle
    circles = []
    for start in known:
        seen, todo = set(), list(edges[start])
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                todo += edges[m]
        if start in seen:
            circles.append(start)
    assert circles == [], f"modules on an import circle: {circles}"


def test_no_private_names_across_modules():
    known = modules()
    private = [f"{m}: from {module} import {name}" for m, path in known.items()
               for module, name in imports(path, known)
               if name.startswith("_") and not name.startswith("__") and module != m]
    assert private == []


def test_no_submodule_hides_an_api_function():
    from irlens import api

    assert not {m.split(".")[1] for m in modules() if "." in m} & set(api.__all__)
