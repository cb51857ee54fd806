"""Spatial ops over the trailing dims of [N, C, *spatial] tensors: convolution. Primitive (as in
PyTorch's core ATen); each meaning is the ATen op it stands for, run in float64."""
from __future__ import annotations

import torch

from irlens.ops._torch import lax
from irlens.ops.core import MATMUL, Attr, declare, lowering, meaning

A = torch.ops.aten
_CONV = dict(stride=Attr("ints"), padding=Attr("ints"), dilation=Attr("ints"), transposed=Attr("bool", False),
             output_padding=Attr("ints", None), groups=Attr("int", 1))

convolution = declare("convolution", MATMUL, "x weight bias?", **_CONV,
                      doc="ATen's convolution (transposed: its gradient w.r.t. the input)")


def _conv_args(a, spatial: int) -> tuple:
    return (a["stride"], a["padding"], a["dilation"], a["transposed"], a["output_padding"] or [0] * spatial,
            a["groups"])


@meaning(convolution)
def _convolution(a, x, w, b=None):
    return A.convolution(x, w, b, *_conv_args(a, w.dim() - 2))


@lowering(convolution, "jax", when=lambda node: not node.attrs.get("transposed"))
def _convolution_jax(a, x, w, b=None):
    spatial = w.ndim - 2
    y = lax().conv_general_dilated(x, w, tuple(a["stride"]), [(p, p) for p in a["padding"]],
                                   rhs_dilation=tuple(a["dilation"]), feature_group_count=a["groups"])
    return y if b is None else y + b.reshape((1, -1) + (1,) * spatial)
