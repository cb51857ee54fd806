"""The joint-graph parallel path on the CPU: gloo ranks (spawned) and a fake process group.

Tolerance for passes that change numerics (bucketed collectives, Inductor-compiled regions):
loss and grad norm within rtol 1e-4 of eager SimpleFSDP, per step (docs/parallelism.md).
"""
import json
import math
from dataclasses import replace

import pytest
import torch

from irlens.parallel.parallelize.distributed import spawn
from irlens.cli import main
from irlens.parallel.dump import capture_fake
from irlens.parallel.passes.catalog import validate_passes
from irlens.parallel.passes.registry import NeedsGPU, PassError
from irlens.parallel.config import (CheckpointConfig, CompileConfig, ModelConfig, OptimizerConfig, ParallelismConfig,
                                    ProfilingConfig, TrainConfig, TrainingConfig)
from irlens.parallel.train.loop import train
from tests.support.parallel_gpu import assert_gpu_passes_match_eager

STEPS = 10
NUMERICS_RTOL = 1e-4
LR = 1e-2  # high enough that 10 steps visibly learn on the tiny preset
TINY = dict(model=ModelConfig("llama3:tiny"), training=TrainingConfig(steps=STEPS), optimizer=OptimizerConfig(lr=LR))
DP2 = TrainConfig(**TINY, parallelism=ParallelismConfig(dp_shard=2))
TP2 = TrainConfig(**TINY, parallelism=ParallelismConfig(tp=2))
COMPILED = CompileConfig("compiled")


def _run(configs: dict) -> dict:
    """On every rank: train each configuration in turn; rank 0's (step, loss, grad_norm) per step
    and, for `profiled`, its summary too."""
    out = {}
    for name, tc in configs.items():
        result = train(tc)
        out[name] = [(s.step, s.loss, s.grad_norm) for s in result.steps]
        if name == "profiled":
            out["profiled_result"] = (result.steps, result.summary())
    return out


@pytest.fixture(scope="module")
def gloo_runs(tmp_path_factory):
    ckpt = str(tmp_path_factory.mktemp("ckpt"))
    configs = {
        "eager": DP2,
        "compiled": replace(DP2, compile=COMPILED),
        "compiled_sac_reshard": replace(DP2, compile=CompileConfig(
            "compiled", joint_passes=["selective_activation_checkpoint", "fsdp_reshard_after_forward"])),
        "bucketing_regional": replace(DP2, compile=CompileConfig(
            "compiled", passes=["transformer_block_bucketing", "regional_inductor"])),
        "tp_eager": TP2,
        "tp_compiled": replace(TP2, compile=COMPILED),
        "ckpt_save": replace(DP2, training=TrainingConfig(steps=2), checkpoint=CheckpointConfig(ckpt)),
        "ckpt_resume": replace(DP2, training=TrainingConfig(steps=2), checkpoint=CheckpointConfig(ckpt, resume=True)),
        "profiled": replace(DP2, training=TrainingConfig(steps=5),
                            profiling=ProfilingConfig(str(tmp_path_factory.mktemp("profile")))),
    }
    return spawn(_run, 2, configs)


@pytest.mark.parametrize("eager, compiled", [("eager", "compiled"), ("eager", "compiled_sac_reshard"),
                                             ("tp_eager", "tp_compiled")])
def test_compiled_joint_graph_is_bitwise_equal_to_eager(gloo_runs, eager, compiled):
    assert len(gloo_runs[compiled]) == STEPS
    assert gloo_runs[compiled] == gloo_runs[eager]


def test_training_learns(gloo_runs):
    losses = [loss for _, loss, _ in gloo_runs["eager"]]
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.1
    assert all(math.isfinite(g) and g > 0 for _, _, g in gloo_runs["eager"])


def test_bucketing_and_regional_inductor_within_tolerance(gloo_runs):
    for (s, loss, norm), (s_ref, loss_ref, norm_ref) in zip(gloo_runs["bucketing_regional"], gloo_runs["eager"], strict=True):
        assert s == s_ref
        assert loss == pytest.approx(loss_ref, rel=NUMERICS_RTOL)
        assert norm == pytest.approx(norm_ref, rel=NUMERICS_RTOL)


def test_resume_from_checkpoint_continues_the_run(gloo_runs):
    assert gloo_runs["ckpt_save"] == gloo_runs["eager"][:2]
    assert gloo_runs["ckpt_resume"] == gloo_runs["eager"][2:4]


def test_profile_breaks_each_profiled_step_down(gloo_runs):
    """--profile on gloo: the last 2 of 5 steps profiled, each rank's trace saved, rank 0's steps
    cut into parts that sum to the measured step time; profiling changes no number."""
    from irlens.parallel.train.profile import PARTS, load_trace, step_windows

    assert gloo_runs["profiled"] == gloo_runs["eager"][:5]
    steps, summary = gloo_runs["profiled_result"]
    assert [s.profiled for s in steps] == [False, False, False, True, True]
    assert summary["tokens_per_s"] == steps[2].tokens_per_s  # the one timed step the profiler left alone
    prof = summary["profile"]
    assert prof["device"] == "cpu" and [s["step"] for s in prof["steps"]] == [4, 5]
    for s, measured in zip(prof["steps"], steps[3:]):
        assert sum(s[p] for p in PARTS) == pytest.approx(s["time_ms"], rel=1e-9)
        assert s["time_ms"] == pytest.approx(1e3 * measured.time_s, rel=0.05, abs=2.0)
        # DP2: matmuls and attention compute, the FSDP gathers and reduce-scatters communicate
        assert s["matmul"] > 0 and s["attention"] > 0 and s["comm_exposed"] + s["comm_overlapped"] > 0
    for rank in (0, 1):
        trace = load_trace(prof["trace"].replace("rank0", f"rank{rank}"))
        assert [n for n, _, _ in step_windows(trace)] == [4, 5]

# --- fake process group: DP4 x TP2 capture of llama3:debug (without sequence or loss parallelism) ------------------------------------


@pytest.fixture(scope="module")
def fake_capture():
    return capture_fake("llama3:debug",
                        parallelism=ParallelismConfig(dp_shard=4, tp=2, sequence_parallel=False, loss_parallel=False),
                        compile=CompileConfig(joint_passes=["selective_activation_checkpoint", "fsdp_reshard_after_forward"],
                                              passes=["transformer_block_bucketing"]))


def _record(step, stage, name):
    return next(r for r in step.records if r.stage == stage and r.name == name)


def test_fake_capture_reports_collectives(fake_capture):
    joint = _record(fake_capture, "joint", "capture").after.collectives
    n_params = 6 * 9 + 3  # per block: 2 norms + 7 linears; embedding, final norm, output
    # SimpleFSDP: one gather and one gradient reduce-scatter per parameter; TP: one gather of the logits
    assert joint["all_gather"] == n_params + 1
    assert joint["reduce_scatter"] == n_params
    # TP: forward all-reduces after each row-wise linear (2 per block) and the embedding
    assert _record(fake_capture, "forward", "partition").after.collectives["all_reduce"] == 6 * 2 + 1
    assert joint["wait"] == sum(v for k, v in joint.items() if k != "wait")


def test_reshard_after_forward_regathers_in_backward(fake_capture):
    sac = _record(fake_capture, "joint", "selective_activation_checkpoint")
    assert "PREFER_RECOMPUTE" in sac.note and "MUST_SAVE" in sac.note
    assert "MUST_RECOMPUTE" in _record(fake_capture, "joint", "fsdp_reshard_after_forward").note
    # every block parameter is gathered again in the backward (not saved gathered from the forward)
    assert _record(fake_capture, "backward", "partition").after.collectives["all_gather"] >= 6 * 9


def test_block_bucketing_reduces_collectives(fake_capture):
    fw = _record(fake_capture, "forward", "transformer_block_bucketing")
    bw = _record(fake_capture, "backward", "transformer_block_bucketing")
    scopes = 6 + 3  # layers, embedding, norm, output
    assert fw.after.collectives["all_gather"] <= scopes + 1 < fw.before.collectives["all_gather"]
    assert bw.after.collectives["reduce_scatter"] <= scopes + 1 < bw.before.collectives["reduce_scatter"]
    assert max(fw.after.bucket_bytes["all_gather"]) > max(fw.before.bucket_bytes["all_gather"])


def test_autobucketing_reduces_collectives():
    """Inductor's overlap scheduler; on the CPU from the stated analytical cost model."""
    step = capture_fake("llama3:tiny", parallelism=ParallelismConfig(dp_shard=4, tp=2),
                        compile=CompileConfig(passes=["autobucketing_reordering"]))
    fw = _record(step, "forward", "autobucketing_reordering")
    assert fw.after.collectives["all_gather"] < fw.before.collectives["all_gather"]
    assert fw.after.collectives["wait"] < fw.before.collectives["wait"]
    if not torch.cuda.is_available():
        assert "CPU: analytical costs" in fw.note


def test_common_view_holds_the_collectives(fake_capture):
    from irlens.frontends.dynamo.fx import fx_to_graph

    # the joint graph (before bucketing: the bucketed forms, all_gather_into_tensor_out and
    # bucketing._pre_bucket_*, are not in the common view's name table yet)
    graph = fx_to_graph(fake_capture.graphs["joint"], name="llama3:debug", frontend="joint", stage="joint.joint")
    counts = graph.op_counts()
    summary = _record(fake_capture, "joint", "capture").after.collectives
    assert summary == {kind: counts[kind] for kind in summary}


def test_partitioner_saves_like_eager_unless_inductor_fuses_or_tags_ask(fake_capture):
    """No pass that fuses the graph and no recompute tags: the default partition, whose backward
    recomputes no forward op (unfused recomputation is what made `compiled` slower than eager)."""
    plain = capture_fake("llama3:tiny", parallelism=ParallelismConfig(dp_shard=2))
    note = _record(plain, "forward", "partition").note
    assert note.startswith("default partitioner")
    def ops(stage):  # saved tensors reach the backward as placeholders of the same name
        return {n.name for n in plain.graphs[stage].graph.nodes if n.op == "call_function"}

    assert not ops("forward") & ops("backward")
    # SAC and reshard tags: the min-cut partitioner, which honours them
    assert _record(fake_capture, "forward", "partition").note.startswith("min-cut partitioner")


def test_dump_prints_common_view_json(capsys):
    assert main(["dump", "llama3:tiny", "--frontend", "joint", "--dp-shard", "2", "--tp", "2", "--stage", "backward",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ops = {n["op"] for n in out["nodes"]}
    assert {"reduce_scatter", "all_reduce", "wait"} <= ops
    assert [p["pass"] for p in out["passes"]] == ["capture", "partition", "partition"]


# --- the model ------------------------------------------------------------------------------


def test_flex_block_causal_attends_within_documents():
    """FlexAttention's block-causal mask: one document is plain causal attention; with packed
    documents, a document's outputs equal the model run on that document alone (RoPE is relative)."""
    from dataclasses import replace

    from irlens.parallel.models.llama3.model import Llama3, get_config

    cfg = get_config("tiny")
    torch.manual_seed(0)
    sdpa = Llama3(cfg)
    tokens = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len))
    with torch.no_grad():
        for doc_len in (cfg.seq_len, 16):
            flex = Llama3(replace(cfg, flex=True, doc_len=doc_len))
            flex.load_state_dict(sdpa.state_dict())
            doc = slice(doc_len, 2 * doc_len) if doc_len < cfg.seq_len else slice(0, cfg.seq_len)
            torch.testing.assert_close(flex(tokens)[:, doc], sdpa(tokens[:, doc]), atol=2e-4, rtol=1e-4)


def test_flop_count_is_6n_plus_attention_over_the_matmul_weights():
    """MFU's count: 6 FLOPs per token per parameter of every matmul (all but the embedding, whose
    lookup does none; the norms' weights are counted, as torchtitan does) plus 12 * layers * heads *
    head_dim * seq_len for attention's two matmuls (forward and backward, no causal halving)."""
    from dataclasses import replace

    from irlens.parallel.models.llama3.model import Llama3, get_config

    for cfg in (get_config("debug"), get_config("tiny"), replace(get_config("debug"), n_kv_heads=4)):
        model = Llama3(cfg)
        n = sum(p.numel() for p in model.parameters()) - model.tok_embeddings.weight.numel()
        assert cfg.num_params() == n
        assert cfg.flops_per_token() == 6 * n + 12 * cfg.n_layers * cfg.n_heads * cfg.head_dim * cfg.seq_len


def test_grouped_query_attention_equals_multi_head_with_repeated_heads():
    """llama3:tiny has 2 key/value heads for 4 query heads: each serves the 2 query heads next to
    it, exactly as a multi-head model whose key/value weights repeat per head."""
    from dataclasses import replace

    from irlens.parallel.models.llama3.model import Llama3, get_config

    cfg = get_config("tiny")
    assert cfg.n_heads // cfg.kv_heads == 2
    torch.manual_seed(0)
    gqa = Llama3(cfg)
    mha = Llama3(replace(cfg, n_kv_heads=None))
    state = gqa.state_dict()
    for k in [k for k in state if k.endswith(("attention.wk.weight", "attention.wv.weight"))]:
        w = state[k].view(cfg.kv_heads, cfg.head_dim, cfg.dim)
        state[k] = w.repeat_interleave(cfg.n_heads // cfg.kv_heads, dim=0).reshape(cfg.dim, cfg.dim)
    mha.load_state_dict(state)
    tokens = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len))
    with torch.no_grad():
        torch.testing.assert_close(gqa(tokens), mha(tokens), rtol=1e-5, atol=1e-5)


def test_presets_and_depth_override():
    from irlens.parallel.models.families import resolve

    _, cfg = resolve("llama3:8B", n_layers=4)
    assert (cfg.dim, cfg.n_heads, cfg.kv_heads, cfg.ffn_hidden, cfg.vocab_size, cfg.n_layers) == \
        (4096, 32, 8, 14336, 128256, 4)
    assert 1.3e9 < cfg.num_params() < 1.5e9  # 4 x 218M per layer + the 525M output projection
    assert resolve("llama3:1B")[1].batch_size * resolve("llama3:1B")[1].seq_len == 16384  # tokens per rank
    with pytest.raises(ValueError, match="--n-layers must be >= 1"):
        resolve("llama3:tiny", n_layers=0)
    with pytest.raises(ValueError, match="needs more than its 1 dense layer"):
        resolve("deepseek_v3:tiny", n_layers=1)


# --- the cudagraph pass's bookkeeping, with a stand-in for CUDA graphs ------------------------


class _FakeGraph:
    """A CUDA graph stand-in: what a stage computes while "capturing" is replayed on the same
    input and output tensors (fixed addresses), as a recorded graph would."""
    capturing = None

    def __init__(self):
        self.ops = []

    def replay(self):
        for op in self.ops:
            op()


def _fake_stage(body):
    def fn(args):
        outs = body(args)
        graph = _FakeGraph.capturing
        if graph is not None:
            inputs = list(args)
            graph.ops.append(lambda: [o.copy_(r) for o, r in zip(outs, body(inputs))])
        return outs
    return fn


def test_cudagraph_wrapper_copies_only_inputs_that_move(monkeypatch):
    """Forward (parameter, batch) -> (activation, loss); backward (activation, loss gradient) ->
    parameter gradient. Recorded at the second step, replayed at the third: right values every
    step, while only the batch and the loss gradient get static copies -- the backward reads
    the forward's recorded activation in place (it used to clone every saved activation)."""
    import contextlib

    from irlens.parallel.passes import cudagraph as cg

    @contextlib.contextmanager
    def capture(graph, pool=None):
        _FakeGraph.capturing = graph
        yield
        _FakeGraph.capturing = None

    monkeypatch.setattr(torch.cuda, "CUDAGraph", _FakeGraph)
    monkeypatch.setattr(torch.cuda, "graph", capture)
    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: (0, 1))
    group = cg.CUDAGraphGroup()
    fw = cg.CUDAGraphWrapper(_fake_stage(lambda a: [a[0] * a[1], (a[0] * a[1]).sum()]), "forward", group)
    bw = cg.CUDAGraphWrapper(_fake_stage(lambda a: [a[0] * a[1] * 2]), "backward", group)
    param = torch.tensor([1.0, 2.0, 3.0])
    for step in range(4):
        batch = torch.arange(3.0) + step  # a new tensor every step, as the data loader's
        act, loss = fw([param, batch])
        (grad,) = bw([act, torch.tensor(0.5 + step)])
        assert torch.equal(loss, (param * batch).sum())
        assert torch.equal(grad, param * batch * 2 * (0.5 + step))
        param.add_(1.0)  # the optimizer, in place
    assert fw.graph is not None and bw.graph is not None
    assert (fw.copied_inputs, bw.copied_inputs) == (1, 1)  # the batch; the loss gradient
    assert bw.static_inputs[0] is fw.static_outputs[0]


# --- pass lists -----------------------------------------------------------------------------


@pytest.mark.parametrize("joint, passes, match", [
    ([], ["no_such_pass"], "unknown --passes 'no_such_pass'; valid: async_tensor_parallel, autobucketing_reordering"),
    (["nope"], [], "unknown --joint-passes 'nope'"),
    ([], ["regional_inductor", "transformer_block_bucketing"], "out of order; the order is collective-matmul fusion"),
    ([], ["regional_inductor", "full_inductor_compilation"], "choose one compilation pass"),
    ([], ["full_inductor_compilation"], "requires --joint-passes inductor_decomposition"),
    (["selective_activation_checkpoint", "inductor_decomposition"], [], "must be the first joint pass"),
    ([], ["transformer_block_bucketing", "transformer_block_bucketing"], "more than once"),
])
def test_bad_pass_lists_are_rejected(joint, passes, match):
    with pytest.raises(PassError, match=match):
        validate_passes(joint, passes)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU message")
def test_cudagraph_says_it_needs_a_gpu_on_cpu():
    with pytest.raises(NeedsGPU, match="pass 'cudagraph' needs a CUDA GPU"):
        validate_passes([], ["transformer_block_bucketing", "cudagraph"])


def test_train_rejects_before_spawning(capsys):
    assert main(["train", "--mode", "compiled", "--passes", "cudagraph", "transformer_block_bucketing"]) == 2
    assert "cudagraph" in capsys.readouterr().err
    assert main(["train", "--passes", "transformer_block_bucketing"]) == 2
    assert "--mode compiled only" in capsys.readouterr().err


@pytest.mark.slow
def test_train_prints_final_json(capfd, tmp_path):
    assert main(["train", "--model", "llama3:tiny", "--dp-shard", "2", "--steps", "3", "--profile", str(tmp_path),
                       "--profile-steps", "1"]) == 0
    out = capfd.readouterr().out
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["steps"] == 3 and summary["config"]["parallelism"]["dp_shard"] == 2
    assert summary["config"]["training"]["batch_size"] == 2  # the preset's default, as run
    assert TrainConfig.from_json(summary["config"]).model == ModelConfig("llama3:tiny")  # the config as run, typed
    assert summary["tokens_per_s"] > 0 and summary["peak_mem_gib"] > 0 and "mfu" in summary
    # --profile: the breakdown table printed, the summary also in DIR/summary.json
    assert "profile: steps 3 on cpu" in out and "communication, exposed" in out
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert [s["step"] for s in summary["profile"]["steps"]] == [3]


# --- GPU (skipped here): the CUDA-only passes, NCCL, one rank -------------------------------------

@pytest.mark.gpu
def test_gpu_full_inductor_cudagraph_and_flex_regional_match_eager():
    assert_gpu_passes_match_eager(TrainConfig(ModelConfig("llama3:tiny"), training=TrainingConfig(
        steps=5, device="cuda", mixed_precision=False)), ranks=1)


def _gpu_runs(configs: dict) -> dict:
    """On every rank: each configuration's (step, loss, grad_norm) per step and its summary."""
    out = {}
    for name, tc in configs.items():
        result = train(tc)
        out[name] = ([(s.step, s.loss, s.grad_norm) for s in result.steps], result.summary())
    return out


@pytest.mark.gpu
def test_gpu_cudagraph_fits_where_compiled_fits_and_profiles(tmp_path):
    """Activations dominate memory here (16k tokens of llama3:debug): the cudagraph pass, which
    recorded the backward over copies of every saved activation (twice), now takes about what
    the same compiled graphs take without it, and replays the same numbers. The profiles of eager
    and of the replayed graphs: kernels found, classed, summing to the step."""
    from irlens.parallel.train.profile import PARTS

    base = TrainConfig(ModelConfig("llama3:debug", seq_len=1024),
                       training=TrainingConfig(batch_size=16, steps=4, device="cuda"))
    inductor = CompileConfig("compiled", ["inductor_decomposition"], ["full_inductor_compilation"])
    runs = spawn(_gpu_runs, 1, {
        "eager": replace(base, profiling=ProfilingConfig(str(tmp_path / "eager"))),
        "inductor": replace(base, compile=inductor),
        "cudagraph": replace(base, compile=replace(inductor, passes=[*inductor.passes, "cudagraph"]),
                             profiling=ProfilingConfig(str(tmp_path / "cudagraph"))),
    })
    for (_, loss, norm), (_, loss_ref, norm_ref) in zip(runs["cudagraph"][0], runs["inductor"][0], strict=True):
        assert loss == pytest.approx(loss_ref, rel=1e-5) and norm == pytest.approx(norm_ref, rel=1e-5)
    peak, peak_ref = runs["cudagraph"][1]["peak_mem_gib"], runs["inductor"][1]["peak_mem_gib"]
    assert peak <= 1.3 * peak_ref + 0.25, (peak, peak_ref)
    eager, graphs = runs["eager"][1]["profile"], runs["cudagraph"][1]["profile"]
    for prof in (eager, graphs):
        assert prof["device"] == "cuda"
        for s in prof["steps"]:
            assert sum(s[p] for p in PARTS) == pytest.approx(s["time_ms"], rel=1e-9)
            assert s["matmul"] > 0 and s["attention"] > 0 and s["kernels"] > 0
    assert eager["mean"]["fused"] == 0 < graphs["mean"]["fused"]  # Inductor's Triton kernels
    # a small model: eager waits on the host; replayed graphs launch everything at once
    assert graphs["mean"]["fraction"]["idle"] < eager["mean"]["fraction"]["idle"]
