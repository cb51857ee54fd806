"""jaxpr handlers of elementwise primitives: renames, dtype-dependent ops, division and rounding,
shifts, powers, casts and bitcasts, select_n, clamp, polygamma, device_put, zeros_like."""
from __future__ import annotations

from typing import Callable

from irlens.core.ir import Arg, TensorMeta, canonical_dtype
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.jaxpr.eqn import Eqn, dtype_kind, register
from irlens.frontends.jax.jaxpr.names import BY_DTYPE, PRIMITIVES
from irlens.frontends.jax.xla.forms import Emitter, Unmapped, full_attrs


def _rename(op: str):
    def handle(e: Emitter, q: Eqn) -> None:
        if q.params.get("out_dtype") is None:
            q.one(e, op)
            return
        out = q.outs[0]  # lax.mul(x, y, out_dtype=...): the operands converted first
        inputs = [as_dtype(e, v, m, out.dtype) for v, m in zip(q.inputs, q.metas)]
        e.emit(op, inputs, out)
    return handle


def _by_dtype(e: Emitter, q: Eqn) -> None:
    op = BY_DTYPE[q.prim][dtype_kind(q.metas[0].dtype)]
    if not op:
        raise Unmapped(f"{q.prim} of {q.metas[0].dtype}")
    q.one(e, op)


def _div(e: Emitter, q: Eqn) -> None:
    # lax.div rounds an integer quotient toward zero (C's /)
    q.one(e, "div", rounding_mode="trunc" if dtype_kind(q.outs[0].dtype) == 1 else None)


def _round(e: Emitter, q: Eqn) -> None:
    method = int(q.params["rounding_method"])  # lax.RoundingMethod: 0 away from zero, 1 to nearest even
    q.one(e, "round" if method == 1 else "round_half_away")


def _shift(kind: str):
    def handle(e: Emitter, q: Eqn) -> None:
        forms.expand_shift(e, kind, q.inputs, q.outs[0])
    return handle


def _pow_of(exponent: Callable[[dict], int]):
    def handle(e: Emitter, q: Eqn) -> None:
        q.one(e, "pow", [q.inputs[0], exponent(q.params)])
    return handle


def _convert(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    if not isinstance(q.inputs[0], str):
        q.one(e, "full", [], **full_attrs(out.shape, q.inputs[0], out.dtype))
    else:
        q.one(e, "convert", dtype=canonical_dtype(q.params["new_dtype"]))


def _bitcast(e: Emitter, q: Eqn) -> None:
    forms.emit_bitcast(e, q.inputs[0], q.metas[0], q.outs[0])


def _polygamma(e: Emitter, q: Eqn) -> None:
    polygamma_of(e, q.inputs, q.outs)


def polygamma_of(e: Emitter, inputs: list[Arg], outs: list[TensorMeta]) -> None:
    """lax.polygamma(m, x) with a literal integer order m: polygamma(x){n: m}."""
    m, x = inputs
    if isinstance(m, str) or not float(m).is_integer() or m < 0:
        raise Unmapped("polygamma of an order that is not a literal non-negative integer")
    e.node("polygamma", [x], outs, final=True, n=int(m))


def _select_n(e: Emitter, q: Eqn) -> None:
    """select_n(which, *cases) picks cases[which]: a bool `which` picks between two cases (a
    `where`), an integer one among several (a chain of `where`s on which == k)."""
    which, cases = q.inputs[0], q.inputs[1:]
    out = q.outs[0]
    if q.metas[0].dtype == "bool":
        q.one(e, "where", [which, cases[1], cases[0]] if len(cases) == 2 else None)
        if len(cases) != 2:
            raise Unmapped(f"a bool select among {len(cases)} cases")
        return
    value = cases[-1]
    for k in range(len(cases) - 2, -1, -1):
        pick = e.emit("eq", [which, k])
        value = e.emit("where", [pick, cases[k], value], out if k == 0 else None)


def _clamp(e: Emitter, q: Eqn) -> None:
    lo, x, hi = q.inputs
    q.one(e, "clamp", [x, lo, hi])


def as_dtype(e: Emitter, value: Arg, meta: TensorMeta, dtype: str) -> Arg:
    """preferred_element_type: the operands converted to the dtype the op accumulates in."""
    if meta.dtype == dtype or not isinstance(value, str):
        return value
    return e.emit("convert", [value], dtype=dtype)


def _device_put(e: Emitter, q: Eqn) -> None:
    for value, out in zip(q.inputs, q.outs):
        e.emit("copy", [value], out)


def _zeros_like(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    q.one(e, "full", [], **full_attrs(out.shape, 0, out.dtype))


def _one_minus_square(e: Emitter, q: Eqn) -> None:  # jax >= 0.11, in tanh's derivative: 1 - x*x
    square = e.emit("mul", [q.inputs[0], q.inputs[0]])
    e.emit("sub", [1.0, square], q.outs[0])


def _reduce_precision(e: Emitter, q: Eqn) -> None:
    q.one(e, "reduce_precision", exponent_bits=int(q.params["exponent_bits"]),
          mantissa_bits=int(q.params["mantissa_bits"]))


for _prim, _op in PRIMITIVES.items():
    register(_prim, _rename(_op), ("out_dtype",))


register(list(BY_DTYPE), _by_dtype)
register("div", _div)
register("polygamma", _polygamma)
register("round", _round, ("rounding_method",))
register("shift_left", _shift("left"))
register("shift_right_arithmetic", _shift("right_arithmetic"))
register("shift_right_logical", _shift("right_logical"))
register("integer_pow", _pow_of(lambda p: int(p["y"])), ("y",))
register("square", _pow_of(lambda p: 2))
register("convert_element_type", _convert, ("new_dtype",))
register("bitcast_convert_type", _bitcast, ("new_dtype",))
register("reduce_precision", _reduce_precision, ("exponent_bits", "mantissa_bits"))


register("select_n", _select_n)


register("clamp", _clamp)


register("zeros_like", _zeros_like)


register("device_put", _device_put, ("devices", "srcs", "copy_semantics"))
register("one_minus_square", _one_minus_square)
