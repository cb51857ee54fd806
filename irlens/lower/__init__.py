"""Lowerings of the common view to a backend: one graph in, a compiled callable out.

Each lowering takes the `primitive` view (decomposition is an explicit pass before any
backend, DESIGN.md) and states the ops it supports (`SUPPORTED`); a graph holding any other
op raises `Unsupported`, naming them, and the cross cell is `unavailable`. A lowered graph
runs on torch tensors in the graph's dtypes and returns torch tensors, so
`irlens.bindings.run_program` chains lowered forward and backward graphs like interpreted
ones. After its first call it reports the kernels the backend launched (`kernels()`).
"""
from __future__ import annotations

from typing import Protocol, Sequence

from irlens.frontends.base import Unavailable
from irlens.ir import Graph, Kernel

LEVEL = "primitive"


class Unsupported(Unavailable):
    def __init__(self, lowering: str, ops: Sequence[str]):
        self.ops = sorted(set(ops))
        super().__init__(f"the {lowering} lowering does not support: {', '.join(self.ops)}")


def check_supported(graph: Graph, supported: frozenset[str], lowering: str) -> None:
    missing = [n.op for n in graph.nodes if n.op not in supported]
    if missing:
        raise Unsupported(lowering, missing)


class LoweredGraph(Protocol):
    def __call__(self, inputs: list) -> list: ...

    def kernels(self) -> list[Kernel]: ...

    def graphs(self) -> list[Graph]:
        """Common-view graphs the kernels' node ids refer to."""
        ...
