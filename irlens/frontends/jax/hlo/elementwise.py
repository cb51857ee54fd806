"""HLO / StableHLO handlers of elementwise opcodes: renames, dtype-dependent ops, compare, clamp,
shifts, reduce-precision, bitcast-convert, chlo's polygamma and square."""
from __future__ import annotations


from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.hlo.names import BY_DTYPE, COMPARE, OPCODES
from irlens.frontends.jax.jaxpr.elementwise import polygamma_of
from irlens.frontends.jax.jaxpr.eqn import dtype_kind
from irlens.frontends.jax.xla.op import XlaOp, register
from irlens.frontends.jax.xla.forms import Emitter, Unmapped


def _rename(op: str):
    def handle(e: Emitter, x: XlaOp) -> None:
        x.one(e, op)
    return handle


def _by_dtype(e: Emitter, x: XlaOp) -> None:
    op = BY_DTYPE[x.opcode][dtype_kind(x.metas[0].dtype)]
    if not op:
        raise Unmapped(f"{x.opcode} of {x.metas[0].dtype}")
    x.one(e, op, **({"rounding_mode": "trunc"} if x.opcode == "divide" and dtype_kind(x.metas[0].dtype) == 1 else {}))


def _compare(e: Emitter, x: XlaOp) -> None:
    direction = x.word("direction", "comparison_direction")
    kind = x.word("type", "compare_type") or ""
    if kind == "TOTALORDER" and dtype_kind(x.metas[0].dtype) == 2:
        raise Unmapped("a total-order compare of floats (-0 < +0, NaNs ordered)")
    if direction not in COMPARE:
        raise Unmapped(f"compare direction {direction}")
    x.one(e, COMPARE[direction])


def _clamp(e: Emitter, x: XlaOp) -> None:
    lo, value, hi = x.inputs
    x.one(e, "clamp", [value, lo, hi])


def _shift(kind: str):
    def handle(e: Emitter, x: XlaOp) -> None:
        forms.expand_shift(e, kind, x.inputs, x.outs[0])
    return handle


def _reduce_precision(e: Emitter, x: XlaOp) -> None:
    x.one(e, "reduce_precision", exponent_bits=x.ints("exponent_bits")[0], mantissa_bits=x.ints("mantissa_bits")[0])


def _bitcast_convert(e: Emitter, x: XlaOp) -> None:
    forms.emit_bitcast(e, x.inputs[0], x.metas[0], x.outs[0])


for _opcode, _op in OPCODES.items():
    register(_opcode, _rename(_op))
register(list(BY_DTYPE), _by_dtype)
register("compare", _compare, ("direction", "type", "comparison_direction", "compare_type"))
register("clamp", _clamp)


register("shift-right-arithmetic", _shift("right_arithmetic"))
register("shift-right-logical", _shift("right_logical"))
register("shift-left", _shift("left"))
register("reduce-precision", _reduce_precision, ("exponent_bits", "mantissa_bits"))
register("bitcast-convert", _bitcast_convert)
register("polygamma", lambda e, x: polygamma_of(e, x.inputs, x.outs))  # chlo.polygamma
register("square", lambda e, x: x.one(e, "pow", [x.inputs[0], 2]))  # chlo.square
