"""`tinyhead`: a small classifier head, Linear(64, 600) then softmax over the classes."""
from __future__ import annotations

import torch
from torch import nn

from irlens.workloads.builtin.layers import linear, scope
from irlens.workloads.workload import Workload, register

PRESETS = {
    "tiny": {"tokens": 16, "d_in": 64, "d_out": 600},
    "bench": {"tokens": 1 << 16, "d_in": 64, "d_out": 600},
}


class TinyHead(nn.Module):
    def __init__(self, d_in: int, d_out: int):
        super().__init__()
        self.proj = nn.Linear(d_in, d_out)

    def forward(self, x):
        return torch.softmax(self.proj(x), dim=-1)


def _inputs(cfg, dtype, gen):
    return (torch.randn(cfg["tokens"], cfg["d_in"], generator=gen).to(dtype),)


def _jax(cfg):
    import jax

    def tinyhead(params, x):
        return jax.nn.softmax(linear(scope(params, "proj"), x), axis=-1)

    return tinyhead


register(Workload("tinyhead", lambda cfg: TinyHead(cfg["d_in"], cfg["d_out"]), _inputs, PRESETS, jax=_jax,
                  description="Linear(64, 600) then softmax over the 600 classes, per token"))
