"""XLA's gather and scatter as canonical ops (`GatherForm`, `ScatterForm`; `expand_gather`,
`expand_scatter`), shared by the jaxpr, StableHLO and HLO adapters.

Gather and scatter: a *point* gather reads, for each batch position of the indices, the
operand at one index per indexed dim (slice size 1) and whole windows along the other dims;
it becomes `take` (one indexed dim), `gather` (one indexed dim plus batching dims:
take_along_axis) or `index` (several), then a `permute`/`reshape` into XLA's output layout.
Out-of-bounds indices follow the source's mode, made explicit with canonical ops: `clip`
(HLO gather, lax CLIP) clamps each index, `fill` (lax FILL_OR_DROP gather) clamps and then
puts the fill value where an index was out of bounds, `drop` (HLO scatter, lax FILL_OR_DROP
scatter) sends an out-of-bounds update to a padding row that is sliced away; `promise`
(lax PROMISE_IN_BOUNDS) adds nothing: out-of-bounds indices are undefined there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from irlens.frontends.jax.xla.forms import Emitter, Unmapped
from irlens.core.ir import Arg, TensorMeta

MODES = ("promise", "clip", "fill", "drop")
SCATTER_KINDS = ("set", "add", "sub", "mul", "min", "max")
_SCATTER_REDUCE = {"mul": "prod", "min": "amin", "max": "amax"}


# --- gather --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GatherForm:
    offset_dims: tuple[int, ...]
    collapsed_slice_dims: tuple[int, ...]
    start_index_map: tuple[int, ...]
    slice_sizes: tuple[int, ...]
    index_vector_dim: int
    operand_batching_dims: tuple[int, ...] = ()
    start_indices_batching_dims: tuple[int, ...] = ()
    mode: str = "promise"
    fill_value: Arg = None


@dataclass(frozen=True)
class ScatterForm:
    update_window_dims: tuple[int, ...]
    inserted_window_dims: tuple[int, ...]
    scatter_dims_to_operand_dims: tuple[int, ...]
    index_vector_dim: int
    kind: str  # one of SCATTER_KINDS
    operand_batching_dims: tuple[int, ...] = ()
    scatter_indices_batching_dims: tuple[int, ...] = ()
    mode: str = "drop"


def default_fill(dtype: str) -> Arg:
    """lax's fill value for a FILL_OR_DROP gather without one."""
    import numpy as np

    if dtype == "bool":
        return True
    if dtype.startswith("int"):
        return int(np.iinfo(dtype).min)
    if dtype.startswith("uint"):
        return int(np.iinfo(dtype).max)
    return float("nan")


def _components(e: Emitter, indices: str, idx: TensorMeta, vector_dim: int, count: int) -> tuple[list[str], list[int]]:
    """The index vector split into `count` tensors of the batch shape (the indices without the vector dim)."""
    batch = [d for i, d in enumerate(idx.shape) if i != vector_dim]
    if vector_dim >= len(idx.shape):
        if count != 1:
            raise Unmapped(f"{count} indexed dims but no index vector dim")
        return [indices], batch
    if count == 1:
        return [e.reshape(indices, batch)], batch
    parts = []
    for k in range(count):
        start = [0] * len(idx.shape)
        limit = list(idx.shape)
        start[vector_dim], limit[vector_dim] = k, k + 1
        part = e.emit("slice", [indices], start=start, limit=limit, step=[1] * len(idx.shape))
        parts.append(e.reshape(part, batch))
    return parts, batch


def _in_bounds(e: Emitter, comps: list[str], highest: list[int]) -> str:
    """bool[batch]: every start within [0, highest]."""
    mask = None
    for c, n in zip(comps, highest):
        ok = e.emit("logical_and", [e.emit("ge", [c, 0]), e.emit("le", [c, n])])
        mask = ok if mask is None else e.emit("logical_and", [mask, ok])
    return mask


def _clamped(e: Emitter, comps: list[str], highest: list[int]) -> list[str]:
    return [e.emit("clamp", [c, 0, n]) for c, n in zip(comps, highest)]


def _batch_iotas(e: Emitter, batch: list[int], positions: list[int]) -> list[str]:
    """For each batching dim: the batch coordinate along `positions[k]` of the batch shape."""
    return [e.emit("iota", [], shape=list(batch), dim=p, dtype="int64") for p in positions]


def _batch_positions(index_rank: int, vector_dim: int, dims) -> list[int]:
    """Indices dims -> their positions in the batch shape (the indices without the vector dim)."""
    return [d - (vector_dim < d) for d in dims]


def expand_gather(e: Emitter, operand: str, x: TensorMeta, indices: str, idx: TensorMeta, form: GatherForm,
                  out: TensorMeta) -> None:
    f = form
    rank = len(x.shape)
    indexed, batching = list(f.start_index_map), list(f.operand_batching_dims)
    if set(indexed) & set(batching):
        raise Unmapped("a dim both indexed and batched")
    if f.mode not in ("promise", "clip", "fill"):
        raise Unmapped(f"gather mode {f.mode}")
    if _one_window(idx, f.index_vector_dim) and not batching:
        _gather_window(e, operand, x, indices, idx, f, out)
        return
    windows = [d for d in range(rank) if d not in indexed and d not in batching]
    for d in windows:
        if f.slice_sizes[d] != x.shape[d] and d not in f.collapsed_slice_dims and f.slice_sizes[d] != 0:
            raise Unmapped(f"partial window {f.slice_sizes[d]} of {x.shape[d]} along dim {d}")
    # windows of a non-indexed dim narrower than the dim start at 0: a static slice first
    if any(f.slice_sizes[d] != x.shape[d] for d in windows):
        limit = [f.slice_sizes[d] if d in windows else x.shape[d] for d in range(rank)]
        operand = e.emit("slice", [operand], start=[0] * rank, limit=limit, step=[1] * rank)
        x = e.meta(operand)
    comps, batch = _components(e, indices, idx, f.index_vector_dim, len(indexed))
    highest = [x.shape[d] - f.slice_sizes[d] for d in indexed]  # the last start a whole window fits at
    mask = _in_bounds(e, comps, highest) if f.mode == "fill" else None
    if f.mode in ("clip", "fill"):
        comps = _clamped(e, comps, highest)
    pairs = _batch_positions(len(idx.shape), f.index_vector_dim, f.start_indices_batching_dims)
    free = [p for p in range(len(batch)) if p not in pairs]
    spans = [d for d in indexed if f.slice_sizes[d] > 1]  # indexed dims read as windows, not points
    # the gathering node: its op, inputs, attrs, and `labels` naming each of its dims
    # ("b", batch position), ("w", operand dim), or ("1", dim) for a size-1 dim the output lacks
    if spans:
        op, inputs, attrs, labels = _windowed_index(e, operand, x, comps, batch, indexed, batching, pairs, windows,
                                                    spans, f.slice_sizes)
    elif len(indexed) == 1 and not batching:
        d = indexed[0]
        op, inputs, attrs = "take", [operand, comps[0]], {"dim": d}
        labels = [("w", w) for w in range(d)] + [("b", p) for p in range(len(batch))] + \
                 [("w", w) for w in range(d + 1, rank)]
    elif len(indexed) == 1 and len(free) <= 1:
        op, inputs, attrs, labels = _take_along(e, operand, x, comps[0], batch, indexed[0], batching, pairs, free)
    else:
        xp = e.permute(operand, indexed + batching + windows)
        op, inputs, attrs = "index", [xp, *comps, *_batch_iotas(e, batch, pairs)], {}
        labels = [("b", p) for p in range(len(batch))] + [("w", w) for w in windows]
    perm, dropped = _output_perm(labels, f, rank, len(out.shape), len(batch))
    direct = mask is None and not dropped and perm == list(range(len(out.shape)))
    value = e.emit(op, inputs, out if direct else None, **attrs)
    if direct:
        return
    shape = e.meta(value).shape
    if any(shape[i] != 1 for i in dropped):
        raise Unmapped("a gathered dim the output does not hold")
    last = mask is None
    if [shape[p] for p in perm] != list(out.shape):
        value = e.permute(value, perm)
        value = e.reshape(value, out.shape, out if last else None)
    else:
        value = e.permute(value, perm, out if last else None)
    if mask is not None:
        batch_slots = [p for p in range(len(out.shape)) if p not in f.offset_dims]
        wide = e.emit("broadcast", [mask], shape=list(out.shape), broadcast_dims=batch_slots)
        fill = f.fill_value if f.fill_value is not None else default_fill(x.dtype)
        e.emit("where", [wide, value, fill], out)


def _windowed_index(e, operand, x, comps, batch, indexed, batching, pairs, windows, spans, slice_sizes):
    """Windows at computed starts along some indexed dims (vmap of dynamic_slice): advanced indexing
    with, per such dim, start + iota over the window on an axis of its own after the batch axes."""
    nb, ns = len(batch), len(spans)
    xp = e.permute(operand, indexed + batching + windows)
    points = []
    for d, c in zip(indexed, comps):
        c = e.reshape(c, [*batch, *([1] * ns)])
        if d in spans:
            k = spans.index(d)
            along = [slice_sizes[d] if i == k else 1 for i in range(ns)]
            offsets = e.emit("iota", [], shape=[*([1] * nb), *along], dim=nb + k, dtype=e.meta(c).dtype)
            c = e.emit("add", [c, offsets])
        points.append(c)
    for b in _batch_iotas(e, batch, pairs):
        points.append(e.reshape(b, [*batch, *([1] * ns)]))
    labels = [("b", p) for p in range(nb)] + [("w", d) for d in spans] + [("w", w) for w in windows]
    return "index", [xp, *points], {}, labels


def _take_along(e, operand, x, comp, batch, d, batching, pairs, free):
    """One indexed dim d and batching dims: torch.gather along d, the index laid out in the
    operand's dims (batching dims at theirs, the free batch dim at d) and broadcast over windows."""
    rank = len(x.shape)
    where_in_operand = {p: o for p, o in zip(pairs, batching)}
    if free:
        where_in_operand[free[0]] = d
    by_operand = sorted(range(len(batch)), key=lambda p: where_in_operand[p])
    permuted = e.permute(comp, by_operand)
    view = [1] * rank
    for p in range(len(batch)):
        view[where_in_operand[p]] = batch[p]
    viewed = e.reshape(permuted, view) if view != [batch[p] for p in by_operand] else permuted
    full = [view[o] if (o in batching or o == d) else x.shape[o] for o in range(rank)]
    index = viewed if full == view else e.emit("broadcast", [viewed], shape=full, broadcast_dims=list(range(rank)))
    operand_to_batch = {o: p for p, o in where_in_operand.items()}
    labels = [("b", operand_to_batch[o]) if o in operand_to_batch else ("1", o) if o == d else ("w", o)
              for o in range(rank)]
    return "gather", [operand, index], {"dim": d}, labels


def _output_perm(labels, f: GatherForm, rank: int, out_rank: int, n_batch: int) -> tuple[list[int], list[int]]:
    """The permutation of the gathered value into XLA's output order (batch dims where offset_dims
    are not, window dims in operand order), and the gathered dims the output lacks: those go
    last, to be reshaped away (each must be of size 1)."""
    offset = list(f.offset_dims)
    batch_slots = [p for p in range(out_rank) if p not in offset]
    window_dims = [d for d in range(rank) if d not in f.collapsed_slice_dims and d not in f.operand_batching_dims]
    target = {("b", b): slot for slot, b in zip(batch_slots, range(n_batch))}
    target.update({("w", w): slot for slot, w in zip(offset, window_dims)})
    present = sorted((lab for lab in labels if lab in target), key=target.get)
    rest = [i for i, lab in enumerate(labels) if lab not in target]
    return [labels.index(lab) for lab in present] + rest, rest


def _one_window(idx: TensorMeta, vector_dim: int) -> bool:
    """Indices that hold one index vector: one window, read or written at computed offsets."""
    return all(d == 1 for i, d in enumerate(idx.shape) if i != vector_dim)


def _starts(e: Emitter, indices: str, idx: TensorMeta, vector_dim: int, dims: tuple[int, ...], rank: int) -> list[Arg]:
    """One scalar start per operand dim: the index vector's entry for an indexed dim, else 0."""
    comps, _ = _components(e, indices, idx, vector_dim, len(dims))
    scalars = [e.reshape(c, []) for c in comps]
    at = dict(zip(dims, scalars))
    return [at.get(d, 0) for d in range(rank)]


def _window_in_bounds(e: Emitter, starts: list[Arg], x: TensorMeta, sizes: list[int], dims) -> str:
    """bool[]: the window at `starts` lies within x along the indexed dims."""
    mask = None
    for d in dims:
        ok = e.emit("logical_and", [e.emit("ge", [starts[d], 0]), e.emit("le", [starts[d], x.shape[d] - sizes[d]])])
        mask = ok if mask is None else e.emit("logical_and", [mask, ok])
    return mask


def _gather_window(e: Emitter, operand: str, x: TensorMeta, indices: str, idx: TensorMeta, f: GatherForm,
                   out: TensorMeta) -> None:
    """A gather of one window (x[i:i+k] at a computed i): a `dynamic_slice`, which clamps the
    start as XLA does; lax's fill mode puts the fill value where the window was out of bounds."""
    rank = len(x.shape)
    starts = _starts(e, indices, idx, f.index_vector_dim, f.start_index_map, rank)
    sizes = list(f.slice_sizes)
    mask = _window_in_bounds(e, starts, x, sizes, f.start_index_map) if f.mode == "fill" else None
    last = mask is None
    window = e.emit("dynamic_slice", [operand, *starts], out if last and sizes == list(out.shape) else None,
                    sizes=sizes)
    if sizes != list(out.shape):
        window = e.reshape(window, out.shape, out if last else None)
    if mask is not None:
        fill = f.fill_value if f.fill_value is not None else default_fill(x.dtype)
        e.emit("where", [mask, window, fill], out)


def _scatter_window(e: Emitter, operand: str, x: TensorMeta, indices: str, idx: TensorMeta, updates: str,
                    upd: TensorMeta, f: ScatterForm, kind: str, out: TensorMeta) -> None:
    """A scatter of one window (x.at[i:i+k] at a computed i): `dynamic_update_slice` of the window
    (combined with the current one); XLA drops a window out of bounds where dynamic_update_slice
    would clamp it, so x is kept there."""
    rank = len(x.shape)
    starts = _starts(e, indices, idx, f.index_vector_dim, f.scatter_dims_to_operand_dims, rank)
    if f.mode == "clip":
        raise Unmapped("a clipped single-window scatter")
    sizes = []
    window_dims = iter(upd.shape)
    for d in range(rank):
        sizes.append(1 if d in f.inserted_window_dims else next(window_dims))
    values = updates if list(upd.shape) == sizes else e.reshape(updates, sizes)
    if kind != "set":
        current = e.emit("dynamic_slice", [operand, *starts], sizes=sizes)
        combine = {"add": "add", "mul": "mul", "min": "minimum", "max": "maximum"}[kind]
        values = e.emit(combine, [current, values])
    drop = f.mode in ("drop", "promise")  # XLA drops an out-of-bounds window in both (a promise costs one where)
    written = e.emit("dynamic_update_slice", [operand, values, *starts], None if drop else out)
    if drop:
        mask = _window_in_bounds(e, starts, x, sizes, f.scatter_dims_to_operand_dims)
        e.emit("where", [mask, written, operand], out)


# --- scatter -------------------------------------------------------------------------------


def expand_scatter(e: Emitter, operand: str, x: TensorMeta, indices: str, idx: TensorMeta, updates: str,
                   upd: TensorMeta, form: ScatterForm, out: TensorMeta) -> None:
    f = form
    rank = len(x.shape)
    if f.kind not in SCATTER_KINDS:
        raise Unmapped(f"scatter combining by {f.kind}")
    if f.mode not in ("promise", "clip", "drop"):
        raise Unmapped(f"scatter mode {f.mode}")
    indexed, batching = list(f.scatter_dims_to_operand_dims), list(f.operand_batching_dims)
    if _one_window(idx, f.index_vector_dim) and not batching and f.update_window_dims == tuple(range(len(upd.shape))):
        if f.kind == "sub":
            updates = e.emit("neg", [updates])
        _scatter_window(e, operand, x, indices, idx, updates, upd, f, "add" if f.kind == "sub" else f.kind, out)
        return
    windows = [d for d in range(rank) if d not in f.inserted_window_dims and d not in batching]
    if len(windows) != len(f.update_window_dims):
        raise Unmapped("update window dims do not match the operand")
    window_sizes = dict(zip(windows, (upd.shape[p] for p in f.update_window_dims)))
    free_windows = [d for d in windows if d not in indexed]
    for d in range(rank):
        if d in indexed and d in windows and window_sizes[d] != 1:
            raise Unmapped(f"windows of {window_sizes[d]} along indexed dim {d} at several indices")
        if d in f.inserted_window_dims and d not in indexed:
            raise Unmapped(f"inserted dim {d} without an index")
        if d in free_windows and window_sizes[d] != x.shape[d]:
            raise Unmapped(f"partial window {window_sizes[d]} of {x.shape[d]} along dim {d}")
    dt = x.dtype
    kind = f.kind
    if kind == "sub":  # x - u == x + (-u) exactly
        updates, kind = e.emit("neg", [updates]), "add"
    comps, batch = _components(e, indices, idx, f.index_vector_dim, len(indexed))
    sizes = [x.shape[d] for d in indexed]
    if f.mode == "clip":
        comps = _clamped(e, comps, [n - 1 for n in sizes])
    target, final = x, out
    if f.mode == "drop":  # an out-of-bounds update goes to a padding row, sliced away at the end
        mask = _in_bounds(e, comps, [n - 1 for n in sizes])
        comps = [e.emit("where", [mask, c, n]) for c, n in zip(comps, sizes)]
        operand = e.emit("pad", [operand, False if dt == "bool" else 0],
                         padding=[[0, int(d in indexed), 0] for d in range(rank)])
        target, final = e.meta(operand), None
    # the updates as batch dims + free window dims in operand order (kept size-1 indexed windows go)
    scatter_slots = [p for p in range(len(upd.shape)) if p not in f.update_window_dims]
    slot_of = dict(zip(windows, f.update_window_dims))
    perm = scatter_slots + [slot_of[d] for d in free_windows] + [slot_of[d] for d in windows if d in indexed]
    values_shape = [*batch, *(x.shape[d] for d in free_windows)]
    if [upd.shape[p] for p in perm][:len(values_shape)] != values_shape:
        raise Unmapped("updates do not match the indices' batch shape")
    values = e.permute(updates, perm)
    if len(perm) != len(values_shape):
        values = e.reshape(values, values_shape)
    pairs = _batch_positions(len(idx.shape), f.index_vector_dim, f.scatter_indices_batching_dims)
    if len(indexed) == 1 and not batching:
        result = _scatter_one_dim(e, operand, target, comps[0], values, batch, indexed[0], kind, final)
    else:
        result = _scatter_points(e, operand, target, comps, values, batch, indexed, batching, pairs, free_windows,
                                 kind, final)
    if f.mode == "drop":
        e.emit("slice", [result], out, start=[0] * rank, limit=list(x.shape), step=[1] * rank)


def _scatter_one_dim(e, operand, x, comp, values, batch, d, kind, out):
    """Updates along one indexed dim d: index_add, index_put, or scatter_reduce over the batch flattened."""
    rank, nb = len(x.shape), len(batch)
    # batch + windows -> windows before d, batch, windows after d: take(x, comp, d)'s layout
    perm = list(range(nb, nb + d)) + list(range(nb)) + list(range(nb + d, nb + rank - 1))
    moved = e.permute(values, perm)
    if kind == "add":
        return e.emit("index_add", [operand, comp, moved], out, dim=d)
    if kind == "set":
        return e.emit("index_put", [operand, moved, *([None] * d), comp], out, accumulate=False)
    n = math.prod(batch)
    flat_shape = [*x.shape[:d], n, *x.shape[d + 1:]]
    flat = e.reshape(moved, flat_shape)
    view = [1] * rank
    view[d] = n
    index = e.emit("broadcast", [e.reshape(comp, view)], shape=flat_shape, broadcast_dims=list(range(rank)))
    return e.emit("scatter_reduce", [operand, index, flat], out, dim=d, reduce=_SCATTER_REDUCE[kind],
                  include_self=True)


def _scatter_points(e, operand, x, comps, values, batch, indexed, batching, pairs, free_windows, kind, out):
    """Several indexed (or batching) dims: with those dims moved first, index_put at the points, or
    scatter_reduce over them flattened into one; then the dims moved back."""
    order = indexed + batching + free_windows
    xp_shape = [x.shape[o] for o in order]
    xp = e.permute(operand, order)
    points = comps + _batch_iotas(e, batch, pairs)
    inverse = [order.index(d) for d in range(len(order))]
    in_place = order == sorted(order)
    if kind in ("add", "set"):
        done = e.emit("index_put", [xp, values, *points], out if in_place else None, accumulate=kind == "add")
        return done if in_place else e.permute(done, inverse, out)
    k = len(points)
    lead, rest = xp_shape[:k], xp_shape[k:]
    index_dtype = e.meta(comps[0]).dtype
    linear = None
    for c, stride in zip(points, [math.prod(lead[i + 1:]) for i in range(k)]):
        c = c if c in comps else e.emit("convert", [c], dtype=index_dtype)
        term = c if stride == 1 else e.emit("mul", [c, stride])
        linear = term if linear is None else e.emit("add", [linear, term])
    n = math.prod(batch)
    flat_values = e.reshape(values, [n, *rest])
    column = e.reshape(linear, [n] + [1] * len(rest))
    index = e.emit("broadcast", [column], shape=[n, *rest], broadcast_dims=list(range(1 + len(rest))))
    rows = e.reshape(xp, [math.prod(lead), *rest])
    done = e.emit("scatter_reduce", [rows, index, flat_values], dim=0, reduce=_SCATTER_REDUCE[kind],
                  include_self=True)
    back = e.reshape(done, xp_shape, out if in_place else None)
    return back if in_place else e.permute(back, inverse, out)
