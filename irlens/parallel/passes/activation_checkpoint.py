"""Joint passes that tag what the backward recomputes: op-level selective activation checkpointing,
and FSDP's reshard after forward (the parameters gathered again in the backward)."""
from __future__ import annotations

import operator

from torch import fx

from irlens.parallel.models.llama3.model import MODULE_KEY
from irlens.parallel.passes.summary import PassContext, collective_kind


_SAVE_TARGETS = {
    "aten.mm.default", "aten.addmm.default", "aten.bmm.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "aten._scaled_dot_product_flash_attention.default", "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default", "flex_attention",
}


def _is_saved_op(node: fx.Node) -> bool:
    return str(node.target) in _SAVE_TARGETS or collective_kind(node) is not None


def _forward_nodes(gm: fx.GraphModule) -> list[fx.Node]:
    """Nodes of the joint graph that do not depend on a tangent (the forward part)."""
    backward: set[fx.Node] = set()
    for n in gm.graph.nodes:
        if (n.op == "placeholder" and "tangents" in n.name) or any(a in backward for a in n.all_input_nodes):
            backward.add(n)
    return [n for n in gm.graph.nodes if n.op == "call_function" and n not in backward]


def _layer_id(node: fx.Node) -> int | None:
    scope = (node.meta.get("custom") or {}).get(MODULE_KEY, "")
    return int(scope.split(".")[1]) if scope.startswith("layers.") else None


def selective_activation_checkpoint(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Per transformer block, keep the outputs of matmuls, attention and collectives; mark every
    other forward op to be recomputed in the backward (op-level SAC, as torchtitan's policy)."""
    from torch.utils.checkpoint import CheckpointPolicy

    for node in _forward_nodes(gm):
        layer = _layer_id(node)
        if layer is None or "recompute" in node.meta:
            continue
        save = _is_saved_op(node) or (node.target is operator.getitem and _is_saved_op(node.args[0]))
        node.meta["recompute"] = CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
        node.meta["ac_graph_id"] = layer
    return gm


_VIEW_OR_CAST = {"aten.view.default", "aten.t.default", "aten.permute.default", "aten.transpose.int",
                 "aten._unsafe_view.default", "aten.reshape.default", "aten.slice.Tensor", "aten.split.Tensor",
                 "aten.split_with_sizes.default", "aten.cat.default", "aten._to_copy.default",
                 "prims.convert_element_type.default", "aten.clone.default", "aten.contiguous.default",
                 "aten.expand.default", "aten.unsqueeze.default", "aten.squeeze.dim", "aten.alias.default"}


def fsdp_reshard_after_forward(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Mark each forward parameter all-gather, its wait and the views and casts that lead to the
    compute as must-recompute: the partitioner then saves the shard, not the gathered tensor,
    and the backward gathers again (FSDP's reshard_after_forward=True)."""
    from torch.utils.checkpoint import CheckpointPolicy

    # one graph-wide id keeps cleanup_recompute_tags from pinning the chain's last node as saved
    for node in _forward_nodes(gm):
        if collective_kind(node) != "all_gather" or not _gathers_parameter(node):
            continue
        chain, frontier = [node], [node]
        while frontier:
            for user in frontier.pop().users:
                if collective_kind(user) == "wait" or str(user.target) in _VIEW_OR_CAST or user.target is operator.getitem:
                    chain.append(user)
                    frontier.append(user)
        for n in chain:
            n.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE
            n.meta["ac_graph_id"] = 0
    return gm


def _gathers_parameter(node: fx.Node) -> bool:
    """The all-gather's input comes from a parameter placeholder through views and casts only."""
    x = node.args[0]
    while isinstance(x, fx.Node) and x.op == "call_function" and str(x.target) in _VIEW_OR_CAST:
        x = x.args[0]
    desc = getattr(x, "meta", {}).get("desc") if isinstance(x, fx.Node) else None
    return x.op == "placeholder" and "Param" in type(getattr(desc, "base", desc)).__name__
