"""The joint-graph parallel path on the CPU: gloo ranks (spawned) and a fake process group.

Tolerance for passes that change numerics (bucketed collectives, Inductor-compiled regions):
loss and grad norm within rtol 1e-4 of eager SimpleFSDP, per step (docs/parallelism.md).
"""
import json
import math

import pytest
import torch

from irlens.parallel.distributed import spawn
from irlens.parallel.dump import capture_fake, dump_main
from irlens.parallel.passes import NeedsGPU, PassError, validate_passes
from irlens.parallel.train import TrainConfig, train, train_main
from parallel_gpu import assert_gpu_passes_match_eager

STEPS = 10
NUMERICS_RTOL = 1e-4
LR = 1e-2  # high enough that 10 steps visibly learn on the tiny preset
DP2 = dict(model="llama3:tiny", dp_shard=2, steps=STEPS, lr=LR)
TP2 = dict(model="llama3:tiny", tp=2, steps=STEPS, lr=LR)


def _run(configs: dict) -> dict:
    """On every rank: train each configuration in turn; rank 0's (loss, grad_norm) per step."""
    return {name: [(s.step, s.loss, s.grad_norm) for s in train(tc).steps] for name, tc in configs.items()}


@pytest.fixture(scope="module")
def gloo_runs(tmp_path_factory):
    ckpt = str(tmp_path_factory.mktemp("ckpt"))
    configs = {
        "eager": TrainConfig(**DP2),
        "compiled": TrainConfig(**DP2, mode="compiled"),
        "compiled_sac_reshard": TrainConfig(**DP2, mode="compiled",
                                            joint_passes=["selective_activation_checkpoint", "fsdp_reshard_after_forward"]),
        "bucketing_regional": TrainConfig(**DP2, mode="compiled", passes=["transformer_block_bucketing", "regional_inductor"]),
        "tp_eager": TrainConfig(**TP2),
        "tp_compiled": TrainConfig(**TP2, mode="compiled"),
        "ckpt_save": TrainConfig(**{**DP2, "steps": 2}, checkpoint=ckpt),
        "ckpt_resume": TrainConfig(**{**DP2, "steps": 2}, checkpoint=ckpt, resume=True),
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


# --- fake process group: DP4 x TP2 capture of llama3:debug ------------------------------------


@pytest.fixture(scope="module")
def fake_capture():
    return capture_fake("llama3:debug", dp_shard=4, tp=2, passes=["transformer_block_bucketing"],
                        joint_passes=["selective_activation_checkpoint", "fsdp_reshard_after_forward"])


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
    step = capture_fake("llama3:tiny", dp_shard=4, tp=2, passes=["autobucketing_reordering"])
    fw = _record(step, "forward", "autobucketing_reordering")
    assert fw.after.collectives["all_gather"] < fw.before.collectives["all_gather"]
    assert fw.after.collectives["wait"] < fw.before.collectives["wait"]
    if not torch.cuda.is_available():
        assert "CPU: analytical costs" in fw.note


def test_common_view_holds_the_collectives(fake_capture):
    from irlens.ir_adapters.fx import fx_to_graph

    # the joint graph (before bucketing: the bucketed forms, all_gather_into_tensor_out and
    # bucketing._pre_bucket_*, are not in the common view's name table yet)
    graph = fx_to_graph(fake_capture.graphs["joint"], name="llama3:debug", frontend="joint", stage="joint.joint")
    counts = graph.op_counts()
    summary = _record(fake_capture, "joint", "capture").after.collectives
    assert summary == {kind: counts[kind] for kind in summary}


def test_dump_prints_common_view_json(capsys):
    assert dump_main(["llama3:tiny", "--dp-shard", "2", "--tp", "2", "--stage", "backward", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ops = {n["op"] for n in out["nodes"]}
    assert {"reduce_scatter", "all_reduce", "wait"} <= ops
    assert [p["pass"] for p in out["passes"]] == ["capture", "partition", "partition"]


# --- the model ------------------------------------------------------------------------------


def test_flex_block_causal_attends_within_documents():
    """FlexAttention's block-causal mask: one document is plain causal attention; with packed
    documents, a document's outputs equal the model run on that document alone (RoPE is relative)."""
    from dataclasses import replace

    from irlens.parallel.llama3 import Llama3, get_config

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


# --- pass lists -----------------------------------------------------------------------------


@pytest.mark.parametrize("joint, passes, match", [
    ([], ["no_such_pass"], "unknown --passes 'no_such_pass'; valid: autobucketing_reordering"),
    (["nope"], [], "unknown --joint-passes 'nope'"),
    ([], ["regional_inductor", "transformer_block_bucketing"], "out of order; the order is graph transform"),
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


def test_train_main_rejects_before_spawning():
    with pytest.raises(PassError, match="cudagraph"):
        train_main(["--mode", "compiled", "--passes", "cudagraph", "transformer_block_bucketing"])
    with pytest.raises(ValueError, match="--mode compiled only"):
        train_main(["--passes", "transformer_block_bucketing"])


def test_train_main_prints_final_json(capfd):
    assert train_main(["--model", "llama3:tiny", "--dp-shard", "2", "--steps", "3"]) == 0
    last = capfd.readouterr().out.strip().splitlines()[-1]
    summary = json.loads(last)
    assert summary["steps"] == 3 and summary["config"]["dp_shard"] == 2
    assert summary["tokens_per_s"] > 0 and summary["peak_mem_gib"] > 0 and "mfu" in summary


# --- GPU (skipped here): the CUDA-only passes, NCCL, one rank -------------------------------------

@pytest.mark.gpu
def test_gpu_full_inductor_cudagraph_and_flex_regional_match_eager():
    assert_gpu_passes_match_eager(dict(model="llama3:tiny", steps=5, device="cuda", mixed_precision=False), ranks=1)
