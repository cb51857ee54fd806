"""Running the passes: the joint passes on the joint graph, the partitioner's choice, the forward/backward
passes on each partitioned graph, each pass recorded."""
from __future__ import annotations

from collections import Counter
from typing import Callable

from torch import fx

from irlens.parallel.passes.registry import GRAPH_PASSES, JOINT_PASSES
from irlens.parallel.passes.summary import GraphSummary, PassContext, PassRecord


def _record_start(gm: fx.GraphModule, ctx: PassContext, what: str, note: str = "") -> None:
    s = GraphSummary.of(gm)
    ctx.records.append(PassRecord(ctx.stage, what, s, s, note))


def run_joint_passes(gm: fx.GraphModule, names: list[str], ctx: PassContext) -> fx.GraphModule:
    _record_start(gm, ctx, "capture")
    for name in names:
        before, tagged = GraphSummary.of(gm), recompute_tags(gm)
        gm = JOINT_PASSES[name].fn(gm, ctx)
        after = recompute_tags(gm)
        note = f"recompute tags: {tagged} -> {after}" if after != tagged else ""
        ctx.records.append(PassRecord("joint", name, before, GraphSummary.of(gm), note))
    return gm


def recompute_tags(gm: fx.GraphModule) -> dict[str, int]:
    """How many nodes carry each activation-checkpoint policy (what the tagging passes change)."""
    return dict(Counter(n.meta["recompute"].name for n in gm.graph.nodes if "recompute" in n.meta))


def choose_partitioner(joint: fx.GraphModule, passes: list[str]) -> tuple[Callable, str]:
    """The min-cut partitioner where a pass compiles the whole graph (Inductor fuses what it
    recomputes in the backward into kernels it launches anyway) or joint passes tagged what to
    recompute (activation checkpointing, resharding: only the min-cut honours the tags). Else the
    default partition: it saves what eager autograd saves, where the min-cut would recompute
    casts, norms and activations as separate unfused kernels (slower than eager)."""
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

    if any(GRAPH_PASSES[n].fuses_graph for n in passes) or recompute_tags(joint):
        return min_cut_rematerialization_partition, "min-cut partitioner: recomputes cheap ops in the backward"
    return default_partition, "default partitioner: saves what eager saves, recomputes nothing"


def run_graph_passes(gm: fx.GraphModule, names: list[str], ctx: PassContext) -> Callable:
    """Apply `names` to a forward or backward graph; returns the boxed callable AOTAutograd runs.
    A pass returns a graph (it stays inspectable: summaries, dumps) or an opaque compiled callable."""
    compiled = None
    _record_start(gm, ctx, "partition", ctx.partitioner)
    for name in names:
        p = GRAPH_PASSES[name]
        before = GraphSummary.of(gm)
        ctx.note = ""
        out = p.fn(compiled or gm, ctx)
        if isinstance(out, fx.GraphModule):
            gm = out
            ctx.records.append(PassRecord(ctx.stage, name, before, GraphSummary.of(gm), ctx.note))
        else:
            compiled = out
            ctx.records.append(PassRecord(ctx.stage, name, before, None, ctx.note or p.description))
    ctx.graphs[ctx.stage] = gm
    return compiled or run_graph(gm)


def run_graph(gm: fx.GraphModule) -> Callable:
    """Run the graph's generated Python code (not fx.Interpreter: no per-node Python dispatch),
    with AOTAutograd's boxed calling convention."""
    from torch._functorch.aot_autograd import make_boxed_func
    from torch.fx.graph import _BoxedCodeGen

    if not isinstance(gm.graph._codegen, _BoxedCodeGen):
        return make_boxed_func(gm.forward)

    def run(args: list):  # regional_inductor's graphs already take the one list
        return gm(args)

    run._boxed_call = True
    return run
