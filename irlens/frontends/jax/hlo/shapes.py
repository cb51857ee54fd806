"""HLO / StableHLO handlers of data movement, casts and creation: broadcast, convert, copy,
reshape, bitcast, transpose, reverse, concatenate, slice, pad, iota, dynamic slices."""
from __future__ import annotations

import re

from irlens.frontends.jax.hlo.text import int_list
from irlens.frontends.jax.xla.op import XlaOp, register
from irlens.frontends.jax.xla.forms import Emitter, Unmapped, dtype_bits, full_attrs


def _literal_or(op: str, attrs):
    """broadcast / convert / copy: of a literal, a `full` (XLA copies a constant into a loop's carry)."""
    def handle(e: Emitter, x: XlaOp) -> None:
        out = x.outs[0]
        if not isinstance(x.inputs[0], str):
            x.one(e, "full", [], **full_attrs(out.shape, x.inputs[0], out.dtype))
        else:
            x.one(e, op, **attrs(x))
    return handle


def _shape_of(e: Emitter, x: XlaOp) -> None:
    out = x.outs[0]
    if not isinstance(x.inputs[0], str):  # a literal, reshaped: a `full`
        x.one(e, "full", [], **full_attrs(out.shape, x.inputs[0], out.dtype))
    else:
        x.one(e, "reshape", shape=list(out.shape))


def _bitcast(e: Emitter, x: XlaOp) -> None:
    """A bitcast reads the operand's buffer in the result's shape, layout and element type: a
    reshape between row-major layouts; else the operand's dims in memory order, reshaped to the
    result's dims in memory order, then put back in the result's logical order. XLA's GPU passes
    fold a bitcast-convert between element types of one width into it (a bf16 top-k packs its
    values and indices into s32 through f32); its bits are read first (`bitcast`)."""
    (src, *_), (dst, *_) = x.layouts or (((),), ((),))
    value, out = x.metas[0], x.outs[0]
    if value.dtype != out.dtype and dtype_bits(value.dtype) != dtype_bits(out.dtype):
        raise Unmapped(f"a bitcast from {value.dtype} to {out.dtype}, element types of different widths")
    if not isinstance(x.inputs[0], str):
        if value.dtype != out.dtype:
            raise Unmapped(f"a bitcast of a literal from {value.dtype} to {out.dtype} (its bits, not its value)")
        x.one(e, "full", [], **full_attrs(out.shape, x.inputs[0], out.dtype))
        return
    bits = x.inputs[0]
    if value.dtype != out.dtype:
        bits = e.emit("bitcast", [bits], dtype=out.dtype, from_dtype=value.dtype)
    major_in = list(reversed(src)) or list(range(len(value.shape)))
    major_out = list(reversed(dst)) or list(range(len(out.shape)))
    if major_in == sorted(major_in) and major_out == sorted(major_out):
        e.reshape(bits, out.shape, out)
        return
    memory = e.permute(bits, major_in)
    flat = e.reshape(memory, [out.shape[d] for d in major_out])
    e.permute(flat, [major_out.index(d) for d in range(len(major_out))], out)


def _slice(e: Emitter, x: XlaOp) -> None:
    ranges = re.search(r"slice=\{([^}]*)\}", x.spec)
    if ranges:
        parts = [int_list(r) for r in re.findall(r"\[([^\]]*)\]", ranges.group(1))]
        start, limit, step = [r[0] for r in parts], [r[1] for r in parts], [r[2] if len(r) > 2 else 1 for r in parts]
    else:
        start, limit = x.ints("start_indices"), x.ints("limit_indices")
        step = x.ints("strides") or [1] * len(start)
    x.one(e, "slice", start=start, limit=limit, step=step)


def _pad(e: Emitter, x: XlaOp) -> None:
    found = re.search(r"padding=([\d_\-x]+)", x.spec)
    if found:  # lo_hi[_interior] per dim, x-separated
        config = [[int(v) for v in dim.split("_")] + [0] * (3 - len(dim.split("_"))) for dim in found.group(1).split("x")]
    else:
        config = [list(c) for c in zip(x.ints("edge_padding_low"), x.ints("edge_padding_high"),
                                       x.ints("interior_padding"))]
    x.one(e, "pad", padding=config)


def _dynamic_slice(e: Emitter, x: XlaOp) -> None:
    x.one(e, "dynamic_slice", sizes=x.ints("dynamic_slice_sizes", "slice_sizes"))


def _iota(e: Emitter, x: XlaOp) -> None:
    out = x.outs[0]
    x.one(e, "iota", [], shape=list(out.shape), dim=x.ints("iota_dimension")[0], dtype=out.dtype)


register("broadcast", _literal_or("broadcast", lambda x: {
    "shape": list(x.outs[0].shape), "broadcast_dims": x.ints("dimensions", "broadcast_dimensions") or []}),
    ("dimensions", "broadcast_dimensions"))
register("convert", _literal_or("convert", lambda x: {"dtype": x.outs[0].dtype}))
register("copy", _literal_or("copy", lambda x: {}))
register("reshape", _shape_of)
register("bitcast", _bitcast)
register("transpose", lambda e, x: x.one(e, "permute", perm=x.ints("dimensions", "permutation")),
          ("dimensions", "permutation"))
register("reverse", lambda e, x: x.one(e, "flip", dims=x.ints("dimensions")), ("dimensions",))
register("concatenate", lambda e, x: x.one(e, "concat", dim=x.ints("dimensions", "dimension")[0]),
          ("dimensions", "dimension"))
register("slice", _slice, ("slice", "start_indices", "limit_indices", "strides"))
register("pad", _pad, ("padding", "edge_padding_low", "edge_padding_high", "interior_padding"))
register("iota", _iota, ("iota_dimension",))


register("dynamic-slice", _dynamic_slice, ("dynamic_slice_sizes", "slice_sizes"))
register("dynamic-update-slice", lambda e, x: x.one(e, "dynamic_update_slice"))
