"""The passes that run Inductor: its decomposition table on the joint graph, its compile of the
annotated regions or of the whole graph."""
from __future__ import annotations

import warnings
from typing import Callable

import torch
from torch import fx

from irlens.parallel.models.llama3.model import REGION_KEY
from irlens.parallel.passes.summary import PassContext


def inductor_decomposition(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Retrace the joint graph through Inductor's decomposition table (as a full Inductor compile
    would at its start), keeping each node's annotations and the placeholders' descriptors."""
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    old_placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    old_output = gm.graph.output_node()

    def run(*args):
        with torch.fx.traceback.preserve_node_meta():
            return fx.Interpreter(gm).run(*args)

    new = make_fx(run, decomposition_table=select_decomp_table())(*ctx.example_inputs)
    for old, ph in zip(old_placeholders, (n for n in new.graph.nodes if n.op == "placeholder")):
        ph.meta.update({k: v for k, v in old.meta.items() if k not in ("val", "tensor_meta")})
        ph.name = ph.target = old.name  # keep primals_/tangents_ names: the partitioner reads them
    new.graph.output_node().meta.update({k: v for k, v in old_output.meta.items() if k != "val"})
    new.recompile()
    return new


def regional_inductor(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Compile only the regions annotated `compile_with_inductor` (FlexAttention, RoPE) with Inductor;
    each becomes one call_module node of the graph."""
    from torch.fx.passes.regional_inductor import regional_inductor as compile_regions

    if not any(REGION_KEY in (n.meta.get("custom") or {}) for n in gm.graph.nodes):
        warnings.warn(f"regional_inductor: no node of the {ctx.stage} graph is annotated {REGION_KEY!r}; nothing compiled",
                      stacklevel=2)
    return compile_regions(gm, *ctx.example_inputs)


def full_inductor_compilation(gm: fx.GraphModule, ctx: PassContext) -> Callable:
    """Inductor's whole-graph compile (compile_fx_inner): fused kernels, different rounding."""
    from torch._inductor.compile_fx import compile_fx_inner

    return compile_fx_inner(gm, ctx.example_inputs, is_backward=ctx.stage == "backward")
