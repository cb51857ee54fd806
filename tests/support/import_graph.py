"""The irlens package's import graph, read from its source: its modules, and the irlens modules each
one imports (late imports included), for the import-layer checks and the cell spec's own."""
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
