"""vmap in Dynamo's FX graphs, expanded by functorch's own batching rules.

Dynamo inlines `torch.vmap` (transformers' Mamba scans with it): between
`_vmap_increment_nesting(batch_size, randomness)` and `_vmap_decrement_nesting()`,
`_add_batch_dim(x, in_dim, level)` hides dim `in_dim` of x, the calls after it see one example
(their shapes lack that dim), and `_remove_batch_dim(y, level, batch_size, out_dim)` puts it
back. No call of such a region computes alone what its node says: what it computes depends on
the batched tensors around it. So the region is read as the ATen graph `make_fx` traces of it
on fake values, where functorch's batching rules turn each call into the ATen ops on whole
tensors (as AOTAutograd's graphs hold them). A region that does not trace stays as it is: its
batch-dim calls are unknown, and counted.
"""
from __future__ import annotations

import torch
from torch import fx

_START, _END = "_vmap_increment_nesting", "_vmap_decrement_nesting"


def _called(node: fx.Node) -> str:
    return getattr(node.target, "__name__", "") if node.op == "call_function" else ""


def has_vmap(gm: fx.GraphModule) -> bool:
    return any(_called(n) == _START for n in gm.graph.nodes)


def regions(graph: fx.Graph) -> list[list[fx.Node]]:
    """The outermost vmap regions, each from its nesting increment to its decrement (vmap of vmap nests)."""
    found, depth, current = [], 0, []
    for node in graph.nodes:
        name = _called(node)
        if name == _START:
            depth += 1
        if depth:
            current.append(node)
        if name == _END:
            depth -= 1
            if depth == 0:
                found.append(current)
                current = []
    return found


def expand_vmap(gm: fx.GraphModule) -> fx.GraphModule:
    """A copy of `gm` with each vmap region replaced by its ATen graph (`gm` itself is left as is);
    `gm` itself where it holds no vmap region."""
    if not has_vmap(gm):
        return gm
    graph = fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    out = fx.GraphModule(gm, graph)
    for region in regions(out.graph):
        _replace(out, region)
    out.graph.lint()
    out.recompile()
    return out


def _replace(gm: fx.GraphModule, region: list[fx.Node]) -> None:
    inside = set(region)
    inputs = list(dict.fromkeys(a for n in region for a in n.all_input_nodes if a not in inside))
    outputs = [n for n in region if any(u not in inside for u in n.users)]
    traced = _traced(gm, region, inputs, outputs)
    if traced is None:
        return
    scope = next((n.meta["nn_module_stack"] for n in region if n.meta.get("nn_module_stack")), None)
    placeholders = [n for n in traced.graph.nodes if n.op == "placeholder"]
    before = set(gm.graph.nodes)
    with gm.graph.inserting_before(region[0]):
        values = gm.graph.graph_copy(traced.graph, dict(zip(placeholders, inputs)))
    for node in gm.graph.nodes:
        if node not in before and scope is not None:  # the module the region ran in
            node.meta["nn_module_stack"] = scope
    for old, new in zip(outputs, values):
        old.replace_all_uses_with(new)
    for node in reversed(region):
        gm.graph.erase_node(node)


def _traced(gm: fx.GraphModule, region: list[fx.Node], inputs: list[fx.Node],
            outputs: list[fx.Node]) -> fx.GraphModule | None:
    """make_fx of the region as a function of its inputs, on fake tensors of their shapes; None
    when it does not trace."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    sub = fx.Graph()
    env = {n: sub.placeholder(f"in{i}") for i, n in enumerate(inputs)}
    for node in region:
        env[node] = sub.node_copy(node, env.__getitem__)
    sub.output(tuple(env[n] for n in outputs))
    examples = [n.meta.get("val", n.meta.get("example_value")) for n in inputs]
    if not all(isinstance(v, torch.Tensor) for v in examples):
        return None
    try:
        with FakeTensorMode():
            args = [torch.empty_strided(v.shape, v.stride(), dtype=v.dtype) for v in examples]
            return make_fx(fx.GraphModule(gm, sub))(*args)
    except Exception:  # noqa: BLE001  (a region that does not trace keeps its batch-dim calls, unknown)
        return None
