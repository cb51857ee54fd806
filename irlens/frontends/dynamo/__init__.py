"""The torch.compile frontend: Dynamo's FX graphs and the ATen graphs AOTAutograd makes of them.

One `torch.compile` call with a capturing backend records every graph Dynamo produces
(`dynamo.fx`, then `dynamo.fx[1]`, ... after graph breaks) and hands each to AOTAutograd with
capturing compilers, which record its forward (`aot.forward`; the inference graph in fwd
mode) and, in fwdbwd mode, its backward (`aot.backward`). No decomposition table is passed,
so the ATen graphs keep high-level ops (gelu, sdpa, native_layer_norm): decompositions are
a backend concern.

The folder owns the Dynamo frontend whole: the capture (here), what each AOT graph input and
output is (aot.py), vmap regions (vmap.py), and the FX/ATen graphs -> common view adapter: its
walk (fx.py), name tables (names.py), how a converter reads a call (call.py), the converters by
op family (converters/), the fallback to torch's decompositions (expansion.py, decompositions.py),
in-place calls (mutation.py) and what FX nodes carry (meta.py).
"""
from __future__ import annotations

import functools

import torch

from irlens.frontends.base import FRONTENDS, Acquisition, Availability, Frontend, Program, Stage
from irlens.frontends.dynamo.aot import Role, backward_roles, forward_roles
from irlens.frontends.bindings import module_tensors
from irlens.frontends.dynamo.binding import dynamo_input_keys, dynamo_program, fx_program
from irlens.frontends.dynamo.fx import fx_to_graph
from irlens.frontends.dynamo.vmap import expand_vmap
from irlens.ir import Graph
from irlens.workload import MODES, Instance, as_tuple


class GraphCapture:
    """A Dynamo backend that keeps each Dynamo graph and its AOTAutograd forward/backward graphs."""

    def __init__(self):
        self.dynamo: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list] = []  # the tensors Dynamo called each graph with, in placeholder order
        self.forward: dict[int, torch.fx.GraphModule] = {}
        self.backward: dict[int, torch.fx.GraphModule] = {}
        self.outputs: dict[int, list] = {}  # each graph's outputs on its first call (the objects themselves)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        from functorch.compile import make_boxed_func
        from torch._dynamo.backends.common import aot_autograd

        index = len(self.dynamo)
        self.dynamo.append(gm)
        self.example_inputs.append(list(example_inputs))

        def keep(graphs: dict):
            def compiler(g: torch.fx.GraphModule, _inputs):
                graphs[index] = g
                return make_boxed_func(g.forward)

            return compiler

        compiled = aot_autograd(fw_compiler=keep(self.forward), bw_compiler=keep(self.backward))(gm, example_inputs)

        @functools.wraps(compiled)  # its attributes too (how Dynamo calls it)
        def recorded(*args):
            outputs = compiled(*args)
            self.outputs.setdefault(index, list(outputs))
            return outputs

        return recorded


def returned_outputs(graph_outputs: list | None, returned: tuple, buffers: dict[str, torch.Tensor],
                     graph_inputs: list | None = None) -> list[str | None] | str | None:
    """The result each Dynamo graph output is, by identity: the module's `out<i>`, a buffer it
    reassigned (`buffer:<name>`: after the call the buffer is that tensor), or None for a tensor
    Dynamo's bytecode stores elsewhere (a cache in a dict). A string saying why where the graph's
    outputs do not give each returned tensor once (a tensor returned twice, or made outside the
    graph), or, with `graph_inputs` (fwd+bwd), where a returned tensor is a view of one of them;
    None (read them in order) where nothing was recorded or a returned value is not a tensor."""
    if graph_outputs is None or not all(isinstance(r, torch.Tensor) for r in returned):
        return None
    views = [f"out{i}" for i, r in enumerate(returned)
             if r._base is not None and any(r._base is t for t in graph_inputs or [])]
    if views:
        # AOTAutograd makes such a view outside its graphs, and its gradient flows there
        return (f"{', '.join(views)} of the module's outputs is a view of a graph input, whose gradient flows "
                "outside Dynamo's graphs: a program of them would miss that share")
    where = [next((i for i, r in enumerate(returned) if r is t), None) for t in graph_outputs]
    missing = [f"out{i}" for i in range(len(returned)) if where.count(i) != 1]
    if missing:
        return (f"Dynamo's graph does not return {', '.join(missing)} of the module's outputs once each (a tensor "
                "returned twice, or made outside the graph): its outputs cannot be bound to them")
    reassigned = {id(b): f"buffer:{n}" for n, b in buffers.items()}
    return [f"out{i}" if i is not None else reassigned.get(id(t)) for i, t in zip(where, graph_outputs)]


def aot_roles(capture: GraphCapture) -> dict[str, tuple[list[Role], list[Role]]]:
    """What each input and output of each AOTAutograd graph is, by stage name (binding.py reads them)."""
    roles = {indexed("aot.forward", i): forward_roles(g) for i, g in capture.forward.items()}
    roles.update({indexed("aot.backward", i): backward_roles(g) for i, g in capture.backward.items()})
    return roles


def run_compiled(fn, inst: Instance, mode: str) -> tuple:
    """Call a compiled module once in `mode`: under no_grad for fwd; forward + loss.backward()
    for fwdbwd, so the backward graphs get compiled. Leaves no gradients on the module, and its
    buffers as they were (a train-mode BatchNorm updates its statistics). Returns its outputs."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from: {', '.join(MODES)}")
    snapshot = inst.buffer_snapshot()
    if mode == "fwd":
        with torch.no_grad():
            outputs = as_tuple(fn(*inst.fresh_inputs(requires_grad=False)))
    else:
        outputs = as_tuple(fn(*inst.fresh_inputs(requires_grad=True)))
        inst.loss(outputs).backward()
        for p in inst.module.parameters():
            p.grad = None
    inst.buffer_results(snapshot)
    return outputs


def graph_break_notes(counters) -> dict:
    """Graph breaks from Dynamo's counters: how many, and each reason in one line."""
    breaks = counters["graph_break"]
    return {"graph_breaks": sum(breaks.values()), "break_reasons": [_one_line(reason) for reason in breaks]}


def _one_line(reason: str) -> str:
    """A break reason's headline and its explanation (the rest is hints and debug context)."""
    lines = [line.strip() for line in reason.splitlines()]
    explanation = next((line[len("Explanation:"):].strip() for line in lines if line.startswith("Explanation:")), "")
    return f"{lines[0]}: {explanation}" if explanation else lines[0]


def indexed(base: str, i: int) -> str:
    return base if i == 0 else f"{base}[{i}]"


def fx_stage(name: str, description: str, gm: torch.fx.GraphModule, workload: str, backward: bool = False) -> Stage:
    def to_common(level: str):
        read = expand_vmap(gm)  # vmap regions as functorch batches them
        return fx_to_graph(read, name=workload, frontend="dynamo", stage=name, level=level)

    text = gm.print_readable(print_output=False, include_stride=False, include_device=False)
    return Stage(name, description, text, to_common, native=gm, backward=backward)


class DynamoFrontend(Frontend):
    name = "dynamo"
    description = "torch.compile: Dynamo's FX graphs and AOTAutograd's ATen forward/backward graphs"

    def availability(self) -> Availability:
        if not hasattr(torch, "compile"):
            return Availability(False, f"torch {torch.__version__} has no torch.compile")
        from torch import _dynamo  # `import torch._dynamo` here would make `torch` local to this function

        if not _dynamo.is_dynamo_supported():
            return Availability(False, "Dynamo does not support this Python version")
        return Availability(True)

    def acquire(self, inst: Instance, mode: str) -> Acquisition:
        import torch._dynamo
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        capture = GraphCapture()
        before = module_tensors(inst)  # a buffer the call reassigns is another tensor after it
        returned = run_compiled(torch.compile(inst.module, backend=capture, dynamic=False), inst, mode)
        notes = {"graphs": len(capture.dynamo), **graph_break_notes(counters),
                 "graph_inputs": dynamo_input_keys(capture.example_inputs, inst, before),  # binding.py reads them
                 "graph_outputs": returned_outputs(capture.outputs.get(0), returned, inst.buffers(),
                                                   capture.example_inputs[0] if mode == "fwdbwd" and capture.dynamo
                                                   else None),
                 "roles": aot_roles(capture)}
        torch._dynamo.reset()

        forward = "inference graph" if mode == "fwd" else "forward graph"
        kinds = [("dynamo.fx", dict(enumerate(capture.dynamo)), "Dynamo's FX graph: torch-level calls as traced"),
                 ("aot.forward", capture.forward, f"AOTAutograd's ATen {forward}, no decompositions"),
                 ("aot.backward", capture.backward, "AOTAutograd's ATen backward graph, no decompositions")]
        stages: dict[str, Stage] = {}
        for base, graphs, description in kinds:
            for i, gm in sorted(graphs.items()):
                if len(capture.dynamo) > 1:
                    description_i = f"{description} (graph {i + 1} of {len(capture.dynamo)})"
                else:
                    description_i = description
                name = indexed(base, i)
                stages[name] = fx_stage(name, description_i, gm, inst.name, backward=base == "aot.backward")
        return Acquisition(self.name, inst.name, mode, stages, notes)

    def default_stage(self, mode: str) -> str:
        return "dynamo.fx" if mode == "fwd" else "aot.backward"

    def program(self, acq: Acquisition, inst: Instance) -> Program:
        return dynamo_program(acq, inst)

    def stage_programs(self, acq: Acquisition, inst: Instance, program: Program) -> dict[str, Program]:
        return fx_program(acq, inst)

    # every torch workload has AOTAutograd's ATen graphs, forward and backward: a step's work is counted from them
    counts_work = True

    def work_graphs(self, acq: Acquisition) -> list[Graph]:
        return [s.common("composite") for name, s in acq.stages.items() if name.startswith("aot.")]

    conformance_stages = ("dynamo.fx", "aot.forward")

    def conformance_gap(self, acq: Acquisition, results: int) -> str | None:
        # Dynamo returns a view of an input (x.T, x.mT) from its bytecode, rebuilt outside the
        # graph: the graph holds no such result
        try:
            returned = len(acq.stage("dynamo.fx").common().outputs)
        except Exception:  # noqa: BLE001  (the stage's own check reports it)
            return None
        if returned < results:
            return (f"Dynamo's graph returns {returned} of the function's {results} results "
                    "(views of inputs are rebuilt outside it)")
        return None


FRONTENDS.register(DynamoFrontend())
