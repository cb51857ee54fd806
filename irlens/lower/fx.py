"""Common view -> torch FX GraphModule, compiled by Inductor.

Every node becomes one `call_function` of the op's meaning in `irlens.interpret.MEANINGS`
(the table the reference interpreter runs, dtype-preserving), with the node's attrs as a
constant first argument; multi-output nodes are unpacked with `getitem`. Creation ops get the
target device in their attrs; an elementwise op of literals only (JAX's `div 1.0 512.0`, the
mean's cotangent) computes on 0-d tensors made on the target device, then is cast to its
declared dtype: made by the table, they would be CPU tensors, and once broadcast, a CPU operand
of a CUDA op, which Inductor's fake tensors refuse. `torch.compile` then traces the module
(inlining the table's torch calls) and Inductor compiles it;
`irlens.backends.inductor.InductorCapture` keeps the post-grad graph, the generated code and its
provenance, from which the kernels are mapped.
"""
from __future__ import annotations

import operator

import torch

from irlens.interpret import MEANINGS, all_outputs, output_specs
from irlens.ir import Graph, Kernel
from irlens.lower import check_supported
from irlens.ops import COMPOSITE, CREATION, ELEMENTWISE, category

SUPPORTED = frozenset(MEANINGS)


def to_graph_module(graph: Graph, device: str) -> torch.fx.GraphModule:
    fx_graph = torch.fx.Graph()
    env: dict[str, torch.fx.Node] = {t.name: fx_graph.placeholder(_identifier(t.name)) for t in graph.inputs}
    for node in graph.nodes:
        attrs = dict(node.attrs, device=device) if category(node.op) == CREATION else dict(node.attrs)
        args = [env[a] if isinstance(a, str) else a for a in node.inputs]
        literals_only = not node.value_inputs() and category(node.op) == ELEMENTWISE
        if literals_only:
            args = [fx_graph.call_function(device_literal, (a, device)) if _is_number(a) else a for a in args]
        call = fx_graph.call_function(MEANINGS[node.op], (attrs, *args))
        if literals_only:
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


def _is_number(value) -> bool:
    return isinstance(value, (bool, int, float))


def device_literal(value, device) -> torch.Tensor:
    """A literal operand as the table's `_scalar_tensor` makes it (float64, int64 or bool, 0-d),
    on `device`."""
    dtype = torch.bool if isinstance(value, bool) else torch.int64 if isinstance(value, int) else torch.float64
    return torch.tensor(value, dtype=dtype, device=device)


def _identifier(name: str) -> str:
    """A value name as a Python identifier (jaxpr-derived names may hold other characters)."""
    ident = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return ident if ident and not ident[0].isdigit() else f"v_{ident}"


class InductorLowered:
    """A graph as a GraphModule under torch.compile with Inductor; kernels after the first call."""

    def __init__(self, graph: Graph, device: str, tag: str):
        from irlens.backends.inductor import InductorCapture

        check_supported(graph, SUPPORTED, "fx")
        self.tag, self.device = tag, device
        self.module = to_graph_module(graph, device)
        self.capture = InductorCapture(graph.name)
        self.compiled = torch.compile(self.module, backend=self.capture, dynamic=False)

    def __call__(self, inputs: list) -> list:
        # a 0-d CPU tensor (a value the chain computed from literals) would make the traced graph
        # mix devices, which Inductor's fake tensors refuse
        inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x for x in inputs]
        with torch.no_grad():
            return list(self.compiled(*inputs))

    def graphs(self) -> list[Graph]:
        for c in self.capture.compiled:
            if not c.graph.stage.startswith(self.tag):
                c.graph.stage = f"{self.tag}:{c.graph.stage}"
        return [c.graph for c in self.capture.compiled]

    def kernels(self) -> list[Kernel]:
        from irlens.ir_adapters.inductor_code import map_kernels

        self.graphs()  # node ids refer to the tagged stage names
        return [k for c in self.capture.compiled for k in map_kernels(c, "inductor")]


def lower(graph: Graph, device: str, tag: str) -> InductorLowered:
    return InductorLowered(graph, device, tag)
