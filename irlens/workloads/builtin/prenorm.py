"""`layernorm_linear`: the pre-norm residual step transformers repeat, x + Linear(LayerNorm(x)).
Part of the corpus of ordinary model code."""
from __future__ import annotations

import torch
from torch import nn

from irlens.workloads.builtin.layers import layer_norm, linear, scope
from irlens.workloads.workload import CORPUS, Workload, register


class PreNormResidual(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return x + self.proj(self.norm(x))


def _jax(cfg):
    def layernorm_linear(params, x):
        return x + linear(scope(params, "proj"), layer_norm(scope(params, "norm"), x))

    return layernorm_linear


def _module(cfg):
    module = PreNormResidual(cfg["dim"])
    # drawn around 1 and 0, as if trained: a twin that forgot the affine would still agree at 1 and 0
    nn.init.normal_(module.norm.weight, mean=1.0, std=0.1)
    nn.init.normal_(module.norm.bias, std=0.1)
    return module


def _inputs(cfg, dtype, gen):
    return (torch.randn(cfg["batch"], cfg["seq"], cfg["dim"], generator=gen).to(dtype),)


register(Workload(
    "layernorm_linear", _module, _inputs,
    {"tiny": {"batch": 2, "seq": 8, "dim": 32}, "bench": {"batch": 8, "seq": 2048, "dim": 2048}},
    jax=_jax, tags=(CORPUS,),
    description="pre-norm residual step: x + Linear(LayerNorm(x))"))
