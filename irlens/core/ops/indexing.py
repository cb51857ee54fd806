"""Indexing: reads at computed positions (take, gather, index), writes there (index_add,
scatter*, index_put, slice_scatter), and the selections (topk, sort). Indices are integer
tensors, declared as such (`IndexOf`: which operand and dim each indexes); a negative index
counts from the end where torch's op allows it."""
from __future__ import annotations

import torch

from irlens.core.ops._torch import jnp, lax, scalar_tensor, widened
from irlens.core.ops.core import (DATA_MOVEMENT, FLAT, OTHER, POSITION, REDUCTION, Attr, IndexOf, declare, from_aten,
                              lowering, meaning)
from irlens.core.ops.movement import slices, strided_positions


ALONG_DIM = IndexOf("x", "dim")  # positions along x's dim `dim`


def _wrapped(idx: torch.Tensor, size: int) -> torch.Tensor:
    idx = idx.long()
    return torch.where(idx < 0, idx + size, idx)


# --- reads ------------------------------------------------------------------------------------
take = declare("take", DATA_MOVEMENT, "x index", dim=Attr("int"), index_of={"index": ALONG_DIM},
               doc="slices of x along dim at index (any shape): out shape x[:dim] + index + x[dim+1:] "
                   "(jnp.take, index_select, embedding, x[:, idx])")


@meaning(take)
@widened
def _take(a, x, idx):
    dim = a["dim"]
    flat = torch.index_select(x, dim, _wrapped(idx, x.shape[dim]).reshape(-1))
    return flat.reshape([*x.shape[:dim], *idx.shape, *x.shape[dim + 1:]])


@lowering(take, "jax")
def _take_jax(a, x, idx):
    return jnp().take(x, idx, axis=a["dim"])


gather = declare("gather", DATA_MOVEMENT, "x index", dim=Attr("int"), index_of={"index": ALONG_DIM},
                 doc="torch.gather / take_along_dim: out[i][j][k] = x[i][index[i][j][k]][k] (dim 1); "
                     "index has x's rank, no larger than x outside dim")


@meaning(gather)
@widened
def _gather(a, x, idx):
    return torch.gather(x, a["dim"], _wrapped(idx, x.shape[a["dim"]]))


@lowering(gather, "jax")
def _gather_jax(a, x, idx):
    dim = a["dim"]
    x = x[tuple(slice(None) if d == dim else slice(0, s) for d, s in enumerate(idx.shape))]
    return jnp().take_along_axis(x, idx, axis=dim)


index = declare("index", DATA_MOVEMENT, "x *indices?", index_of={"indices": IndexOf("x", POSITION)},
                doc="advanced indexing x[i0, i1, ...]: one optional index tensor per leading dim, None a full slice")


def _as_index(i):
    """An index tensor as torch indexes with: integers as int64 (torch takes no uint32 index)."""
    return i if i is None or i.dtype in (torch.bool, torch.int64) else i.long()


@meaning(index)
def _index(a, x, *indices):
    return torch.ops.aten.index.Tensor(x, [_as_index(i) for i in indices])


def _index_key(indices) -> tuple:
    """torch's index list as a numpy key: None a full slice (numpy's rules are torch's: the index
    tensors broadcast, and where full slices separate them their dims go first)."""
    return tuple(slice(None) if i is None else i for i in indices)


@lowering(index, "jax")
def _index_jax(a, x, *indices):
    return x[_index_key(indices)]


# --- writes -----------------------------------------------------------------------------------
index_add = declare("index_add", DATA_MOVEMENT, "x index src", dim=Attr("int"), alpha=Attr("number", 1),
                    index_of={"index": ALONG_DIM},
                    doc="x with alpha * src's slices added at index along dim (torch.index_add; index any "
                        "shape, src shaped like take(x, index, dim))")


@meaning(index_add)
@widened
def _index_add(a, x, idx, src):
    dim = a["dim"]
    moved = src.reshape([*x.shape[:dim], idx.numel(), *x.shape[dim + 1:]])
    return x.index_add(dim, _wrapped(idx, x.shape[dim]).reshape(-1), moved, alpha=a["alpha"])


@lowering(index_add, "jax")
def _index_add_jax(a, x, idx, src):
    dim = a["dim"]
    moved = src.reshape(x.shape[:dim] + (-1,) + x.shape[dim + 1:])
    return x.at[(slice(None),) * dim + (idx.reshape(-1),)].add(moved * a["alpha"] if a["alpha"] != 1 else moved)


index_copy = declare("index_copy", DATA_MOVEMENT, "x index src", dim=Attr("int"), index_of={"index": ALONG_DIM},
                     doc="x with src's slices written at index along dim (torch.index_copy; index any shape, src "
                         "shaped like take(x, index, dim))")


@meaning(index_copy)
def _index_copy(a, x, idx, src):
    dim = a["dim"]
    moved = src.reshape(*x.shape[:dim], idx.numel(), *x.shape[dim + 1:])
    return x.index_copy(dim, _wrapped(idx, x.shape[dim]).reshape(-1), moved.to(x.dtype))


@lowering(index_copy, "jax")
def _index_copy_jax(a, x, idx, src):
    dim = a["dim"]
    moved = src.reshape(x.shape[:dim] + (-1,) + x.shape[dim + 1:])
    return x.at[(slice(None),) * dim + (idx.reshape(-1),)].set(moved)


scatter = declare("scatter", DATA_MOVEMENT, "x index src", dim=Attr("int"), index_of={"index": ALONG_DIM},
                  doc="torch.scatter: x with src (or a scalar) written at index along dim")


@meaning(scatter)
@widened
def _scatter(a, x, idx, src):
    if not isinstance(src, torch.Tensor):
        return torch.scatter(x, a["dim"], idx.long(), src)
    return torch.scatter(x, a["dim"], idx.long(), src.to(x.dtype))


scatter_add = declare("scatter_add", DATA_MOVEMENT, "x index src", dim=Attr("int"), index_of={"index": ALONG_DIM},
                      doc="torch.scatter_add: x with src added at index along dim (index shaped like src)")


def _scatter_key(idx, dim: int) -> tuple:
    """torch.scatter's positions as a numpy key: index along dim, each other dim's own position."""
    grid = jnp().indices(idx.shape, sparse=True)
    return tuple(idx if d == dim else grid[d] for d in range(idx.ndim))


def _scattered(x, idx, src):
    """src as scatter reads it: a scalar, or its leading block of index's shape."""
    if not hasattr(src, "shape"):
        return jnp().asarray(src, x.dtype)
    return src[tuple(slice(0, n) for n in idx.shape)].astype(x.dtype)


@lowering(scatter, "jax")
def _scatter_jax(a, x, idx, src):
    return x.at[_scatter_key(idx, a["dim"])].set(_scattered(x, idx, src))


@meaning(scatter_add)
@widened
def _scatter_add(a, x, idx, src):
    return torch.scatter_add(x, a["dim"], idx.long(), src)


scatter_reduce = declare("scatter_reduce", DATA_MOVEMENT, "x index src", dim=Attr("int"), index_of={"index": ALONG_DIM},
                         reduce=Attr("str", choices=("sum", "prod", "mean", "amax", "amin")),
                         include_self=Attr("bool", True), doc="torch.scatter_reduce")


@lowering(scatter_add, "jax")
def _scatter_add_jax(a, x, idx, src):
    return x.at[_scatter_key(idx, a["dim"])].add(_scattered(x, idx, src))


@meaning(scatter_reduce)
@widened
def _scatter_reduce(a, x, idx, src):
    return torch.scatter_reduce(x, a["dim"], idx.long(), src, a["reduce"], include_self=a["include_self"])


def _reduce_identity(reduce: str, dtype):
    """What a scatter_reduce starts from where include_self is False: the reduction's identity."""
    np = jnp()
    if reduce not in ("amax", "amin"):
        return 1 if reduce == "prod" else 0
    if np.issubdtype(dtype, np.floating):
        return -np.inf if reduce == "amax" else np.inf
    if dtype == np.bool_:
        return reduce == "amin"
    return np.iinfo(dtype).min if reduce == "amax" else np.iinfo(dtype).max


@lowering(scatter_reduce, "jax")
def _scatter_reduce_jax(a, x, idx, src):
    """torch.scatter_reduce: where include_self is False the scattered positions start from the
    reduction's identity (x's own value is left out); mean divides by the count of values each
    position reduced (x's own counting where included), flooring for integers, as torch does."""
    np, reduce, key = jnp(), a["reduce"], _scatter_key(idx, a["dim"])
    s = _scattered(x, idx, src)
    start = x if a["include_self"] else x.at[key].set(_reduce_identity(reduce, x.dtype))
    at = start.at[key]
    total = {"sum": at.add, "mean": at.add, "prod": at.multiply, "amax": at.max, "amin": at.min}[reduce](s)
    if reduce != "mean":
        return total
    counts = np.full(x.shape, 1 if a["include_self"] else 0, x.dtype).at[key].add(np.ones_like(s))
    counts = np.where(counts == 0, np.ones_like(counts), counts)
    return total // counts if np.issubdtype(x.dtype, np.integer) else total / counts


index_put = declare("index_put", DATA_MOVEMENT, "x values *indices?", accumulate=Attr("bool", False),
                    index_of={"indices": IndexOf("x", POSITION)},
                    doc="x with values written (accumulate: added) at x[indices] (None a full slice)")


@meaning(index_put)
@widened
def _index_put(a, x, values, *indices):
    values = scalar_tensor(values, x if x.is_floating_point() else None, a.get("device"))
    return torch.ops.aten.index_put.default(x, [_as_index(i) for i in indices], values.to(x.dtype),
                                            a["accumulate"])


@lowering(index_put, "jax")
def _index_put_jax(a, x, values, *indices):
    at, v = x.at[_index_key(indices)], jnp().asarray(values).astype(x.dtype)
    return at.add(v) if a["accumulate"] else at.set(v)


slice_scatter = declare("slice_scatter", DATA_MOVEMENT, "x src", start=Attr("ints"), limit=Attr("ints"),
                        step=Attr("ints", None), doc="x with x[start:limit:step] (every dim) replaced by src")


@meaning(slice_scatter)
def _slice_scatter(a, x, src):
    out = x.clone()
    out[slices(a)] = src
    return out


@lowering(slice_scatter, "jax")
def _slice_scatter_jax(a, x, src):
    return x.at[slices(a)].set(src)


# --- windows at computed offsets ---------------------------------------------------------------
def _clamped_starts(x: torch.Tensor, starts, sizes) -> tuple:
    """Each start (a 0-d tensor or literal) moved into [0, dim - size], as XLA clamps it."""
    at = [min(max(int(s), 0), n - k) for s, n, k in zip(starts, x.shape, sizes)]
    return tuple(slice(s, s + k) for s, k in zip(at, sizes))


dynamic_slice = declare("dynamic_slice", DATA_MOVEMENT, "x *starts", sizes=Attr("ints"),
                        doc="x[s0:s0+sizes[0], ...], one scalar start per dim, each clamped into [0, dim - size] "
                            "(lax.dynamic_slice)")


@meaning(dynamic_slice)
def _dynamic_slice(a, x, *starts):
    return x[_clamped_starts(x, starts, a["sizes"])].clone()


@lowering(dynamic_slice, "jax")
def _dynamic_slice_jax(a, x, *starts):
    from jax import lax

    return lax.dynamic_slice(x, starts, a["sizes"])


dynamic_update_slice = declare("dynamic_update_slice", DATA_MOVEMENT, "x update *starts",
                               doc="x with update written at (s0, s1, ...), one scalar start per dim, each clamped "
                                   "into [0, dim - update's size] (lax.dynamic_update_slice)")


@meaning(dynamic_update_slice)
def _dynamic_update_slice(a, x, update, *starts):
    out = x.clone()
    out[_clamped_starts(x, starts, update.shape)] = update
    return out


@lowering(dynamic_update_slice, "jax")
def _dynamic_update_slice_jax(a, x, update, *starts):
    from jax import lax

    return lax.dynamic_update_slice(x, update, starts)


# --- selections -------------------------------------------------------------------------------
topk = declare("topk", OTHER, "x", outputs="values indices", k=Attr("int"), dim=Attr("int", -1),
               largest=Attr("bool", True), sorted=Attr("bool", True))


def _topk(a, x):
    """The k greatest (smallest) by a stable sort: of equal values the lower index first, and NaNs
    in XLA's total order (NaN above inf, -NaN below -inf): lax.top_k's answer, one of torch.topk's."""
    if x.dim() == 0:  # torch.topk of a scalar: itself, at index 0
        values, indices = _topk(a | {"dim": 0}, x.reshape(1))
        return values.reshape(()), indices.reshape(())
    dim, order = a["dim"], {"dim": a["dim"], "descending": a["largest"], "stable": True}
    indices = torch.sort(x, **order).indices
    if x.is_floating_point():  # then by class: -NaN < numbers < NaN, the value order kept within each
        rank = torch.where(torch.isnan(x), torch.where(torch.signbit(x), -1, 1), 0).gather(dim, indices)
        indices = indices.gather(dim, torch.sort(rank, **order).indices)
    indices = indices.narrow(dim, 0, a["k"])
    return x.gather(dim, indices), indices


meaning(topk)(widened(_topk, bools=True))


@lowering(topk, "jax")
def _topk_jax(a, x):
    """lax.top_k (of equal values the lower index first, XLA's total order, -0 made 0 as torch
    compares it), along the last dim; the smallest are the largest of -x (of ~x for integers and
    bools: no overflow)."""
    np_ = jnp()
    if x.ndim == 0:  # a scalar: itself, at index 0
        return x, np_.zeros((), np_.int32)
    dim = a["dim"] % x.ndim
    if np_.issubdtype(x.dtype, np_.inexact):
        keys = np_.where(x == 0, np_.zeros_like(x), x if a["largest"] else -x)
    else:
        keys = x if a["largest"] else ~x
    _, indices = lax().top_k(np_.moveaxis(keys, dim, -1), a["k"])
    indices = np_.moveaxis(indices, -1, dim)
    return np_.take_along_axis(x, indices, axis=dim), indices


def _sort(a, x):
    return tuple(torch.sort(x, dim=a["dim"], descending=a["descending"], stable=a["stable"]))


sort = declare("sort", OTHER, "x", outputs="values indices", dim=Attr("int", -1), descending=Attr("bool", False),
               stable=Attr("bool", False))


meaning(sort)(widened(_sort))


@lowering(sort, "jax")
def _sort_jax(a, x):
    """A stable sort (an unstable one may order equal values any way) by lax.sort's comparator: -0
    equal to 0, NaNs last. Descending: the reversed x sorted ascending, then reversed, which keeps
    equal values in their order and puts NaNs first, as torch does."""
    np_ = jnp()
    if x.ndim == 0:
        return x, np_.zeros((), np_.int32)
    dim = a["dim"] % x.ndim
    where = lax().broadcasted_iota(np_.int32, x.shape, dim)
    if not a["descending"]:
        return lax().sort((x, where), dimension=dim, is_stable=True, num_keys=1)
    values, order = lax().sort((np_.flip(x, dim), np_.flip(where, dim)), dimension=dim, is_stable=True, num_keys=1)
    return np_.flip(values, dim), np_.flip(order, dim)


masked_scatter = declare("masked_scatter", DATA_MOVEMENT, "x mask source",
                         doc="x with source's leading elements written, in order, where mask is True")
meaning(masked_scatter)(lambda a, x, mask, source: torch.masked_scatter(x, mask, source))
nonzero = declare("nonzero", OTHER, "x", doc="[k, rank] int64 indices of x's nonzero elements (k: data-dependent)")
meaning(nonzero)(lambda a, x: torch.nonzero(x))

# --- ATen's other indexed reads and writes ----------------------------------------------------------
A = torch.ops.aten
index_reduce = from_aten("index_reduce", DATA_MOVEMENT, A.index_reduce.default,
                         index_of={"index": IndexOf("self", "dim")})
put = from_aten("put", DATA_MOVEMENT, A.put.default, doc="x with source written (accumulate: added) at flat index",
                index_of={"index": IndexOf("self", FLAT)})
as_strided_scatter = from_aten("as_strided_scatter", DATA_MOVEMENT, A.as_strided_scatter.default)


@lowering(as_strided_scatter, "jax")
def _as_strided_scatter_jax(a, x, src):
    """src written at the positions as_strided reads, in x's row-major layout (as `as_strided`'s meaning)."""
    where = strided_positions(a["size"], a["stride"], a["storage_offset"] or 0).reshape(-1)
    return x.reshape(-1).at[where].set(src.reshape(-1).astype(x.dtype)).reshape(x.shape)

diagonal_scatter = from_aten("diagonal_scatter", DATA_MOVEMENT, A.diagonal_scatter.default)
diagonal_backward = from_aten("diagonal_backward", DATA_MOVEMENT, A.diagonal_backward.default)
masked_scatter_backward = from_aten("masked_scatter_backward", DATA_MOVEMENT, A.masked_scatter_backward.default)
segment_reduce = from_aten("segment_reduce", REDUCTION, A.segment_reduce.default)
segment_reduce_backward = from_aten("segment_reduce_backward", REDUCTION, A._segment_reduce_backward.default)
nonzero_static = from_aten("nonzero_static", OTHER, A.nonzero_static.default)
searchsorted = from_aten("searchsorted", OTHER, A.searchsorted.Tensor)
bucketize = from_aten("bucketize", OTHER, A.bucketize.Tensor)
