"""Bucketing passes: collectives grouped and reordered against compute, one bucket per transformer
block or by Inductor's cost model (on the CPU an analytical one)."""
from __future__ import annotations

import contextlib
import inspect

import torch
from torch import fx

from irlens.parallel.models.llama3.model import MODULE_KEY
from irlens.parallel.passes.summary import PassContext, bucket_bytes, collective_kind


def _module_stack(node: fx.Node) -> list[tuple[str, type]]:
    scope = (node.meta.get("custom") or {}).get(MODULE_KEY)
    return [(scope, torch.nn.Module)] if scope else []


def block_plans(gm: fx.GraphModule) -> list[str]:
    """The module scopes of the graph, in first-appearance order: one bucket each."""
    seen: dict[str, None] = {}
    for node in gm.graph.nodes:
        for scope, _ in _module_stack(node):
            seen.setdefault(scope)
    return list(seen)


# On a CPU-only torch, Inductor's overlap scheduler cannot estimate costs (its roofline asks
# Triton for the GPU's bandwidth: ModuleNotFoundError: triton). There it gets this stated
# analytical model instead: enough to decide buckets and order for a dump, not a measurement.
CPU_MATMUL_FLOPS = 1e11  # FLOP/s
CPU_COLLECTIVE_BYTES_PER_S = 1e10
_MATMULS = {"aten.mm.default": 0, "aten.bmm.default": 0, "aten.addmm.default": 1}  # target -> lhs arg index


def cpu_runtime_estimate(node: fx.Node, override_size: int | None = None) -> float:
    """Milliseconds: matmuls and collectives by size, everything else free."""
    kind = collective_kind(node)
    if kind is not None and kind != "wait":
        size = override_size if override_size is not None else bucket_bytes(node, kind)
        return 1e3 * size / CPU_COLLECTIVE_BYTES_PER_S
    lhs = _MATMULS.get(str(node.target))
    if lhs is None or "val" not in node.meta:
        return 0.0
    k = node.args[lhs].meta["val"].shape[-1]
    return 1e3 * 2 * node.meta["val"].numel() * k / CPU_MATMUL_FLOPS


@contextlib.contextmanager
def _cost_model():
    """Yields the scheduler's cost-estimate arguments: none (its own) on a GPU, the CPU model above else."""
    if torch.cuda.is_available():
        yield {}
        return
    from unittest import mock

    from torch._inductor.fx_passes import overlap_scheduling

    with mock.patch.object(overlap_scheduling, "estimate_roofline_runtime_ms", cpu_runtime_estimate):
        yield {"custom_runtime_estimation": cpu_runtime_estimate, "compute_estimator": "analytical"}


def transformer_block_bucketing(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """One all-gather and one reduce-scatter bucket per transformer block (and per embedding, norm
    and output), each prefetched one block ahead (overlap_manual_scheduling)."""
    from torch._inductor.fx_passes.overlap_manual_scheduling import manual_overlap_bucketing

    plans = block_plans(gm)
    kwargs = {"module_stack_fn": _module_stack}
    if "module_stack_fn" not in inspect.signature(manual_overlap_bucketing).parameters:
        # older torch reads the module path from nn_module_stack meta only: write ours there
        # (our annotation; the joint export itself records none)
        kwargs = {}
        for node in gm.graph.nodes:
            for scope, cls in _module_stack(node):
                node.meta["nn_module_stack"] = {scope: (scope, cls)}
    # the manual plan ignores cost estimates, but the scheduler's constructor still computes them
    with _cost_model():
        return manual_overlap_bucketing(gm, plans, **kwargs)


def autobucketing_reordering(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Inductor's overlap scheduler: buckets collectives and reorders them against compute, from
    cost estimates of both (on the CPU from `cpu_runtime_estimate`)."""
    from torch._inductor.fx_passes.overlap_scheduling import schedule_overlap_bucketing

    if not torch.cuda.is_available():
        ctx.note = (f"CPU: analytical costs (matmul {CPU_MATMUL_FLOPS:.0e} FLOP/s, "
                    f"collectives {CPU_COLLECTIVE_BYTES_PER_S:.0e} B/s), not GPU estimates")
    with _cost_model() as estimates:
        return schedule_overlap_bucketing(gm, collective_bucketing=True, **estimates)
