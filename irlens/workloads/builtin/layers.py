"""Building blocks shared by the workloads, each written once for torch and once for JAX.

The JAX functions take the torch module's parameters by their `named_parameters()` names
(use `scope` to descend into a submodule) and reproduce torch's numerics: a Linear weight is
[out, in], so y = x @ W.T + b, and LayerNorm uses torch's eps and biased variance.
"""
from __future__ import annotations

import torch.nn.functional as F
from torch import nn

LAYER_NORM_EPS = 1e-5  # torch.nn.LayerNorm's default


# --- torch ----------------------------------------------------------------------------

class Block(nn.Module):
    """Pre-LayerNorm GPT block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.n_heads = n_heads
        self.ln_1 = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.attn_out = nn.Linear(d_model, d_model)
        self.ln_2 = nn.LayerNorm(d_model, eps=LAYER_NORM_EPS)
        self.mlp_in = nn.Linear(d_model, 4 * d_model)
        self.mlp_out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln_1(x)).split(C, dim=-1)
        # [B, T, C] -> [B, H, T, C/H], the layout SDPA takes
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_out(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_out(F.gelu(self.mlp_in(self.ln_2(x)), approximate="tanh"))


# --- JAX ------------------------------------------------------------------------------

def scope(params: dict, prefix: str) -> dict:
    """The parameters of one submodule, with `prefix.` stripped from their names."""
    prefix = prefix + "."
    return {k[len(prefix):]: v for k, v in params.items() if k.startswith(prefix)}


def linear(params: dict, x, bias: bool = True):
    """torch.nn.Linear: weight is [out, in]."""
    y = x @ params["weight"].T
    return y + params["bias"] if bias else y


def layer_norm(params: dict, x, eps: float = LAYER_NORM_EPS):
    """torch.nn.LayerNorm over the last dim (biased variance, eps inside the sqrt)."""
    import jax

    mean = x.mean(-1, keepdims=True)
    centered = x - mean
    var = (centered * centered).mean(-1, keepdims=True)
    return centered * jax.lax.rsqrt(var + eps) * params["weight"] + params["bias"]


def causal_attention(q, k, v):
    """Causal SDPA on torch's [B, H, T, D] layout (jax.nn.dot_product_attention takes [B, T, H, D])."""
    import jax

    q, k, v = (t.swapaxes(1, 2) for t in (q, k, v))
    return jax.nn.dot_product_attention(q, k, v, is_causal=True).swapaxes(1, 2)


def block(params: dict, x, n_heads: int):
    """`Block.forward` on the block's own parameters (names without the block's prefix)."""
    import jax
    import jax.numpy as jnp

    B, T, C = x.shape
    qkv = linear(scope(params, "qkv"), layer_norm(scope(params, "ln_1"), x))
    q, k, v = (t.reshape(B, T, n_heads, C // n_heads).swapaxes(1, 2) for t in jnp.split(qkv, 3, axis=-1))
    y = causal_attention(q, k, v).swapaxes(1, 2).reshape(B, T, C)
    x = x + linear(scope(params, "attn_out"), y)
    h = jax.nn.gelu(linear(scope(params, "mlp_in"), layer_norm(scope(params, "ln_2"), x)), approximate=True)
    return x + linear(scope(params, "mlp_out"), h)
