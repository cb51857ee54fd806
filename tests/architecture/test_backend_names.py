"""A backend is added in its own folder and one line of irlens/names.py: `irlens repro` asks a backend
what it needs (its `repro_path`, `kernel_source_suffix`, `lower`), and never tells one backend from
another by a name written in irlens/repro/."""
from __future__ import annotations

import ast

from irlens import names
from tests.support.import_graph import PACKAGE, modules

# where irlens asks a backend instead of naming it
ASKING = ("irlens.repro",)


def backend_names() -> set[str]:
    """The built-in backends' names and their stacks' folders (irlens/backends/<stack>/)."""
    stacks = {p.name for p in (PACKAGE / "backends").iterdir() if (p / "__init__.py").is_file()}
    return set(names.BACKENDS) | stacks


def compared_names(source: str, named: set[str]) -> list[str]:
    """`line: comparison` for each comparison (==, !=, in, not in, ...) with one of `named` as a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value in named for side in (node.left, *node.comparators)
                for c in ast.walk(side)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_repro_compares_no_backend_name():
    named = backend_names()
    assert {"eager", "inductor", "nvfuser", "xla", "thunder"} <= named
    compared = [f"{m}:{line}" for m, path in sorted(modules().items())
                if any(m == p or m.startswith(p + ".") for p in ASKING)
                for line in compared_names(path.read_text(), named)]
    assert compared == []


def test_the_rule_finds_a_name_in_any_comparison():
    source = ('if backend == "xla": pass\n'
              'native = path.lowering != "nvfuser"\n'
              'slow = name in ("inductor", "other")\n'
              'ok = path.program == "fusions" and kind == "jax"\n')
    assert compared_names(source, {"xla", "nvfuser", "inductor"}) == [
        "1: backend == 'xla'", "2: path.lowering != 'nvfuser'", "3: name in ('inductor', 'other')"]
