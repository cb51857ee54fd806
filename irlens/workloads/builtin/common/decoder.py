"""Llama's pre-norm decoder block: x + attention(norm(x)), then + feed_forward(norm(x))."""
from __future__ import annotations

from typing import Callable

import torch
from torch import nn

from irlens.workloads.builtin.common.attention import Attention, causal_sdpa
from irlens.workloads.builtin.common.feed_forward import FeedForward
from irlens.workloads.builtin.common.norm import RMSNorm


class TransformerBlock(nn.Module):
    """`upcast_norm`: the norms' statistics in float32 (norm.RMSNorm); `inner`: the attention's
    inner attention (attention.Attention). The rotary embedding is the caller's, passed in: one
    module the blocks of a model share, or a block's own."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int, hidden_dim: int, norm_eps: float,
                 upcast_norm: bool = False, inner: Callable = causal_sdpa):
        super().__init__()
        self.attention_norm = RMSNorm(dim, norm_eps, upcast_norm)
        self.attention = Attention(dim, n_heads, n_kv_heads, inner)
        self.ffn_norm = RMSNorm(dim, norm_eps, upcast_norm)
        self.feed_forward = FeedForward(dim, hidden_dim)

    def forward(self, x: torch.Tensor, rope: Callable | None = None, block_mask=None) -> torch.Tensor:
        # positional: tensor parallelism prepares the attention's inputs by position (x, rope, block_mask)
        h = x + self.attention(self.attention_norm(x), rope, block_mask)
        return h + self.feed_forward(self.ffn_norm(h))
