"""What one kernel does, in terms of the common view.

A kernel covers common-view nodes (Kernel.node_ids, plus the nodes it recomputes). From the
graph's dataflow alone:
  reads       values produced outside the kernel (or graph inputs) that a node inside consumes;
  writes      values its own nodes produce that a node outside consumes, or that the graph returns;
  internal    values produced inside, consumed inside and not written: they never reach memory
              (a value the kernel recomputes counts here: the kernel that owns its node writes it);
  reductions  the reduction ops inside (sum, amax, ... with their dims), composites that
              reduce (softmax, layer_norm, ...) and matmuls (the contracted dimension).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from irlens.core.ir import Graph, Kernel, Node, TensorMeta
from irlens.core.ops import REDUCTION, category

# Composite ops that reduce inside: the dim attribute they reduce over.
REDUCING_COMPOSITES = {"softmax": "dim", "log_softmax": "dim", "mean": "dims", "var": "dims",
                       "layer_norm": "normalized_ndim", "rms_norm": "normalized_ndim",
                       "softmax_backward": "dim", "log_softmax_backward": "dim", "layer_norm_backward": "normalized_ndim"}


@dataclass
class KernelExplanation:
    kernel: Kernel
    index: int
    graph: Graph | None
    nodes: list[Node] = field(default_factory=list)  # the fused ops, graph order
    recomputed: list[Node] = field(default_factory=list)
    reads: list[TensorMeta] = field(default_factory=list)
    writes: list[TensorMeta] = field(default_factory=list)
    internal: list[TensorMeta] = field(default_factory=list)
    reductions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # node ids the record names but the graph lacks


def explain_kernel(kernel: Kernel, graph: Graph | None, index: int = 0) -> KernelExplanation:
    expl = KernelExplanation(kernel, index, graph)
    if graph is None:
        return expl
    ids = {n.id for n in graph.nodes}
    expl.missing = [i for i in [*kernel.node_ids, *kernel.recompute] if i not in ids]
    own, again = set(kernel.node_ids), set(kernel.recompute)
    expl.nodes = [n for n in graph.nodes if n.id in own]
    expl.recomputed = [n for n in graph.nodes if n.id in again and n.id not in own]
    inside = expl.nodes + expl.recomputed
    inside_ids = {n.id for n in inside}
    values = graph.values()
    produced = {o.name: o for n in inside for o in n.outputs}
    used_outside = {v for n in graph.nodes if n.id not in inside_ids for v in n.value_inputs()}
    used_inside = {v for n in inside for v in n.value_inputs()}
    returned = {o for o in graph.outputs if isinstance(o, str)}
    expl.reads = [values[v] for v in dict.fromkeys(v for n in inside for v in n.value_inputs())
                  if v not in produced and v in values]
    # A recomputed value is written (if at all) by the kernel that owns its node, not by this one.
    own_values = {o.name for n in expl.nodes for o in n.outputs}
    expl.writes = [m for v, m in produced.items() if v in own_values and (v in used_outside or v in returned)]
    written = {m.name for m in expl.writes}
    expl.internal = [m for v, m in produced.items() if v in used_inside and v not in written]
    expl.reductions = [r for n in inside if (r := describe_reduction(n, values))]
    return expl


def describe_reduction(node: Node, values: dict[str, TensorMeta]) -> str:
    """One line for a node that reduces; "" for one that does not."""
    ins = [values[v] for v in node.value_inputs() if v in values]
    src = f"{ins[0]}" if ins else "?"
    dst = f"{node.outputs[0]}" if node.outputs else "?"
    if category(node.op) == REDUCTION:
        dims = node.attrs.get("dims", node.attrs.get("dim"))
        keep = ", keepdim" if node.attrs.get("keepdim") else ""
        return f"{node.id}: {node.op} over dims {dims} of {src} -> {dst}{keep}"
    if node.op in REDUCING_COMPOSITES:
        key = REDUCING_COMPOSITES[node.op]
        return f"{node.id}: {node.op} reduces over {key}={node.attrs.get(key)} of {src} -> {dst}"
    if node.op == "matmul" and len(ins) >= 2 and ins[0].shape:
        lhs_dims = (node.attrs.get("contract") or [[len(ins[0].shape) - 1]])[0]
        sizes = " x ".join(str(ins[0].shape[d]) for d in lhs_dims if d < len(ins[0].shape))
        noun = "a dimension" if len(lhs_dims) == 1 else "dimensions"
        return f"{node.id}: matmul {ins[0]} @ {ins[1]} contracts {noun} of size {sizes} -> {dst}"
    return ""
