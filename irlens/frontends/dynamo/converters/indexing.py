"""Converters of gathers, scatters and advanced indexing (index, index_put, index_select,
slice/select_scatter, masked_scatter, nonzero), and complex views."""
from __future__ import annotations



from irlens.frontends.dynamo.call import Call, Unmapped, converts, operand
from irlens.frontends.dynamo.converters.movement import clamp_index, slice_attrs, slice_bounds
from irlens.core.ir import Node


@converts("gather", "scatter_add")
def _gather(c: Call) -> list[Node]:
    """torch.gather(x, dim, index) / torch.scatter_add(x, dim, index, src)."""
    x = c.arg("self", 0)
    if c.rank(x) == 0:
        raise Unmapped("a 0-d input")
    c.ignore("sparse_grad")
    inputs = [c.value(x), c.value(c.arg("index", 2))]
    if c.op == "scatter_add":
        inputs.append(c.value(c.arg("src", 3)))
    return c.one(inputs, {"dim": c.dim(c.arg("dim", 1), x)})


@converts("take_along_dim")
def _take_along_dim(c: Call) -> list[Node]:
    """torch.take_along_dim(x, indices, dim): a gather where the two agree outside dim (it
    broadcasts them, and dim None means the flattened x: those are expanded)."""
    x, idx, dim = c.arg("self", 0), c.arg("indices", 1), c.arg("dim", 2)
    xs, ids = c.meta(x).shape, c.meta(idx).shape
    if dim is None or len(xs) != len(ids):
        raise Unmapped("take_along_dim that flattens or broadcasts")
    dim %= len(xs)
    if any(a != b for d, (a, b) in enumerate(zip(xs, ids)) if d != dim):
        raise Unmapped("take_along_dim that broadcasts")
    return c.one([c.value(x), c.value(idx)], {"dim": dim})


@converts("index_add")
def _index_add(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.rank(x) == 0:
        raise Unmapped("a 0-d input")
    inputs = [c.value(x), c.value(c.arg("index", 2)), c.value(c.arg("source", 3))]
    return c.one(inputs, {"dim": c.dim(c.arg("dim", 1), x), "alpha": c.arg("alpha", default=1)})


@converts("scatter")
def _scatter(c: Call) -> list[Node]:
    if c.arg("reduce") is not None:
        raise Unmapped("scatter with reduce")
    x = c.arg("self", 0)
    if c.rank(x) == 0:
        raise Unmapped("a 0-d input")
    src = c.arg("src", 3) if c.has("src", 3) and c.arg("src", 3) is not None else c.arg("value", 3)
    return c.one([c.value(x), c.value(c.arg("index", 2)), c.value(src)], {"dim": c.dim(c.arg("dim", 1), x)})


@converts("scatter_reduce")
def _scatter_reduce(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x), c.value(c.arg("index", 2)), c.value(c.arg("src", 3))],
                 {"dim": c.dim(c.arg("dim", 1), x), "reduce": c.arg("reduce", 4),
                  "include_self": bool(c.arg("include_self", 5, True))})


@converts("index_put", "index_put_", "_unsafe_index_put")
def _index_put(c: Call) -> list[Node]:
    indices = [c.value(i) for i in c.arg("indices", 1)]
    return c.one([c.value(c.arg("self", 0)), operand(c, "values", 2), *indices],
                 {"accumulate": bool(c.arg("accumulate", 3, False))})


@converts("index", "_unsafe_index")
def _index(c: Call) -> list[Node]:
    """aten.index: with one integer index tensor a `take` along its dim, else `index`."""
    x, indices = c.arg("self"), list(c.arg("indices"))
    present = [i for i, t in enumerate(indices) if t is not None]
    if len(present) == 1 and c.meta(indices[present[0]]).dtype not in ("bool", "uint8"):
        return c.one([c.value(x), c.value(indices[present[0]])], {"dim": present[0]}, op="take")
    return c.one([c.value(x), *(c.value(t) for t in indices)], op="index")


@converts("index_select")
def _index_select(c: Call) -> list[Node]:
    x, index = c.arg("self", 0), c.arg("index", 2)
    if c.rank(x) > 0:
        return c.one([c.value(x), c.value(index)], {"dim": c.dim(c.arg("dim", 1), x)}, op="take")
    c.arg("dim", 1)  # a 0-d x is one element along dim 0 (torch's rule), the result 0-d again
    row = c.emit("reshape", [c.value(x)], {"shape": [1]}, suffix="0")
    taken = c.emit("take", [row.outputs[0].name, c.value(index)], {"dim": 0}, suffix="1")
    return [row, taken, c.emit("reshape", [taken.outputs[0].name], {"shape": list(c.outputs[0].shape)})]


@converts("slice_scatter", "select_scatter")
def _slice_scatter(c: Call) -> list[Node]:
    """slice_scatter(x, src, dim, start, end, step); select_scatter(x, src, dim, index): src gets
    its dim back (a reshape) and goes into a one-wide slice."""
    x, src = c.arg("self", 0), c.arg("src", 1)
    shape = c.meta(x).shape
    if c.bare == "slice_scatter":
        _, attrs = slice_bounds(c, shape)
        return c.one([c.value(x), c.value(src)], attrs)
    dim = c.dim(c.arg("dim", 2), x)
    index = clamp_index(c.arg("index", 3), shape[dim], 0)
    kept = tuple(1 if d == dim else s for d, s in enumerate(shape))
    wide = c.emit("reshape", [c.value(src)], {"shape": list(kept)}, suffix="0")
    return [wide, c.emit("slice_scatter", [c.value(x), wide.outputs[0].name], slice_attrs(shape, dim, index, index + 1))]


@converts("view_as_real", "view_as_complex", "complex")
def _operands_only(c: Call) -> list[Node]:
    """Ops whose arguments are all operands: their tensors, in order."""
    args, kwargs = c.read_all()
    if kwargs:
        raise Unmapped(f"keyword arguments {sorted(kwargs)}")
    return c.one([operand(c, n, i) for i, n in enumerate(("self", "other")[:len(args)])])


@converts("masked_scatter")
def _masked_scatter(c: Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("mask", 1)), c.value(c.arg("source", 2))])


@converts("nonzero")
def _nonzero(c: Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0))])
