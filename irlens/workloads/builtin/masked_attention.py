"""`masked_attention`: nanoGPT's causal self-attention written out, with its causal mask held as a
buffer (`bias`, lower-triangular ones) and a padding mask of the keys given as an input (the
tokenizer's attention_mask: 1 for a token, 0 for padding); both applied with masked_fill.
Part of the corpus of ordinary model code."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from irlens.workloads.builtin.layers import linear, scope
from irlens.workloads.workload import CORPUS, Workload, register


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, n_heads: int, max_seq: int):
        super().__init__()
        self.n_heads = n_heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.register_buffer("bias", torch.tril(torch.ones(max_seq, max_seq)).view(1, 1, max_seq, max_seq))

    def forward(self, x, attention_mask):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_heads, C // self.n_heads).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = att.masked_fill(attention_mask[:, None, None, :] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def _jax(cfg):
    import jax
    import jax.numpy as jnp

    def masked_attention(params, x, attention_mask):
        B, T, C = x.shape
        H = cfg["n_heads"]
        q, k, v = jnp.split(linear(scope(params, "c_attn"), x), 3, axis=2)
        q, k, v = (t.reshape(B, T, H, C // H).transpose(0, 2, 1, 3) for t in (q, k, v))
        att = (q @ k.swapaxes(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
        att = jnp.where(params["bias"][:, :, :T, :T] == 0, -jnp.inf, att)
        att = jnp.where(attention_mask[:, None, None, :] == 0, -jnp.inf, att)
        y = (jax.nn.softmax(att, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        return linear(scope(params, "c_proj"), y)

    return masked_attention


def _inputs(cfg, dtype, gen):
    B, T = cfg["batch"], cfg["seq"]
    attention_mask = torch.ones(B, T, dtype=torch.int64)
    attention_mask[-1, -T // 4:] = 0  # the last sequence is padded on the right: every query still sees a key
    return torch.randn(B, T, cfg["dim"], generator=gen).to(dtype), attention_mask


register(Workload(
    "masked_attention", lambda cfg: CausalSelfAttention(cfg["dim"], cfg["n_heads"], cfg["max_seq"]), _inputs,
    {"tiny": {"batch": 2, "seq": 8, "dim": 32, "n_heads": 4, "max_seq": 12},
     "bench": {"batch": 4, "seq": 2048, "dim": 1024, "n_heads": 16, "max_seq": 2048}},
    jax=_jax, tags=(CORPUS,),
    description="nanoGPT attention written out: causal mask buffer and a padding mask input, both by masked_fill"))
