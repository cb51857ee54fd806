"""jaxpr handlers of data movement and creation: broadcast_in_dim, reshape/squeeze, transpose, rev,
slice, split, concatenate, stack, tile, pad, dynamic slices, iota, empty."""
from __future__ import annotations

import math

from irlens.core.ir import canonical_dtype
from irlens.frontends.jax.jaxpr.eqn import Eqn, ints, register
from irlens.frontends.jax.xla.forms import Emitter, full_attrs


def _broadcast_in_dim(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    if not isinstance(q.inputs[0], str):
        q.one(e, "full", [], **full_attrs(out.shape, q.inputs[0], out.dtype))
    else:
        q.one(e, "broadcast", shape=ints(q.params["shape"]), broadcast_dims=ints(q.params["broadcast_dimensions"]))


def _reshape(e: Emitter, q: Eqn) -> None:
    """lax.reshape(x, sizes, dimensions): x transposed by `dimensions`, then reshaped."""
    x, perm, out = q.inputs[0], q.params.get("dimensions"), q.outs[0]
    if not isinstance(x, str):  # a literal, reshaped: a `full`
        q.one(e, "full", [], **full_attrs(out.shape, x, out.dtype))
        return
    if perm is not None:
        x = e.permute(x, ints(perm))
    e.reshape(x, out.shape, out)


def _iota(e: Emitter, q: Eqn) -> None:
    q.one(e, "iota", [], shape=ints(q.params["shape"]), dim=int(q.params["dimension"]),
          dtype=canonical_dtype(q.params["dtype"]))


def _iota_2x32_shape(e: Emitter, q: Eqn) -> None:
    """The row-major index of each element of `shape`, a uint64 count given as its high and low
    32 bits (two uint32 arrays; the counters of jax's PRNGs): the index, a sum of iotas times
    the strides, in int64 (no array has 2**63 elements), then its halves."""
    shape = ints(q.params["shape"])
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    index = None
    for dim, stride in enumerate(strides):
        term = e.emit("iota", [], shape=shape, dim=dim, dtype="int64")
        term = term if stride == 1 else e.emit("mul", [term, stride])
        index = term if index is None else e.emit("add", [index, term])
    hi, lo = q.outs
    e.emit("convert", [e.emit("bitwise_right_shift", [index, 32])], hi, dtype="uint32")
    e.emit("convert", [e.emit("bitwise_and", [index, 2**32 - 1])], lo, dtype="uint32")


def _empty(e: Emitter, q: Eqn) -> None:
    q.one(e, "empty", [], shape=list(q.outs[0].shape), dtype=q.outs[0].dtype)


def _slice(e: Emitter, q: Eqn) -> None:
    p = q.params
    start = ints(p["start_indices"])
    q.one(e, "slice", start=start, limit=ints(p["limit_indices"]),
          step=ints(p["strides"]) if p.get("strides") else [1] * len(start))


def _split(e: Emitter, q: Eqn) -> None:
    """`split` (one input, several outputs) as one `slice` per output; `unstack` as slice + reshape."""
    axis = int(q.params["axis"])
    shape = list(q.metas[0].shape)
    sizes = ints(q.params["sizes"]) if q.prim == "split" else [1] * shape[axis]
    offset = 0
    for out, size in zip(q.outs, sizes):
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = offset, offset + size
        offset += size
        if q.prim == "split":
            e.emit("slice", [q.inputs[0]], out, start=start, limit=limit, step=[1] * len(shape))
        else:
            part = e.emit("slice", [q.inputs[0]], start=start, limit=limit, step=[1] * len(shape))
            e.reshape(part, out.shape, out)


def _tile(e: Emitter, q: Eqn) -> None:
    """tile(x, reps): x broadcast to [r0, d0, r1, d1, ...], then merged to [r0*d0, ...]."""
    reps, x = ints(q.params["reps"]), q.metas[0]
    wide = [v for r, d in zip(reps, x.shape) for v in (r, d)]
    spread = e.emit("broadcast", [q.inputs[0]], shape=wide, broadcast_dims=list(range(1, 2 * len(reps), 2)))
    e.reshape(spread, q.outs[0].shape, q.outs[0])


def _pad(e: Emitter, q: Eqn) -> None:
    q.one(e, "pad", padding=[ints(c) for c in q.params["padding_config"]])


def _dynamic_slice(e: Emitter, q: Eqn) -> None:
    q.one(e, "dynamic_slice", sizes=ints(q.params["slice_sizes"]))


def _concat(e: Emitter, q: Eqn) -> None:
    q.one(e, "concat", dim=int(q.params["dimension"]))


def _stack(e: Emitter, q: Eqn) -> None:
    q.one(e, "stack", dim=int(q.params["axis"]))


def _dynamic_update_slice(e: Emitter, q: Eqn) -> None:
    q.one(e, "dynamic_update_slice")


def _transpose(e: Emitter, q: Eqn) -> None:
    q.one(e, "permute", perm=ints(q.params["permutation"]))


def _rev(e: Emitter, q: Eqn) -> None:
    q.one(e, "flip", dims=ints(q.params["dimensions"]))


def _squeeze(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    if not isinstance(q.inputs[0], str):
        q.one(e, "full", [], **full_attrs(out.shape, q.inputs[0], out.dtype))
    else:
        q.one(e, "reshape", shape=list(out.shape))


register("broadcast_in_dim", _broadcast_in_dim, ("shape", "broadcast_dimensions"))
register("reshape", _reshape, ("new_sizes", "dimensions"))
register(["squeeze", "expand_dims"], _squeeze, ("dimensions",))
register("transpose", _transpose, ("permutation",))
register("rev", _rev, ("dimensions",))


register("iota_2x32_shape", _iota_2x32_shape, ("shape",))


register("iota", _iota, ("dtype", "shape", "dimension"))
register(["empty", "empty2"], _empty, ("shape", "dtype", "memory_space"))


register("slice", _slice, ("start_indices", "limit_indices", "strides"))
register(["split", "unstack"], _split, ("sizes", "axis"))
register("concatenate", _concat, ("dimension",))
register("stack", _stack, ("axis",))
register("tile", _tile, ("reps",))
register("pad", _pad, ("padding_config",))
register("dynamic_slice", _dynamic_slice, ("slice_sizes",))
register("dynamic_update_slice", _dynamic_update_slice)
