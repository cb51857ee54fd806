"""Converters of casts, copies (into another tensor too) and creation: full/empty, arange, random."""
from __future__ import annotations

from typing import Any

import torch.fx as fx

from irlens.frontends.dynamo.call import Call, Unmapped, attr_value, converts, short
from irlens.core.ir import Node


@converts(ops_=("convert",))
def _convert(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.schema is not None:
        c.arg("dtype")
    else:
        c.read_all()  # .to(dtype / device / other), .float(), .type(dtype): the output says which dtype
        if c.bare == "type" and len(c.args) < 2 and not c.kwargs:
            raise Unmapped("x.type() names the type")
    out = c.outputs[0]
    if c.meta(x).dtype == out.dtype:  # .to(device), .contiguous() under another name
        return c.one([c.value(x)], op="copy")
    return c.one([c.value(x)], {"dtype": out.dtype})


@converts(ops_=("copy",))
def _copy(c: Call) -> list[Node]:
    """clone / contiguous: a copy; x.copy_(src): src in x's dtype and shape."""
    if c.bare in ("copy", "copy_"):
        c.arg("self", 0)
        return _copy_into(c, c.arg("src", 1))
    return _copy_into(c, c.arg("self", 0))


def _copy_into(c: Call, src: Any) -> list[Node]:
    """src's values (a tensor or a number) converted to the output's dtype and broadcast to its shape."""
    out = c.outputs[0]
    if not isinstance(src, fx.Node):
        return c.one([], {"shape": list(out.shape), "value": attr_value(c.value(src)), "dtype": out.dtype}, op="full")
    meta = c.meta(src)
    if (meta.shape, meta.dtype) == (out.shape, out.dtype):
        return c.one([c.value(src)], op="copy")
    if meta.shape == out.shape:
        return c.one([c.value(src)], {"dtype": out.dtype}, op="convert")
    value, nodes = c.value(src), []
    if meta.dtype != out.dtype:
        nodes.append(c.emit("convert", [value], {"dtype": out.dtype}, suffix="0"))
        value = nodes[-1].outputs[0].name
    rank = len(out.shape)
    dims = list(range(rank - len(meta.shape), rank))
    return nodes + [c.emit("broadcast", [value], {"shape": list(out.shape), "broadcast_dims": dims})]


_FILL_VALUES = {"ones": 1, "ones_like": 1, "new_ones": 1, "zeros": 0, "zeros_like": 0, "new_zeros": 0, "zero": 0,
                "zero_": 0, "_efficientzerotensor": 0}


@converts(ops_=("full", "empty"))
def _full(c: Call) -> list[Node]:
    """Creation ops: the output's shape and dtype, a fill value from the call."""
    bare, out = c.bare, c.outputs[0]
    c.arg("dtype"), c.arg("size", 0), c.arg("stride", 1), c.arg("shape"), c.arg("strides"), c.arg("physical_layout")
    if bare.endswith("_like") or bare.startswith("new_") or bare in ("fill", "fill_", "zero", "zero_"):
        c.arg("self", 0)  # a tensor giving the shape (and default dtype); its values unused
    if c.schema is None:
        c.read_all()  # sizes given as positional ints; the output's shape is the result
    if c.op == "empty":
        return c.one([], {"shape": list(out.shape), "dtype": out.dtype})
    if bare in _FILL_VALUES:
        value = _FILL_VALUES[bare]
    elif bare == "scalar_tensor":
        value = c.arg("s", 0)
    elif bare in ("fill", "fill_"):
        value = c.arg("value", 1)
        if isinstance(value, fx.Node):  # a 0-d tensor's value, in x's dtype, everywhere
            return _copy_into(c, value)
    else:
        value = c.arg("fill_value", 2 if bare == "new_full" else 1)
    value = c.value(value)
    if not isinstance(value, (int, float, bool)):
        raise Unmapped(f"fill value {short(value)}")
    return c.one([], {"shape": list(out.shape), "value": value, "dtype": out.dtype})


@converts("arange", "prims.iota")
def _arange(c: Call) -> list[Node]:
    """iota, then `* step` and `+ start` where they are not 1 and 0 (arange's values are
    start + i * step, computed in the output dtype)."""
    out = c.outputs[0]
    c.arg("dtype")
    if c.schema is not None and c.bare == "arange":
        start = c.arg("start", default=0) if c.overload != "default" else 0
        step = c.arg("step", default=1)
        c.arg("end")
    elif c.schema is not None:  # prims.iota(length, start, step)
        start, step = c.arg("start"), c.arg("step")
        c.arg("length")
    else:
        args, kwargs = c.read_all()
        start = kwargs.get("start", args[0] if len(args) >= 2 else 0)
        step = kwargs.get("step", args[2] if len(args) >= 3 else 1)
    start, step = c.value(start), c.value(step)
    if isinstance(start, float) or isinstance(step, float):
        if out.dtype.startswith(("int", "uint")):
            raise Unmapped("an integer arange of float bounds")
    iota = {"shape": list(out.shape), "dim": 0, "dtype": out.dtype}
    if start == 0 and step == 1:
        return c.one([], iota, op="iota")
    nodes = [c.emit("iota", [], iota, suffix="0")]
    if step != 1:
        nodes.append(c.emit("mul", [nodes[-1].outputs[0].name, step], suffix="1"))
    nodes.append(c.emit("add", [nodes[-1].outputs[0].name, start]))
    return nodes


@converts(ops_=("rand", "randperm"))
def _rand(c: Call) -> list[Node]:
    out = c.outputs[0]
    c.read_all()
    if c.op == "randperm":
        return c.one([], {"n": out.shape[0], "dtype": out.dtype})
    distribution = "normal" if "randn" in c.key else "uniform"
    return c.one([], {"shape": list(out.shape), "dtype": out.dtype, "distribution": distribution})
