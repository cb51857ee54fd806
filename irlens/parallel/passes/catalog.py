"""The named lists of passes, in the order --help gives them, and their validation before anything runs."""
from __future__ import annotations

import warnings
from collections import Counter

from irlens.parallel.passes.activation_checkpoint import fsdp_reshard_after_forward, selective_activation_checkpoint
from irlens.parallel.passes.bucketing import autobucketing_reordering, transformer_block_bucketing
from irlens.parallel.passes.collective_matmul import async_tensor_parallel
from irlens.parallel.passes.cudagraph import cudagraph
from irlens.parallel.passes.inductor import full_inductor_compilation, inductor_decomposition, regional_inductor
from irlens.parallel.passes.registry import (
    COMPILE, CUDAGRAPH, FUSE, GRAPH_PASSES, JOINT_PASSES, PHASE_NAMES, TRANSFORM, GraphPass, PassError,
    require_gpu)


def validate_passes(joint_passes: list[str], passes: list[str], tp: int | None = None,
                    sequence_parallel: bool = True) -> None:
    """Reject unknown names, duplicates, phases out of order and unmet requirements, before any work
    (with `tp`, also the mesh a pass needs)."""
    for names, table, flag in ((joint_passes, JOINT_PASSES, "--joint-passes"), (passes, GRAPH_PASSES, "--passes")):
        unknown = [n for n in names if n not in table]
        if unknown:
            raise PassError(f"unknown {flag} {', '.join(map(repr, unknown))}; valid: {', '.join(table)}")
        dup = sorted(n for n, c in Counter(names).items() if c > 1)
        if dup:
            raise PassError(f"{flag} lists {', '.join(dup)} more than once")
    if "inductor_decomposition" in joint_passes and joint_passes[0] != "inductor_decomposition":
        raise PassError("inductor_decomposition must be the first joint pass: it retraces the graph, "
                        "dropping the tags earlier passes set")
    order = "; then ".join(f"{PHASE_NAMES[ph]}: {', '.join(p.name for p in GRAPH_PASSES.values() if p.phase == ph)}"
                           for ph in PHASE_NAMES)
    phases = [GRAPH_PASSES[n].phase for n in passes]
    if phases != sorted(phases):
        raise PassError(f"--passes {' '.join(passes)} are out of order; the order is {order}")
    for ph in (TRANSFORM, COMPILE):
        same = [n for n in passes if GRAPH_PASSES[n].phase == ph]
        if len(same) > 1:
            raise PassError(f"--passes lists {' and '.join(same)}: choose one {PHASE_NAMES[ph]} pass")
    for n in passes:
        missing = [j for j in GRAPH_PASSES[n].requires_joint if j not in joint_passes]
        if missing:
            raise PassError(f"pass {n!r} requires --joint-passes {' '.join(missing)}")
        require_gpu(GRAPH_PASSES[n])
    for n in symmetric_memory_passes(passes):
        if tp is not None and tp < 2:
            raise PassError(f"pass {n!r} pipelines tensor parallelism's collectives: it needs --tp 2 or more")
        if not sequence_parallel:
            raise PassError(f"pass {n!r} needs sequence parallelism: without it TP all-reduces activations, which "
                            f"it cannot pipeline with the matmuls (drop --no-sequence-parallel)")


def symmetric_memory_passes(passes: list[str]) -> list[str]:
    """The passes of the list that need symmetric memory on the tp group."""
    return [n for n in passes if GRAPH_PASSES[n].needs_symmetric_memory]


def numerics_changing(joint_passes: list[str], passes: list[str]) -> list[str]:
    """The passes of the lists that may change numerics."""
    return ([n for n in joint_passes if JOINT_PASSES[n].changes_numerics]
            + [n for n in passes if GRAPH_PASSES[n].changes_numerics])


def warn_numerics(joint_passes: list[str], passes: list[str]) -> None:
    for name in numerics_changing(joint_passes, passes):
        warnings.warn(f"pass {name!r} may change numerics: results match eager only within a tolerance", stacklevel=3)


for _p in (
    GraphPass("inductor_decomposition", inductor_decomposition, "Inductor's decomposition table", changes_numerics=True),
    GraphPass("selective_activation_checkpoint", selective_activation_checkpoint, "op-level SAC tags per block"),
    GraphPass("fsdp_reshard_after_forward", fsdp_reshard_after_forward, "re-gather parameters in the backward"),
):
    JOINT_PASSES.register(_p)

for _p in (
    GraphPass("async_tensor_parallel", async_tensor_parallel,
              "all-gather+matmul and matmul+reduce-scatter micro-pipelined over symmetric memory", FUSE,
              changes_numerics=True, requires_joint=("inductor_decomposition",), needs_symmetric_memory=True),
    GraphPass("autobucketing_reordering", autobucketing_reordering, "cost-model bucketing and reordering",
              TRANSFORM, changes_numerics=True),
    GraphPass("transformer_block_bucketing", transformer_block_bucketing, "one bucket per block, prefetched",
              TRANSFORM, changes_numerics=True),
    GraphPass("regional_inductor", regional_inductor, "Inductor on annotated regions", COMPILE, changes_numerics=True),
    GraphPass("full_inductor_compilation", full_inductor_compilation, "Inductor on the whole graph", COMPILE,
              changes_numerics=True, requires_joint=("inductor_decomposition",), fuses_graph=True),
    GraphPass("cudagraph", cudagraph, "CUDA graph replay", CUDAGRAPH,
              needs_gpu="it records the compiled graph's kernels into a CUDA graph"),
):
    GRAPH_PASSES.register(_p)
