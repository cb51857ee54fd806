"""Spatial ops over the trailing dims of [N, C, *spatial] tensors: convolution, pooling,
padding by reflection or replication, resampling. Primitive (as in PyTorch's core ATen);
each meaning is the ATen op it stands for, run in float64, and the backward ops are their own
ops as in core ATen."""
from __future__ import annotations

import itertools
import math

import torch

from irlens.core.ops._torch import jnp, lax
from irlens.core.ops.core import DATA_MOVEMENT, MATMUL, OTHER, REDUCTION, Attr, declare, from_aten, lowering, meaning

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


@lowering(convolution, "jax")
def _convolution_jax(a, x, w, b=None):
    spatial = w.ndim - 2
    if a["transposed"]:
        y = _conv_transpose_jax(a, x, w)
    else:
        y = lax().conv_general_dilated(x, w, tuple(a["stride"]), [(p, p) for p in a["padding"]],
                                       rhs_dilation=tuple(a["dilation"]), feature_group_count=a["groups"])
    return y if b is None else y + b.reshape((1, -1) + (1,) * spatial)


def _conv_transpose_jax(a, x, w):
    """The transposed convolution as a convolution of x dilated by the stride, with the kernel
    flipped and its in/out channels swapped per group (w: [in, out / groups, *k]), padded by
    dilation * (k - 1) - padding on each side (output_padding more on the high side)."""
    g, spatial = a["groups"], w.ndim - 2
    c_in, c_out_g, k = w.shape[0], w.shape[1], w.shape[2:]
    w = w.reshape((g, c_in // g, c_out_g) + k).swapaxes(1, 2).reshape((g * c_out_g, c_in // g) + k)
    w = jnp().flip(w, tuple(range(2, w.ndim)))
    extra = a["output_padding"] or [0] * spatial
    pads = [(d * (n - 1) - p, d * (n - 1) - p + e) for n, p, d, e in zip(k, a["padding"], a["dilation"], extra)]
    return lax().conv_general_dilated(x, w, (1,) * spatial, pads, lhs_dilation=tuple(a["stride"]),
                                      rhs_dilation=tuple(a["dilation"]), feature_group_count=g)


@meaning(convolution_backward)
def _convolution_backward(a, g, x, w):
    grads = A.convolution_backward(g, x, w, a["bias_sizes"], *_conv_args(a, w.dim() - 2), list(a["grads"]))
    # those asked for: ATen's CPU kernel may compute more (the weight's beside the bias's), its meta does not
    return tuple(t for t, wanted in zip(grads, a["grads"]) if wanted)


@lowering(convolution_backward, "jax")
def _convolution_backward_jax(a, g, x, w):
    """The convolution's vjp for x and weight; the bias gradient sums g over all but its channels."""
    import jax

    _, vjp = jax.vjp(lambda x, w: _convolution_jax(a, x, w), x, w)
    dx, dw = vjp(g)
    db = g.sum(axis=(0, *range(2, g.ndim)))
    return tuple(t for t, wanted in zip((dx, dw, db), a["grads"]) if wanted)


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
    return a.get("dilation") or [1] * _n(a)


@meaning(max_pool)
def _max_pool(a, x):
    op = A.max_pool2d_with_indices if _n(a) == 2 else A.max_pool3d_with_indices
    return tuple(op(x, a["kernel"], a["stride"], a["padding"], _dilation(a), a["ceil_mode"]))


def _window_padding(a, shape) -> list[tuple[int, int]]:
    """(lo, hi) padding per pooled dim: the op's, and with ceil_mode the high padding the last
    window reaches. torch's output size rounds up there, less a last window that would start in
    the high padding (ATen's pooling_output_shape)."""
    pads = []
    for size, k, s, p, d in zip(shape[-_n(a):], a["kernel"], a["stride"], a["padding"], _dilation(a)):
        span = d * (k - 1) + 1
        out = (size + 2 * p - span + (s - 1 if a["ceil_mode"] else 0)) // s + 1
        if a["ceil_mode"] and (out - 1) * s >= size + p:
            out -= 1
        pads.append((p, max(p, (out - 1) * s + span - size - p)))
    return pads


def _window_args(a, x) -> tuple:
    """reduce_window's window, strides, padding and window dilation over all of x's dims."""
    batch = (1,) * (x.ndim - _n(a))
    return (batch + tuple(a["kernel"]), batch + tuple(a["stride"]),
            ((0, 0),) * len(batch) + tuple(_window_padding(a, x.shape)), batch + tuple(_dilation(a)))


@lowering(max_pool, "jax")
def _max_pool_jax(a, x):
    """Values: a max window (the padding -inf). Indices: each window's elements as strided slices
    of the padded plane, in row-major window order, and the first maximum among them (argmax: a
    NaN counts as the maximum), as ATen's kernels pick it; a window of -inf only gives its first
    element inside x. Unread indices cost nothing: XLA drops them."""
    jax_lax, np_ = lax(), jnp()
    window, strides, padding, dilation = _window_args(a, x)
    low = -np_.inf if np_.issubdtype(x.dtype, np_.floating) else np_.iinfo(x.dtype).min
    values = jax_lax.reduce_window(x, low, jax_lax.max, window, strides, padding, window_dilation=dilation)
    plane = x.shape[x.ndim - _n(a):]
    index = np_.broadcast_to(np_.arange(math.prod(plane)).reshape(plane), x.shape)
    inside = np_.ones(x.shape, bool)
    elements = [_window_elements(v, fill, a, padding, values.shape)
                for v, fill in ((x, low), (index, 0), (inside, False))]
    first = np_.argmax(elements[0], axis=0)
    first_inside = np_.argmax(elements[2], axis=0)
    pick = np_.where(values == low, first_inside, first)
    return values, np_.take_along_axis(elements[1], pick[None], axis=0)[0]


def _window_elements(v, fill, a, padding, out_shape):
    """[window size, *out_shape]: per window element (row-major window order), its value in each
    window: a strided slice of v padded with `fill`."""
    jax_lax, np_ = lax(), jnp()
    padded = jax_lax.pad(v, np_.array(fill, v.dtype), [(lo, hi, 0) for lo, hi in padding])
    batch = v.ndim - _n(a)
    slices = []
    for offsets in itertools.product(*(range(k) for k in a["kernel"])):
        start = [0] * batch + [o * d for o, d in zip(offsets, _dilation(a))]
        steps = [1] * batch + list(a["stride"])
        limit = [b + (n - 1) * step + 1 for b, n, step in zip(start, out_shape, steps)]
        slices.append(jax_lax.slice(padded, start, limit, steps))
    return np_.stack(slices)


@meaning(max_pool_backward)
def _max_pool_backward(a, g, x, indices):
    op = A.max_pool2d_with_indices_backward if _n(a) == 2 else A.max_pool3d_with_indices_backward
    return op(g, x, a["kernel"], a["stride"], a["padding"], _dilation(a), a["ceil_mode"], indices)


@lowering(max_pool_backward, "jax")
def _max_pool_backward_jax(a, g, x, indices):
    """Each gradient added at the position its window's max came from (the indices say where)."""
    np_ = jnp()
    rows = math.prod(x.shape[:x.ndim - _n(a)])
    flat = np_.zeros((rows, x.size // max(rows, 1)), g.dtype)
    flat = flat.at[np_.arange(rows)[:, None], indices.reshape(rows, -1)].add(g.reshape(rows, -1))
    return flat.reshape(x.shape)


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


@lowering(avg_pool, "jax")
def _avg_pool_jax(a, x):
    """A sum window over x zero-padded, divided by divisor_override, else by the window's count
    of elements: inside the padded input (count_include_pad; ceil_mode's extra high padding is not
    counted) or inside x. Summed in float32 at least, as ATen does."""
    jax_lax, np_ = lax(), jnp()
    window, strides, padding, dilation = _window_args(a, x)
    acc = _accumulator(x)
    total = jax_lax.reduce_window(acc, 0.0, jax_lax.add, window, strides, padding)  # a literal init: differentiable
    if a["divisor_override"] is not None:
        return (total / a["divisor_override"]).astype(x.dtype)
    n = _n(a)
    pads = _window_padding(a, x.shape)
    ones = np_.ones(x.shape[-n:], acc.dtype)
    if a["count_include_pad"]:
        ones = np_.pad(ones, [(lo, lo) for lo, _ in pads], constant_values=1)
        pads = [(0, hi - lo) for lo, hi in pads]
    counts = jax_lax.reduce_window(ones, 0.0, jax_lax.add, tuple(a["kernel"]), tuple(a["stride"]), pads)
    return (total / counts).astype(x.dtype)


def _accumulator(x):
    np_ = jnp()
    return x.astype(np_.float32) if x.dtype in (np_.bfloat16, np_.float16) else x


@lowering(avg_pool_backward, "jax")
def _avg_pool_backward_jax(a, g, x):
    import jax

    return jax.vjp(lambda x: _avg_pool_jax(a, x), x)[1](g)[0]


@meaning(adaptive_avg_pool)
def _adaptive_avg_pool(a, x):
    op = {1: A.adaptive_avg_pool1d, 2: A._adaptive_avg_pool2d, 3: A._adaptive_avg_pool3d}[len(a["output_size"])]
    return op(x, a["output_size"])


@meaning(adaptive_avg_pool_backward)
def _adaptive_avg_pool_backward(a, g, x):
    return (A._adaptive_avg_pool2d_backward if a["spatial"] == 2 else A._adaptive_avg_pool3d_backward)(g, x)


def _adaptive_windows(size: int, out: int):
    """[out, size]: row i averages x[start:end], start = floor(i * size / out), end = ceil((i + 1) * size / out)."""
    import numpy as np

    m = np.zeros((out, size))
    for i in range(out):
        start, end = i * size // out, -(-(i + 1) * size // out)
        m[i, start:end] = 1 / (end - start)
    return m


@lowering(adaptive_avg_pool, "jax")
def _adaptive_avg_pool_jax(a, x):
    """Per pooled dim: a mean over equal windows (size a multiple of out), else the windows'
    averaging matrix at full precision."""
    jax_lax, np_ = lax(), jnp()
    y = _accumulator(x)
    for d, out in zip(range(x.ndim - len(a["output_size"]), x.ndim), a["output_size"]):
        size = y.shape[d]
        if size % out == 0:
            y = y.reshape(y.shape[:d] + (out, size // out) + y.shape[d + 1:]).mean(axis=d + 1)
        else:
            m = np_.asarray(_adaptive_windows(size, out), y.dtype)
            y = np_.moveaxis(np_.tensordot(y, m, axes=((d,), (1,)), precision=jax_lax.Precision.HIGHEST), -1, d)
    return y.astype(x.dtype)


@lowering(adaptive_avg_pool_backward, "jax")
def _adaptive_avg_pool_backward_jax(a, g, x):
    import jax

    size = {"output_size": list(g.shape[-a["spatial"]:])}
    return jax.vjp(lambda x: _adaptive_avg_pool_jax(size, x), x)[1](g)[0]


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


@lowering(col2im, "jax")
def _col2im_jax(a, cols):
    """Each kernel offset's columns placed at that offset's strided positions of the padded image
    (a pad with stride - 1 zeros between them: XLA keeps pads and adds, where a strided scatter-add
    becomes a scatter) and summed (unfold's transpose), then the padding cropped."""
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (a[k] for k in ("output_size", "kernel_size", "dilation",
                                                                         "padding", "stride"))
    batched = cols.ndim == 3
    cols = cols if batched else cols[None]
    lh, lw = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1, (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    n = cols.shape[0]
    blocks = cols.reshape(n, -1, kh, kw, lh, lw)
    height, width, zero = h + 2 * ph, w + 2 * pw, jnp().zeros((), cols.dtype)
    image = None
    for i, j in itertools.product(range(kh), range(kw)):
        top, left = i * dh, j * dw
        placed = lax().pad(blocks[:, :, i, j], zero, [(0, 0, 0), (0, 0, 0),
                                                      (top, height - top - sh * (lh - 1) - 1, sh - 1),
                                                      (left, width - left - sw * (lw - 1) - 1, sw - 1)])
        image = placed if image is None else image + placed
    image = image[:, :, ph:ph + h, pw:pw + w]
    return image if batched else image[0]
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
