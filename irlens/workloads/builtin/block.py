"""`block`: one pre-LayerNorm GPT block (LN, fused QKV, causal SDPA, projection, residual,
LN, tanh-GELU MLP, residual)."""
from __future__ import annotations

import torch

from irlens.workloads.builtin import layers
from irlens.workloads.workload import Workload, register

PRESETS = {
    "tiny": {"batch": 2, "seq": 16, "d_model": 64, "n_heads": 4},
    "bench": {"batch": 8, "seq": 2048, "d_model": 1024, "n_heads": 16},
}


def _inputs(cfg, dtype, gen):
    return (torch.randn(cfg["batch"], cfg["seq"], cfg["d_model"], generator=gen).to(dtype),)


def _jax(cfg):
    def block(params, x):
        return layers.block(params, x, cfg["n_heads"])

    return block


register(Workload("block", lambda cfg: layers.Block(cfg["d_model"], cfg["n_heads"]), _inputs, PRESETS, jax=_jax,
                  description="pre-LayerNorm GPT block: LN, fused QKV, causal SDPA, projection, LN, tanh-GELU MLP, residuals"))
