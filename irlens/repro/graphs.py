"""Smaller graphs of the common view: what the reducer tries.

- `subgraph(graph, keep)`: only the nodes in `keep`. A value a kept node reads that no kept node
  makes becomes a graph input (its value: what the dropped producer computes, see
  `irlens.repro.cases`); every value a kept node makes that no kept node reads becomes an output,
  so nothing a kept node computes goes unobserved.
- `shrink(graph, size, smaller)`: one dimension size made smaller everywhere it occurs (in value
  shapes and in the `shape`, `start` and `limit` attributes), multiples of it in proportion. The
  result is only a candidate: `shape_problem` runs it on the meta device and says whether its
  declared shapes still hold.
"""
from __future__ import annotations

import dataclasses

from irlens.core.ir import Graph, Node, TensorMeta
from irlens.core.ops import is_compute
from irlens.wording import plural

_SIZE_ATTRS = ("shape", "start", "limit")


def subgraph(graph: Graph, keep: list[str] | set[str]) -> Graph:
    keep = set(keep)
    nodes = [n for n in graph.nodes if n.id in keep]
    made = {o.name for n in nodes for o in n.outputs}
    read = [a for n in nodes for a in n.value_inputs()]
    values = graph.values()
    inputs = [values[name] for name in dict.fromkeys(read) if name not in made]
    read_set = set(read)
    outputs = [o.name for n in nodes for o in n.outputs if o.name not in read_set]
    outputs += [o for o in graph.outputs if isinstance(o, str) and o in made and o not in outputs]
    return dataclasses.replace(graph, inputs=inputs, nodes=nodes, outputs=outputs)


def compute_nodes(graph: Graph) -> int:
    return sum(1 for n in graph.nodes if is_compute(n.op))


def elements(graph: Graph) -> int:
    """Elements the graph's inputs and node outputs hold: how big its tensors are."""
    return sum(t.numel for t in graph.inputs) + sum(o.numel for n in graph.nodes for o in n.outputs)


def size_text(graph: Graph) -> str:
    return f"{plural(len(graph.nodes), 'node')} ({compute_nodes(graph)} compute), {_human(elements(graph))} elements"


def _human(n: int) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def dimension_sizes(graph: Graph) -> list[int]:
    """Sizes (> 1) of the graph's input dimensions, largest first: what `shrink` may try."""
    return sorted({d for t in graph.inputs for d in t.shape if d > 1}, reverse=True)


def shrink(graph: Graph, size: int, smaller: int) -> Graph:
    def dim(d: int) -> int:
        return d // size * smaller if d >= size and d % size == 0 else d

    def meta(t: TensorMeta) -> TensorMeta:
        return TensorMeta(t.name, tuple(dim(d) for d in t.shape), t.dtype)

    def node(n: Node) -> Node:
        attrs = dict(n.attrs)
        for key in _SIZE_ATTRS:
            if isinstance(attrs.get(key), (list, tuple)):
                attrs[key] = [dim(d) if isinstance(d, int) and d > 0 else d for d in attrs[key]]
        return dataclasses.replace(n, outputs=[meta(o) for o in n.outputs], attrs=attrs)

    return dataclasses.replace(graph, inputs=[meta(t) for t in graph.inputs], nodes=[node(n) for n in graph.nodes])


def shape_problem(graph: Graph) -> str:
    """Why the graph's declared shapes do not hold when it runs ("" when they do): its torch
    module (`irlens.backends.inductor.lower`) on meta tensors, every node's outputs against their TensorMeta."""
    import torch

    from irlens.core.interpret import TORCH_DTYPES
    from irlens.backends.inductor.lower import to_graph_module

    try:
        with_all = dataclasses.replace(graph, outputs=[o.name for n in graph.nodes for o in n.outputs])
        module = to_graph_module(with_all, "meta")
        inputs = [torch.empty(t.shape, dtype=TORCH_DTYPES[t.dtype], device="meta") for t in graph.inputs]
        with torch.no_grad():
            results = module(*inputs)
    except Exception as e:  # noqa: BLE001  (any failure: the candidate is ill-formed)
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    declared = [o for n in graph.nodes for o in n.outputs]
    for meta, value in zip(declared, results):
        if isinstance(value, torch.Tensor) and tuple(value.shape) != tuple(meta.shape):
            return f"{meta.name}: computes shape {tuple(value.shape)}, declares {meta.shape}"
    return ""


def as_float64(graph: Graph) -> Graph:
    """The graph with every floating value and dtype attribute in float64: what the reference runs.
    Unlike `irlens.core.interpret.float64_attrs`, a cast to a narrower float does not round here: the
    reference runs as one torch module (`irlens.backends.inductor.lower`), where a rounded bfloat16 value beside
    float64 ones would stop a matmul, and one rounding at a cast is within every tolerance."""
    from irlens.core.dtypes import TORCH_DTYPES

    def floating(dtype) -> bool:
        return dtype in TORCH_DTYPES and TORCH_DTYPES[dtype].is_floating_point

    def meta(t: TensorMeta) -> TensorMeta:
        return TensorMeta(t.name, t.shape, "float64" if floating(t.dtype) else t.dtype)

    def attrs(n: Node) -> dict:
        return {**n.attrs, "dtype": "float64"} if floating(n.attrs.get("dtype")) else n.attrs

    nodes = [dataclasses.replace(n, outputs=[meta(o) for o in n.outputs], attrs=attrs(n)) for n in graph.nodes]
    return dataclasses.replace(graph, inputs=[meta(t) for t in graph.inputs], nodes=nodes)
