"""Common view -> torch FX GraphModule, compiled by Inductor.

Every node becomes one `call_function` of the op's meaning in `irlens.core.interpret.MEANINGS`
(the table the reference interpreter runs, dtype-preserving), with the node's attrs as a
constant first argument; multi-output nodes are unpacked with `getitem`. Creation ops get the
target device in their attrs, and so do elementwise ops of literals only (`irlens.backends.lowering.node_attrs`),
which are then cast to their declared dtype. `torch.compile` then traces the module
(inlining the table's torch calls) and Inductor compiles it;
the Inductor backend's capture (`irlens.backends.inductor.backend.InductorCapture`, handed in by the
backend) keeps the post-grad graph, the generated code and its provenance, from which the
kernels are mapped.
"""
from __future__ import annotations

import operator

import torch

from irlens.core.interpret import MEANINGS, all_outputs, output_specs
from irlens.core.ir import Graph, Kernel
from irlens.backends.lowering import check_supported, node_attrs, straight_line
from irlens.core.ops import COMPOSITE, ELEMENTWISE, category

SUPPORTED = straight_line(MEANINGS)


def to_graph_module(graph: Graph, device: str) -> torch.fx.GraphModule:
    fx_graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {t.name: fx_graph.placeholder(_identifier(t.name)) for t in graph.inputs}
    for node in graph.nodes:
        args = [env[a] if isinstance(a, str) else a for a in node.inputs]
        call = fx_graph.call_function(MEANINGS[node.op], (node_attrs(node, device), *args))
        if not node.value_inputs() and category(node.op) == ELEMENTWISE:
            # literals only (1.0 / 2048.0): computed in float64, the graph says which dtype
            call = fx_graph.call_function(MEANINGS["convert"], ({"dtype": node.outputs[0].dtype}, call))
        if len(node.outputs) == 1 and category(node.op) != COMPOSITE:  # composites may return a tuple
            env[node.outputs[0].name] = call
        else:
            call = fx_graph.call_function(all_outputs, (call, output_specs(node), device))
            for i, meta in enumerate(node.outputs):
                env[meta.name] = fx_graph.call_function(operator.getitem, (call, i))
    fx_graph.output(tuple(env[o] if isinstance(o, str) else o for o in graph.outputs))
    return torch.fx.GraphModule(torch.nn.Module(), fx_graph)


def _identifier(name: str) -> str:
    """A value name as a Python identifier (jaxpr-derived names may hold other characters)."""
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return ident if ident and not ident[0].isdigit() else f"v_{ident}"


class InductorLowered:
    """A graph as a GraphModule under torch.compile with Inductor; kernels after the first call."""

    def __init__(self, graph: Graph, device: str, tag: str, capture):
        check_supported(graph, SUPPORTED, "fx")
        self.tag, self.device = tag, device
        self.module = to_graph_module(graph, device)
        self.capture = capture  # the Dynamo backend that compiles with Inductor and keeps its records
        self.compiled = torch.compile(self.module, backend=self.capture, dynamic=False)

    def __call__(self, inputs: list) -> list:
        with torch.no_grad():
            return list(self.compiled(*inputs))

    def graphs(self) -> list[Graph]:
        for c in self.capture.compiled:
            if not c.graph.stage.startswith(self.tag):
                c.graph.stage = f"{self.tag}:{c.graph.stage}"
        return [c.graph for c in self.capture.compiled]

    def kernels(self, cupti_taken: bool) -> list[Kernel]:
        from irlens.backends.inductor.code import map_kernels

        if self.capture.unmapped:  # a graph Inductor compiled went unrecorded: its kernels are not known
            raise RuntimeError(self.capture.unmapped)
        self.graphs()  # node ids refer to the tagged stage names
        return [k for c in self.capture.compiled for k in map_kernels(c, "inductor")]


def lower(graph: Graph, device: str, tag: str, capture) -> InductorLowered:
    return InductorLowered(graph, device, tag, capture)
