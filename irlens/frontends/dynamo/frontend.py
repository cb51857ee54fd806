"""The torch.compile frontend: Dynamo's FX graphs and the ATen graphs AOTAutograd makes of them.

One `torch.compile` call with a capturing backend records every graph Dynamo produces
(`dynamo.fx`, then `dynamo.fx[1]`, ... after graph breaks) and hands each to AOTAutograd with
capturing compilers, which record its forward (`aot.forward`; the inference graph in fwd
mode) and, in fwdbwd mode, its backward (`aot.backward`). No decomposition table is passed,
so the ATen graphs keep high-level ops (gelu, sdpa, native_layer_norm): decompositions are
a backend concern.

The folder owns the Dynamo frontend whole: the acquisition (here) and its capturing backend
(capture.py), how the graphs bind to the workload (binding.py; several graphs, after graph breaks:
graph_breaks.py), what each AOT graph input and output is (aot.py), vmap regions (vmap.py), and
the FX/ATen graphs -> common view adapter: its walk (fx.py), name tables (names.py), how a
converter reads a call (call.py), the converters by op family (converters/), the fallback to
torch's decompositions (expansion.py, decompositions.py), in-place calls (mutation.py) and what
FX nodes carry (meta.py).
"""
from __future__ import annotations

import re

import torch

from irlens.frontends.base import FRONTENDS, Acquisition, Availability, Frontend, Program, Stage
from irlens.frontends.bindings import module_tensors
from irlens.frontends.dynamo.binding import dynamo_input_keys, dynamo_program, fx_program
from irlens.frontends.dynamo.capture import BACKWARD, FORWARD, GraphCapture, aot_roles, describe, fx_stage, indexed
from irlens.core.ir import Graph
from irlens.workloads.workload import MODES, Instance, as_tuple


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

        n = len(capture.dynamo)
        stages: dict[str, Stage] = {}
        for base, graphs in (("dynamo.fx", dict(enumerate(capture.dynamo))), (FORWARD, capture.forward),
                             (BACKWARD, capture.backward)):
            for i, gm in sorted(graphs.items()):
                description = describe(base, mode) + (f" (graph {i + 1} of {n})" if n > 1 else "")
                name = indexed(base, i)
                stages[name] = fx_stage(name, description, gm, inst.name, backward=base == BACKWARD)
        # split by graph breaks: the forward is every graph's, in the order they run
        parts = [indexed("dynamo.fx", i) for i in range(n)] if n > 1 else None
        return Acquisition(self.name, inst.name, mode, stages, notes, parts=parts)

    def default_stage(self, mode: str) -> str:
        return "dynamo.fx" if mode == "fwd" else "aot.backward"

    def stage_parts(self, acq: Acquisition, stage: str, view: str) -> list[str]:
        # after graph breaks each graph has its own stages, named `<stage>[<graph>]` from the second on
        base = re.sub(r"\[\d+\]$", "", stage)
        parts = [name for name in (indexed(base, i) for i in range(acq.notes.get("graphs", 1))) if name in acq.stages]
        return parts if stage in parts else [stage]

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
