"""Windowed ops over any dims (XLA's reduce-window and the pair JAX differentiates it with):
pooling, and the cumulative sums XLA writes as windows. A window has per dim a size, a
stride, [lo, hi] padding and dilations; x is dilated (base_dilation - 1 holes between
elements), padded, and each window's elements are every window_dilation-th one. Padding and
holes hold `init` (reduce_window) or can never be selected (the select ops)."""
from __future__ import annotations

import itertools

import torch

from irlens.core.ops._torch import jnp, lax, scalar_tensor, widened
from irlens.core.ops.core import REDUCTION, Attr, declare, lowering, meaning
from irlens.core.ops.movement import pad

_WINDOW = dict(window=Attr("ints"), strides=Attr("ints"), padding=Attr("any"))  # padding: [[lo, hi], ...]
_DILATIONS = dict(base_dilation=Attr("ints", None), window_dilation=Attr("ints", None))
def _prod(x, dim):
    for d in sorted(dim, reverse=True):  # torch.prod takes one dim
        x = torch.prod(x, dim=d)
    return x


# logsumexp: windows combined by logaddexp (jax's cumlogsumexp is one such window per element)
_REDUCERS = {"sum": torch.sum, "prod": _prod, "amax": torch.amax, "amin": torch.amin, "logsumexp": torch.logsumexp}
_COMBINE = {"sum": torch.add, "prod": torch.mul, "amax": torch.maximum, "amin": torch.minimum,
            "logsumexp": torch.logaddexp}

reduce_window = declare("reduce_window", REDUCTION, "x init", reduce=Attr("str", choices=tuple(_REDUCERS)),
                        **_WINDOW, **_DILATIONS,
                        doc="each window of x (dilated and padded with init) reduced, starting from init "
                            "(lax.reduce_window): sum/max/min pooling, cumulative sums as XLA writes them")
select_and_scatter_add = declare(
    "select_and_scatter_add", REDUCTION, "source x", select=Attr("str", choices=("ge", "le")), **_WINDOW,
    doc="zeros like x, each window's source value added at the element of x the window selects: the first "
        "maximum (ge) or minimum (le) in row-major window order; padding is never selected (max pooling's "
        "gradient)")
select_and_gather_add = declare(
    "select_and_gather_add", REDUCTION, "tangents x", select=Attr("str", choices=("ge", "le")), **_WINDOW,
    **_DILATIONS, doc="per window, the tangent at the element of x the window selects (as select_and_scatter_add; "
                      "padding holds -inf for ge, inf for le, tangent 0, and the selection starts from that fill, "
                      "as jax's reduce-window from its init): max pooling's forward derivative")


def _dilations(a, key: str, rank: int) -> list[int]:
    return list(a.get(key) or [1] * rank)


def _spread(a, x: torch.Tensor, value) -> torch.Tensor:
    """x dilated by base_dilation and padded, the new elements `value`."""
    base = _dilations(a, "base_dilation", x.dim())
    config = [[lo, hi, d - 1] for (lo, hi), d in zip(a["padding"], base)]
    return pad.meaning({"padding": config}, x, value)


def _windows(a, x: torch.Tensor) -> torch.Tensor:
    """x's windows: shape out_shape + window (every dim's window elements at the end)."""
    for d, (size, stride, dil) in enumerate(zip(a["window"], a["strides"], _dilations(a, "window_dilation", x.dim()))):
        span = (size - 1) * dil + 1
        if x.shape[d] < span:  # no window fits: an empty dim
            x = x.narrow(d, 0, 0).unsqueeze(-1).expand(*x.shape[:d], 0, *x.shape[d + 1:], size)
            continue
        x = x.unfold(d, span, stride)
        if dil > 1:
            x = x[..., ::dil]
    return x


@meaning(reduce_window)
@widened
def _reduce_window(a, x, init):
    init = scalar_tensor(init, x if x.is_floating_point() else None, a.get("device")).to(x.dtype)
    windows = _windows(a, _spread(a, x, init))
    dims = list(range(x.dim(), windows.dim()))
    if not windows.numel():  # no element in any window (or no window): each result is init
        return init.expand(windows.shape[:x.dim()]).clone()
    return _COMBINE[a["reduce"]](_REDUCERS[a["reduce"]](windows, dim=dims).to(x.dtype), init)


@lowering(reduce_window, "jax")
def _reduce_window_jax(a, x, init):
    from jax import lax as jax_lax

    rank = x.ndim
    fn = {"sum": jax_lax.add, "prod": jax_lax.mul, "amax": jax_lax.max, "amin": jax_lax.min,
          "logsumexp": jnp().logaddexp}[a["reduce"]]
    return jax_lax.reduce_window(x, jax_lax.convert_element_type(init, x.dtype), fn, tuple(a["window"]),
                                 tuple(a["strides"]), [tuple(p) for p in a["padding"]],
                                 tuple(_dilations(a, "base_dilation", rank)), tuple(_dilations(a, "window_dilation", rank)))


def _selected(a, x: torch.Tensor, fill: float):
    """Per window, the flat index into x of the element it selects (-1: none) and whether it found one.
    XLA walks a window in row-major order and keeps the current element while select(current, next)."""
    select = torch.ge if a["select"] == "ge" else torch.le
    index = torch.arange(x.numel(), device=x.device).reshape(x.shape)
    values = _windows(a, _spread(a, x, fill))
    where = _windows(a, _spread(a, index, -1))
    rank = x.dim()
    out_shape = values.shape[:rank]
    best_v = torch.full(out_shape, fill, dtype=x.dtype, device=x.device)
    best_i = torch.full(out_shape, -1, dtype=torch.int64, device=x.device)
    for pos in itertools.product(*(range(n) for n in values.shape[rank:])):
        v, i = values[(..., *pos)], where[(..., *pos)]
        take = (i >= 0) & ((best_i < 0) | ~select(best_v, v))
        best_v, best_i = torch.where(take, v, best_v), torch.where(take, i, best_i)
    return best_i


@meaning(select_and_scatter_add)
def _select_and_scatter_add(a, source, x):
    x = x.to(torch.int64) if x.dtype in (torch.uint16, torch.uint32) else x  # compared only
    chosen = _selected(a, x, 0.0)
    found = chosen >= 0
    wide = source.to(torch.int64) if source.dtype in (torch.uint16, torch.uint32) else source
    out = torch.zeros(x.numel(), dtype=wide.dtype, device=x.device)
    out.index_add_(0, chosen[found], wide[found])
    return out.reshape(x.shape).to(source.dtype)


@lowering(select_and_scatter_add, "jax")
def _select_and_scatter_add_jax(a, source, x):
    from jax._src.lax.windowed_reductions import _select_and_scatter_add

    select = lax().ge_p if a["select"] == "ge" else lax().le_p
    return _select_and_scatter_add(source, x, select, tuple(a["window"]), tuple(a["strides"]),
                                   tuple(tuple(p) for p in a["padding"]))


@meaning(select_and_gather_add)
def _select_and_gather_add(a, tangents, x):
    fill = float("-inf") if a["select"] == "ge" else float("inf")
    # padding and holes are candidates here (jax pads with -inf/inf, tangent 0): they get flat index numel
    padded = _spread(a, x, fill)
    flat_t = torch.cat([tangents.reshape(-1), tangents.new_zeros(1)])
    index = _spread(a, torch.arange(x.numel(), device=x.device).reshape(x.shape), x.numel())
    select = torch.ge if a["select"] == "ge" else torch.le
    values, where = _windows(a, padded), _windows(a, index)
    rank = x.dim()
    # the fill first, as jax's reduce-window starts from its init (-inf or inf, tangent 0): a window
    # whose best is the fill itself gives tangent 0
    best_v = torch.full(values.shape[:rank], fill, dtype=x.dtype, device=x.device)
    best_i = torch.full(values.shape[:rank], x.numel(), dtype=torch.int64, device=x.device)
    for pos in itertools.product(*(range(n) for n in values.shape[rank:])):
        v, i = values[(..., *pos)], where[(..., *pos)]
        keep = select(best_v, v)
        best_v, best_i = torch.where(keep, best_v, v), torch.where(keep, best_i, i)
    return flat_t[best_i]


@lowering(select_and_gather_add, "jax")
def _select_and_gather_add_jax(a, tangents, x):
    from jax._src.lax.windowed_reductions import _select_and_gather_add

    rank = x.ndim
    select = lax().ge_p if a["select"] == "ge" else lax().le_p
    return _select_and_gather_add(tangents, x, select, tuple(a["window"]), tuple(a["strides"]),
                                  tuple(tuple(p) for p in a["padding"]), tuple(_dilations(a, "base_dilation", rank)),
                                  tuple(_dilations(a, "window_dilation", rank)))
