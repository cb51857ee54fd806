"""What work costs: flops from the common view, and the fewest bytes a whole step can move.

Flops: a matmul a[.., m, k] @ b[.., k, n] is 2·m·n·k per batch element; an elementwise op one
per output element; a reduction one per input element; a composite op costs what its
primitive expansion costs, except that causal attention needs only the unmasked half of its
score matmuls. A kernel does the flops of the nodes it computes, recomputed ones included; the
second kernel of a split reduction only adds up the first one's partial results.

Only the matmul flops are exact. The elementwise and reduction counts estimate the work, not the
instructions (against Nsight Compute's instruction counts, fused elementwise kernels are off by
-95 % to +601 %): `matmul_only` counts the exact part alone, and a compute bound is judged on it
(irlens.reporting.ceiling).

A kernel's bytes do not come from here: they are the buffers the kernel itself reads and
writes, read from the backend's own records (`Kernel.bytes`: Inductor's wrapper code, XLA's
optimized HLO, Thunder's regions and nvFuser's segments). The common view says what values
exist, not which of them a backend keeps in registers or passes through memory.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from irlens.core import ops
from irlens.core.ir import Graph, Kernel, Node, TensorMeta


@dataclass(frozen=True)
class Gemm:
    """A matrix product's shape: `batch` products of [m, k] @ [k, n]."""

    batch: int
    m: int
    n: int
    k: int

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    def __str__(self) -> str:
        product = f"[{self.m}x{self.k}]@[{self.k}x{self.n}]"
        return f"{self.batch} x {product}" if self.batch > 1 else product


def _numel(shape) -> int:
    return math.prod(shape) if shape else 1


def matmul_flops(node: Node, values: dict[str, TensorMeta]) -> int:
    a, b = (values.get(x) for x in node.value_inputs()[:2])
    out = node.outputs[0]
    if a is None or b is None:
        return 0
    if "contract" in node.attrs:
        k = _numel([a.shape[d] for d in node.attrs["contract"][0]])
    else:
        k = a.shape[-1] if a.shape else 1
    return 2 * _numel(out.shape) * k


def node_flops(node: Node, values: dict[str, TensorMeta], matmul_only: bool = False) -> int:
    cat = ops.category(node.op)
    if cat == ops.MATMUL:
        return matmul_flops(node, values)
    if cat == ops.COMPOSITE:
        return _composite_flops(node, values, matmul_only)
    if matmul_only:
        return 0
    if cat == ops.ELEMENTWISE:
        return sum(_numel(o.shape) for o in node.outputs)
    if cat == ops.REDUCTION:
        ins = [values[x] for x in node.value_inputs() if x in values]
        return sum(_numel(t.shape) for t in ins)
    return 0


def _composite_flops(node: Node, values: dict[str, TensorMeta], matmul_only: bool) -> int:
    from irlens.core.decompose import to_primitive

    ins = [values[x] for x in node.value_inputs() if x in values]
    g = to_primitive(Graph("cost", "cost", "cost", "composite", ins, [node], []))
    vals = {**values, **g.values()}
    causal = node.op in ("sdpa", "sdpa_backward") and node.attrs.get("is_causal")
    total = 0
    for n in g.nodes:
        f = node_flops(n, vals, matmul_only)
        total += f // 2 if causal and n.op == "matmul" else f
    return total


def graph_flops(graph: Graph, matmul_only: bool = False) -> int:
    values = graph.values()
    return sum(node_flops(n, values, matmul_only) for n in graph.nodes)


# a split reduction's partial results: float32, as Inductor accumulates
PARTIAL_ITEMSIZE = 4


def kernel_flops(kernel: Kernel, graph: Graph, matmul_only: bool = False) -> int:
    """Flops a kernel does: those of the nodes it covers and those it recomputes (0 for a kernel
    that covers no compute node: a copy, a layout change); the second kernel of a split
    reduction (`Kernel.combines`) adds up the partial results it reads, one flop each (an
    estimate: not counted with `matmul_only`)."""
    inside = set(kernel.node_ids) | set(kernel.recompute)
    values = graph.values()
    partials = (kernel.bytes_read or 0) // PARTIAL_ITEMSIZE if kernel.combines and not matmul_only else 0
    return sum(node_flops(n, values, matmul_only) for n in graph.nodes if n.id in inside) + partials


def gemm_shapes(graph: Graph) -> list[Gemm]:
    """The matrix products a graph does (its composite ops expanded: linear, attention's score
    and value products), as (batch, m, n, k) at their operands' shapes. A batch against one
    shared matrix (a linear layer's weight) is one product of the stacked rows, as torch runs it."""
    from irlens.core.decompose import to_primitive

    primitive = to_primitive(graph) if graph.level == "composite" else graph
    values = primitive.values()
    found = []
    for n in primitive.nodes:
        if ops.category(n.op) != ops.MATMUL or not n.outputs:
            continue
        out = n.outputs[0].shape
        flops = matmul_flops(n, values)
        if len(out) < 2 or not flops:
            continue
        batch, m, nn = _numel(out[:-2]), out[-2], out[-1]
        k = flops // (2 * batch * m * nn)
        rhs = values.get(n.value_inputs()[1]) if len(n.value_inputs()) > 1 else None
        if rhs is not None and len(rhs.shape) == 2 and "contract" not in n.attrs:
            batch, m = 1, batch * m
        found.append(Gemm(batch, m, nn, k))
    return found


def workload_bytes(inst, results: dict) -> int:
    """The fewest bytes a whole step can move: inputs and parameters read once, outputs
    (and in fwdbwd the gradients) written once, at the instance's dtype."""
    import torch

    def nbytes(t) -> int:
        return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0

    read = sum(nbytes(t) for t in inst.inputs) + sum(nbytes(p) for p in inst.params().values())
    itemsize = torch.empty((), dtype=inst.torch_dtype).element_size()
    written = sum(t.numel() * (itemsize if t.is_floating_point() else t.element_size())
                  for name, t in results.items() if isinstance(t, torch.Tensor) and name != "loss")
    return read + written
