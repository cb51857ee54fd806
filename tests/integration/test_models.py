"""Built-in workloads (the corpus of ordinary model code included) at the tiny preset: the JAX twin reproduces torch (outputs, loss and every
gradient), float32 torch agrees with a float64 reference of the same weights, bfloat16 runs,
and the shapes and parameter names of block and minigpt are what the twins rely on."""
import numpy as np
import pytest
import torch

from irlens.workloads.builtin import get_workload, workload_names
from irlens.workloads.builtin.jax_run import jax_results
from irlens.workloads.builtin.layers import Block, layer_norm
from irlens.workloads.workload import run_eager, to_jax

EVERY_WORKLOAD = workload_names() + workload_names(corpus=True)

# float32 eps is 1.2e-7 and the tiny presets reduce over at most a few hundred terms: errors
# seen are <= 6e-7, so 1e-5 leaves room while still catching a wrong eps, scale or layout.
FP32_RTOL = 1e-5
# bfloat16 keeps 8 bits of mantissa (eps 3.9e-3): outputs seen are within 5e-3 of float64.
BF16_RTOL = 3e-2


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def assert_results_close(got: dict, want: dict, rtol: float):
    assert set(got) == set(want)
    errs = {k: rel_err(got[k], want[k].double().numpy()) for k in want}
    bad = {k: e for k, e in errs.items() if not e < rtol}
    assert not bad, f"relative errors above {rtol}: {bad}"


# fwdbwd's results hold fwd's outputs (and the loss and gradients): fwd's rows are the long tail
# (`pytest -m slow`); the compare's xla rows check the forward-only twin against float64
@pytest.mark.parametrize("mode", [pytest.param("fwd", marks=pytest.mark.slow), "fwdbwd"])
@pytest.mark.parametrize("name", EVERY_WORKLOAD)
def test_jax_twin_matches_torch(name, mode):
    inst = get_workload(name).instantiate("tiny")
    want = run_eager(inst.module, inst, mode)
    assert_results_close(jax_results(inst, mode), want, FP32_RTOL)


@pytest.mark.parametrize("name", EVERY_WORKLOAD)
def test_float32_matches_float64_reference(name):
    inst = get_workload(name).instantiate("tiny")
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, "fwdbwd")
    assert want["out0"].dtype == torch.float64
    assert_results_close(run_eager(inst.module, inst, "fwdbwd"), want, FP32_RTOL)


@pytest.mark.parametrize("name", EVERY_WORKLOAD)
def test_bfloat16_forward(name):
    workload = get_workload(name)
    inst = workload.instantiate("tiny", dtype="bfloat16")
    out = run_eager(inst.module, inst, "fwd")["out0"]
    ref = workload.instantiate("tiny").cast("float64")
    want = run_eager(ref.module, ref, "fwd")["out0"]
    assert out.dtype == torch.bfloat16
    assert rel_err(out.double(), want) < BF16_RTOL


@pytest.mark.parametrize("name", EVERY_WORKLOAD)
def test_has_description(name):
    assert get_workload(name).description


def test_jax_layer_norm_matches_torch_eps():
    # variance ~1e-6, near eps: a different eps or an unbiased variance is visible here
    ln = torch.nn.LayerNorm(32)
    torch.nn.init.normal_(ln.weight)
    torch.nn.init.normal_(ln.bias)
    x = torch.randn(4, 32, generator=torch.Generator().manual_seed(0)) * 1e-3
    params = {k: to_jax(v) for k, v in ln.named_parameters()}
    assert rel_err(layer_norm(params, to_jax(x)), ln(x).detach().numpy()) < FP32_RTOL


def test_buffers_reach_the_jax_twin_by_name():
    """llama_rope's cos/sin tables are (non-persistent) buffers: the twin reads them by name, so
    tables changed after construction (as position-interpolation schemes rescale them) change both
    sides alike; they get no gradient; and a twin that rebuilds its own tables disagrees."""
    from irlens.workloads.builtin.llama import RotaryEmbedding, apply_rope

    inst = get_workload("llama_rope").instantiate("tiny")
    assert set(inst.jax_params()) == {"cos", "sin"} and not inst.params()
    with torch.no_grad():
        inst.module.cos.mul_(0.5)
        inst.module.sin.mul_(2.0)
    for mode in ("fwd", "fwdbwd"):
        assert_results_close(jax_results(inst, mode), run_eager(inst.module, inst, mode), FP32_RTOL)
    cfg = inst.cfg
    fresh = {k: to_jax(v) for k, v in RotaryEmbedding(cfg["head_dim"], cfg["max_seq"]).named_buffers()}
    rebuilt = jax_results(inst, "fwd", lambda params, q, k: apply_rope(fresh, q, k))
    assert rel_err(rebuilt["out0"], run_eager(inst.module, inst, "fwd")["out0"].numpy()) > 0.1


def test_jax_refuses_float64_without_x64():
    inst = get_workload("block").instantiate("tiny", dtype="float64")
    with pytest.raises(ValueError, match="64-bit"):
        jax_results(inst, "fwd")


BLOCK_PARAMS = {
    "ln_1.weight": (64,), "ln_1.bias": (64,),
    "qkv.weight": (192, 64), "qkv.bias": (192,),
    "attn_out.weight": (64, 64), "attn_out.bias": (64,),
    "ln_2.weight": (64,), "ln_2.bias": (64,),
    "mlp_in.weight": (256, 64), "mlp_in.bias": (256,),
    "mlp_out.weight": (64, 256), "mlp_out.bias": (64,),
}


def shapes(inst) -> dict:
    return {k: tuple(p.shape) for k, p in inst.params().items()}


def test_block_shapes():
    inst = get_workload("block").instantiate("tiny")
    assert [tuple(x.shape) for x in inst.inputs] == [(2, 16, 64)]
    assert tuple(inst.module(*inst.inputs).shape) == (2, 16, 64)
    assert shapes(inst) == BLOCK_PARAMS


def test_minigpt_shapes():
    inst = get_workload("minigpt").instantiate("tiny")
    (tokens,) = inst.inputs
    assert tokens.dtype == torch.int64 and tuple(tokens.shape) == (2, 16)
    assert int(tokens.min()) >= 0 and int(tokens.max()) < 128
    assert tuple(inst.module(tokens).shape) == (2, 16, 128)  # logits over the vocab
    want = {"tok_emb.weight": (128, 64), "pos_emb.weight": (16, 64),
            "ln_f.weight": (64,), "ln_f.bias": (64,), "lm_head.weight": (128, 64)}  # LM head has no bias
    want.update({f"blocks.{i}.{k}": s for i in range(2) for k, s in BLOCK_PARAMS.items()})
    assert shapes(inst) == want
    assert all(isinstance(b, Block) for b in inst.module.blocks)
