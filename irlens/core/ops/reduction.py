"""Reductions over `dims` (non-negative; None: every dim), `keepdim` keeping them as size 1;
the arg-reductions and scans along one `dim`; `mean` and `var` as composites over `sum`."""
from __future__ import annotations

import math
import warnings

import torch

from irlens.core.dtypes import HALF_DTYPES
from irlens.core.ops._torch import dims_of, jnp, nv_dtype, widened
from irlens.core.ops.core import COMPOSITE, REDUCTION, Attr, declare, decomposition, from_aten, lowering, meaning
from irlens.core.ops.shapes import numel


def _reduction(name: str, fn, jax: str | None = None, nvfuser: str | None = None, doc: str = ""):
    op = declare(name, REDUCTION, "x", dims=Attr("ints", None), keepdim=Attr("bool", False), doc=doc)

    @meaning(op)
    @widened
    def run(a, x):
        dims = dims_of(a, x) if x.dim() else []
        if not dims:  # over no dim: each element alone, in the reduction's result dtype (any: bool)
            return fn(x.unsqueeze(0), [0], False)
        return fn(x, dims, a["keepdim"])

    if jax:
        @lowering(op, "jax")
        def lower_jax(a, x):
            dims = tuple(range(x.ndim)) if a["dims"] is None else tuple(a["dims"])
            return getattr(jnp(), jax)(x, axis=dims, keepdims=a["keepdim"]) if dims else x
    if nvfuser:
        @lowering(op, "nvfuser")
        def lower_nvfuser(fd, nv, node, args, metas):
            dims = node.attrs.get("dims")
            dims = list(range(len(metas[node.inputs[0]].shape))) if dims is None else list(dims)
            if not dims:
                return args[0]
            dtype = metas[node.inputs[0]].dtype
            # torch sums a half-precision tensor in float32 and rounds once, as Thunder's nvFuser
            # executor has nvFuser do; a sum in bfloat16 itself also fails nvFuser's codegen (an
            # internal assert, docs/results/zoo-h200-bench)
            upcast = nvfuser == "sum" and dtype in HALF_DTYPES
            x = fd.ops.cast(args[0], nv.DataType.Float) if upcast else args[0]
            out = getattr(fd.ops, nvfuser)(x, dims)
            if upcast:
                out = fd.ops.cast(out, nv_dtype(nv, dtype))
            if node.attrs.get("keepdim"):
                kept = [d for d in range(len(node.outputs[0].shape)) if d not in dims]
                out = fd.ops.broadcast_in_dim(out, list(node.outputs[0].shape), kept)
            return out
    return op


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):  # highest first, so lower dims keep their index
        x = torch.prod(x, dim=d, keepdim=keep)
    return x


def _extremum(fn, identity: float):
    """amax / amin; over an empty dim, the identity (-inf / +inf, as XLA's reduce has it)."""
    def run(x, dims, keep):
        if all(x.shape[d] for d in dims):
            return fn(x, dim=dims, keepdim=keep)
        shape = [1 if d in dims else s for d, s in enumerate(x.shape)] if keep else \
            [s for d, s in enumerate(x.shape) if d not in dims]
        fill = identity if x.is_floating_point() else (torch.iinfo(x.dtype).min if identity < 0 else torch.iinfo(x.dtype).max)
        return torch.full(shape, fill, dtype=x.dtype, device=x.device)
    return run


sum_ = _reduction("sum", lambda x, d, k: torch.sum(x, dim=d, keepdim=k), jax="sum", nvfuser="sum")
amax = _reduction("amax", _extremum(torch.amax, -math.inf), jax="max", nvfuser="max")
amin = _reduction("amin", _extremum(torch.amin, math.inf), jax="min", nvfuser="min")
prod = _reduction("prod", _prod, jax="prod")
any_ = _reduction("any", lambda x, d, k: torch.any(x, dim=d, keepdim=k), jax="any", doc="logical or")
all_ = _reduction("all", lambda x, d, k: torch.all(x, dim=d, keepdim=k), jax="all", doc="logical and")


def _arg_reduction(name: str, fn):
    op = declare(name, REDUCTION, "x", dim=Attr("int", None), keepdim=Attr("bool", False),
                 doc=f"index (int64) of the first {name[3:]} along dim; dim None: of the flattened x")

    @meaning(op)
    def run(a, x):
        x = x.to(torch.int64) if x.dtype in (torch.bool, torch.uint16, torch.uint32) else x  # no kernels
        return fn(x, dim=a["dim"], keepdim=a["keepdim"])

    @lowering(op, "jax")
    def lower_jax(a, x):
        return getattr(jnp(), name)(x, axis=a["dim"], keepdims=a["keepdim"])
    return op


argmax = _arg_reduction("argmax", torch.argmax)
argmin = _arg_reduction("argmin", torch.argmin)


def _scan(name: str, fn, jax: str | None = None):
    op = declare(name, REDUCTION, "x", dim=Attr("int"), reverse=Attr("bool", False),
                 doc=f"inclusive {name} along dim (from the end when reverse)")

    @meaning(op)
    @widened
    def run(a, x):
        if a["reverse"]:
            return fn(x.flip(a["dim"]), dim=a["dim"]).flip(a["dim"])
        return fn(x, dim=a["dim"])

    @lowering(op, "jax")
    def lower_jax(a, x):
        import jax as jax_
        from jax import lax

        np_ = jnp()
        if not np_.issubdtype(x.dtype, np_.inexact):  # torch scans bools and integers in int64
            x = x.astype(jax_.dtypes.canonicalize_dtype(np_.int64))
        return getattr(lax, jax or name)(x, axis=a["dim"], reverse=a["reverse"])
    return op


cumsum = _scan("cumsum", torch.cumsum)
cumprod = _scan("cumprod", torch.cumprod)
logcumsumexp = _scan("logcumsumexp", torch.logcumsumexp, jax="cumlogsumexp")

# --- selections along a dim, ATen's own ---------------------------------------------------------------
A = torch.ops.aten
kthvalue = from_aten("kthvalue", REDUCTION, A.kthvalue.default)
median = from_aten("median", REDUCTION, A.median.dim, doc="the lower median along dim, and its index")
median_all = from_aten("median_all", REDUCTION, A.median.default)
nanmedian = from_aten("nanmedian", REDUCTION, A.nanmedian.dim)
nanmedian_all = from_aten("nanmedian_all", REDUCTION, A.nanmedian.default)
mode = from_aten("mode", REDUCTION, A.mode.default)
histc = from_aten("histc", REDUCTION, A.histc.default)


@lowering(histc, "jax")
def _histc_jax(a, x):
    """ATen's histc: bins equal steps over [min, max] (both 0: the data's extremes; equal: widened by
    1 each way), max in the last bin, other elements outside (and NaNs) not counted; counts in x's dtype."""
    np_ = jnp()
    bins = a["bins"]
    lo, hi = float(a["min"]), float(a["max"])
    if lo == hi == 0:
        lo, hi = x.min(), x.max()
    lo, hi = np_.where(lo == hi, lo - 1, lo), np_.where(lo == hi, hi + 1, hi)
    inside = (x >= lo) & (x <= hi)
    where = np_.where(x == hi, bins - 1, ((x - lo) / (hi - lo) * bins).astype(np_.int32))
    return np_.zeros(bins, x.dtype).at[np_.where(inside, where, bins)].add(1, mode="drop")
histogram = from_aten("histogram", REDUCTION, A.histogram.bin_ct)


def _running(name: str, fn):
    """cummax / cummin as ATen has them: values and their indices (lax keeps only the values)."""
    op = declare(name, REDUCTION, "self", outputs="values indices?", dim=Attr("int"),
                 doc=f"running {name[3:]} along dim, and the index it was found at")
    meaning(op)(widened(lambda a, x: tuple(fn(x, a["dim"]))))

    @lowering(op, "jax")
    def lower_jax(a, x):
        from jax import lax

        return getattr(lax, name)(x, axis=a["dim"])
    return op


cummax = _running("cummax", torch.cummax)
cummin = _running("cummin", torch.cummin)


def _bitwise_reduction(fn, identity: int):
    """A reduction by a bitwise op (logical on bool), one dim at a time; `identity` over no elements."""
    def run(x, dims, keep):
        for d in sorted(dims, reverse=True):
            parts = x.unbind(d)
            out = parts[0] if parts else torch.full_like(x.sum(d), identity).to(x.dtype)
            for part in parts[1:]:
                out = fn(out, part)
            x = out.unsqueeze(d) if keep else out
        return x
    return run


reduce_and = _reduction("reduce_and", _bitwise_reduction(torch.bitwise_and, -1), doc="bitwise and (logical on bool)")
reduce_or = _reduction("reduce_or", _bitwise_reduction(torch.bitwise_or, 0), doc="bitwise or (logical on bool)")
reduce_xor = _reduction("reduce_xor", _bitwise_reduction(torch.bitwise_xor, 0), doc="bitwise xor (parity on bool)")


# --- composites over sum ---------------------------------------------------------------------
mean = declare("mean", COMPOSITE, "x", dims=Attr("ints", None), keepdim=Attr("bool", False))
var = declare("var", COMPOSITE, "x", dims=Attr("ints", None), keepdim=Attr("bool", False),
              correction=Attr("float", 1), doc="sum((x - mean)^2) / (N - correction)")


@meaning(mean)
def _mean(a, x):
    dims = dims_of(a, x)
    return torch.mean(x, dim=dims, keepdim=a["keepdim"]) if dims else x.clone()


@meaning(var)
def _var(a, x):
    with warnings.catch_warnings():  # N <= correction: inf or nan is the meaning (eager's), not a fault to warn of
        warnings.filterwarnings("ignore", "var\\(\\): degrees of freedom", UserWarning)
        return torch.var(x, dim=dims_of(a, x), correction=a["correction"], keepdim=a["keepdim"])


@decomposition(mean)
def _mean_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    xm = vals[x]
    dims, keep = e.attr("dims"), e.attr("keepdim")
    dims = list(range(len(xm.shape))) if dims is None else dims
    # summed in the result's dtype: an integer x's sum would stay integer
    s = e.emit("sum", [x], odtype=out.dtype, dims=dims, keepdim=keep)
    e.emit("div", [s, float(numel(xm.shape, dims))], oname=out.name)


@decomposition(var)
def _var_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    xm = vals[x]
    dims, keep, corr = e.attr("dims"), e.attr("keepdim"), e.attr("correction")
    dims = list(range(len(xm.shape))) if dims is None else dims
    s = e.emit("sum", [x], odtype=out.dtype, dims=dims, keepdim=True)  # as mean's
    m = e.emit("div", [s, float(numel(xm.shape, dims))])
    c = e.emit("sub", [x, m])
    ss = e.emit("sum", [e.emit("mul", [c, c])], dims=dims, keepdim=keep)
    e.emit("div", [ss, float(max(numel(xm.shape, dims) - corr, 0))], oname=out.name)
histogramdd_bin_edges = from_aten("histogramdd_bin_edges", REDUCTION, A._histogramdd_bin_edges.default)
histogramdd_from_bin_cts = from_aten("histogramdd_from_bin_cts", REDUCTION, A._histogramdd_from_bin_cts.default)
hash_tensor = from_aten("hash_tensor", REDUCTION, A.hash_tensor.default, doc="a hash of x's bits along dims")
