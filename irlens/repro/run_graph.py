"""One graph of the common view through a backend's path, in a worker: its outcome, and its file.

`run_candidate` is what the reducer calls for every candidate, with the cell's spec (in an
isolated worker, through irlens.worker.entry: a crash or a hang costs that worker, not the reducer).
The graph runs as its path's program says (see `irlens.backends.repro_path`) on its inputs' values,
and its outputs are compared with the same graph
computed in float64 on the same values (as the interpreter computes it, on the device). `write_graph_file` writes the standalone file of a graph: the
same code the `torch` program ran, the jaxpr `irlens.backends.xla.lower` jits, or the nvFuser
definitions `irlens.backends.thunder.lower` built, with the float64 model code for the reference.
"""
from __future__ import annotations

import functools
import traceback

import torch

from irlens.backends import Backend
from irlens.core.interpret import TORCH_DTYPES
from irlens.core.ir import Graph
from irlens.core.ops import index_bounds
from irlens.matrix.spec import CellSpec
from irlens.numerics.verdicts import compare_results, tolerance
from irlens.repro.cases import Case, case_values
from irlens.repro.cell import Outcome, exception_outcome
from irlens.repro.graphs import as_float64
from irlens.workloads.workload import Workload


def graph_inputs(graph: Graph, values: dict, device: str) -> list:
    """The graph's inputs from the case's values: cut to the declared shapes (a shrunk graph
    takes the leading part of each dimension), in the declared dtypes, on `device`; an input an
    op reads as indices (its schema's `index_of`) kept within what it indexes."""
    bounds = _index_bounds(graph)
    inputs = []
    for t in graph.inputs:
        value = values[t.name]
        if isinstance(value, torch.Tensor):
            if tuple(value.shape) != tuple(t.shape):
                value = value[tuple(slice(0, n) for n in t.shape)]
            value = value.to(TORCH_DTYPES.get(t.dtype, value.dtype))
            if t.name in bounds:
                value = _within(value, *bounds[t.name])
            value = value.contiguous().to(device)
        inputs.append(value)
    return inputs


def _index_bounds(graph: Graph) -> dict[str, tuple[int, object]]:
    """Graph inputs read as indices: the fewest positions any reader allows, and the value that
    is no position (a loss's ignore_index; None: none)."""
    metas = graph.values()
    inputs = {t.name for t in graph.inputs}
    bounds: dict[str, tuple[int, object]] = {}
    for n in graph.nodes:
        shapes = {v: tuple(metas[v].shape) for v in n.value_inputs() if v in metas}
        for b in index_bounds(n.op, n.inputs, n.attrs, shapes):
            name = n.inputs[b.input]
            if name in inputs:
                bound = min(bounds[name][0], b.bound) if name in bounds else b.bound
                bounds[name] = (bound, b.keep)
    return bounds


def _within(value: torch.Tensor, bound: int, keep) -> torch.Tensor:
    """Integer positions wrapped into [0, bound); a `keep` value stays (a bool mask, or an empty
    table's indices, as they are)."""
    if value.dtype == torch.bool or value.is_floating_point() or value.is_complex() or bound <= 0:
        return value
    wrapped = value.remainder(bound)
    return wrapped if keep is None else torch.where(value == keep, value, wrapped)



def _synchronize(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


@functools.cache
def compile_function(compile_source: str):
    """`compile_fn` of a path's source, defined in a module of its own as in a standalone file
    (Dynamo looks up the module of every function it traces)."""
    import hashlib
    import sys
    import types

    module = types.ModuleType(f"irlens_repro_path_{hashlib.sha1(compile_source.encode()).hexdigest()[:12]}")
    module.torch = torch
    sys.modules[module.__name__] = module
    exec(compile_source, module.__dict__)
    return module.compile_fn


def torch_function(graph: Graph, inputs: list, device: str, name: str):
    """The graph's standalone torch code (Dynamo's capture of its `irlens.backends.inductor.lower` module)."""
    from irlens.backends.inductor.lower import to_graph_module
    from irlens.repro.torch_source import capture

    by_id = {id(v): t.name for v, t in zip(inputs, graph.inputs)}
    function, _ = capture(to_graph_module(graph, device), inputs, name, lambda ex: [by_id[id(v)] for v in ex])
    return function


def _run(graph: Graph, inputs: list, backend, path, device: str) -> list:
    """The graph's outputs, in order, computed as the path's program says: its own code under the
    path's `compile_fn`, or the backend's `lower` (irlens.backends.thunder.lower, irlens.backends.xla.lower)."""
    from irlens.repro.torch_source import load

    if path.program == "torch":
        function = torch_function(graph, inputs, device, "model")
        env = {**dict(zip((t.name for t in graph.inputs), inputs)), **function.constants}
        with torch.no_grad():
            outs = compile_function(path.compile_source)(load(function))(*[env[k] for k in function.args])
        return list(outs)
    if backend.lower is None:
        raise ValueError(f"backend {backend.name} has no lowering of the common view for the {path.lowering} path")
    return list(backend.lower(graph, device, "repro")(inputs))


def outcome_of(graph: Graph, inputs: list, backend, path, device: str, tol: float) -> Outcome:
    from irlens.repro.cases import float64_values

    try:
        outs = _run(graph, inputs, backend, path, device)
        _synchronize(device)
    except Exception as e:  # noqa: BLE001  (the backend's failure is the outcome)
        return exception_outcome(e, traceback.format_exc()[-3000:])
    wide = float64_values(graph, inputs, device)
    reference = {name: wide[name] for name in graph.outputs}
    results = dict(zip(graph.outputs, (o.detach() for o in outs)))
    cmp = compare_results(results, reference, tol)
    return Outcome("ok", "", f"max rel err {cmp.max_rel_err}") if cmp.ok else Outcome("mismatch", "", cmp.reason)


def run_candidate(s: CellSpec, wl: Workload, backend: Backend, graph: dict, case: dict) -> dict:
    """(a worker: irlens.worker.entry's `candidate`) One candidate of the cell's reduction (a graph
    made from the case's) through the backend's path on the cell's device, and its outcome against
    the cell's tolerance, as JSON."""
    g = Graph.from_json(graph)
    inputs = graph_inputs(g, case_values(Case(**case), s.device), s.device)
    tol = tolerance(s.dtype or wl.dtype, s.mode)
    return outcome_of(g, inputs, backend, backend.repro_path, s.device, tol).to_json()


def write_graph_file(s: CellSpec, wl: Workload, backend: Backend, graph: dict, case: dict, title: str,
                     notes: list[str], out: str, embed_max: int) -> None:
    """(a worker: irlens.worker.entry's `graph`) Write the standalone file of a graph of the cell's
    program to `out`. Nothing runs through the backend here (a crashing graph's file is written
    all the same): its code is captured, its jaxpr traced, its nvFuser definitions built without
    executing them."""
    from irlens.repro.emit import ReproFile, TorchCall, TorchModel

    g = Graph.from_json(graph)
    path = backend.repro_path
    device, dtype = s.device, s.dtype or wl.dtype
    tol = tolerance(dtype, s.mode)
    inputs = graph_inputs(g, case_values(Case(**case), device), device)
    reference = torch_function(as_float64(g), [_float64(v) for v in inputs], device, "model_float64")
    forward = torch_function(g, inputs, device, "model") if path.program == "torch" else reference
    f = ReproFile(title=title, notes=notes, device=device, dtype=dtype, tol=tol,
                  values={**{t.name: v.cpu() for t, v in zip(g.inputs, inputs)},
                          **forward.constant_values(), **reference.constant_values()},
                  model=TorchModel(forward, forward.or_same(reference), list(g.outputs)), path=path,
                  embed_max=embed_max)
    if path.program == "jax":
        f.jax = jax_section(g, inputs)
    elif path.program == "fusions":
        f.fusions = fusion_section(g, inputs, device)
        for step in f.fusions.steps:
            if isinstance(step, TorchCall):
                f.values.update(step.function.constant_values())
    with open(out, "w") as fh:
        fh.write(f.render())


def _float64(v):
    return v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v


def jax_section(graph: Graph, inputs: list):
    """The graph's JAX function (`irlens.backends.xla.lower`) as source: its jaxpr on the inputs' types."""
    import jax
    import jax.numpy as jnp

    from irlens.frontends.jax.frontend import MATMUL_PRECISION
    from irlens.backends.xla.lower import to_jax_function
    from irlens.repro.emit import JaxSection
    from irlens.repro.jax_source import jaxpr_source

    def aval(v: torch.Tensor):
        dtype = str(v.dtype).removeprefix("torch.")
        if dtype == "int64" and not jax.config.jax_enable_x64:
            dtype = "int32"  # as the lowering narrows it (irlens.backends.xla.lower)
        return jax.ShapeDtypeStruct(tuple(v.shape), jnp.dtype(dtype))

    with jax.default_matmul_precision(MATMUL_PRECISION):
        closed = jax.make_jaxpr(to_jax_function(graph))(*map(aval, inputs))
    names = [t.name for t in graph.inputs]
    return JaxSection(jaxpr_source(closed, "jax_program", names), names, [str(v.aval.dtype) for v in closed.jaxpr.invars],
                      list(graph.outputs))


def fusion_section(graph: Graph, inputs: list, device: str):
    """The steps `irlens.backends.thunder.lower` runs the graph as: each region's FusionDefinition as nvFuser
    prints it (built as the lowering builds it, for the region's input values, and not executed),
    each op outside the regions as its torch code (a one-node graph's)."""
    from irlens.backends.thunder.lower import Region, define_region, fusion_input, regions
    from irlens.repro.cases import all_values
    from irlens.repro.emit import Fusion, FusionSection, TorchCall
    from irlens.repro.graphs import subgraph

    env = all_values(graph, inputs, device)
    steps = []
    for item in regions(graph):
        if isinstance(item, Region):
            if item.outputs:
                values = [fusion_input(env[name], device) for name in item.inputs]
                steps.append(Fusion(repr(define_region(item, values, graph)), list(item.inputs), list(item.outputs)))
            continue
        one = subgraph(graph, [item.id])
        function = torch_function(one, [env[t.name] for t in one.inputs], device, f"node_{len(steps)}")
        steps.append(TorchCall(function, list(one.outputs)))
    return FusionSection(steps, list(graph.outputs))
