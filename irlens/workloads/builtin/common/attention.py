"""Causal grouped-query attention, as llama writes it: q/k/v/o projections without biases,
`n_kv_heads` key/value heads each serving `n_heads / n_kv_heads` query heads (repeat_kv), rotary
embeddings on q and k, then an inner attention over [B, heads, T, head_dim]."""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[B, T, kv_heads, D] -> [B, T, kv_heads * n_rep, D], each key/value head next to the query
    heads it serves (as llama and torchtitan: SDPA's own enable_gqa is not on every CUDA backend)."""
    if n_rep == 1:
        return x
    b, t, h, d = x.shape
    return x[:, :, :, None, :].expand(b, t, h, n_rep, d).reshape(b, t, h * n_rep, d)


def causal_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask=None) -> torch.Tensor:
    """Causal scaled-dot-product attention; it takes no mask beyond causality."""
    if block_mask is not None:
        raise ValueError("causal SDPA takes no block mask; build the attention with a masked inner attention")
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class Attention(nn.Module):
    """`inner(q, k, v, block_mask)` computes the attention itself: causal SDPA, or (the parallel
    path) FlexAttention over a block mask."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, inner: Callable = causal_sdpa):
        super().__init__()
        if dim % n_heads or n_heads % n_kv_heads:
            raise ValueError(f"dim {dim}, n_heads {n_heads}, n_kv_heads {n_kv_heads} do not divide")
        self.head_dim, self.n_rep, self.inner = dim // n_heads, n_heads // n_kv_heads, inner
        self.wq = nn.Linear(dim, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, dim, bias=False)

    def forward(self, x: torch.Tensor, rope: Callable | None = None, block_mask=None) -> torch.Tensor:
        B, T, _ = x.shape
        # -1 heads: under tensor parallelism a rank holds n_heads / tp of them
        q = self.wq(x).view(B, T, -1, self.head_dim)
        k = self.wk(x).view(B, T, -1, self.head_dim)
        v = self.wv(x).view(B, T, -1, self.head_dim)
        if rope is not None:
            q, k = rope(q, k)
        q, k, v = (t.transpose(1, 2) for t in (q, repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)))
        y = self.inner(q, k, v, block_mask)
        return self.wo(y.transpose(1, 2).contiguous().view(B, T, -1))
