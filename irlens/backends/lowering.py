"""Lowerings of the common view to a backend: one graph in, a compiled callable out.

Each lowering takes the `primitive` view (decomposition is an explicit pass before any
backend, DESIGN.md) and states the ops it supports (`SUPPORTED`); a graph holding any other
op raises `Unsupported`, naming them, and the cross cell is `unavailable`. A lowered graph
runs on torch tensors in the graph's dtypes and returns torch tensors, so
`irlens.frontends.bindings.run_program` chains lowered forward and backward graphs like interpreted
ones. After its first call it reports the kernels the backend launched (`kernels()`).
"""
from __future__ import annotations

from typing import Iterable, Protocol, Sequence

from irlens.frontends.base import Unavailable
from irlens.core.ir import Graph, Kernel, Node
from irlens.core.ops import CREATION, ELEMENTWISE, OPS, category

LEVEL = "primitive"


class Unsupported(Unavailable):
    def __init__(self, lowering: str, ops: Sequence[str]):
        self.ops = sorted(set(ops))
        named = [f"{op} (control flow: its subgraphs are graphs this lowering does not take)"
                 if op in OPS and OPS[op].subgraphs else op for op in self.ops]
        super().__init__(f"the {lowering} lowering does not support: {', '.join(named)}")


def check_supported(graph: Graph, supported: frozenset[str], lowering: str, backend: str | None = None) -> None:
    """Every op of the graph, loop bodies included, is one the lowering supports; with `backend`,
    each node also one its lowering there takes (`irlens.core.ops.lowering(op, backend, when=...)`)."""
    def takes(node: Node) -> bool:
        when = OPS[node.op].lowerable.get(backend) if backend else None
        return when is None or when(node)

    missing = [n.op for n in graph.all_nodes() if n.op not in supported or not takes(n)]
    if missing:
        raise Unsupported(lowering, missing)


def straight_line(ops: Iterable[str]) -> frozenset[str]:
    """Those of `ops` that run as one call of their meaning: not control flow, whose subgraphs
    the torch lowerings (a GraphModule of meanings, nvFuser regions) do not take."""
    return frozenset(op for op in ops if not OPS[op].subgraphs)


def node_attrs(node: Node, device: str) -> dict:
    """The attrs a node's meaning (irlens.core.interpret.MEANINGS) runs with in a lowering, the declared
    defaults filled in. Creation
    ops and elementwise ops of literals only (JAX's `div 1.0 512.0`, the mean's cotangent) make
    their tensors on the lowering's device. Made on the CPU, a literal-only result broadcast into
    a CUDA op is a CPU operand, which Inductor's fake tensors and nvFuser's inputs refuse."""
    here = category(node.op) == CREATION or (category(node.op) == ELEMENTWISE and not node.value_inputs())
    attrs = dict(OPS[node.op].attrs_of(node.attrs))
    return dict(attrs, device=device) if here else attrs


class LoweredGraph(Protocol):
    def __call__(self, inputs: list) -> list: ...

    def kernels(self, cupti_taken: bool) -> list[Kernel]:
        """Its kernels, after it ran; `cupti_taken`: whether torch.profiler holds CUPTI in this process
        (CUPTI allows one subscriber: a backend's own profiler, nvFuser's, must not start then)."""
        ...

    def graphs(self) -> list[Graph]:
        """Common-view graphs the kernels' node ids refer to."""
        ...
