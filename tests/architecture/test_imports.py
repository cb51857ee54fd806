"""The package's shape holds: no import circle (lazy imports included) between modules or between
subpackages, no module importing another's private names, no submodule that would hide an
API function of the same name, and the folders' rules: the runtime imports no orchestration, the
backends no runtime, the core no stack, runtime, workload or orchestration, the parallel path's
generic parallelisms no model."""
from __future__ import annotations

import ast

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


ABOVE_THE_RUNTIME = ("irlens.matrix", "irlens.bench", "irlens.zoo", "irlens.reporting", "irlens.cli")


def in_package(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def runtime_reaching_above(edges: dict[str, set[str]]) -> list[str]:
    """`runtime_module -> orchestration_module` for each orchestration module a runtime module
    imports, directly or through others."""
    return [f"{m} -> {t}" for m in sorted(edges) if in_package(m, "irlens.runtime")
            for t in sorted(reach(edges, m)) if any(in_package(t, p) for p in ABOVE_THE_RUNTIME)]


def test_the_runtime_imports_no_orchestration():
    """irlens.runtime (workers, device turns, timing) is the floor the orchestration stands on:
    nothing in it imports the matrix, the bench, the zoo's runs, the reports or the CLI."""
    assert runtime_reaching_above(import_edges(modules())) == []


def test_the_runtime_rule_names_an_edge_through_another_module():
    edges = {"irlens.runtime.isolation": {"irlens.core.precision"}, "irlens.core.precision": {"irlens.matrix.cell"},
             "irlens.matrix.cell": {"irlens.runtime.timing"}, "irlens.runtime.timing": set(),
             "irlens.runtimes": {"irlens.cli"}, "irlens.cli": set()}
    assert runtime_reaching_above(edges) == ["irlens.runtime.isolation -> irlens.matrix.cell"]


def backends_reaching_the_runtime(edges: dict[str, set[str]]) -> list[str]:
    """`backend_module -> runtime_module` for each runtime module a backend module imports,
    directly or through others."""
    return [f"{m} -> {t}" for m in sorted(edges) if in_package(m, "irlens.backends")
            for t in sorted(reach(edges, m)) if in_package(t, "irlens.runtime")]


def test_backends_import_no_runtime():
    """A backend compiles; the runner (irlens.matrix.backend_run) times, takes the device's turns and
    reports progress: nothing in irlens.backends imports irlens.runtime."""
    assert backends_reaching_the_runtime(import_edges(modules())) == []


def test_the_backends_rule_names_an_edge_through_another_module():
    edges = {"irlens.backends.xla.dump": {"irlens.frontends.jax.frontend"},
             "irlens.frontends.jax.frontend": {"irlens.runtime.isolation"},
             "irlens.runtime.isolation": set(), "irlens.backendsx": {"irlens.runtime.timing"},
             "irlens.runtime.timing": set()}
    assert backends_reaching_the_runtime(edges) == ["irlens.backends.xla.dump -> irlens.runtime.isolation"]


OUTSIDE_THE_CORE = ("irlens.backends", "irlens.frontends", "irlens.runtime", "irlens.workloads", *ABOVE_THE_RUNTIME)


def core_reaching_out(edges: dict[str, set[str]]) -> list[str]:
    """`core_module -> module` for each stack, runtime, workload or orchestration module a module of
    irlens.core imports, directly or through others."""
    return [f"{m} -> {t}" for m in sorted(edges) if in_package(m, "irlens.core")
            for t in sorted(reach(edges, m)) if any(in_package(t, p) for p in OUTSIDE_THE_CORE)]


def test_the_core_imports_no_stack_runtime_or_orchestration():
    """irlens.core (the common view, the vocabulary, the interpreter, costs, dtypes, registries) is what
    every stack and the orchestration stand on: nothing in it imports a backend, a frontend, the runtime,
    the workloads, the matrix, the bench, the zoo's runs, the reports or the CLI."""
    assert core_reaching_out(import_edges(modules())) == []


def test_the_core_rule_names_an_edge_through_another_module():
    edges = {"irlens.core.cost": {"irlens.names"}, "irlens.names": {"irlens.frontends.base"},
             "irlens.frontends.base": set(), "irlens.core.ir": {"irlens.errors"}, "irlens.errors": set(),
             "irlens.cores": {"irlens.matrix.plan"}, "irlens.matrix.plan": set()}
    assert core_reaching_out(edges) == ["irlens.core.cost -> irlens.frontends.base"]


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
