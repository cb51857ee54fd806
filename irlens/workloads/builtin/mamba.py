"""`mamba_conv`: Mamba's block around its causal depthwise convolution, as mamba_simple.py writes
it (without the selective scan): in_proj to x and a gate z, Conv1d over time with one filter per
channel (padding d_conv - 1, the look-ahead cut off), SiLU, gated by SiLU(z), out_proj.
Part of the corpus of ordinary model code."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from irlens.workloads.builtin.layers import linear, scope
from irlens.workloads.workload import CORPUS, Workload, register


class MambaConvBlock(nn.Module):
    def __init__(self, d_model: int, d_inner: int, d_conv: int = 4):
        super().__init__()
        self.in_proj = nn.Linear(d_model, 2 * d_inner, bias=False)
        self.conv1d = nn.Conv1d(d_inner, d_inner, kernel_size=d_conv, groups=d_inner, padding=d_conv - 1)
        self.out_proj = nn.Linear(d_inner, d_model, bias=False)

    def forward(self, hidden_states):
        T = hidden_states.shape[1]
        x, z = self.in_proj(hidden_states).chunk(2, dim=-1)
        x = self.conv1d(x.transpose(1, 2))[..., :T].transpose(1, 2)  # causal: position t sees t-d_conv+1..t
        return self.out_proj(F.silu(x) * F.silu(z))


def _jax(cfg):
    import jax

    def mamba_conv(params, hidden_states):
        x, z = jax.numpy.split(linear(scope(params, "in_proj"), hidden_states, bias=False), 2, axis=-1)
        w = params["conv1d.weight"]  # [C, 1, d_conv]
        d_conv = w.shape[-1]
        x = jax.lax.conv_general_dilated(
            x, w.transpose(2, 1, 0), window_strides=(1,), padding=[(d_conv - 1, 0)],
            dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=x.shape[-1]) + params["conv1d.bias"]
        return linear(scope(params, "out_proj"), jax.nn.silu(x) * jax.nn.silu(z), bias=False)

    return mamba_conv


def _inputs(cfg, dtype, gen):
    return (torch.randn(cfg["batch"], cfg["seq"], cfg["d_model"], generator=gen).to(dtype),)


register(Workload(
    "mamba_conv", lambda cfg: MambaConvBlock(cfg["d_model"], cfg["d_inner"]), _inputs,
    {"tiny": {"batch": 2, "seq": 8, "d_model": 16, "d_inner": 32},
     "bench": {"batch": 8, "seq": 2048, "d_model": 1024, "d_inner": 2048}},
    jax=_jax, tags=(CORPUS,),
    description="Mamba's conv branch: in_proj, causal depthwise Conv1d (kernel 4), SiLU, SiLU gate, out_proj"))
