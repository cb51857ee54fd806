"""What work must cost: bytes moved and flops done, from the common view.

Bytes: each input read once, each output written once (a kernel's reads are the values it
uses that something outside it produced; its writes are the values it produces that are
used outside it or returned). Flops: a matmul a[.., m, k] @ b[.., k, n] is 2·m·n·k per
batch element; an elementwise op one per output element; a reduction one per input
element; a composite op costs what its primitive expansion costs, except that causal
attention needs only the unmasked half of its score matmuls.
"""
from __future__ import annotations

import math
from typing import Iterable

from irlens import ops
from irlens.ir import Graph, Kernel, Node, TensorMeta


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


def node_flops(node: Node, values: dict[str, TensorMeta]) -> int:
    cat = ops.category(node.op)
    if cat == ops.MATMUL:
        return matmul_flops(node, values)
    if cat == ops.ELEMENTWISE:
        return sum(_numel(o.shape) for o in node.outputs)
    if cat == ops.REDUCTION:
        ins = [values[x] for x in node.value_inputs() if x in values]
        return sum(_numel(t.shape) for t in ins)
    if cat == ops.COMPOSITE:
        return _composite_flops(node, values)
    return 0


def _composite_flops(node: Node, values: dict[str, TensorMeta]) -> int:
    from irlens.ir_adapters.decompose import to_primitive

    ins = [values[x] for x in node.value_inputs() if x in values]
    g = to_primitive(Graph("cost", "cost", "cost", "composite", ins, [node], []))
    vals = {**values, **g.values()}
    causal = node.op in ("sdpa", "sdpa_backward") and node.attrs.get("is_causal")
    total = 0
    for n in g.nodes:
        f = node_flops(n, vals)
        total += f // 2 if causal and n.op == "matmul" else f
    return total


def graph_flops(graph: Graph) -> int:
    values = graph.values()
    return sum(node_flops(n, values) for n in graph.nodes)


def kernel_io(kernel: Kernel, graph: Graph) -> tuple[list[TensorMeta], list[TensorMeta], list[TensorMeta]]:
    """(reads, writes, internal) values of a kernel over `graph`: internal ones never reach memory."""
    inside = set(kernel.node_ids) | set(kernel.recompute)
    nodes = [n for n in graph.nodes if n.id in inside]
    values = graph.values()
    produced = {o.name for n in nodes for o in n.outputs}
    reads = _unique(values[v] for n in nodes for v in n.value_inputs() if v not in produced and v in values)
    used_outside = {v for n in graph.nodes if n.id not in inside for v in n.value_inputs()}
    returned = {o for o in graph.outputs if isinstance(o, str)}
    writes, internal = [], []
    for n in nodes:
        for o in n.outputs:
            (writes if o.name in used_outside or o.name in returned else internal).append(o)
    return reads, writes, internal


def kernel_cost(kernel: Kernel, graph: Graph) -> tuple[int, int]:
    """(bytes, flops) a kernel must move and do."""
    reads, writes, _ = kernel_io(kernel, graph)
    values = graph.values()
    flops = sum(node_flops(n, values) for n in graph.nodes if n.id in set(kernel.node_ids))
    return sum(t.nbytes for t in reads) + sum(t.nbytes for t in writes), flops


def _unique(metas: Iterable[TensorMeta]) -> list[TensorMeta]:
    seen: dict[str, TensorMeta] = {}
    for m in metas:
        seen.setdefault(m.name, m)
    return list(seen.values())


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
