"""deepseek_v3 (MoE) with expert parallelism on the joint-graph path, on the CPU: gloo ranks
(spawned) and a fake process group."""
import json
from dataclasses import replace

import pytest
import torch

from irlens.parallel.parallelize.distributed import spawn
from irlens.cli import main
from irlens.parallel.dump import capture_fake, render
from irlens.parallel.config import CompileConfig, ModelConfig, OptimizerConfig, ParallelismConfig, TrainConfig, TrainingConfig
from irlens.parallel.train.loop import train
from tests.support.parallel_gpu import assert_gpu_passes_match_eager

STEPS = 10
DP2 = TrainConfig(ModelConfig("deepseek_v3:tiny"), ParallelismConfig(dp_shard=2), TrainingConfig(steps=STEPS),
                  OptimizerConfig(lr=1e-2))
EP2 = replace(DP2, parallelism=ParallelismConfig(dp_shard=2, ep=2))


def _run(configs: dict) -> dict:
    """On every rank: train each configuration in turn; rank 0's results."""
    return {name: train(tc) for name, tc in configs.items()}


@pytest.fixture(scope="module")
def gloo_runs():
    return spawn(_run, 2, {
        "local_experts": DP2,  # every rank holds all experts
        "ep_eager": EP2,
        "ep_compiled": replace(EP2, compile=CompileConfig("compiled")),
    })


def _numerics(result):
    return [(s.step, s.loss, s.grad_norm) for s in result.steps]


def test_compiled_ep_joint_graph_is_bitwise_equal_to_eager(gloo_runs):
    assert len(gloo_runs["ep_compiled"].steps) == STEPS
    assert _numerics(gloo_runs["ep_compiled"]) == _numerics(gloo_runs["ep_eager"])


def test_expert_parallel_matches_local_experts(gloo_runs):
    """Dispatch by all-to-all computes what local experts compute; the experts' gradients average
    over all data-parallel ranks (grad norm equal)."""
    for (s, loss, norm), (_, loss_ref, norm_ref) in zip(_numerics(gloo_runs["ep_eager"]),
                                                       _numerics(gloo_runs["local_experts"]), strict=True):
        assert loss == pytest.approx(loss_ref, rel=1e-6), s
        assert norm == pytest.approx(norm_ref, rel=1e-6), s
    losses = [s.loss for s in gloo_runs["ep_eager"].steps]
    assert sum(losses[-3:]) / 3 < sum(losses[:3]) / 3 - 0.1


def test_router_load_balance_is_reported(gloo_runs):
    from irlens.parallel.models.deepseek_v3.model import get_config

    cfg = get_config("tiny")
    # every token of both ranks assigned top_k times in the one MoE layer, counted once per step
    assignments = 2 * cfg.batch_size * cfg.seq_len * cfg.top_k * (cfg.n_layers - cfg.n_dense_layers)
    for ep, local in zip(gloo_runs["ep_compiled"].steps, gloo_runs["local_experts"].steps, strict=True):
        assert len(ep.expert_tokens) == cfg.n_experts and sum(ep.expert_tokens) == assignments
        assert ep.expert_imbalance == pytest.approx(max(ep.expert_tokens) / (assignments / cfg.n_experts))
        assert 0 <= ep.dropped_frac < 0.2
        assert "expert_imbalance" in ep.line()
        assert ep.expert_tokens == local.expert_tokens
    # the final JSON line's summary carries the last step's
    summary = json.loads(json.dumps(gloo_runs["ep_compiled"].summary()))
    last = gloo_runs["ep_compiled"].steps[-1]
    assert summary["config"]["parallelism"]["ep"] == 2
    assert (summary["expert_tokens"], summary["expert_imbalance"], summary["dropped_frac"]) == \
        (last.expert_tokens, last.expert_imbalance, last.dropped_frac)


def test_dispatch_drops_past_capacity():
    from irlens.parallel.models.deepseek_v3.model import dispatch_slots

    experts = torch.tensor([[0, 1], [0, 2], [0, 1]])  # expert 0 is asked three times, capacity 2
    slots, load = dispatch_slots(experts, n_experts=4, cap=2)
    assert slots.tolist() == [0, 2, 1, 4, 8, 3]  # expert e's slots are e*2, e*2+1; 8 = dropped
    assert load.tolist() == [[3, 2, 1, 0], [2, 2, 1, 0]]


@pytest.mark.parametrize("model, dp_shard, ep, match", [
    ("llama3:tiny", 2, 2, "has no experts"),
    ("deepseek_v3:tiny", 2, 4, "must divide --dp-shard"),
    ("deepseek_v3:tiny", 3, 3, "does not divide the model's 8 experts"),
])
def test_bad_expert_parallel_degrees_are_rejected(model, dp_shard, ep, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(ModelConfig(model), ParallelismConfig(dp_shard=dp_shard, ep=ep)).validate()


# --- fake process group: DP2 x TP2 x EP2 capture ----------------------------------------------


def _collectives(step, stage, name):
    return next(r for r in step.records if r.stage == stage and r.name == name).after.collectives


@pytest.fixture(scope="module")
def fake_capture():
    return capture_fake("deepseek_v3:debug",
                        ParallelismConfig(dp_shard=2, tp=2, ep=2, sequence_parallel=False, loss_parallel=False))


def test_fake_capture_lists_the_all_to_alls(fake_capture):
    moe_layers, dense_layers = 5, 1
    joint = _collectives(fake_capture, "joint", "capture")
    # dispatch and combine per MoE layer, each again (reversed) in the backward
    assert joint["all_to_all"] == 4 * moe_layers
    assert _collectives(fake_capture, "forward", "partition")["all_to_all"] == 2 * moe_layers
    assert _collectives(fake_capture, "backward", "partition")["all_to_all"] == 2 * moe_layers
    # SimpleFSDP over dp_shard for all but the routed experts (ep = dp_shard: no expert FSDP left);
    # per MoE block: 2 norms, 4 attention, router, 3 shared expert; TP's logits gather
    n_params = dense_layers * 9 + moe_layers * 10 + 3
    assert joint["all_gather"] == n_params + 1
    assert joint["reduce_scatter"] == n_params
    # TP: the row-wise linears (attention, dense FFN or shared expert) and the embedding
    assert _collectives(fake_capture, "forward", "partition")["all_reduce"] == 2 * (moe_layers + dense_layers) + 1
    assert joint["wait"] == sum(v for k, v in joint.items() if k != "wait")


def test_common_view_shows_the_all_to_alls(fake_capture):
    graph = json.loads(render(fake_capture, "joint", "common", "json", "composite", "deepseek_v3:debug"))
    ops = [n["op"] for n in graph["nodes"]]
    summary = _collectives(fake_capture, "joint", "capture")
    assert {kind: ops.count(kind) for kind in summary} == summary


def test_experts_fsdp_over_the_remaining_dp_ranks(capsys):
    """DP4 x EP2: the experts are also SimpleFSDP-sharded over the 2 remaining dp ranks."""
    assert main(["dump", "deepseek_v3:tiny", "--frontend", "joint", "--dp-shard", "4", "--tp", "1", "--ep", "2",
                 "--stage", "forward", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    joint = next(p for p in out["passes"] if p["pass"] == "capture")["after"]["collectives"]
    # tiny: 9 dense-block, 10 + 3 expert MoE-block, 3 other parameters
    assert joint["all_gather"] == joint["reduce_scatter"] == 9 + 13 + 3
    assert joint["all_to_all"] == 4
    assert [n["op"] for n in out["nodes"]].count("all_to_all") == 2


# --- the model --------------------------------------------------------------------------------


def test_flex_variant_matches_sdpa_on_one_document():
    from dataclasses import replace

    from irlens.parallel.models.deepseek_v3.model import DeepSeekV3, get_config

    cfg = get_config("tiny")
    torch.manual_seed(0)
    sdpa = DeepSeekV3(cfg)
    flex = DeepSeekV3(replace(cfg, flex=True, doc_len=cfg.seq_len))
    flex.load_state_dict(sdpa.state_dict())
    tokens = torch.randint(0, cfg.vocab_size, (2, cfg.seq_len))
    with torch.no_grad():
        torch.testing.assert_close(flex(tokens), sdpa(tokens), atol=2e-4, rtol=1e-4)


# --- GPU (skipped here): NCCL, 2 ranks, EP2 ---------------------------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="EP2 needs 2 GPUs")
def test_gpu_ep_full_inductor_cudagraph_and_flex_regional_match_eager():
    assert_gpu_passes_match_eager(replace(EP2, training=TrainingConfig(steps=5, device="cuda", mixed_precision=False),
                                          optimizer=OptimizerConfig()), ranks=2)
