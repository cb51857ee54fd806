"""The package's shape holds: no import circle (lazy imports included) between modules or between
subpackages, no module importing another's private names, and no submodule that would hide an
API function of the same name."""
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


def import_edges(known: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the irlens modules it imports, anywhere in the file (late imports included)."""
    edges = {m: set() for m in known}
    for m, path in known.items():
        for module, name in imports(path, known):
            target = f"{module}.{name}" if f"{module}.{name}" in known else module_of(module, known)
            if target != m:
                edges[m].add(target)
    return edges


def reach(edges: dict[str, set[str]], start: str) -> set[str]:
    """The nodes `start` imports, directly or through others."""
    seen, todo = set(), list(edges.get(start, ()))
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += edges.get(m, ())
    return seen


def on_a_circle(edges: dict[str, set[str]]) -> list[str]:
    """The nodes that reach themselves."""
    return [m for m in edges if m in reach(edges, m)]


def package_of(module: str) -> str:
    """irlens.frontends.dynamo.fx -> irlens.frontends; a top-level module is a package of its own."""
    return ".".join(module.split(".")[:2])


def test_no_import_circle():
    assert on_a_circle(import_edges(modules())) == [], "modules on an import circle"


def test_no_package_circle():
    """irlens' subpackages (frontends, backends, matrix, reporting, ...; each top-level module
    alone) import one another one way only: no tie hides behind a late import."""
    why: dict[tuple[str, str], list[str]] = {}
    for m, targets in import_edges(modules()).items():
        for t in targets:
            if package_of(m) != package_of(t):
                why.setdefault((package_of(m), package_of(t)), []).append(f"{m} -> {t}")
    edges: dict[str, set[str]] = {}
    for a, b in why:
        edges.setdefault(a, set()).add(b)
    ties = [line for (a, b), lines in sorted(why.items()) if a in reach(edges, b) for line in lines]
    assert on_a_circle(edges) == [], f"imports that close a circle of packages: {ties}"


def test_no_private_names_across_modules():
    known = modules()
    private = [f"{m}: from {module} import {name}" for m, path in known.items()
               for module, name in imports(path, known)
               if name.startswith("_") and not name.startswith("__") and module != m]
    assert private == []


def test_no_submodule_hides_an_api_function():
    from irlens import api

    assert not {m.split(".")[1] for m in modules() if "." in m} & set(api.__all__)


def test_no_code_outside_the_frontends_names_one():
    """Outside irlens/frontends/ a frontend is reached through its hooks or a name it was given
    (a plan's, a backend's `via`), never by a name written in the code: `get_frontend("dynamo")`."""
    named = []
    for m, path in modules().items():
        if m.startswith("irlens.frontends"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                continue
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "get_frontend") or (
                    isinstance(func, ast.Attribute) and func.attr == "get" and getattr(func.value, "id", "") == "FRONTENDS"):
                named.append(f"{m}:{node.lineno}: {ast.unparse(node)}")
    assert named == []
