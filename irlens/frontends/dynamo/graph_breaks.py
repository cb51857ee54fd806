"""A program of several Dynamo graphs (graph breaks).

Between the graphs runs Python that no graph holds (the code that broke it: an `.item()`, a
print), so no chain of steps over an environment computes the workload. Such a program runs the
workload itself under `torch.compile`, with the capturing backend the acquisition uses
(capture.py): each graph Dynamo makes goes to AOTAutograd, and each AOT graph becomes a step
(`aot.forward[<graph>]`, `aot.backward[<graph>]`, named as the acquisition names them) run by the
program's executor (the interpreter, a backend's lowering). Dynamo runs the Python between the
graphs on the executed graphs' results, AOTAutograd's runtime their effect tokens, in-place
updates and saved tensors, autograd the loss's backward, and `run_eager` names the results.

The graphs are traced again on the program's first call, not taken from the acquisition: a value
the Python reads from one graph (`.item()`) is a constant of the next (Dynamo specializes on
it), and it must be the executed graph's value, not eager's. A graph Dynamo compiles again later
(a guard failed on other values) is one more step, executed the same way; past Dynamo's
recompile limit the program fails rather than run a frame eagerly.
"""
from __future__ import annotations

from typing import Callable

import torch

from irlens.frontends.base import Acquisition, Program, Stage, Step
from irlens.frontends.dynamo.aot import Role
from irlens.frontends.dynamo.capture import BACKWARD, FORWARD, GraphCapture, describe, fx_stage, roles_of
from irlens.workloads.workload import Instance, run_eager


def role_step(stage: Stage, roles: tuple[list[Role], list[Role]]) -> Step:
    """A step whose values Dynamo passes, not an environment: each input and output keyed by its
    stage and what it is (aot.py); a gradient that is None by None."""
    inputs, outputs = roles
    return Step(stage, [f"{stage.name}:{r}" for r in inputs],
                [None if r.kind == "none" else f"{stage.name}:{r}" for r in outputs])


def graph_index(stage: str) -> int:
    return int(stage[stage.index("[") + 1:-1]) if stage.endswith("]") else 0


def several_graphs_program(acq: Acquisition) -> Program:
    """The program of an acquisition Dynamo split into several graphs: its steps are the acquired
    AOT graphs, by graph, forward first; it runs as `UnderDynamo` says."""
    names = sorted(acq.notes["roles"], key=lambda name: (graph_index(name), name.startswith(BACKWARD)))
    steps = [role_step(acq.stage(name), acq.notes["roles"][name]) for name in names]
    backward = steps[1] if len(steps) > 1 and steps[1].stage.backward else None
    notes = {"dynamo_graphs": acq.notes["graphs"], "graph_breaks": acq.notes.get("graph_breaks", 0),
             "break_reasons": acq.notes.get("break_reasons", [])}
    return Program("dynamo", acq.mode, steps[0], backward, more=steps[2 if backward else 1:],
                   runs=UnderDynamo(acq.mode), notes=notes)


class UnderDynamo:
    """`Program.runs` of several Dynamo graphs: the workload compiled with a capture whose AOT
    graphs each run as `execute` runs its step, once per instance and executor (the timed calls
    after the first run the compiled code)."""

    def __init__(self, mode: str):
        self.mode = mode
        self._compiled: dict[tuple[int, Callable], tuple[Instance, Callable]] = {}

    def __call__(self, inst: Instance, execute: Callable) -> dict:
        key = (id(inst), execute)
        if key not in self._compiled:
            torch._dynamo.reset()  # traced afresh: no earlier compile's code or guards (nor its recompile count)
            capture = GraphCapture(lambda name, gm: _executed(execute, _traced_step(name, gm, inst.name, self.mode)))
            self._compiled[key] = inst, torch.compile(inst.module, backend=capture, dynamic=False)
        # past Dynamo's recompile limit a frame would run eagerly, not through the executor: an error instead
        with torch._dynamo.config.patch(fail_on_recompile_limit_hit=True):
            return run_eager(self._compiled[key][1], inst, self.mode)


def _traced_step(name: str, gm: torch.fx.GraphModule, workload: str, mode: str) -> Step:
    backward = name.startswith(BACKWARD)
    description = f"{describe(BACKWARD if backward else FORWARD, mode)} (graph {graph_index(name) + 1})"
    return role_step(fx_stage(name, description, gm, workload, backward=backward), roles_of(name, gm))


def _executed(execute: Callable, step: Step) -> Callable:
    return lambda *args: list(execute(step, list(args)))
