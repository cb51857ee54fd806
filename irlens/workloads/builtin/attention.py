"""`attention`: the library's causal SDPA; `attention_manual`: the same written out as
softmax(Q Kᵀ/√d + causal mask) · V, so each frontend shows it as matmul, mask, softmax, matmul."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from irlens.workloads.builtin.layers import causal_attention
from irlens.workloads.workload import Workload, register

PRESETS = {
    "tiny": {"batch": 2, "heads": 2, "seq": 16, "head_dim": 8},
    "bench": {"batch": 8, "heads": 16, "seq": 4096, "head_dim": 128},
}


def _inputs(cfg, dtype, gen):
    shape = (cfg["batch"], cfg["heads"], cfg["seq"], cfg["head_dim"])
    return tuple(torch.randn(shape, generator=gen).to(dtype) for _ in "qkv")


class CausalSDPA(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class ManualCausalAttention(nn.Module):
    def forward(self, q, k, v):
        scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5
        # Built from arange inside forward (follows q's device; a bool mask has no float dtype
        # to get wrong), which Dynamo, Thunder and JAX all trace.
        pos = torch.arange(q.shape[-2], device=q.device)
        future = pos[None, :] > pos[:, None]
        scores = scores.masked_fill(future, float("-inf"))
        return torch.softmax(scores, dim=-1) @ v


def _jax_sdpa(cfg):
    def attention(params, q, k, v):
        return causal_attention(q, k, v)

    return attention


def _jax_manual(cfg):
    import jax
    import jax.numpy as jnp

    def attention_manual(params, q, k, v):
        scores = (q @ k.swapaxes(-2, -1)) * q.shape[-1] ** -0.5
        pos = jnp.arange(q.shape[-2])
        future = pos[None, :] > pos[:, None]
        scores = jnp.where(future, -jnp.inf, scores)
        return jax.nn.softmax(scores, axis=-1) @ v

    return attention_manual


register(Workload("attention", lambda cfg: CausalSDPA(), _inputs, PRESETS, jax=_jax_sdpa,
                  description="causal scaled-dot-product attention through the library op (F.sdpa / jax.nn.dot_product_attention)"))
register(Workload("attention_manual", lambda cfg: ManualCausalAttention(), _inputs, PRESETS, jax=_jax_manual,
                  description="causal attention written out: matmul, scale, causal mask, softmax, matmul"))
