"""Dynamo's graphs as `torch.compile` makes them: a Dynamo backend that keeps each graph and the
ATen graphs AOTAutograd makes of it, each as a Stage with its common view.

The acquisition runs each AOT graph as itself; a program of several graphs (graph_breaks.py)
runs each through the executor it is given, captured the same way as the program runs.
"""
from __future__ import annotations

import functools
from typing import Callable

import torch

from irlens.frontends.base import Stage
from irlens.frontends.dynamo.aot import Role, backward_roles, forward_roles
from irlens.frontends.dynamo.fx import fx_to_graph
from irlens.frontends.dynamo.vmap import expand_vmap

FORWARD, BACKWARD = "aot.forward", "aot.backward"


class GraphCapture:
    """A Dynamo backend that keeps each Dynamo graph and its AOTAutograd forward/backward graphs.
    Each AOT graph runs as itself, or, with `run`, as the callable `run(stage name, graph)` gives
    (of the graph's inputs, returning its outputs)."""

    def __init__(self, run: Callable[[str, torch.fx.GraphModule], Callable] | None = None):
        self.run = run
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

        def keep(base: str, graphs: dict):
            def compiler(g: torch.fx.GraphModule, _inputs):
                graphs[index] = g
                return make_boxed_func(g.forward if self.run is None else self.run(indexed(base, index), g))

            return compiler

        compiled = aot_autograd(fw_compiler=keep(FORWARD, self.forward),
                                bw_compiler=keep(BACKWARD, self.backward))(gm, example_inputs)

        @functools.wraps(compiled)  # its attributes too (how Dynamo calls it)
        def recorded(*args):
            outputs = compiled(*args)
            self.outputs.setdefault(index, list(outputs))
            return outputs

        return recorded


def roles_of(name: str, gm: torch.fx.GraphModule) -> tuple[list[Role], list[Role]]:
    """What each input and output of the AOT graph of stage `name` is (aot.py)."""
    return (backward_roles if name.startswith(BACKWARD) else forward_roles)(gm)


def aot_roles(capture: GraphCapture) -> dict[str, tuple[list[Role], list[Role]]]:
    """What each input and output of each AOTAutograd graph is, by stage name (binding.py reads them)."""
    graphs = [(indexed(FORWARD, i), g) for i, g in capture.forward.items()]
    graphs += [(indexed(BACKWARD, i), g) for i, g in capture.backward.items()]
    return {name: roles_of(name, g) for name, g in graphs}


def describe(base: str, mode: str) -> str:
    """What a stage of kind `base` (dynamo.fx, aot.forward, aot.backward) holds in `mode`, in one line."""
    forward = "inference graph" if mode == "fwd" else "forward graph"
    return {"dynamo.fx": "Dynamo's FX graph: torch-level calls as traced",
            FORWARD: f"AOTAutograd's ATen {forward}, no decompositions",
            BACKWARD: "AOTAutograd's ATen backward graph, no decompositions"}[base]


def indexed(base: str, i: int) -> str:
    return base if i == 0 else f"{base}[{i}]"


def fx_stage(name: str, description: str, gm: torch.fx.GraphModule, workload: str, backward: bool = False) -> Stage:
    def to_common(level: str):
        read = expand_vmap(gm)  # vmap regions as functorch batches them
        return fx_to_graph(read, name=workload, frontend="dynamo", stage=name, level=level)

    text = gm.print_readable(print_output=False, include_stride=False, include_device=False)
    return Stage(name, description, text, to_common, native=gm, backward=backward)
