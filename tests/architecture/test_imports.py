"""The package's shape holds: no import circle (lazy imports included) between modules or between
subpackages, no module importing another's private names, no submodule that would hide an
API function of the same name, and the folders' rules: each folder below the orchestration imports
only the folders its allow-list names (MAY_IMPORT: the core nothing but the floor, the runtime the
core and the caches, the backends no runtime and no orchestration, ...), the floor imports nothing of
irlens, and the parallel path's generic parallelisms import no model."""
from __future__ import annotations

import ast

import pytest

from tests.support.import_graph import import_edges, imports, modules, reach


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


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# Top-level modules that import nothing of irlens: any folder may import them.
FLOOR = ("irlens.errors", "irlens.logs", "irlens.names", "irlens.wording", "irlens.version", "irlens._compat")

# What each folder below the orchestration may import, directly or through others, besides itself and
# the floor: an arrow not named here fails, and a new one is argued beside it (DESIGN.md, Layout).
MAY_IMPORT = {
    # the common view and what every layer stands on (costs, ceilings, dtypes, the precision policy)
    "irlens.core": (),
    # below every layer that touches a compiler's cache: a backend's worker copies, the runtime's cleanup
    "irlens.caches": (),
    "irlens.workloads": ("irlens.core",),
    "irlens.frontends": ("irlens.workloads", "irlens.core"),
    # the stacks' own: a backend compiles and reads its kernels; the runner (irlens.matrix.backend_run)
    # times it, takes the device's turns and reports progress, so no runtime and no orchestration here
    "irlens.backends": ("irlens.frontends", "irlens.workloads", "irlens.core", "irlens.caches"),
    # a JAX twin is checked at the precision the xla backend runs at (irlens.frontends.jax.frontend)
    "irlens.numerics": ("irlens.frontends", "irlens.workloads", "irlens.core"),
    # the process and device machinery the orchestration stands on
    "irlens.runtime": ("irlens.core", "irlens.caches"),
    "irlens.parallel": ("irlens.frontends", "irlens.workloads", "irlens.core"),
    # the matrix runs the stacks in the runtime's workers; it imports nothing that reports or commands it
    "irlens.matrix": ("irlens.backends", "irlens.frontends", "irlens.workloads", "irlens.numerics",
                      "irlens.runtime", "irlens.core", "irlens.caches"),
}

# The orchestration above them: each may import any folder below and one another one way
# (test_no_package_circle); irlens.worker, a worker's entry point, stands above all a worker runs.
ORCHESTRATION = ("irlens", "irlens.__main__", "irlens.api", "irlens.cli", "irlens.bench", "irlens.reporting",
                 "irlens.zoo", "irlens.graphnet", "irlens.repro", "irlens.conformance", "irlens.explain",
                 "irlens.worker")


def reaching_beyond(edges: dict[str, set[str]], package: str) -> list[str]:
    """`module -> module` for each module a module of `package` imports, directly or through others,
    that is neither its package's, the floor's nor of a folder MAY_IMPORT names for it."""
    allowed = {package, *MAY_IMPORT[package], *FLOOR}
    return [f"{m} -> {t}" for m in sorted(edges) if package_of(m) == package
            for t in sorted(reach(edges, m)) if package_of(t) not in allowed]


def test_every_folder_has_its_place():
    """A new folder or top-level module is the floor, a folder with its allow-list, or orchestration."""
    placed = {*FLOOR, *MAY_IMPORT, *ORCHESTRATION}
    assert sorted({package_of(m) for m in modules()} - placed) == []
    assert sorted(placed - {package_of(m) for m in modules()}) == []


def test_the_top_level_holds_packages_and_the_floor():
    """Beside its packages, irlens/ holds the floor, the Python API and `python -m irlens`: a module
    with a job of its own lives in the package it serves, or in one of its own."""
    loose = [m for m, path in modules().items() if m.count(".") == 1 and path.name != "__init__.py"]
    assert sorted(set(loose) - {*FLOOR, "irlens.api", "irlens.__main__"}) == []


def test_the_floor_imports_nothing_of_irlens():
    edges = import_edges(modules())
    assert {m: sorted(edges[m]) for m in FLOOR if edges[m]} == {}


@pytest.mark.parametrize("package", sorted(MAY_IMPORT))
def test_each_folder_imports_only_what_it_may(package):
    assert reaching_beyond(import_edges(modules()), package) == []


def test_the_folder_rule_names_an_edge_through_another_module():
    edges = {"irlens.runtime.isolation": {"irlens.core.precision"}, "irlens.core.precision": {"irlens.matrix.cell"},
             "irlens.matrix.cell": {"irlens.runtime.timing"}, "irlens.runtime.timing": {"irlens.errors"},
             "irlens.errors": set(), "irlens.runtimes": {"irlens.cli"}, "irlens.cli": set()}
    assert reaching_beyond(edges, "irlens.runtime") == ["irlens.runtime.isolation -> irlens.matrix.cell"]


def parallelisms_reaching_models(edges: dict[str, set[str]]) -> list[str]:
    """`parallelize_module -> model_module` for each module of irlens.parallel.models a module of
    irlens.parallel.parallelize imports, directly or through others."""
    return [f"{m} -> {t}" for m in sorted(edges) if in_package(m, "irlens.parallel.parallelize")
            for t in sorted(reach(edges, m)) if in_package(t, "irlens.parallel.models")]


def test_the_generic_parallelisms_import_no_model():
    """As torchtitan's layout: a model's own plan lives beside it (irlens.parallel.models.<name>.parallelize)
    and is built from the generic parallelisms (irlens.parallel.parallelize: FSDP, TP, EP, the meshes),
    which import no model: the arrows go one way, models -> parallelize."""
    assert parallelisms_reaching_models(import_edges(modules())) == []


def test_the_parallelisms_rule_names_an_edge_through_another_module():
    edges = {"irlens.parallel.parallelize.expert_parallel": {"irlens.parallel.config"},
             "irlens.parallel.config": {"irlens.parallel.models.families"}, "irlens.parallel.models.families": set(),
             "irlens.parallel.parallelizer": {"irlens.parallel.models.llama3.model"},
             "irlens.parallel.models.llama3.model": set()}
    assert parallelisms_reaching_models(edges) == ["irlens.parallel.parallelize.expert_parallel -> "
                                                   "irlens.parallel.models.families"]
