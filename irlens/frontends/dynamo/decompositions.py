"""Decompositions of ATen ops that torch itself does not decompose, written from their ATen
definitions (torch/csrc/autograd/FunctionsManual.cpp), so that an AOT graph holding one expands
into the common view's ops like any other. One function per op; `EXTRA` maps the op to it."""
from __future__ import annotations

import torch

aten = torch.ops.aten


def weight_norm_interface_backward(grad_w, saved_v, saved_g, saved_norms, dim: int):
    """The gradients of `_weight_norm_interface` (w = g * v / ||v||, the norm over every dim but
    `dim`; nn.utils.weight_norm, wav2vec 2.0's positional convolution), as
    `_weight_norm_differentiable_backward` computes them."""
    dims = [d for d in range(saved_v.dim()) if d != dim % saved_v.dim()]
    per_dim_sums = (grad_w * saved_v).sum(dims, keepdim=True)
    grad_v = (saved_g / saved_norms) * (grad_w - saved_v * (per_dim_sums / (saved_norms * saved_norms)))
    grad_g = per_dim_sums / saved_norms
    return grad_v, grad_g


EXTRA = {aten._weight_norm_interface_backward.default: weight_norm_interface_backward}
