"""Rotary position embeddings in the two layouts llama code writes. Each is a module holding its
cos/sin tables for every position up to `max_seq` as non-persistent buffers, called as
`rope(q, k) -> (q, k)` on [B, T, heads, head_dim] (q and k may have different head counts).

`RotaryEmbedding` rotates the two halves of the head dimension against each other (`rotate_half`,
as Hugging Face's llama); `InterleavedRotaryEmbedding` rotates adjacent pairs (x0, x1), as Meta's
reference llama and torchtitan, in float32 and real arithmetic (complex tensors do not shard or
trace as cleanly). Both use the same frequencies, theta^(-2i / head_dim) for pair i.
"""
from __future__ import annotations

import torch
from torch import nn

ROPE_THETA = 10000.0  # the rotary base of the RoPE paper and of llama 1 and 2 (llama 3 trains with 500000)


def rope_angles(head_dim: int, max_seq: int, theta: float) -> torch.Tensor:
    """[max_seq, head_dim / 2]: each position times each pair's frequency."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    return torch.outer(torch.arange(max_seq, dtype=torch.float32), inv_freq)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    """The half-rotation layout: tables [max_seq, head_dim], the angles repeated for both halves."""

    def __init__(self, head_dim: int, max_seq: int, theta: float = ROPE_THETA):
        super().__init__()
        angles = rope_angles(head_dim, max_seq, theta)
        emb = torch.cat((angles, angles), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        T = q.shape[1]
        cos, sin = self.cos[:T].unsqueeze(1), self.sin[:T].unsqueeze(1)
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, T, H, D] with each adjacent pair rotated by its position's angle (cos, sin: [T, D/2]),
    computed in float32 and cast back to x's dtype."""
    xf = x.float().unflatten(-1, (-1, 2))
    x0, x1 = xf[..., 0], xf[..., 1]
    cos, sin = cos[None, :, None, :], sin[None, :, None, :]
    out = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
    return out.flatten(-2).type_as(x)


class InterleavedRotaryEmbedding(nn.Module):
    """The adjacent-pairs layout: tables [max_seq, head_dim / 2]. A subclass may replace `rotate`
    (the parallel path annotates it as a region to compile)."""

    rotate = staticmethod(rotate_pairs)

    def __init__(self, head_dim: int, max_seq: int, theta: float = ROPE_THETA):
        super().__init__()
        angles = rope_angles(head_dim, max_seq, theta)
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        T = q.shape[1]
        cos, sin = self.cos[:T], self.sin[:T]
        return self.rotate(q, cos, sin), self.rotate(k, cos, sin)
