"""The GPU check both parallel models share: the CUDA-only passes against eager, on real ranks."""
from dataclasses import replace

import pytest

from irlens.parallel.config import CompileConfig, TrainConfig
from irlens.parallel.parallelize.distributed import spawn
from irlens.parallel.train.loop import train

# fp32 compute; Inductor's kernels round differently from eager (and for the MoE router a
# near-tie could flip a choice)
GPU_RTOL = 1e-3
FULL_INDUCTOR = CompileConfig("compiled", joint_passes=["inductor_decomposition"],
                              passes=["autobucketing_reordering", "full_inductor_compilation", "cudagraph"])


def _numerics(configs: dict) -> dict:
    """On every rank: train each configuration in turn; rank 0's (step, loss, grad_norm) per step."""
    return {name: [(s.step, s.loss, s.grad_norm) for s in train(tc).steps] for name, tc in configs.items()}


def assert_gpu_passes_match_eager(base: TrainConfig, ranks: int) -> None:
    """Full Inductor + bucketing + cudagraph, and FlexAttention through regional Inductor +
    cudagraph, each within GPU_RTOL of its eager twin on every step."""
    flex = replace(base, model=replace(base.model, flex=True))
    runs = spawn(_numerics, ranks, {
        "eager": base,
        "inductor_cudagraph": replace(base, compile=FULL_INDUCTOR),
        "flex_eager": flex,
        "flex_regional": replace(flex, compile=CompileConfig("compiled", passes=["regional_inductor", "cudagraph"])),
    })
    for ref, other in (("eager", "inductor_cudagraph"), ("flex_eager", "flex_regional")):
        for (_, loss, norm), (_, loss_ref, norm_ref) in zip(runs[other], runs[ref], strict=True):
            assert loss == pytest.approx(loss_ref, rel=GPU_RTOL)
            assert norm == pytest.approx(norm_ref, rel=GPU_RTOL)
