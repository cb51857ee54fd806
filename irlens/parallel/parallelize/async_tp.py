"""Async tensor parallelism: Inductor's micro-pipeline TP pass on the forward and backward graphs.

With sequence parallelism each column-wise pair starts with an all-gather of the sequence shards
that feeds matmuls, and each row-wise linear ends with a matmul that feeds a reduce-scatter.
`torch._inductor.fx_passes.micro_pipeline_tp.micro_pipeline_tp_pass` (the pass Inductor runs on
its post-grad graph when `config._micro_pipeline_tp` is set, as torchtitan's async TP does)
rewrites each such pair into one `symm_mem.fused_all_gather_matmul` or
`symm_mem.fused_matmul_reduce_scatter`: the collective is cut into per-rank chunks moved through
symmetric memory (peer-to-peer copies over NVLink) while the matmul consumes the chunks already
there, so the communication hides behind the matmul instead of preceding or following it.

Here it runs as a graph pass of its own, before bucketing and compilation, so the summaries and
dumps show what it fused (with `full_inductor_compilation` Inductor then compiles the fused ops as
extern kernels). It needs symmetric memory on the tp group: CUDA devices with peer access, a torch
built with NCCL; `unavailable_reason` probes that on the ranks before anything is compiled, and the
run stops with the reason (`PassUnavailable`) where it is missing. Multicast (NVLS) is not needed:
without it (TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NCCL_NVLS_ENABLE=0 on the hosts here) the fused
ops take their peer-to-peer path instead of the multimem one.
"""
from __future__ import annotations

import warnings
from collections import Counter

import torch
from torch import fx

from irlens.logs import quiet_logger

# the fused ops by op name -> the kind pass summaries count them as
FUSED_OPS = {"fused_all_gather_matmul": "all_gather_matmul", "fused_matmul_reduce_scatter": "matmul_reduce_scatter"}
WORKSPACE_BYTES = 1 << 20  # the probe's symmetric-memory workspace; the fused ops grow it as they need


class PassUnavailable(RuntimeError):
    """A pass asked for cannot run on this machine (the reason says why); every rank raises it."""


def enable_symmetric_memory(group_name: str) -> None:
    """Symmetric memory for the group (torch 2.13 deprecates the call, but the micro-pipeline
    pass still fuses only for groups it was made for)."""
    from torch.distributed._symmetric_memory import enable_symm_mem_for_group

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        enable_symm_mem_for_group(group_name)


def unsupported_here(device: str) -> str | None:
    """Why this machine cannot have symmetric memory at all (before any rank starts), or None."""
    import torch.distributed as dist

    if device != "cuda":
        return "symmetric memory needs CUDA devices (on the CPU, gloo has no symmetric memory)"
    if not torch.cuda.is_available():
        return "symmetric memory needs CUDA devices, and torch sees none here"
    if not dist.is_nccl_available():
        return "this torch is built without NCCL, which the fused collective-matmul ops require"
    return None


def unavailable_reason(group_name: str) -> str | None:
    """Why this rank cannot use symmetric memory on the group, or None: the fused ops' own
    workspace is allocated and exchanged with the group's ranks (a collective: every rank of the
    group calls it)."""
    reason = unsupported_here("cuda")
    if reason:
        return reason
    try:
        from torch.distributed._symmetric_memory import get_symm_mem_workspace

        enable_symmetric_memory(group_name)
        get_symm_mem_workspace(group_name, WORKSPACE_BYTES)
    except Exception as e:  # the runtime's own message is the reason (no P2P, no IPC handles, ...)
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        return f"symmetric memory could not be set up for the tp group: {type(e).__name__}: {first}"
    return None


def require_symmetric_memory(group_name: str) -> None:
    """On every rank: probe symmetric memory on the tp group; all ranks agree (one failing rank
    stops all) and raise PassUnavailable with the first reason."""
    import torch.distributed as dist

    reason = unavailable_reason(group_name)
    flags = [None] * dist.get_world_size()
    dist.all_gather_object(flags, reason)
    reasons = [r for r in flags if r]
    if reasons:
        raise PassUnavailable(f"async_tensor_parallel: {reasons[0]}")


def micro_pipeline(gm: fx.GraphModule, tp_group: str) -> tuple[fx.GraphModule, str]:
    """Fuse the graph's all-gather -> matmul and matmul -> reduce-scatter pairs on the tp group;
    returns the graph and a note of the tp collectives left unfused (and why none could fuse)."""
    import torch.distributed as dist
    from torch._inductor.fx_passes.micro_pipeline_tp import micro_pipeline_tp_pass

    enable_symmetric_memory(tp_group)
    _fold_gathered_reshapes(gm.graph)
    # the pass logs a warning per pair it leaves (e.g. the output projection's gather); the note counts them instead
    with warnings.catch_warnings(), quiet_logger("torch._inductor.fx_passes.micro_pipeline_tp"):
        warnings.simplefilter("ignore")
        micro_pipeline_tp_pass(gm.graph)
    gm.graph.lint()
    gm.recompile()
    left = Counter(k for k in (_tp_collective(n, tp_group) for n in gm.graph.nodes) if k)
    note = f"tp collectives left unfused: {', '.join(f'{k} {v}' for k, v in left.items()) or 'none'}"
    if not dist.is_nccl_available():  # the pass's own precondition: nothing fuses
        note += "; nothing could fuse: this torch has no NCCL, which the fused ops need"
    return gm, note


def _fold_gathered_reshapes(graph: fx.Graph) -> None:
    """Give a one-sequence-per-rank gather the shape the pass matches: all-gather -> reshape -> mm
    -> reshape to the gathered tensor's leading dims. At batch 1 (llama3:8B's preset) DTensor's
    gather over the sequence is a dim-0 gather of [1, T/tp, D] shards, reshaped to [1, T, D] and
    by the linear again to [T, D]; its output is reshaped to [1, T, N]. Here the first reshape is
    skipped and the output goes through [tp, T/tp, N] (the fused op's shape): the same values."""
    reshape, wait, mm = (torch.ops.aten.reshape.default, torch.ops._c10d_functional.wait_tensor.default,
                         torch.ops.aten.mm.default)
    for inner in graph.find_nodes(op="call_function", target=reshape):
        gathered = inner.args[0]
        if not (isinstance(gathered, fx.Node) and gathered.target is wait):
            continue
        lead = list(gathered.meta["val"].shape[:-1])
        for flat in [u for u in inner.users if u.target is reshape]:
            flat.args = (gathered, *flat.args[1:])  # a reshape of a reshape is the one reshape
            if flat.meta["val"].shape[-1] != gathered.meta["val"].shape[-1]:
                continue  # not a linear's [rows, dim] input
            for matmul in [u for u in flat.users if u.target is mm and u.args[0] is flat]:
                for out in [u for u in matmul.users if u.target is reshape]:
                    shape = [*lead, matmul.meta["val"].shape[-1]]
                    with graph.inserting_before(out):
                        via = graph.call_function(reshape, (matmul, shape))
                    via.meta["val"] = matmul.meta["val"].reshape(shape)
                    out.args = (via, *out.args[1:])
        if not inner.users:
            graph.erase_node(inner)


def _tp_collective(node: fx.Node, tp_group: str) -> str | None:
    if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
        return None
    if node.target.namespace != "_c10d_functional" or tp_group not in node.args:
        return None
    name = node.target._opname
    return None if name == "wait_tensor" else name.removesuffix("_into_tensor").removesuffix("_tensor")


