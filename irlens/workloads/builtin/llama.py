"""Llama's layers as workloads of the corpus of ordinary model code (`workload_names(corpus=True)`):
RMSNorm, rotary embeddings (cos/sin tables precomputed as buffers), the SwiGLU feed-forward,
grouped-query causal attention, and the block that chains them. The layers are
irlens.workloads.builtin.common's, which the parallel path's llama3 is built from too; this file holds their
workloads and JAX twins.

Each registers as a workload: `llama_rmsnorm`, `llama_rope`, `llama_swiglu`, `gqa_attention`,
`llama_block`. Layouts follow Meta's llama: activations [B, T, d], heads [B, T, H, D] until
attention. The JAX twins read the same parameters and buffers by name.
"""
from __future__ import annotations

import torch
from torch import nn

from irlens.workloads.builtin.common.attention import Attention
from irlens.workloads.builtin.common.decoder import TransformerBlock
from irlens.workloads.builtin.common.feed_forward import FeedForward
from irlens.workloads.builtin.common.norm import RMSNorm
from irlens.workloads.builtin.common.rope import RotaryEmbedding
from irlens.workloads.builtin.layers import linear, scope
from irlens.workloads.workload import CORPUS, Workload, register

NORM_EPS = 1e-6


# --- torch: the layers are models/common's (the parallel path's llama3 is built from them too) ---

class LlamaBlock(TransformerBlock):
    """A block with its own rotary tables (`rope`, for every position up to `max_seq`)."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, hidden_dim: int, max_seq: int):
        super().__init__(dim, n_heads, n_kv_heads, hidden_dim, NORM_EPS)
        self.rope = RotaryEmbedding(dim // n_heads, max_seq)

    def forward(self, x):
        return super().forward(x, self.rope)


def as_trained(module: nn.Module) -> nn.Module:
    """Norm weights drawn around 1 instead of left at 1: a twin that forgot them would still agree."""
    for m in module.modules():
        if isinstance(m, RMSNorm):
            nn.init.normal_(m.weight, mean=1.0, std=0.1)
    return module


def cubic_loss(outputs):
    """mean(y³) over the outputs. Where the mean square's gradient cancels (a rotation preserves
    norms; a normalized output's mean square is nearly constant) this one does not."""
    return sum((y * y * y).mean() for y in outputs)


# --- JAX ------------------------------------------------------------------------------

def rms_norm(params: dict, x, eps: float = NORM_EPS):
    import jax
    import jax.numpy as jnp

    return x * jax.lax.rsqrt(jnp.mean(x * x, axis=-1, keepdims=True) + eps) * params["weight"]


def apply_rope(params: dict, q, k):
    """`RotaryEmbedding.forward`, reading its `cos` and `sin` buffers."""
    import jax.numpy as jnp

    def rotate_half(x):
        x1, x2 = jnp.split(x, 2, axis=-1)
        return jnp.concatenate((-x2, x1), axis=-1)

    T = q.shape[1]
    cos, sin = params["cos"][:T, None, :], params["sin"][:T, None, :]
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def feed_forward(params: dict, x):
    import jax

    return linear(scope(params, "w2"), jax.nn.silu(linear(scope(params, "w1"), x, bias=False))
                  * linear(scope(params, "w3"), x, bias=False), bias=False)


def attention(params: dict, x, n_heads: int, n_kv_heads: int, rope: dict | None = None):
    """`Attention.forward`; jax.nn.dot_product_attention takes [B, T, H, D] and groups K/V heads itself."""
    import jax

    B, T, dim = x.shape
    head_dim = dim // n_heads
    q = linear(scope(params, "wq"), x, bias=False).reshape(B, T, n_heads, head_dim)
    k = linear(scope(params, "wk"), x, bias=False).reshape(B, T, n_kv_heads, head_dim)
    v = linear(scope(params, "wv"), x, bias=False).reshape(B, T, n_kv_heads, head_dim)
    if rope is not None:
        q, k = apply_rope(rope, q, k)
    y = jax.nn.dot_product_attention(q, k, v, is_causal=True)
    return linear(scope(params, "wo"), y.reshape(B, T, dim), bias=False)


def transformer_block(params: dict, x, n_heads: int, n_kv_heads: int):
    h = x + attention(scope(params, "attention"), rms_norm(scope(params, "attention_norm"), x),
                      n_heads, n_kv_heads, rope=scope(params, "rope"))
    return h + feed_forward(scope(params, "feed_forward"), rms_norm(scope(params, "ffn_norm"), h))


# --- workloads --------------------------------------------------------------------------

def _activations(cfg, dtype, gen):
    return (torch.randn(cfg["batch"], cfg["seq"], cfg["dim"], generator=gen).to(dtype),)


def _rope_inputs(cfg, dtype, gen):
    B, T, D = cfg["batch"], cfg["seq"], cfg["head_dim"]
    return (torch.randn(B, T, cfg["n_heads"], D, generator=gen).to(dtype),
            torch.randn(B, T, cfg["n_kv_heads"], D, generator=gen).to(dtype))


# bench sizes for one H100/H200, estimated (not yet timed): llama_block's forward is ~0.4 TFLOP
# (its SwiGLU 0.28), about a ms in bfloat16 and ten times that in float32; fwdbwd about 3x.
register(Workload(
    "llama_rmsnorm", lambda cfg: as_trained(RMSNorm(cfg["dim"], NORM_EPS)), _activations,
    {"tiny": {"batch": 2, "seq": 8, "dim": 64}, "bench": {"batch": 8, "seq": 4096, "dim": 4096}},
    jax=lambda cfg: lambda params, x: rms_norm(params, x), loss=cubic_loss, tags=(CORPUS,),
    description="llama's RMSNorm: x * rsqrt(mean(x²) + eps) * weight"))

register(Workload(
    "llama_rope", lambda cfg: RotaryEmbedding(cfg["head_dim"], cfg["max_seq"]), _rope_inputs,
    {"tiny": {"batch": 2, "seq": 8, "n_heads": 4, "n_kv_heads": 2, "head_dim": 16, "max_seq": 12},
     "bench": {"batch": 8, "seq": 4096, "n_heads": 32, "n_kv_heads": 8, "head_dim": 128, "max_seq": 8192}},
    jax=lambda cfg: apply_rope, loss=cubic_loss, tags=(CORPUS,),
    description="rotary embeddings on q and k (rotate_half), cos/sin tables precomputed as buffers"))

register(Workload(
    "llama_swiglu", lambda cfg: FeedForward(cfg["dim"], cfg["hidden_dim"]), _activations,
    {"tiny": {"batch": 2, "seq": 8, "dim": 32, "hidden_dim": 64},
     "bench": {"batch": 4, "seq": 1024, "dim": 2048, "hidden_dim": 5632}},
    jax=lambda cfg: feed_forward, tags=(CORPUS,),
    description="llama's SwiGLU feed-forward: w2(silu(w1 x) * w3 x), no biases"))

register(Workload(
    "gqa_attention", lambda cfg: Attention(cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"]), _activations,
    {"tiny": {"batch": 2, "seq": 8, "dim": 32, "n_heads": 4, "n_kv_heads": 2},
     "bench": {"batch": 4, "seq": 2048, "dim": 2048, "n_heads": 32, "n_kv_heads": 8}},
    jax=lambda cfg: lambda params, x: attention(params, x, cfg["n_heads"], cfg["n_kv_heads"]), tags=(CORPUS,),
    description="grouped-query causal attention: q/k/v/o projections, K/V heads repeated (repeat_kv), causal SDPA"))

register(Workload(
    "llama_block",
    lambda cfg: as_trained(LlamaBlock(cfg["dim"], cfg["n_heads"], cfg["n_kv_heads"], cfg["hidden_dim"], cfg["seq"])),
    _activations,
    {"tiny": {"batch": 2, "seq": 8, "dim": 32, "n_heads": 4, "n_kv_heads": 2, "hidden_dim": 64},
     "bench": {"batch": 2, "seq": 2048, "dim": 2048, "n_heads": 32, "n_kv_heads": 8, "hidden_dim": 5632}},
    jax=lambda cfg: lambda params, x: transformer_block(params, x, cfg["n_heads"], cfg["n_kv_heads"]), tags=(CORPUS,),
    description="a llama block: RMSNorm, GQA attention with RoPE, residual, RMSNorm, SwiGLU, residual"))
