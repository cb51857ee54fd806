"""Normalizers of data movement, casts and creation: reshapes, permutes, broadcasts, slices,
concatenation, flips, pads, copies, full/empty/iota, random tensors, take and index_put."""
from __future__ import annotations


from irlens.frontends.thunder.call import (Call, Derived, Spec, Unmapped, arg, dim, dtype_name, flat_ints, is_number,
                                           is_symbolic, is_tensor, plain)


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


def item(op: str, c: Call) -> list[Spec]:
    """prims.item(a): the one element of `a`, a number. Known only when the program runs, it is a
    0-d value in `a`'s dtype, named as Thunder's number, which later symbols take as an input (torch
    promotes a 0-d tensor as it does a Python number when it meets a tensor of dims); a number
    Thunder knows (a constant) is a literal wherever it is used: no node."""
    a = c.get("a")
    if not is_symbolic(c.outs[0]):
        return []
    return c.spec(op, [a.name], shape=[])


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
        cast = Derived(f"{out.name}_cast")
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
    value = Derived(f"{out.name}_iota") if steps else out
    specs = [Spec(op, [], {"shape": c.out_shape, "dim": 0, "dtype": c.out_dtype()}, [value])]
    for i, (step_op, operand) in enumerate(steps):
        result = out if i == len(steps) - 1 else Derived(f"{out.name}_{step_op}")
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
        result = out if i == len(steps) - 1 else Derived(f"{out.name}_{step_op}")
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
                 [Derived(f"{out.name}_rand")])
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
    u = Derived(f"{out.name}_rand")
    scaled = Derived(f"{out.name}_scaled")
    floored = Derived(f"{out.name}_floor")
    shifted = Derived(f"{out.name}_shifted")
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
        one = Derived(f"{c.outs[0].name}_index")
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
    one tensor or a tuple of tensors (advanced indexing), slice_scatter where it is basic (ints,
    slices, one Ellipsis); a mix of the two, None or a bool in it is not mapped."""
    index, a, value = c.get("index"), c.first(), c.get("value")
    keys = list(index) if isinstance(index, (tuple, list)) else [index]
    if keys and all(is_tensor(k) for k in keys):
        return c.spec(op, [a.name, arg(value), *[arg(k) for k in keys]], accumulate=False)
    return _basic_setitem(c, a, keys, value)


def _basic_setitem(c: Call, a, keys: list, value) -> list[Spec]:
    """a[keys] = value for ints, slices and one Ellipsis: value (a number, or a tensor that broadcasts
    to the block the keys select) in a's dtype, given back the dims the ints drop, into that block."""
    start, limit, step, block, kept = _basic_block(tuple(int(d) for d in a.shape), keys)
    out, dtype = c.outs[0], dtype_name(a.dtype)
    src = Derived(f"{out.name}_src")
    if is_number(value):
        if isinstance(plain(value), complex) and not dtype.startswith("complex"):  # a symbolic one: plain raises
            raise Unmapped(f"copy_with_setitem: a complex value {value!r} into a real tensor")
        specs = [Spec("full", [], {"shape": kept, "value": plain(value), "dtype": dtype}, [src])]
    elif is_tensor(value):
        specs, v = [], value
        shape = [int(d) for d in v.shape]
        while len(shape) > len(block) and shape[0] == 1:  # torch drops a value's leading ones
            shape = shape[1:]
        if len(shape) > len(block) or any(s not in (1, b) for s, b in zip(shape[::-1], block[::-1])):
            raise Unmapped(f"copy_with_setitem: a value of shape {list(v.shape)} into a block of {block}")
        if dtype_name(v.dtype) != dtype:
            cast = Derived(f"{out.name}_cast")
            specs.append(Spec("convert", [v.name], {"dtype": dtype}, [cast]))
            v = cast
        if shape != [int(d) for d in value.shape]:
            squeezed = Derived(f"{out.name}_squeezed")
            specs.append(Spec("reshape", [v.name], {"shape": shape}, [squeezed]))
            v = squeezed
        if shape != block:
            wide = Derived(f"{out.name}_block")
            specs.append(Spec("broadcast", [v.name], {"shape": block, "broadcast_dims": None}, [wide]))
            v = wide
        specs.append(Spec("reshape", [v.name], {"shape": kept}, [src]))
    else:
        raise Unmapped(f"copy_with_setitem: a value of type {type(value).__name__}")
    return [*specs, Spec("slice_scatter", [a.name, src.name], {"start": start, "limit": limit, "step": step}, c.outs)]


def _basic_block(shape: tuple[int, ...], keys: list) -> tuple[list, list, list, list, list]:
    """(start, limit, step) per dim of a basic index, the shape of the block it selects (the ints'
    dims dropped) and that block with those dims kept as ones."""
    keys = [k if k is Ellipsis else slice(plain(k.start), plain(k.stop), plain(k.step)) if isinstance(k, slice)
            else plain(k) for k in keys]
    if sum(k is Ellipsis for k in keys) > 1:
        raise Unmapped("copy_with_setitem: two Ellipses")
    named = len([k for k in keys if k is not Ellipsis])
    if named > len(shape):
        raise Unmapped(f"copy_with_setitem: {named} indices into {len(shape)} dims")
    full = []
    for k in keys:
        full += [slice(None)] * (len(shape) - named) if k is Ellipsis else [k]
    full += [slice(None)] * (len(shape) - len(full))
    start, limit, step, block, kept = [], [], [], [], []
    for k, n in zip(full, shape):
        if isinstance(k, bool) or not isinstance(k, (int, slice)):
            raise Unmapped(f"copy_with_setitem: an index {k!r} (not an int, a slice or Ellipsis)")
        if isinstance(k, slice):
            if not all(b is None or isinstance(b, int) for b in (k.start, k.stop, k.step)) or (k.step or 1) <= 0:
                raise Unmapped(f"copy_with_setitem: a slice {k!r}")
            lo, hi, st = k.indices(n)
            count = len(range(lo, hi, st))
            start.append(lo), limit.append(max(hi, lo)), step.append(st), block.append(count), kept.append(count)
            continue
        i = k + n if k < 0 else k
        if not 0 <= i < n:
            raise Unmapped(f"copy_with_setitem: index {k} out of a dim of {n}")
        start.append(i), limit.append(i + 1), step.append(1), kept.append(1)
    return start, limit, step, block, kept


def unfold(op: str, c: Call) -> list[Spec]:
    x = c.first()
    return c.spec(op, [x.name], dim=dim(c.get("dim"), max(len(x.shape), 1)), size=plain(c.get("size")),
                  step=plain(c.get("step")))
