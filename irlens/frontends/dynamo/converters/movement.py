"""Converters of data movement: reshapes, permutes, broadcasts, concatenation, slices and splits,
diagonals, basic indexing (`x[...]`), flips, pads and as_strided."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

from irlens.frontends.dynamo.call import Call, Unmapped, converts, dim_list
from irlens.frontends.dynamo.meta import example_value
from irlens.core.ir import Node, canonical_dtype


@converts(ops_=("reshape",))
def _reshape(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    dtype = next((a for a in c.args[1:] + tuple(c.kwargs.values()) if isinstance(a, torch.dtype)), None)
    if dtype is not None:  # x.view(torch.int32), aten.view.dtype: the bits read as another dtype
        c.read_all()
        return c.one([c.value(x)], {"dtype": canonical_dtype(dtype), "from_dtype": c.meta(x).dtype}, op="bitcast")
    c.read_all()  # the target shape is the output's
    return c.one([c.value(x)], {"shape": list(c.outputs[0].shape)}, op="reshape")


@converts("permute", "transpose", "t", "swapaxes", "prims.transpose")
def _permute(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    rank = c.rank(x)
    if c.key == "prims.transpose":
        perm = [d % rank for d in c.arg("permutation")]
    elif c.bare == "permute":
        if c.schema is not None:
            dims = list(c.arg("dims"))
        else:
            args, _ = c.read_all()
            dims = c.kwargs.get("dims", args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:])
        perm = [d % rank for d in dims]
    else:
        perm = list(range(rank))
        if rank >= 2:
            d0 = c.arg("dim0", 1) if c.bare == "transpose" else (c.arg("axis0", 1) if c.bare == "swapaxes" else 0)
            d1 = c.arg("dim1", 2) if c.bare == "transpose" else (c.arg("axis1", 2) if c.bare == "swapaxes" else 1)
            perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
    return c.one([c.value(x)], {"perm": perm}, op="permute")


@converts(ops_=("broadcast",))
def _broadcast(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    out = c.outputs[0]
    if c.bare == "repeat":
        return _repeat(c, x)
    if c.key == "prims.broadcast_in_dim":
        dims = [int(d) for d in c.arg("broadcast_dimensions")]
    else:
        dims = list(range(len(out.shape) - c.rank(x), len(out.shape)))
    c.read_all()  # the target shape is the output's
    return c.one([c.value(x)], {"shape": list(out.shape), "broadcast_dims": dims})


def _repeat(c: Call, x) -> list[Node]:
    """x.repeat(r): x tiled; x's dims interleaved with size-r dims, broadcast, flattened."""
    c.read_all()
    meta, out = c.meta(x), c.outputs[0]
    reps = list(out.shape[i] // max(s, 1) for i, s in enumerate([1] * (len(out.shape) - len(meta.shape)) + list(meta.shape)))
    full = [1] * (len(out.shape) - len(meta.shape)) + list(meta.shape)
    wide = [d for r, s in zip(reps, full) for d in (r, s)]
    one = [d for s in full for d in (1, s)]
    a = c.emit("reshape", [c.value(x)], {"shape": one}, suffix="0")
    b = c.emit("broadcast", [a.outputs[0].name], {"shape": wide, "broadcast_dims": list(range(len(wide)))}, suffix="1")
    return [a, b, c.emit("reshape", [b.outputs[0].name], {"shape": list(out.shape)})]


@converts(ops_=("concat", "stack"))
def _concat(c: Call) -> list[Node]:
    tensors = [c.value(t) for t in c.arg("tensors", 0)]
    dim = c.arg("dim", 1, 0) % len(c.outputs[0].shape)
    if c.op == "concat":  # torch.cat skips 1-d empty tensors (legacy)
        tensors = [t for t in tensors if c.conv.metas[t].shape != (0,)] or tensors[:1]
    return c.one(tensors, {"dim": dim})


def slice_attrs(shape: tuple[int, ...], dim: int, start: int, limit: int, step: int = 1) -> dict:
    starts, limits, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], limits[dim], steps[dim] = start, limit, step
    return {"start": starts, "limit": limits, "step": steps}


def clamp_index(i: Any, size: int, default: int) -> int:
    if i is None:
        return default
    i = int(i)
    if i < 0:
        i += size
    return min(max(i, 0), size)


def slice_bounds(c: Call, shape) -> tuple[int, dict]:
    dim = c.arg("dim", default=0) % len(shape)
    start = clamp_index(c.arg("start"), shape[dim], 0)
    end = max(clamp_index(c.arg("end"), shape[dim], shape[dim]), start)
    return dim, slice_attrs(shape, dim, start, end, int(c.arg("step", default=1)))


@converts("slice")
def _slice(c: Call) -> list[Node]:
    x = c.arg("self")
    _, attrs = slice_bounds(c, c.meta(x).shape)
    return c.one([c.value(x)], attrs)


@converts("select", "narrow")
def _select(c: Call) -> list[Node]:
    """select: a one-wide slice, then a reshape that drops the dim; narrow: a slice."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    dim = c.arg("dim", 1) % len(shape)
    start = clamp_index(c.arg("start", 2) if c.bare == "narrow" else c.arg("index", 2), shape[dim], 0)
    if c.bare == "narrow":
        return c.one([c.value(x)], slice_attrs(shape, dim, start, start + int(c.arg("length", 3))))
    sliced = c.emit("slice", [c.value(x)], slice_attrs(shape, dim, start, start + 1), suffix="0")
    return [sliced, c.emit("reshape", [sliced.outputs[0].name], {"shape": list(c.outputs[0].shape)})]


@converts("split", "split_with_sizes", "chunk", "unbind")
def _split(c: Call) -> list[Node]:
    """One slice node per piece (ids `<node>.<i>`), each producing that piece's value; unbind's
    pieces drop the dim (a reshape after each)."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    dim = c.arg("dim", 1 if c.bare == "unbind" else 2, 0) % len(shape)
    c.arg("split_size", 1), c.arg("split_sizes", 1), c.arg("split_size_or_sections", 1), c.arg("chunks", 1)
    nodes, start = [], 0
    for i, out in enumerate(c.outputs):
        size = 1 if c.bare == "unbind" else out.shape[dim]
        attrs = slice_attrs(shape, dim, start, start + size)
        if c.bare == "unbind":
            kept = c.emit("slice", [c.value(x)], attrs, suffix=f"{i}.0")
            nodes += [kept, c.emit("reshape", [kept.outputs[0].name], {"shape": list(out.shape)}, suffix=str(i),
                                   outputs=[out])]
        else:
            nodes.append(c.emit("slice", [c.value(x)], attrs, suffix=str(i), outputs=[out]))
        start += size
    return nodes


@converts("diagonal")
def _diagonal(c: Call) -> list[Node]:
    """x.diagonal(offset, dim1, dim2): dim1 and dim2 moved last and flattened, then every
    (n2 + 1)-th element from the first on the diagonal (a strided slice)."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    offset, d1, d2 = int(c.arg("offset", 1, 0)), c.dim(c.arg("dim1", 2, 0), x), c.dim(c.arg("dim2", 3, 1), x)
    rest = [d for d in range(len(shape)) if d not in (d1, d2)]
    n1, n2 = shape[d1], shape[d2]
    length = c.outputs[0].shape[-1]
    flat = [shape[d] for d in rest] + [n1 * n2]
    first = offset if offset >= 0 else -offset * n2
    lead = [0] * len(rest)
    a = c.emit("permute", [c.value(x)], {"perm": rest + [d1, d2]}, suffix="0")
    b = c.emit("reshape", [a.outputs[0].name], {"shape": flat}, suffix="1")
    return [a, b, c.emit("slice", [b.outputs[0].name], {
        "start": lead + [first if length else 0],
        "limit": [shape[d] for d in rest] + [first + (length - 1) * (n2 + 1) + 1 if length else 0],
        "step": [1] * len(rest) + [n2 + 1]})]


@converts("getitem")
def _getitem_tensor(c: Call) -> list[Node]:
    """Tensor indexing at the torch level: basic indexing (slices, ints, None, ...) is a slice
    followed by a reshape; one integer index tensor is a take along dim 0; the rest is expanded."""
    (x, index), _ = c.read_all()
    shape = c.meta(x).shape
    items = list(index) if isinstance(index, tuple) else [index]
    if len(items) == 1 and isinstance(items[0], fx.Node) and c.meta(items[0]).dtype not in ("bool", "uint8"):
        return c.one([c.value(x), c.value(items[0])], {"dim": 0}, op="take")
    if any(isinstance(i, fx.Node) or not isinstance(i, (slice, int, type(None), type(Ellipsis))) for i in items):
        raise Unmapped("advanced indexing")
    if any(isinstance(s, fx.Node) for i in items if isinstance(i, slice) for s in (i.start, i.stop, i.step)):
        raise Unmapped("symbolic slice bounds")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = len(shape) - sum(1 for i in items if i is not None and i is not Ellipsis)
        items[at:at + 1] = [slice(None)] * fill
    starts, limits, steps, kept, d = [], [], [], [], 0
    for i in items:
        if i is None:
            continue
        size = shape[d]
        if isinstance(i, int):
            s = clamp_index(i, size, 0)
            starts.append(s), limits.append(s + 1), steps.append(1), kept.append(1)
        else:
            lo, hi, st = i.indices(size)
            starts.append(lo), limits.append(max(hi, lo)), steps.append(st)
            kept.append(len(range(lo, hi, st)))
        d += 1
    for size in shape[d:]:
        starts.append(0), limits.append(size), steps.append(1), kept.append(size)
    out = c.outputs[0]
    if list(kept) == list(shape):  # only None / full slices: a reshape
        return c.one([c.value(x)], {"shape": list(out.shape)}, op="reshape")
    if tuple(kept) == out.shape:
        return c.one([c.value(x)], {"start": starts, "limit": limits, "step": steps})
    sliced = c.emit("slice", [c.value(x)], {"start": starts, "limit": limits, "step": steps}, suffix="0")
    return [sliced, c.emit("reshape", [sliced.outputs[0].name], {"shape": list(out.shape)})]


@converts("flip", "prims.rev")
def _flip(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"dims": dim_list(c.arg("dims", 1), c.rank(x)) if c.arg("dims", 1) else []})


@converts("constant_pad_nd")
def _constant_pad(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x), c.arg("value", 2, 0)], {"padding": _pad_config(c.arg("pad", 1), c.rank(x))})


def _pad_config(pad, rank: int, interior: bool = True) -> list[list[int]]:
    """torch's pad list (last dim first, (lo, hi) pairs) as one [lo, hi(, 0)] per dim."""
    config = [[0, 0] for _ in range(rank)]
    for i in range(len(pad) // 2):
        config[rank - 1 - i] = [int(pad[2 * i]), int(pad[2 * i + 1])]
    return [p + [0] for p in config] if interior else config


@converts(ops_=("reflection_pad", "replication_pad"))
def _mode_pad(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"padding": _pad_config(c.arg("padding", 1), c.rank(x), interior=False)})


@converts("as_strided")
def _as_strided(c: Call) -> list[Node]:
    """as_strided reads x's storage: only a contiguous x from its start has the layout assumed."""
    x = c.arg("self", 0)
    example = example_value(x)
    if not example.is_contiguous() or example.storage_offset() != 0:
        raise Unmapped("as_strided of a strided view")
    return c.one([c.value(x)], {"size": [int(s) for s in c.arg("size", 1)], "stride": [int(s) for s in c.arg("stride", 2)],
                                "storage_offset": int(c.arg("storage_offset", 3) or 0)})
