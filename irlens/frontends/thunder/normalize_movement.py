"""Normalizers of data movement, casts and creation: reshapes, permutes, broadcasts, slices,
concatenation, flips, pads, copies, full/empty/iota, random tensors, take and index_put."""
from __future__ import annotations


from irlens.frontends.thunder.call import (Call, Derived, Spec, Unmapped, arg, dim, dtype_name, flat_ints, is_tensor,
                                           plain)


def same_dtype(c: Call, x) -> None:
    """A reshape or copy keeps the dtype; one that changes it (`view(dtype)`) reinterprets bits."""
    if dtype_name(x.dtype) != c.out_dtype():
        raise Unmapped(f"{dtype_name(x.dtype)} -> {c.out_dtype()}: not the same values")


def reshape(op: str, c: Call) -> list[Spec]:
    """Every reshape-like symbol: the output shape says all its arguments decide."""
    x = c.first()
    c.read_all()
    same_dtype(c, x)
    return c.spec(op, [x.name], shape=c.out_shape)


def permute(op: str, c: Call) -> list[Spec]:
    ndim = c.in_ndim
    if c.has("dim0"):  # torch.transpose(a, dim0, dim1): a swap
        perm = list(range(ndim))
        d0, d1 = dim(c.get("dim0"), ndim), dim(c.get("dim1"), ndim)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    else:
        perm = [dim(d, ndim) for d in flat_ints(c, "dims" if c.has("dims") or c.has("dims[0]") else "permutation")]
    return c.spec(op, [c.first().name], perm=perm)


def broadcast(op: str, c: Call) -> list[Spec]:
    x = c.first()
    bdims = c.get("broadcast_dimensions")
    out_ndim = len(c.out_shape)
    same_dtype(c, x)
    if bdims is None:  # expand: the input's dims align with the trailing output dims
        c.read_all()
        bdims = range(out_ndim - len(x.shape), out_ndim)
    c.get("shape")
    return c.spec(op, [x.name], shape=c.out_shape, broadcast_dims=list(plain(list(bdims))))


def slice_(op: str, c: Call) -> list[Spec]:
    start, limit = plain(list(c.get("start_indices"))), plain(list(c.get("end_indices")))
    step = plain(c.get("strides")) or [1] * len(start)
    return c.spec(op, [c.first().name], start=start, limit=limit, step=list(step))


def concat(op: str, c: Call) -> list[Spec]:
    tensors = c.get("tensors")
    return c.spec(op, [t.name for t in tensors], dim=dim(c.get("dim", default=0), len(c.out_shape)))


def flip(op: str, c: Call) -> list[Spec]:
    ndim = c.in_ndim
    return c.spec(op, [c.first().name], dims=sorted({dim(d, max(ndim, 1)) for d in flat_ints(c, "dims")}))


def convert(op: str, c: Call) -> list[Spec]:
    """A cast to the output's dtype (a `.to()` that keeps the dtype is a copy); the other
    arguments (device, memory format, the dtype as given) decide nothing more."""
    src = c.first()
    c.read_all()
    if not is_tensor(src):
        raise Unmapped("a cast of a number")
    dtype = c.out_dtype()
    if dtype_name(src.dtype) == dtype:
        return c.spec("copy", [src.name])
    return c.spec(op, [src.name], dtype=dtype)


def copy(op: str, c: Call) -> list[Spec]:
    """The same values: the other arguments say where they live (a device, a memory layout)."""
    x = c.first()
    c.read_all()
    same_dtype(c, x)
    return c.spec(op, [x.name])


def copy_into(op: str, c: Call) -> list[Spec]:
    """prims.copy_(copy_from, copy_to): the new value of copy_to is copy_from cast to its dtype
    and broadcast to its shape."""
    src, dst = c.get("copy_from"), c.get("copy_to")
    c.get("grad_enabled")
    out = c.outs[0]
    specs, value = [], src
    if dtype_name(src.dtype) != dtype_name(dst.dtype):
        cast = Derived.like(f"{out.name}_cast", src, dtype=dst.dtype)
        specs.append(Spec("convert", [src.name], {"dtype": dtype_name(dst.dtype)}, [cast]))
        value = cast
    if tuple(src.shape) != tuple(dst.shape):
        specs.append(Spec("broadcast", [value.name], {"shape": list(dst.shape), "broadcast_dims": None}, c.outs))
    elif specs:
        specs[-1].outputs = c.outs
    else:
        specs.append(Spec("copy", [value.name], {}, c.outs))
    return specs


def aliases(op: str, c: Call) -> list[Spec]:
    """prims.update_aliases: the same values under new names, one copy each."""
    ins = [t for t in c.get("aliases") if is_tensor(t)]
    return [Spec("copy", [t.name], {}, [o]) for t, o in zip(ins, c.outs)]


def full(op: str, c: Call) -> list[Spec]:
    c.get("shape", "size")
    c.get("dtype")
    return c.spec(op, [], shape=c.out_shape, value=plain(c.get("fill_value")), dtype=c.out_dtype())


def empty(op: str, c: Call) -> list[Spec]:
    c.read_all()  # shape and dtype: the output's
    return c.spec(op, [], shape=c.out_shape, dtype=c.out_dtype())


def tensor_from_sequence(op: str, c: Call) -> list[Spec]:
    """prims.tensor_from_sequence(seq, dtype, device): a constant of Python numbers (nested
    sequences, row-major), in the output's dtype (dtype None: the one Thunder inferred). A
    number only known at run time (a symbolic proxy) or a complex one has no literal."""
    c.get("dtype")
    flat, items = [], [c.get("seq")]
    while items:
        x = items.pop(0)
        if isinstance(x, (list, tuple)):
            items[:0] = list(x)
            continue
        v = plain(x)
        if isinstance(v, complex) or not isinstance(v, (bool, int, float)):
            raise Unmapped(f"tensor_from_sequence of {type(x).__name__} {x!r}")
        flat.append(v)
    return c.spec(op, [], shape=c.out_shape, dtype=c.out_dtype(), values=flat)


def iota(op: str, c: Call) -> list[Spec]:
    """arange(start, end, step) / prims.iota(length, start, step): iota along dim 0, then * step
    and + start where they are not the defaults (the canonical iota counts from 0 by 1)."""
    out = c.outs[0]
    start, step = plain(c.get("start", default=0)), plain(c.get("step", default=1))
    c.get("end", "length")
    c.get("dtype")
    if c.has("end") and c.args["end"] is None:  # arange(n): the one positional is the end
        start = 0
    steps = ([("mul", step)] if step != 1 else []) + ([("add", start)] if start != 0 else [])
    value = Derived.like(f"{out.name}_iota", out) if steps else out
    specs = [Spec(op, [], {"shape": c.out_shape, "dim": 0, "dtype": c.out_dtype()}, [value])]
    for i, (step_op, operand) in enumerate(steps):
        result = out if i == len(steps) - 1 else Derived.like(f"{out.name}_{step_op}", out)
        specs.append(Spec(step_op, [value.name, operand], {}, [result]))
        value = result
    return specs


def _affine(op: str, c: Call, value, scale, shift) -> list[Spec]:
    """`value` (a spec making the first derived value) * scale + shift into the output."""
    out = c.outs[0]
    specs = [value]
    steps = ([("mul", scale)] if scale != 1 else []) + ([("add", shift)] if shift != 0 else [])
    if not steps:
        value.outputs = c.outs
        return specs
    current = value.outputs[0]
    for i, (step_op, operand) in enumerate(steps):
        result = out if i == len(steps) - 1 else Derived.like(f"{out.name}_{step_op}", out)
        specs.append(Spec(step_op, [current.name, operand], {}, [result]))
        current = result
    return specs


def uniform(op: str, c: Call) -> list[Spec]:
    """prims.uniform / uniform_philox: uniform on [minval, maxval) (the seed and offset pick the
    values, not their distribution)."""
    lo, hi = plain(c.get("minval")), plain(c.get("maxval"))
    c.get("shape")
    c.get("dtype")
    c.get("seed")
    c.get("offset")
    out = c.outs[0]
    first = Spec(op, [], {"shape": c.out_shape, "dtype": c.out_dtype(), "distribution": "uniform"},
                 [Derived.like(f"{out.name}_rand", out)])
    return _affine(op, c, first, hi - lo, lo)


def randn(op: str, c: Call) -> list[Spec]:
    c.read_all()
    return c.spec(op, [], shape=c.out_shape, dtype=c.out_dtype(), distribution="normal")


def randint(op: str, c: Call) -> list[Spec]:
    """prims.randint(low, high): floor(uniform * (high - low)) + low, in the output's dtype."""
    low, high = plain(c.get("low")), plain(c.get("high"))
    c.get("shape")
    c.get("dtype")
    out = c.outs[0]
    u = Derived.like(f"{out.name}_rand", out, dtype="float64")
    scaled = Derived.like(f"{out.name}_scaled", out, dtype="float64")
    floored = Derived.like(f"{out.name}_floor", out, dtype="float64")
    shifted = Derived.like(f"{out.name}_shifted", out, dtype="float64")
    return [Spec(op, [], {"shape": c.out_shape, "dtype": "float64", "distribution": "uniform"}, [u]),
            Spec("mul", [u.name, float(high - low)], {}, [scaled]),
            Spec("floor", [scaled.name], {}, [floored]),
            Spec("add", [floored.name, float(low)], {}, [shifted]),
            Spec("convert", [shifted.name], {"dtype": c.out_dtype()}, c.outs)]


def take(op: str, c: Call) -> list[Spec]:
    """prims.take / index_select: slices at index along dim. prims.take keeps a 0-d index's dim
    (length 1); the canonical take drops it, so that index is made 1-d first."""
    x, index = c.get("a", "input"), c.get("index", "indices")
    d = dim(c.get("dim"), max(len(x.shape), 1))
    if len(index.shape) == 0 and len(c.out_shape) == len(x.shape):
        one = Derived.like(f"{c.outs[0].name}_index", index, shape=(1,))
        return [Spec("reshape", [index.name], {"shape": [1]}, [one]), Spec(op, [x.name, one.name], {"dim": d}, c.outs)]
    return c.spec(op, [x.name, index.name], dim=d)


def pad(op: str, c: Call) -> list[Spec]:
    config = [list(plain(p)) for p in c.get("padding_config")]
    return c.spec(op, [c.first().name, arg(c.get("padding_value"))], padding=config)


def index_put(op: str, c: Call) -> list[Spec]:
    indices = [arg(i) for i in c.get("indices")]
    return c.spec(op, [c.first().name, arg(c.get("values")), *indices],
                  accumulate=bool(plain(c.get("accumulate", default=False))))


def setitem(op: str, c: Call) -> list[Spec]:
    """Thunder's copy_with_setitem, `a[index] = value` as a new tensor: index_put where the index is
    one tensor or a tuple of tensors (advanced indexing); a slice, an int or Ellipsis in it is not
    mapped."""
    index = c.get("index")
    keys = list(index) if isinstance(index, (tuple, list)) else [index]
    if not keys or not all(is_tensor(k) for k in keys):
        raise Unmapped("copy_with_setitem: an index other than tensors (a slice, an int, Ellipsis)")
    return c.spec(op, [c.first().name, arg(c.get("value")), *[arg(k) for k in keys]], accumulate=False)


def unfold(op: str, c: Call) -> list[Spec]:
    x = c.first()
    return c.spec(op, [x.name], dim=dim(c.get("dim"), max(len(x.shape), 1)), size=plain(c.get("size")),
                  step=plain(c.get("step")))
