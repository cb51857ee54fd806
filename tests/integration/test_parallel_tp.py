"""Tensor parallelism on the CPU: sequence parallelism (gloo ranks, fake process group) and async
TP (the micro-pipeline rewrite under a fake process group; on gloo ranks with torch's own
fallback kernels for the fused ops, which symmetric memory otherwise runs on CUDA only).
"""
import contextlib
import json
from dataclasses import replace
from unittest import mock

import pytest
import torch
import torch.distributed as dist

from irlens.cli import main
from irlens.parallel.parallelize.distributed import spawn
from irlens.parallel.dump import capture_fake
from irlens.parallel.passes.catalog import validate_passes
from irlens.parallel.passes.registry import PassError
from irlens.parallel.config import CompileConfig, ModelConfig, OptimizerConfig, ParallelismConfig, TrainConfig, TrainingConfig
from irlens.parallel.train.loop import train

NUMERICS_RTOL = 1e-4  # passes that may change numerics (docs/parallelism.md)
# one sequence per rank: DTensor's sequence gather then takes the form async TP has to reshape (_fold_gathered_reshapes)
TP2 = TrainConfig(ModelConfig("llama3:tiny"), ParallelismConfig(tp=2), TrainingConfig(steps=3, batch_size=1),
                  OptimizerConfig(lr=1e-2))
ASYNC_TP = CompileConfig("compiled", joint_passes=["inductor_decomposition"], passes=["async_tensor_parallel"])
LAYERS = 2  # llama3:tiny
BLOCK_PARAMS = 9  # 2 norms, 7 linears


@contextlib.contextmanager
def symmetric_memory_stand_in():
    """What async TP needs from a CUDA machine, stood in for on the CPU: torch's symmetric-memory
    test mode (every group counts as enabled; the fused ops run torch's fallback: the collective,
    then the matmul), NCCL reported present (the pass's precondition), and on gloo ranks those
    fallbacks registered for CPU tensors."""
    from torch.distributed import _symmetric_memory as symm_mem

    lib = torch.library.Library("symm_mem", "IMPL")
    lib.impl("fused_all_gather_matmul", symm_mem._fused_all_gather_matmul_fallback, "CPU")
    lib.impl("fused_matmul_reduce_scatter", symm_mem._fused_matmul_reduce_scatter_fallback, "CPU")
    try:
        with symm_mem._test_mode(), mock.patch.object(dist, "is_nccl_available", lambda: True), \
                mock.patch("irlens.parallel.train.loop.require_symmetric_memory", lambda group: None):
            yield
    finally:
        lib._destroy()


def _run(configs: dict) -> dict:
    """On every rank: each configuration's (loss, grad_norm) per step and its pass records."""
    out = {}
    for name, tc in configs.items():
        with symmetric_memory_stand_in() if tc.compile.passes else contextlib.nullcontext():
            result = train(tc)
        out[name] = ([(s.loss, s.grad_norm) for s in result.steps], result.pass_records)
    return out


@pytest.fixture(scope="module")
def tp_runs():
    moe = TrainConfig(ModelConfig("deepseek_v3:tiny"), ParallelismConfig(tp=2), TrainingConfig(steps=2),
                      OptimizerConfig(lr=1e-2))
    compiled = CompileConfig("compiled")
    return spawn(_run, 2, {
        "sp_eager": TP2,
        "sp_compiled": replace(TP2, compile=compiled),
        "no_sp_eager": replace(TP2, parallelism=ParallelismConfig(tp=2, sequence_parallel=False)),
        "no_loss_parallel_eager": replace(TP2, parallelism=ParallelismConfig(tp=2, loss_parallel=False)),
        "async_tp": replace(TP2, compile=ASYNC_TP),
        "moe_sp_eager": moe,
        "moe_sp_compiled": replace(moe, compile=compiled),
    })


def _assert_close(run, ref, rtol):
    assert len(run) == len(ref)
    for (loss, norm), (loss_ref, norm_ref) in zip(run, ref):
        assert loss == pytest.approx(loss_ref, rel=rtol) and norm == pytest.approx(norm_ref, rel=rtol)


@pytest.mark.slow
@pytest.mark.parametrize("eager, compiled", [("sp_eager", "sp_compiled"), ("moe_sp_eager", "moe_sp_compiled")])
def test_sequence_parallel_compiled_is_bitwise_equal_to_eager(tp_runs, eager, compiled):
    assert tp_runs[compiled][0] == tp_runs[eager][0]


@pytest.mark.slow
def test_sequence_parallel_trains_as_tensor_parallel_without_it(tp_runs):
    """Same model, same batches: only where partial sums are added differs (the norms' weight
    gradients sum per sequence shard, then over ranks)."""
    _assert_close(tp_runs["sp_eager"][0], tp_runs["no_sp_eager"][0], rtol=1e-5)


@pytest.mark.slow
def test_loss_parallel_trains_as_the_gathered_loss(tp_runs):
    """The cross-entropy of vocabulary-sharded logits (max and sum of exponentials all-reduced)
    against the loss of the gathered logits: the same up to the order of the sums."""
    _assert_close(tp_runs["sp_eager"][0], tp_runs["no_loss_parallel_eager"][0], rtol=1e-5)


@pytest.mark.slow
def test_async_tp_rewrite_trains_as_eager(tp_runs):
    """The rewritten graphs, their fused ops run by torch's fallback kernels on gloo: the same
    training as eager, within the tolerance of a numerics-changing pass (as seen: bitwise equal to
    the same compiled graphs without the pass)."""
    _assert_close(tp_runs["async_tp"][0], tp_runs["sp_eager"][0], rtol=NUMERICS_RTOL)
    fused = [line for line in tp_runs["async_tp"][1] if "async_tensor_parallel" in line]
    assert len(fused) == 2 and all("all_gather_matmul" in line for line in fused)


# --- fake process group: what the graphs hold -------------------------------------------------


def _collectives(step, stage: str) -> dict:
    return next(r for r in step.records if r.stage == stage and r.name == "partition").after.collectives


def test_sequence_parallel_replaces_the_activation_all_reduces():
    """DP2 x TP2. Without SP each row-wise linear and the embedding all-reduce activations; with it
    they reduce-scatter over the sequence, each column-wise pair all-gathers its input, and the
    backward all-reduces only the norms' weight gradients (one [dim] vector each)."""
    n_params = LAYERS * BLOCK_PARAMS + 3
    pairs = 2 * LAYERS + 1  # row-wise outputs (2 per block) and the embedding
    plain = capture_fake("llama3:tiny", ParallelismConfig(dp_shard=2, tp=2, sequence_parallel=False, loss_parallel=False))
    assert _collectives(plain, "forward")["all_reduce"] == pairs
    # the column-wise linears' input gradients add up before one all-reduce per attention and
    # feed-forward (and the output projection), not one per linear (q, k, v; w1, w3)
    assert _collectives(plain, "backward")["all_reduce"] == 2 * LAYERS + 1
    sp = capture_fake("llama3:tiny", ParallelismConfig(dp_shard=2, tp=2, loss_parallel=False),
                      TrainingConfig(batch_size=1, mixed_precision=True))
    fw, bw = _collectives(sp, "forward"), _collectives(sp, "backward")
    assert "all_reduce" not in fw
    assert fw["reduce_scatter"] == pairs
    # SimpleFSDP's gathers; two per block, the output projection's input and its logits
    assert fw["all_gather"] == n_params + 2 * LAYERS + 2
    assert bw["all_gather"] == pairs and bw["reduce_scatter"] == n_params + pairs
    norms = 2 * LAYERS + 1
    assert bw["all_reduce"] == norms
    record = next(r for r in sp.records if r.stage == "backward" and r.name == "partition")
    assert set(record.after.bucket_bytes["all_reduce"]) == {64 * 2}  # dim 64 in bf16


@pytest.mark.parametrize("batch_size", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_async_tp_fuses_the_sequence_parallel_pairs(batch_size):
    """At one or several sequences per rank (the gather over the sequence has two forms). Forward: every all-gather feeding the column-wise linears (and the output projection) and
    every row-wise matmul feeding a reduce-scatter become fused ops. Backward: the gathers of the
    row-wise outputs' gradients fuse; the input gradients of the column-wise pairs are sums of
    several matmuls (q, k, v; w1, w3), which the pass leaves to a plain reduce-scatter."""
    with symmetric_memory_stand_in():
        step = capture_fake("llama3:tiny", ParallelismConfig(dp_shard=2, tp=2),
                            TrainingConfig(batch_size=batch_size, mixed_precision=True), ASYNC_TP)
    fw = next(r for r in step.records if r.stage == "forward" and r.name == "async_tensor_parallel")
    bw = next(r for r in step.records if r.stage == "backward" and r.name == "async_tensor_parallel")
    assert fw.after.collectives["all_gather_matmul"] == 2 * LAYERS + 1
    assert fw.after.collectives["matmul_reduce_scatter"] == 2 * LAYERS
    assert fw.before.collectives["reduce_scatter"] - fw.after.collectives["reduce_scatter"] == 2 * LAYERS
    assert bw.after.collectives["all_gather_matmul"] == 2 * LAYERS
    assert bw.after.collectives["matmul_reduce_scatter"] == 1  # the output projection's input gradient
    # the embedding's reduce-scatter; the loss's all-reduces (loss parallel: no logits gather)
    assert "tp collectives left unfused: reduce_scatter 1, all_reduce 3" in fw.note


def test_async_tp_without_nccl_fuses_nothing_and_says_why():
    """The CPU torch has no NCCL: a dump still runs the pass, which leaves every pair and says why."""
    step = capture_fake("llama3:tiny", ParallelismConfig(tp=2), compile=ASYNC_TP)
    fw = next(r for r in step.records if r.stage == "forward" and r.name == "async_tensor_parallel")
    assert "all_gather_matmul" not in fw.after.collectives
    assert "nothing could fuse: this torch has no NCCL" in fw.note


def test_loss_parallel_drops_the_logits_gather():
    """The output projection's logits stay sharded over the vocabulary: no [tokens, vocab] gather;
    the loss all-reduces three [tokens] float32 vectors instead (max, sum of exponentials, the
    target's logit) and its backward none more than the gathered loss's."""
    tokens = 64  # one sequence of llama3:tiny
    gathered = capture_fake("llama3:tiny", ParallelismConfig(tp=2, loss_parallel=False))
    sharded = capture_fake("llama3:tiny", ParallelismConfig(tp=2))
    fw_g, fw_s = _collectives(gathered, "forward"), _collectives(sharded, "forward")
    assert fw_s["all_gather"] == fw_g["all_gather"] - 1
    record = next(r for r in sharded.records if r.stage == "forward" and r.name == "partition")
    assert record.after.bucket_bytes["all_reduce"] == [tokens * 4] * 3
    assert max(record.after.bucket_bytes["all_gather"]) < tokens * 256 * 4  # no [tokens, vocab 256] gather


# --- what cannot run here says so ---------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU's not-run status")
def test_async_tp_is_not_run_on_the_cpu(capfd):
    argv = ["--model", "llama3:tiny", "--tp", "2", "--mode", "compiled", "--joint-passes", "inductor_decomposition",
            "--passes", "async_tensor_parallel"]
    assert main(["train", *argv]) == 2
    out, err = capfd.readouterr()
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["status"] == "not run"
    assert summary["reason"].startswith("async_tensor_parallel: symmetric memory needs CUDA devices")
    assert "irlens train: not run: async_tensor_parallel" in err


@pytest.mark.parametrize("tp, sp, match", [
    (1, True, "needs --tp 2 or more"),
    (2, False, "needs sequence parallelism"),
])
def test_async_tp_needs_tensor_and_sequence_parallelism(tp, sp, match):
    with pytest.raises(PassError, match=match):
        validate_passes(["inductor_decomposition"], ["async_tensor_parallel"], tp=tp, sequence_parallel=sp)
    with pytest.raises(PassError, match="requires --joint-passes inductor_decomposition"):
        validate_passes([], ["async_tensor_parallel"], tp=2)


def test_sequence_parallel_needs_the_sequence_to_divide():
    with pytest.raises(ValueError, match="does not divide seq_len=63"):
        TrainConfig(ModelConfig("llama3:tiny", seq_len=63), ParallelismConfig(tp=2)).validate()
    TrainConfig(ModelConfig("llama3:tiny", seq_len=63), ParallelismConfig(tp=2, sequence_parallel=False)).validate()


# --- GPU (skipped here): two NCCL ranks, the real fused ops -------------------------------------

def _gpu_runs(configs: dict) -> dict:
    """On every rank: each configuration's (loss, grad_norm) per step, or the reason it could not run."""
    from irlens.parallel.parallelize.async_tp import PassUnavailable

    out = {}
    for name, tc in configs.items():
        try:
            out[name] = [(s.loss, s.grad_norm) for s in train(tc).steps]
        except PassUnavailable as e:
            out[name] = str(e)
    return out


def _two_gpus():
    if torch.cuda.device_count() < 2:
        pytest.skip(f"needs 2 CUDA GPUs; this machine has {torch.cuda.device_count()}")


@pytest.mark.gpu
def test_gpu_sequence_parallel_compiled_matches_eager():
    """TP2 on NCCL in fp32: SP eager against TP without SP, and SP through autobucketing, full
    Inductor and cudagraph against SP eager, within the GPU tolerance of tests/support/parallel_gpu.py."""
    from tests.support.parallel_gpu import FULL_INDUCTOR, GPU_RTOL

    _two_gpus()
    base = TrainConfig(ModelConfig("llama3:debug"), ParallelismConfig(tp=2),
                       TrainingConfig(steps=5, device="cuda", mixed_precision=False))
    runs = spawn(_gpu_runs, 2, {"sp": base,
                                "no_sp": replace(base, parallelism=ParallelismConfig(tp=2, sequence_parallel=False)),
                                "sp_inductor": replace(base, compile=FULL_INDUCTOR)})
    _assert_close(runs["sp"], runs["no_sp"], rtol=GPU_RTOL)
    _assert_close(runs["sp_inductor"], runs["sp"], rtol=GPU_RTOL)


@pytest.mark.gpu
def test_gpu_async_tp_matches_sequence_parallel_or_says_why_not():
    """The fused ops over symmetric memory (copy-engine transfers: multicast stays off), with full
    Inductor, then also under CUDA graphs. Where symmetric memory cannot be set up the run stops
    with the reason, which is what this test then reports (skipped, with it)."""
    from tests.support.parallel_gpu import GPU_RTOL

    _two_gpus()
    base = TrainConfig(ModelConfig("llama3:debug"), ParallelismConfig(tp=2),
                       TrainingConfig(steps=5, device="cuda", mixed_precision=False))

    def inductor(*passes):
        return replace(base, compile=CompileConfig("compiled", ["inductor_decomposition"], list(passes)))

    runs = spawn(_gpu_runs, 2, {
        "sp_inductor": inductor("full_inductor_compilation"),
        "async_tp": inductor("async_tensor_parallel", "full_inductor_compilation"),
        "async_tp_cudagraph": inductor("async_tensor_parallel", "full_inductor_compilation", "cudagraph"),
    })
    if isinstance(runs["async_tp"], str):
        pytest.skip(f"not run: {runs['async_tp']}")
    _assert_close(runs["async_tp"], runs["sp_inductor"], rtol=GPU_RTOL)
    _assert_close(runs["async_tp_cudagraph"], runs["sp_inductor"], rtol=GPU_RTOL)
