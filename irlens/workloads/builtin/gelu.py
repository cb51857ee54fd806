"""`gelu`: tanh-approximation GELU written as its formula; `gelu_builtin`: the library's own."""
from __future__ import annotations

import math

import torch

from irlens.workloads.workload import Workload, register

_C = math.sqrt(2.0 / math.pi)
PRESETS = {"tiny": {"shape": [8, 64]}, "bench": {"shape": [1 << 14, 1 << 14]}}  # bench: 2^28 elements


def _inputs(cfg, dtype, gen):
    return (torch.randn(cfg["shape"], generator=gen).to(dtype),)


class GeluFormula(torch.nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(_C * (x + 0.044715 * x**3)))


class GeluBuiltin(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x, approximate="tanh")


def _jax_formula(cfg):
    import jax.numpy as jnp

    def gelu(params, x):
        return 0.5 * x * (1.0 + jnp.tanh(_C * (x + 0.044715 * x**3)))

    return gelu


def _jax_builtin(cfg):
    import jax

    def gelu(params, x):
        return jax.nn.gelu(x, approximate=True)

    return gelu


register(Workload("gelu", lambda cfg: GeluFormula(), _inputs, PRESETS, jax=_jax_formula,
                  description="tanh-approximation GELU written as its formula"))
register(Workload("gelu_builtin", lambda cfg: GeluBuiltin(), _inputs, PRESETS, jax=_jax_builtin,
                  description="the library's own GELU (F.gelu / jax.nn.gelu), tanh approximation"))
