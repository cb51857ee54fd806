"""The collective-matmul fusion pass: async tensor parallelism on the tp group."""
from __future__ import annotations

from torch import fx

from irlens.parallel.parallelize.simple_fsdp import TP_DIM
from irlens.parallel.passes.summary import PassContext


def async_tensor_parallel(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Inductor's micro-pipeline TP on the tp group (irlens.parallel.parallelize.async_tp), on the graph in the
    form Inductor's post-grad passes see it (views as reshapes, which its patterns match)."""
    from torch._inductor.fx_passes.post_grad import view_to_reshape

    from irlens.parallel.parallelize.async_tp import micro_pipeline

    if TP_DIM not in ctx.groups:
        ctx.note = "no tp mesh dimension: nothing to pipeline"
        return gm
    view_to_reshape(gm)
    gm, ctx.note = micro_pipeline(gm, ctx.groups[TP_DIM])
    return gm
