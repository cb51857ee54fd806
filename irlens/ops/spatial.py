"""Spatial ops over the trailing dims of [N, C, *spatial] tensors: convolution, pooling,
padding by reflection or replication, resampling. Primitive (as in PyTorch's core ATen);
each meaning is the ATen op it stands for, run in float64, and the backward ops are their own
ops as in core ATen."""
from __future__ import annotations

import torch

from irlens.ops._torch import lax
from irlens.ops.core import DATA_MOVEMENT, MATMUL, OTHER, REDUCTION, Attr, declare, from_aten, lowering, meaning

A = torch.ops.aten
_CONV = dict(stride=Attr("ints"), padding=Attr("ints"), dilation=Attr("ints"), transposed=Attr("bool", False),
             output_padding=Attr("ints", None), groups=Attr("int", 1))

convolution = declare("convolution", MATMUL, "x weight bias?", **_CONV,
                      doc="ATen's convolution (transposed: its gradient w.r.t. the input)")
convolution_backward = declare("convolution_backward", MATMUL, "grad x weight", outputs="*grads", **_CONV,
                               bias_sizes=Attr("ints", None), grads=Attr("any"),
                               doc="[dx, dweight, dbias], those `grads` asks for")


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


@meaning(convolution_backward)
def _convolution_backward(a, g, x, w):
    grads = A.convolution_backward(g, x, w, a["bias_sizes"], *_conv_args(a, w.dim() - 2), list(a["grads"]))
    return tuple(t for t in grads if t is not None)


_WINDOW = dict(kernel=Attr("ints"), stride=Attr("ints"), padding=Attr("ints"), ceil_mode=Attr("bool", False))
max_pool = declare("max_pool", REDUCTION, "x", outputs="values indices?", dilation=Attr("ints", None), **_WINDOW,
                   doc="max over each window of the spatial dims (len(kernel) of them: 2 or 3); indices: each "
                       "max's flat position in its input plane")
max_pool_backward = declare("max_pool_backward", REDUCTION, "grad x indices", dilation=Attr("ints", None), **_WINDOW)
_AVG = dict(count_include_pad=Attr("bool", True), divisor_override=Attr("int", None), **_WINDOW)
avg_pool = declare("avg_pool", REDUCTION, "x", **_AVG, doc="mean over each window of the spatial dims")
avg_pool_backward = declare("avg_pool_backward", REDUCTION, "grad x", **_AVG)
adaptive_avg_pool = declare("adaptive_avg_pool", REDUCTION, "x", output_size=Attr("ints"),
                            doc="mean over windows that split the spatial dims into output_size")
adaptive_avg_pool_backward = declare("adaptive_avg_pool_backward", REDUCTION, "grad x", spatial=Attr("int", 2),
                                     doc="spatial: how many trailing dims were pooled (2 or 3)")


def _n(a) -> int:
    return len(a["kernel"])


def _dilation(a) -> list[int]:
    return a["dilation"] or [1] * _n(a)


@meaning(max_pool)
def _max_pool(a, x):
    op = A.max_pool2d_with_indices if _n(a) == 2 else A.max_pool3d_with_indices
    return tuple(op(x, a["kernel"], a["stride"], a["padding"], _dilation(a), a["ceil_mode"]))


@meaning(max_pool_backward)
def _max_pool_backward(a, g, x, indices):
    op = A.max_pool2d_with_indices_backward if _n(a) == 2 else A.max_pool3d_with_indices_backward
    return op(g, x, a["kernel"], a["stride"], a["padding"], _dilation(a), a["ceil_mode"], indices)


def _avg_args(a) -> tuple:
    return a["kernel"], a["stride"], a["padding"], a["ceil_mode"], a["count_include_pad"], a["divisor_override"]


@meaning(avg_pool)
def _avg_pool(a, x):
    if _n(a) == 1:  # ATen's avg_pool1d has no divisor_override
        return A.avg_pool1d(x, *_avg_args(a)[:-1]) if a["divisor_override"] is None else \
            A.avg_pool2d(x.unsqueeze(-2), [1, *a["kernel"]], [1, *a["stride"]], [0, *a["padding"]], a["ceil_mode"],
                         a["count_include_pad"], a["divisor_override"]).squeeze(-2)
    return (A.avg_pool2d if _n(a) == 2 else A.avg_pool3d)(x, *_avg_args(a))


@meaning(avg_pool_backward)
def _avg_pool_backward(a, g, x):
    return (A.avg_pool2d_backward if _n(a) == 2 else A.avg_pool3d_backward)(g, x, *_avg_args(a))


@meaning(adaptive_avg_pool)
def _adaptive_avg_pool(a, x):
    op = {1: A.adaptive_avg_pool1d, 2: A._adaptive_avg_pool2d, 3: A._adaptive_avg_pool3d}[len(a["output_size"])]
    return op(x, a["output_size"])


@meaning(adaptive_avg_pool_backward)
def _adaptive_avg_pool_backward(a, g, x):
    return (A._adaptive_avg_pool2d_backward if a["spatial"] == 2 else A._adaptive_avg_pool3d_backward)(g, x)


# --- padding that repeats the edge -------------------------------------------------------------------
_PAD = Attr("any")  # [[lo, hi], ...], one per dim
reflection_pad = declare("reflection_pad", DATA_MOVEMENT, "x", padding=_PAD,
                         doc="x padded by its reflection about each edge (the edge not repeated)")
replication_pad = declare("replication_pad", DATA_MOVEMENT, "x", padding=_PAD, doc="x padded by repeating each edge")


def _edge_pad(x, padding, position):
    """Pad each dim by reading x at `position(i, n)` for i in [-lo, n + hi)."""
    for d, (lo, hi) in enumerate(padding):
        if lo or hi:
            n = x.shape[d]
            i = torch.arange(-lo, n + hi, device=x.device)
            x = x.index_select(d, position(i, n))
    return x


@meaning(reflection_pad)
def _reflection_pad(a, x):
    return _edge_pad(x, a["padding"], lambda i, n: (n - 1) - ((n - 1) - i.abs()).abs())


@meaning(replication_pad)
def _replication_pad(a, x):
    return _edge_pad(x, a["padding"], lambda i, n: i.clamp(0, n - 1))


# --- resampling -------------------------------------------------------------------------------------
upsample = declare("upsample", OTHER, "x", mode=Attr("str", choices=("nearest", "bilinear")),
                   output_size=Attr("ints"), scales=Attr("any", None), align_corners=Attr("bool", False),
                   doc="ATen's upsample_nearest2d / upsample_bilinear2d to output_size (scales, when given, "
                       "place the samples)")
grid_sample = from_aten("grid_sample", OTHER, A.grid_sampler_2d.default)
grid_sample_backward = from_aten("grid_sample_backward", OTHER, A.grid_sampler_2d_backward.default)
grid_sample_3d = from_aten("grid_sample_3d", OTHER, A.grid_sampler_3d.default)
grid_sample_3d_backward = from_aten("grid_sample_3d_backward", OTHER, A.grid_sampler_3d_backward.default)
col2im = from_aten("col2im", OTHER, A.col2im.default, doc="F.fold: sliding-window columns summed into an image")
upsample_bilinear_aa = from_aten("upsample_bilinear_aa", OTHER, A._upsample_bilinear2d_aa.default)
adaptive_max_pool = from_aten("adaptive_max_pool", REDUCTION, A.adaptive_max_pool2d.default)
adaptive_max_pool_backward = from_aten("adaptive_max_pool_backward", REDUCTION, A.adaptive_max_pool2d_backward.default)
replication_pad_backward = {n: from_aten(f"replication_pad{n}d_backward", DATA_MOVEMENT,
                                         getattr(A, f"replication_pad{n}d_backward").default) for n in (1, 2, 3)}
reflection_pad_backward = {n: from_aten(f"reflection_pad{n}d_backward", DATA_MOVEMENT,
                                        getattr(A, f"reflection_pad{n}d_backward").default) for n in (1, 2, 3)}


@meaning(upsample)
def _upsample(a, x):
    # ATen takes the size or the scales: given scales place the samples (and fix the size)
    size = None if a["scales"] is not None else a["output_size"]
    if a["mode"] == "nearest":
        return A.upsample_nearest2d.vec(x, size, a["scales"])
    return A.upsample_bilinear2d.vec(x, size, a["align_corners"], a["scales"])


upsample_bilinear_aa_backward = from_aten("upsample_bilinear_aa_backward", OTHER, A._upsample_bilinear2d_aa_backward.default)
