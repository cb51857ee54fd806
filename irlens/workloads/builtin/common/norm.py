"""RMSNorm: x / sqrt(mean(x²) + eps) * weight."""
from __future__ import annotations

import torch
from torch import nn


class RMSNorm(nn.Module):
    """With `upcast`, the statistic is computed in float32 and the result cast back before the
    weight, as Meta's and torchtitan's llama do for bfloat16 training. Without it everything stays
    in x's dtype: the comparison's float64 reference must not be rounded to float32, and its
    bfloat16 rows show what bfloat16 does."""

    def __init__(self, dim: int, eps: float, upcast: bool = False):
        super().__init__()
        self.eps, self.upcast = eps, upcast
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float() if self.upcast else x
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y.type_as(x) if self.upcast else y) * self.weight
