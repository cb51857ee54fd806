"""jaxpr -> common view: one node per equation (a few for the structured ones), sub-jaxprs of
call-like primitives inlined.

A jaxpr is already close to the primitive level (jax.nn.gelu traces to mul/tanh/...), so the
adapter renames primitives and turns their params into the attrs conventions of `irlens.ops`.
Every lax primitive is accounted for: renamed (`PRIMITIVES`, `BY_DTYPE`), converted by a
handler (`HANDLERS`, the structured ones through `irlens.frontends.jax.xla_forms`), inlined
(`CALLS`), passed through (`IDENTITIES`), or kept `unknown:` with the reason (`CLASSIFIED`:
random bits, control flow other than while loops and conditionals, complex numbers,
linear-algebra decompositions). A `while` becomes the canonical `while` with its cond and body
read as closed graphs (`Node.subgraphs`) by the same walk, a `cond` the canonical `cond` with
its branches. A param that
changes the meaning and is not read (`PARAMS` lists those each primitive reads, `HINTS` those
that only guide the compiler) keeps the node unknown: a node never carries a meaning it does
not have. Value names come from jaxpr's own pretty-printer names (`a`, `b`, ...), except the
graph inputs, which take the names the caller gives (parameter names, `input<i>`).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype
from irlens.frontends.jax import linalg
from irlens.frontends.jax import xla_forms as forms
from irlens.frontends.jax import xla_gather
from irlens.frontends.jax.xla_forms import Emitter, Unmapped, full_attrs
from irlens.ops import check_vocabulary

# primitive -> canonical op, for primitives whose params (if any) are only hints
PRIMITIVES: dict[str, str] = {
    "add": "add", "add_any": "add", "sub": "sub", "mul": "mul", "neg": "neg", "max": "maximum", "min": "minimum",
    "pow": "pow", "atan2": "atan2", "nextafter": "nextafter", "rem": "fmod",  # lax.rem truncates, like C's fmod
    "exp": "exp", "exp2": "exp2", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh",
    "logistic": "sigmoid", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "sin": "sin", "cos": "cos",
    "tan": "tan", "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "asinh": "asinh",
    "acosh": "acosh", "atanh": "atanh", "erf": "erf", "erfc": "erfc", "erf_inv": "erfinv", "lgamma": "lgamma",
    "digamma": "digamma", "igamma": "igamma", "igammac": "igammac", "bessel_i0e": "bessel_i0e",
    "bessel_i1e": "bessel_i1e", "regularized_incomplete_beta": "betainc", "zeta": "zeta",
    "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil", "is_finite": "isfinite",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "eq_to": "eq", "le_to": "le", "lt_to": "lt",
    "population_count": "population_count", "clz": "clz", "mulhi": "mulhi",
    "copy": "copy", "copy_p": "copy", "stop_gradient": "copy", "stage": "copy",
}
SCANS = {"cumsum": "cumsum", "cumprod": "cumprod", "cummax": "cummax", "cummin": "cummin",
         "cumlogsumexp": "logcumsumexp"}
# primitives whose canonical op depends on the operand's dtype: (bool, integer, floating)
BY_DTYPE: dict[str, tuple[str, str, str]] = {
    "and": ("logical_and", "bitwise_and", ""), "or": ("logical_or", "bitwise_or", ""),
    "xor": ("logical_xor", "bitwise_xor", ""), "not": ("logical_not", "bitwise_not", ""),
}
check_vocabulary({**PRIMITIVES, **SCANS, **{op: op for ops in BY_DTYPE.values() for op in ops if op}})

# Params that only guide the compiler (precision, layout, sharding, promises about indices):
# the value computed is the same without them.
HINTS = frozenset({"accuracy", "out_sharding", "sharding", "precision", "indices_are_sorted", "unique_indices",
                   "weak_type"})

# A lax.scan of at most this many steps is unrolled (a longer one stays unknown: control flow).
MAX_SCAN_STEPS = 64

# Call-like primitives whose body is inlined; value: the param holding the (closed) jaxpr.
CALLS: dict[str, tuple[str, ...]] = {
    "jit": ("jaxpr",), "pjit": ("jaxpr",), "closed_call": ("call_jaxpr",), "core_call": ("call_jaxpr",),
    "custom_jvp_call": ("call_jaxpr",), "custom_vjp_call": ("call_jaxpr", "fun_jaxpr"),
    "custom_vjp_call_jaxpr": ("fun_jaxpr",), "remat2": ("jaxpr",), "checkpoint": ("jaxpr",),
    "composite": ("jaxpr",),  # lax.composite: its decomposition
    "custom_jvp_call_jaxpr": ("fun_jaxpr",), "eval_jaxpr": ("jaxpr",), "linear_call": ("callee",),
    "remat_opt": ("fwd_jaxpr",),  # its outputs: the residuals, then the outputs, as fwd_jaxpr's
}
# Primitives whose value is one of their bodies run on part of their operands: custom_linear_solve's
# `solve` jaxpr (its other bodies define only derivatives), see `_Builder.linear_solve`.
SOLVES = frozenset({"custom_linear_solve"})
# The identity on their operands (names, barriers, sharding and layout annotations): outputs
# are bound to the inputs, no node. `tie(x, y)` is y.
IDENTITIES: dict[str, Callable[[list], list]] = {
    **{p: (lambda ins: ins) for p in ("optimization_barrier", "name", "sharding_constraint", "layout_constraint",
                                       "reshard", "mesh_cast", "pvary", "pcast", "vary_unreduced_cast")},
    "tie": lambda ins: ins[1:],
    # effects with no value: ordering tokens, a sink keeping values alive, a sharding printout
    **{p: (lambda ins: []) for p in ("dce_sink", "inspect_sharding")},
}
_RANDOM = "random bits from a key: a counter-based generator, no canonical op"
_CONTROL = "control flow: no canonical op (while loops and conditionals have one)"
_COMPLEX = "complex numbers: the common view's dtypes are real"
_LINALG = "a linear-algebra decomposition: no canonical op"
_COLLECTIVE = "a named-axis collective (shard_map / pmap)"
# primitive -> why it stays unknown
CLASSIFIED: dict[str, str] = {
    **{p: _RANDOM for p in ("random_bits", "random_seed", "random_wrap", "random_unwrap", "random_split",
                            "random_fold_in", "random_clone", "threefry2x32", "rng_bit_generator", "rng_uniform",
                            "random_gamma", "threefry4x32", "philox2x32", "philox4x32")},
    **{p: _CONTROL for p in ("platform_index",)},
    "scan": f"control flow: a scan of more than {MAX_SCAN_STEPS} steps (shorter ones are unrolled)",
    **{p: _COMPLEX for p in ("complex", "real", "imag", "conj", "fft")},
    **{p: _LINALG for p in ("cholesky_update", "lu_pivots_to_permutation", "geqp3", "ormqr", "eig", "schur", "hessenberg",
                            "tridiagonal", "symmetric_product")},
    **{p: _COLLECTIVE for p in (
        "psum", "pmax", "pmin", "ppermute", "all_gather", "all_to_all", "reduce_scatter", "axis_index",
        "psum_invariant", "pbroadcast", "ragged_all_to_all", "all_gather_done", "all_gather_invariant",
        "all_gather_reduced", "all_gather_reduced_start", "all_gather_start", "all_to_all_done", "all_to_all_start",
        "pbroadcast_done", "pbroadcast_start", "ppermute_done", "ppermute_start", "precv", "preduced", "psend",
        "psum_done", "psum_invariant_start", "psum_start", "reduce_scatter_done", "reduce_scatter_start",
        "unreduced_psum", "unreduced_psum_start", "unreduced_reduce_scatter", "unreduced_reduce_scatter_start",
        "vary_unreduced_cast_p")},
    **{p: "an effect token: no value" for p in ("after_all", "create_token")},
    "select_and_scatter": "a windowed selection by its own computations (jax differentiates with "
                          "select_and_scatter_add)",
    "unreachable": "an error branch: it has no value",
    "call_hi_primitive": "a user-defined higher-order primitive",
    "igamma_grad_a": "no float64 implementation to check it against (torch has none)",
    "random_gamma_grad": "no float64 implementation to check it against (torch has none)",
    "approx_top_k": "approximate top-k: its result is not one function of its input",
    "ragged_dot_general": "ragged (grouped) matmul: no canonical op",
    "scaled_dot": "block-scaled matmul: no canonical op",
    **{p: "a host callback: runs Python outside the graph" for p in ("pure_callback", "io_callback", "debug_callback",
                                                                    "debug_print")},
    **{p: "extended dtypes (PRNG keys)" for p in ("to_edtype", "from_edtype")},
}


def matmul_attrs(lhs_rank: int, rhs_rank: int, lhs_contract, rhs_contract, lhs_batch, rhs_batch) -> dict:
    """`contract`/`batch` attrs of a dot_general, empty when it is a plain a[..,m,k] @ b[..,k,n]."""
    lc, rc, lb, rb = (tuple(int(d) for d in dims) for dims in (lhs_contract, rhs_contract, lhs_batch, rhs_batch))
    plain = (
        lhs_rank >= 2 and rhs_rank == lhs_rank
        and lc == (lhs_rank - 1,) and rc == (rhs_rank - 2,)
        and lb == rb == tuple(range(lhs_rank - 2))
    )
    return {} if plain else {"contract": [list(lc), list(rc)], "batch": [list(lb), list(rb)]}


def _ints(v) -> list[int]:
    return [int(d) for d in v]


def _dims(v) -> tuple[int, ...]:
    return tuple(int(d) for d in v)


# closed-over arrays up to this size become `constant` nodes (their values in the node's attrs)
MAX_CONSTANT_ELEMENTS = 4096


def _meta(name: str, aval) -> TensorMeta:
    return TensorMeta(name, tuple(int(d) for d in aval.shape), canonical_dtype(aval.dtype))


def _scalar(val) -> Arg:
    """A literal or scalar constant as a plain Python bool/int/float (jax has typed wrappers)."""
    import numpy as np

    return np.asarray(val).item()


def _kind(dtype: str) -> int:
    """0 bool, 1 integer, 2 floating (BY_DTYPE's columns)."""
    return 0 if dtype == "bool" else 1 if dtype.startswith(("int", "uint")) else 2


# --- handlers: (emitter, equation, inputs, input metas, output metas) -> nodes on the emitter ----------

@dataclass
class Eqn:
    """What a handler reads of one equation."""

    prim: str
    params: dict
    inputs: list[Arg]  # value names or literals
    metas: list[TensorMeta]  # per input: its shape and dtype (literals too)
    outs: list[TensorMeta]
    iotas: dict[str, int]  # value name -> the dim an iota counts along (argsort's second operand)
    # (role, closed jaxpr, graph inputs, the inputs its invars take, output metas) -> a closed graph
    subgraph: Callable | None = None
    dropped: frozenset = frozenset()  # the outputs nothing in the jaxpr reads (`_`, or a var no equation reads)

    def one(self, e: Emitter, op: str, inputs: list[Arg] | None = None, **attrs) -> None:
        e.node(op, self.inputs if inputs is None else inputs, self.outs, final=True, **attrs)


def _rename(op: str):
    def handle(e: Emitter, q: Eqn) -> None:
        if q.params.get("out_dtype") is None:
            q.one(e, op)
            return
        out = q.outs[0]  # lax.mul(x, y, out_dtype=...): the operands converted first
        inputs = [_as_dtype(e, v, m, out.dtype) for v, m in zip(q.inputs, q.metas)]
        e.emit(op, inputs, out.shape, out.dtype, out)
    return handle


def _by_dtype(e: Emitter, q: Eqn) -> None:
    op = BY_DTYPE[q.prim][_kind(q.metas[0].dtype)]
    if not op:
        raise Unmapped(f"{q.prim} of {q.metas[0].dtype}")
    q.one(e, op)


def _while(e: Emitter, q: Eqn) -> None:
    """lax.while_loop: operands [cond consts, body consts, carry]. Canonically the consts are
    carried too (the body returns them unchanged), so cond and body take every operand."""
    nc, nb = int(q.params["cond_nconsts"]), int(q.params["body_nconsts"])
    n, carry = len(q.inputs), list(range(nc + nb, len(q.inputs)))
    ins = [TensorMeta(f"in{i}", m.shape, m.dtype) for i, m in enumerate(q.metas)]
    cond = q.subgraph("cond", q.params["cond_jaxpr"], ins, [*range(nc), *carry], [TensorMeta("", (), "bool")])
    consts = [TensorMeta(f"{e.base}.const{i}", m.shape, m.dtype) for i, m in enumerate(q.metas[:nc + nb])]
    body = q.subgraph("body", q.params["body_jaxpr"], ins, [*range(nc, n)], ins[nc + nb:])
    body.outputs = [t.name for t in ins[:nc + nb]] + body.outputs
    forms.emit_while(e, q.inputs, [*consts, *q.outs], cond, body)


def _cond(e: Emitter, q: Eqn) -> None:
    """lax.cond / lax.switch: branch k of `branches` on the operands, k the integer index."""
    ins = [TensorMeta(f"in{i}", m.shape, m.dtype) for i, m in enumerate(q.metas[1:])]
    branches = [q.subgraph(f"branch{k}", b, ins, list(range(len(ins))), q.outs)
                for k, b in enumerate(q.params["branches"])]
    forms.emit_cond(e, q.inputs[0], q.metas[0], q.inputs[1:], q.outs, branches)


def _div(e: Emitter, q: Eqn) -> None:
    # lax.div rounds an integer quotient toward zero (C's /)
    q.one(e, "div", rounding_mode="trunc" if _kind(q.outs[0].dtype) == 1 else None)


def _round(e: Emitter, q: Eqn) -> None:
    method = int(q.params["rounding_method"])  # lax.RoundingMethod: 0 away from zero, 1 to nearest even
    q.one(e, "round" if method == 1 else "round_half_away")


def _shift(kind: str):
    def handle(e: Emitter, q: Eqn) -> None:
        forms.expand_shift(e, kind, q.inputs, q.metas, q.outs[0])
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


def _broadcast_in_dim(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    if not isinstance(q.inputs[0], str):
        q.one(e, "full", [], **full_attrs(out.shape, q.inputs[0], out.dtype))
    else:
        q.one(e, "broadcast", shape=_ints(q.params["shape"]), broadcast_dims=_ints(q.params["broadcast_dimensions"]))


def _reshape(e: Emitter, q: Eqn) -> None:
    """lax.reshape(x, sizes, dimensions): x transposed by `dimensions`, then reshaped."""
    x, perm, out = q.inputs[0], q.params.get("dimensions"), q.outs[0]
    if not isinstance(x, str):  # a literal, reshaped: a `full`
        q.one(e, "full", [], **full_attrs(out.shape, x, out.dtype))
        return
    if perm is not None:
        x = e.permute(x, q.metas[0].shape, q.metas[0].dtype, _ints(perm))
    e.reshape(x, out.shape, out.dtype, out)


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
        pick = e.emit("eq", [which, k], q.metas[0].shape, "bool")
        value = e.emit("where", [pick, cases[k], value], out.shape, out.dtype, out if k == 0 else None)


def _clamp(e: Emitter, q: Eqn) -> None:
    lo, x, hi = q.inputs
    q.one(e, "clamp", [x, lo, hi])


def _iota(e: Emitter, q: Eqn) -> None:
    q.one(e, "iota", [], shape=_ints(q.params["shape"]), dim=int(q.params["dimension"]),
          dtype=canonical_dtype(q.params["dtype"]))


def _iota_2x32_shape(e: Emitter, q: Eqn) -> None:
    """The row-major index of each element of `shape`, a uint64 count given as its high and low
    32 bits (two uint32 arrays; the counters of jax's PRNGs): the index, a sum of iotas times
    the strides, in int64 (no array has 2**63 elements), then its halves."""
    shape = _ints(q.params["shape"])
    strides = [math.prod(shape[d + 1:]) for d in range(len(shape))]
    index = None
    for dim, stride in enumerate(strides):
        term = e.emit("iota", [], shape, "int64", shape=shape, dim=dim, dtype="int64")
        term = term if stride == 1 else e.emit("mul", [term, stride], shape, "int64")
        index = term if index is None else e.emit("add", [index, term], shape, "int64")
    hi, lo = q.outs
    e.emit("convert", [e.emit("bitwise_right_shift", [index, 32], shape, "int64")], shape, "uint32", hi, dtype="uint32")
    e.emit("convert", [e.emit("bitwise_and", [index, 2**32 - 1], shape, "int64")], shape, "uint32", lo, dtype="uint32")


def _empty(e: Emitter, q: Eqn) -> None:
    q.one(e, "empty", [], shape=list(q.outs[0].shape), dtype=q.outs[0].dtype)


def _slice(e: Emitter, q: Eqn) -> None:
    p = q.params
    start = _ints(p["start_indices"])
    q.one(e, "slice", start=start, limit=_ints(p["limit_indices"]),
          step=_ints(p["strides"]) if p.get("strides") else [1] * len(start))


def _split(e: Emitter, q: Eqn) -> None:
    """`split` (one input, several outputs) as one `slice` per output; `unstack` as slice + reshape."""
    axis = int(q.params["axis"])
    shape = list(q.metas[0].shape)
    sizes = _ints(q.params["sizes"]) if q.prim == "split" else [1] * shape[axis]
    offset = 0
    for out, size in zip(q.outs, sizes):
        start, limit = [0] * len(shape), list(shape)
        start[axis], limit[axis] = offset, offset + size
        offset += size
        kept = [*shape[:axis], size, *shape[axis + 1:]]
        if q.prim == "split":
            e.emit("slice", [q.inputs[0]], kept, out.dtype, out, start=start, limit=limit, step=[1] * len(shape))
        else:
            part = e.emit("slice", [q.inputs[0]], kept, out.dtype, start=start, limit=limit, step=[1] * len(shape))
            e.reshape(part, out.shape, out.dtype, out)


def _tile(e: Emitter, q: Eqn) -> None:
    """tile(x, reps): x broadcast to [r0, d0, r1, d1, ...], then merged to [r0*d0, ...]."""
    reps, x = _ints(q.params["reps"]), q.metas[0]
    wide = [v for r, d in zip(reps, x.shape) for v in (r, d)]
    spread = e.emit("broadcast", [q.inputs[0]], wide, x.dtype, shape=wide,
                    broadcast_dims=list(range(1, 2 * len(reps), 2)))
    e.reshape(spread, q.outs[0].shape, x.dtype, q.outs[0])


def _reduce(op: str):
    def handle(e: Emitter, q: Eqn) -> None:
        forms.emit_accumulating(e, op, q.inputs, q.outs[0], dims=sorted(_ints(q.params["axes"])), keepdim=False)
    return handle


def _bitwise_reduce(logical: str, bitwise: str):
    def handle(e: Emitter, q: Eqn) -> None:
        q.one(e, logical if q.metas[0].dtype == "bool" and logical else bitwise,
              dims=sorted(_ints(q.params["axes"])), keepdim=False)
    return handle


def _arg_reduce(e: Emitter, q: Eqn) -> None:
    (axis,) = q.params["axes"]
    q.one(e, q.prim, dim=int(axis), keepdim=False)


def _scan(e: Emitter, q: Eqn) -> None:
    forms.emit_scan(e, SCANS[q.prim], q.inputs[0], q.metas[0], q.outs[0], int(q.params["axis"]),
                    bool(q.params["reverse"]))


def _body_op(closed) -> str | None:
    """A reduction body's one binary op (lax.add ...), None when it does more."""
    jaxpr = getattr(closed, "jaxpr", closed)
    if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
        return None
    eqn = jaxpr.eqns[0]
    return eqn.primitive.name if list(eqn.invars) == list(jaxpr.invars) else None


def _generic_reduce(e: Emitter, q: Eqn) -> None:
    """lax.reduce with a one-op body: the reduction, then the init combined in (skipped when it
    is the op's identity)."""
    if len(q.outs) != 1:
        raise Unmapped("a reduction of several operands")
    reduce = forms.REDUCTION_BY_BODY.get(_body_op(q.params["jaxpr"]) or "")
    if reduce is None:
        raise Unmapped("a reduction body other than add, mul, max, min")
    x, init = q.inputs
    out = q.outs[0]
    dims = sorted(_ints(q.params["dimensions"]))
    if not isinstance(init, str) and init == forms.identity_of(reduce, out.dtype):
        forms.emit_accumulating(e, reduce, [x], out, dims=dims, keepdim=False)
        return
    part = forms.emit_accumulating(e, reduce, [x], e.fresh(out.shape, out.dtype), False, dims=dims,
                                   keepdim=False)
    combine = {"sum": "add", "prod": "mul", "amax": "maximum", "amin": "minimum"}[reduce]
    e.emit(combine, [part, init], out.shape, out.dtype, out)


def _window_form(p: dict, reduce: str) -> forms.WindowForm:
    rank = len(p["window_dimensions"])
    return forms.WindowForm(reduce, tuple(_ints(p["window_dimensions"])), tuple(_ints(p["window_strides"])),
                            tuple(tuple(_ints(pad)) for pad in p["padding"]),
                            tuple(_ints(p.get("base_dilation") or [1] * rank)),
                            tuple(_ints(p.get("window_dilation") or [1] * rank)))


def _reduce_window_of(reduce: str):
    def handle(e: Emitter, q: Eqn) -> None:
        out = q.outs[0]
        forms.expand_reduce_window(e, q.inputs[0], q.metas[0], forms.identity_of(reduce, out.dtype),
                                   _window_form(q.params, reduce), out)
    return handle


def _reduce_window(e: Emitter, q: Eqn) -> None:
    reduce = forms.window_reducer(_body_op(q.params["jaxpr"]), q.outs[0].dtype)
    if reduce is None or len(q.outs) != 1 or q.params.get("consts"):
        raise Unmapped("a window body other than one add, mul, max, min or logical and/or")
    forms.expand_reduce_window(e, q.inputs[0], q.metas[0], q.inputs[1], _window_form(q.params, reduce), q.outs[0])


def _select_window(e: Emitter, q: Eqn) -> None:
    select = getattr(q.params["select_prim"], "name", str(q.params["select_prim"]))
    if select not in ("ge", "le"):
        raise Unmapped(f"window selection by {select}")
    p = q.params
    attrs = dict(select=select, window=_ints(p["window_dimensions"]), strides=_ints(p["window_strides"]),
                 padding=[_ints(pad) for pad in p["padding"]])
    if q.prim == "select_and_gather_add":
        rank = len(attrs["window"])
        attrs.update(base_dilation=_ints(p["base_dilation"] or [1] * rank),
                     window_dilation=_ints(p["window_dilation"] or [1] * rank))
    q.one(e, q.prim, **attrs)


def _pad(e: Emitter, q: Eqn) -> None:
    q.one(e, "pad", padding=[_ints(c) for c in q.params["padding_config"]])


def _dynamic_slice(e: Emitter, q: Eqn) -> None:
    q.one(e, "dynamic_slice", sizes=_ints(q.params["slice_sizes"]))


def _dot_general(e: Emitter, q: Eqn) -> None:
    (lc, rc), (lb, rb) = q.params["dimension_numbers"]
    out = q.outs[0]
    inputs = [_as_dtype(e, v, m, out.dtype) for v, m in zip(q.inputs, q.metas)]
    attrs = matmul_attrs(len(q.metas[0].shape), len(q.metas[1].shape), lc, rc, lb, rb)
    e.emit("matmul", inputs, out.shape, out.dtype, out, **attrs)


def _as_dtype(e: Emitter, value: Arg, meta: TensorMeta, dtype: str) -> Arg:
    """preferred_element_type: the operands converted to the dtype the op accumulates in."""
    if meta.dtype == dtype or not isinstance(value, str):
        return value
    return e.emit("convert", [value], meta.shape, dtype, dtype=dtype)


def _conv(e: Emitter, q: Eqn) -> None:
    p = q.params
    dn = p["dimension_numbers"]
    n = len(q.metas[0].shape) - 2
    if isinstance(p["padding"], str):
        raise Unmapped(f"padding {p['padding']!r} not resolved to numbers")
    form = forms.ConvForm(_dims(dn.lhs_spec), _dims(dn.rhs_spec), _dims(dn.out_spec), _dims(p["window_strides"]),
                          tuple(tuple(_ints(pad)) for pad in p["padding"]),
                          tuple(_ints(p["lhs_dilation"] or [1] * n)), tuple(_ints(p["rhs_dilation"] or [1] * n)),
                          int(p["feature_group_count"]), int(p["batch_group_count"]))
    forms.expand_conv(e, q.inputs[0], q.metas[0], q.inputs[1], q.metas[1], form, q.outs[0])


_MODES = {"GatherScatterMode.CLIP": "clip", "GatherScatterMode.FILL_OR_DROP": "fill",
          "GatherScatterMode.PROMISE_IN_BOUNDS": "promise", "GatherScatterMode.ONE_HOT": "one_hot"}


def _mode(p: dict) -> str:
    return _MODES.get(str(p["mode"]), str(p["mode"]))


def _gather(e: Emitter, q: Eqn) -> None:
    dn, p = q.params["dimension_numbers"], q.params
    form = xla_gather.GatherForm(
        _dims(dn.offset_dims), _dims(dn.collapsed_slice_dims), _dims(dn.start_index_map), _dims(p["slice_sizes"]),
        len(q.metas[1].shape) - 1, _dims(dn.operand_batching_dims), _dims(dn.start_indices_batching_dims), _mode(p),
        None if p.get("fill_value") is None else _scalar(p["fill_value"]))
    xla_gather.expand_gather(e, q.inputs[0], _value_meta(q, 0), q.inputs[1], _value_meta(q, 1), form, q.outs[0])


_SCATTER_KINDS = {"scatter": "set", "scatter-add": "add", "scatter_add": "add", "scatter-sub": "sub",
                  "scatter-mul": "mul", "scatter-min": "min", "scatter-max": "max"}


def _scatter(e: Emitter, q: Eqn) -> None:
    dn, p = q.params["dimension_numbers"], q.params
    if q.prim == "scatter" and p.get("update_jaxpr") is not None:
        raise Unmapped("a scatter applying its own update function")
    if len(q.outs) != 1:
        raise Unmapped("a scatter of several operands")
    mode = _mode(p)
    # XLA's scatter drops an out-of-bounds update, FILL_OR_DROP or PROMISE_IN_BOUNDS alike
    form = xla_gather.ScatterForm(
        _dims(dn.update_window_dims), _dims(dn.inserted_window_dims), _dims(dn.scatter_dims_to_operand_dims),
        len(q.metas[1].shape) - 1, _SCATTER_KINDS[q.prim], _dims(dn.operand_batching_dims),
        _dims(dn.scatter_indices_batching_dims), "drop" if mode == "fill" else mode)
    xla_gather.expand_scatter(e, q.inputs[0], _value_meta(q, 0), q.inputs[1], _value_meta(q, 1), q.inputs[2],
                         _value_meta(q, 2), form, q.outs[0])


def _value_meta(q: Eqn, k: int) -> TensorMeta:
    meta = q.metas[k]
    return TensorMeta(q.inputs[k] if isinstance(q.inputs[k], str) else "", meta.shape, meta.dtype)


def _sort(e: Emitter, q: Eqn) -> None:
    dim = int(q.params["dimension"])
    if not all(isinstance(v, str) for v in q.inputs):
        raise Unmapped("a sort of a literal")
    keys = int(q.params["num_keys"])
    iotas = {v for v in q.inputs[keys:] if q.iotas.get(v) == dim}
    forms.expand_sort(e, q.inputs, q.metas, q.outs, dim, False, bool(q.params["is_stable"]), iotas, keys)


def _top_k(e: Emitter, q: Eqn) -> None:
    axis = int(q.params.get("axis", len(q.metas[0].shape) - 1))
    e.node("topk", q.inputs, q.outs, final=True, k=int(q.params["k"]), dim=axis, largest=True, sorted=True)


def _concat(e: Emitter, q: Eqn) -> None:
    q.one(e, "concat", dim=int(q.params["dimension"]))


def _stack(e: Emitter, q: Eqn) -> None:
    q.one(e, "stack", dim=int(q.params["axis"]))


def _device_put(e: Emitter, q: Eqn) -> None:
    for value, meta, out in zip(q.inputs, q.metas, q.outs):
        e.emit("copy", [value], out.shape, out.dtype, out)


def _zeros_like(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    q.one(e, "full", [], **full_attrs(out.shape, 0, out.dtype))


def _one_minus_square(e: Emitter, q: Eqn) -> None:  # jax >= 0.11, in tanh's derivative: 1 - x*x
    out = q.outs[0]
    square = e.emit("mul", [q.inputs[0], q.inputs[0]], out.shape, out.dtype)
    e.emit("sub", [1.0, square], out.shape, out.dtype, out)


def _dynamic_update_slice(e: Emitter, q: Eqn) -> None:
    q.one(e, "dynamic_update_slice")


def _transpose(e: Emitter, q: Eqn) -> None:
    q.one(e, "permute", perm=_ints(q.params["permutation"]))


def _rev(e: Emitter, q: Eqn) -> None:
    q.one(e, "flip", dims=_ints(q.params["dimensions"]))


def _reduce_precision(e: Emitter, q: Eqn) -> None:
    q.one(e, "reduce_precision", exponent_bits=int(q.params["exponent_bits"]),
          mantissa_bits=int(q.params["mantissa_bits"]))


def _squeeze(e: Emitter, q: Eqn) -> None:
    out = q.outs[0]
    if not isinstance(q.inputs[0], str):
        q.one(e, "full", [], **full_attrs(out.shape, q.inputs[0], out.dtype))
    else:
        q.one(e, "reshape", shape=list(out.shape))


def _cholesky(e: Emitter, q: Eqn) -> None:
    linalg.cholesky_primitive(e, q.inputs[0], q.metas[0], q.outs[0])


def _lu(e: Emitter, q: Eqn) -> None:
    linalg.lu_primitive(e, q.inputs[0], q.metas[0], q.outs)


def _qr(e: Emitter, q: Eqn) -> None:
    linalg.qr_primitive(e, q.inputs[0], q.outs, bool(q.params["full_matrices"]), bool(q.params.get("pivoting")))


def _eigh(e: Emitter, q: Eqn) -> None:
    p = q.params
    linalg.eigh_primitive(e, q.inputs[0], q.metas[0], q.outs, q.dropped, bool(p["lower"]), bool(p["sort_eigenvalues"]),
                          p.get("subset_by_index"), p.get("algorithm"))


def _svd(e: Emitter, q: Eqn) -> None:
    p = q.params
    # full_matrices shapes u and vt only, which are mapped only where dropped (or not computed)
    linalg.svd_primitive(e, q.inputs[0], q.metas[0], q.outs, q.dropped, p.get("subset_by_index"), p.get("algorithm"))


def _triangular_solve(e: Emitter, q: Eqn) -> None:
    p = q.params
    if p["conjugate_a"] and q.metas[0].dtype.startswith("complex"):
        raise Unmapped("the conjugate of a complex matrix")
    linalg.triangular_solve(e, q.inputs[0], q.metas[0], q.inputs[1], q.outs[0], left_side=bool(p["left_side"]),
                            lower=bool(p["lower"]), transpose_a=bool(p["transpose_a"]),
                            unit_diagonal=bool(p["unit_diagonal"]))


def _tridiagonal_solve(e: Emitter, q: Eqn) -> None:
    linalg.tridiagonal_solve_primitive(e, *q.inputs, q.metas[3], q.outs[0], bool(q.params["perturb_singular"]))


# primitive -> (handler, the params it reads)
HANDLERS: dict[str, tuple[Callable[[Emitter, Eqn], None], frozenset]] = {}


def _register(prims, handler, params=()):
    for prim in ([prims] if isinstance(prims, str) else prims):
        HANDLERS[prim] = (handler, frozenset(params))


for _prim, _op in PRIMITIVES.items():
    _register(_prim, _rename(_op), ("out_dtype",))
_register(list(SCANS), _scan, ("axis", "reverse"))
_register(list(BY_DTYPE), _by_dtype)
_register("div", _div)
_register("polygamma", _polygamma)
_register("round", _round, ("rounding_method",))
_register("shift_left", _shift("left"))
_register("shift_right_arithmetic", _shift("right_arithmetic"))
_register("shift_right_logical", _shift("right_logical"))
_register("integer_pow", _pow_of(lambda p: int(p["y"])), ("y",))
_register("square", _pow_of(lambda p: 2))
_register("convert_element_type", _convert, ("new_dtype",))
_register("bitcast_convert_type", _bitcast, ("new_dtype",))
_register("reduce_precision", _reduce_precision, ("exponent_bits", "mantissa_bits"))
_register("broadcast_in_dim", _broadcast_in_dim, ("shape", "broadcast_dimensions"))
_register("reshape", _reshape, ("new_sizes", "dimensions"))
_register(["squeeze", "expand_dims"], _squeeze, ("dimensions",))
_register("transpose", _transpose, ("permutation",))
_register("rev", _rev, ("dimensions",))
_register("select_n", _select_n)
_register("iota_2x32_shape", _iota_2x32_shape, ("shape",))
_register("clamp", _clamp)
_register("iota", _iota, ("dtype", "shape", "dimension"))
_register(["empty", "empty2"], _empty, ("shape", "dtype", "memory_space"))
_register("zeros_like", _zeros_like)
_register("slice", _slice, ("start_indices", "limit_indices", "strides"))
_register(["split", "unstack"], _split, ("sizes", "axis"))
_register("concatenate", _concat, ("dimension",))
_register("stack", _stack, ("axis",))
_register("tile", _tile, ("reps",))
_register("pad", _pad, ("padding_config",))
_register("dynamic_slice", _dynamic_slice, ("slice_sizes",))
_register("dynamic_update_slice", _dynamic_update_slice)
_register("gather", _gather, ("dimension_numbers", "slice_sizes", "mode", "fill_value"))
_register(list(_SCATTER_KINDS), _scatter, ("dimension_numbers", "mode", "update_jaxpr", "update_consts"))
_register("dot_general", _dot_general, ("dimension_numbers", "preferred_element_type"))
_register("conv_general_dilated", _conv, ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                                          "dimension_numbers", "feature_group_count", "batch_group_count",
                                          "preferred_element_type"))
_register("reduce_sum", _reduce("sum"), ("axes",))
_register("reduce_max", _reduce("amax"), ("axes",))
_register("reduce_min", _reduce("amin"), ("axes",))
_register("reduce_prod", _reduce("prod"), ("axes",))
_register("reduce_and", _bitwise_reduce("all", "reduce_and"), ("axes",))
_register("reduce_or", _bitwise_reduce("any", "reduce_or"), ("axes",))
_register("reduce_xor", _bitwise_reduce("", "reduce_xor"), ("axes",))
_register(["argmax", "argmin"], _arg_reduce, ("axes", "index_dtype"))
_register("reduce", _generic_reduce, ("computation", "jaxpr", "dimensions"))
_register("reduce_window_sum", _reduce_window_of("sum"), ("window_dimensions", "window_strides", "padding",
                                                           "base_dilation", "window_dilation"))
_register("reduce_window_max", _reduce_window_of("amax"), ("window_dimensions", "window_strides", "padding",
                                                            "base_dilation", "window_dilation"))
_register("reduce_window_min", _reduce_window_of("amin"), ("window_dimensions", "window_strides", "padding",
                                                            "base_dilation", "window_dilation"))
_register("reduce_window", _reduce_window, ("jaxpr", "consts", "window_dimensions", "window_strides", "padding",
                                            "base_dilation", "window_dilation"))
_register("select_and_scatter_add", _select_window, ("select_prim", "window_dimensions", "window_strides",
                                                     "padding"))
_register("select_and_gather_add", _select_window, ("select_prim", "window_dimensions", "window_strides", "padding",
                                                    "base_dilation", "window_dilation"))
_register("sort", _sort, ("dimension", "is_stable", "num_keys"))
_register("top_k", _top_k, ("k", "axis"))
_register("device_put", _device_put, ("devices", "srcs", "copy_semantics"))
_register("one_minus_square", _one_minus_square)
_register("while", _while, ("cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"))
_register("cond", _cond, ("branches",))
_register("cholesky", _cholesky)
_register("lu", _lu)
_register("tridiagonal_solve", _tridiagonal_solve, ("perturb_singular",))
_register("geqrf", lambda e, q: q.one(e, "geqrf"))
_register("householder_product", lambda e, q: q.one(e, "householder_product"))
_register("qr", _qr, ("full_matrices", "pivoting", "use_magma"))  # use_magma: which GPU library computes it
_register("eigh", _eigh, ("lower", "sort_eigenvalues", "subset_by_index", "algorithm"))
_register("svd", _svd, ("full_matrices", "compute_uv", "subset_by_index", "algorithm"))
_register("triangular_solve", _triangular_solve, ("left_side", "lower", "transpose_a", "conjugate_a",
                                                  "unit_diagonal"))


@dataclass
class _Builder:
    """Walks a jaxpr (and the bodies it inlines), binding jaxpr vars to common-view values."""

    names: Any  # jax's JaxprPpContext: the var names jaxpr's printer uses
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)
    env: dict = field(default_factory=dict)  # jaxpr Var -> Arg
    taken: set = field(default_factory=set)  # value names in use
    iotas: dict[str, int] = field(default_factory=dict)  # value name -> the dim an iota counts along
    origins: dict[str, "EqnOrigin"] = field(default_factory=dict)  # node id -> the equation it came from
    origin: "EqnOrigin | None" = None  # of the equation being emitted
    stage: str = "jax.jaxpr"
    prefix: str = ""  # of node ids: a loop body's are `<loop id>.body.e<k>`

    def next_id(self) -> str:
        return f"{self.prefix}e{len(self.nodes)}"

    def read(self, atom) -> Arg:
        from jax.extend.core import Literal

        if isinstance(atom, Literal):
            return _scalar(atom.val)
        return self.env[atom]

    def bind_input(self, var, name: str) -> None:
        self.env[var] = name
        self.taken.add(name)
        self.inputs.append(_meta(name, var.aval))

    def bind_consts(self, constvars, consts) -> None:
        """Scalar constants become literals; small array constants (a closed-over index array,
        up to MAX_CONSTANT_ELEMENTS) `constant` nodes holding their values, as the HLO reader
        makes them; larger ones graph inputs (`const<k>`), which no binding feeds."""
        import numpy as np

        for var, val in zip(constvars, consts):
            if getattr(val, "shape", None) == ():
                self.env[var] = _scalar(val)
            elif np.size(val) <= MAX_CONSTANT_ELEMENTS:
                k = sum(n.op == "constant" for n in self.nodes)
                meta = _meta(f"const{k}", var.aval)
                self.env[var] = meta.name
                self.taken.add(meta.name)
                self.nodes.append(Node(meta.name, "constant", [], [meta],
                                       {"values": np.asarray(val).ravel().tolist(), "shape": list(meta.shape),
                                        "dtype": meta.dtype}, native="constvar"))
            else:
                self.bind_input(var, f"const{sum(t.name.startswith('const') for t in self.inputs)}")

    def walk(self, jaxpr, scope: str, caller: "EqnOrigin | None" = None) -> None:
        from jax.extend.core import Var

        read = {v for v in [*jaxpr.outvars, *(a for q in jaxpr.eqns for a in q.invars)] if isinstance(v, Var)}
        for eqn in jaxpr.eqns:
            self.origin = EqnOrigin.of(eqn, caller)
            body = _call_body(eqn)
            if body is not None:
                self.inline(eqn, body, scope)
            elif eqn.primitive.name in IDENTITIES:
                for outer, value in zip(eqn.outvars, IDENTITIES[eqn.primitive.name]([self.read(a) for a in eqn.invars])):
                    self.env[outer] = value
            elif eqn.primitive.name == "scan" and 0 < int(eqn.params["length"]) <= MAX_SCAN_STEPS:
                self.unroll(eqn, scope)
            elif eqn.primitive.name in SOLVES:
                self.linear_solve(eqn, scope)
            else:
                self.emit(eqn, scope, read)

    def inline(self, eqn, body, scope: str) -> None:
        inner = getattr(body, "jaxpr", body)
        name = eqn.params.get("name") or getattr(getattr(inner, "debug_info", None), "func_name", "") or eqn.primitive.name
        outs = self.call(body, [self.read(a) for a in eqn.invars], f"{scope}/{name}" if scope else str(name))
        for outer, value in zip(eqn.outvars, outs):
            self.env[outer] = value

    def call(self, body, args: list[Arg], scope: str) -> list[Arg]:
        """A (closed) jaxpr's equations emitted on `args`; its outputs' values."""
        from jax.extend.core import ClosedJaxpr

        inner, consts = (body.jaxpr, body.consts) if isinstance(body, ClosedJaxpr) else (body, ())
        self.bind_consts(inner.constvars, consts)
        for var, value in zip(inner.invars, args):
            self.env[var] = value
        self.walk(inner, scope, self.origin)
        return [self.read(var) for var in inner.outvars]

    def linear_solve(self, eqn, scope: str) -> None:
        """lax.custom_linear_solve's value: its `solve` jaxpr on the solve's consts and b (matvec,
        vecmat and transpose_solve only define its derivatives), as jax's own impl runs it."""
        lengths, args = eqn.params["const_lengths"], [self.read(a) for a in eqn.invars]
        start = lengths.matvec + lengths.vecmat
        consts = args[start:start + lengths.solve]
        b = args[lengths.matvec + lengths.vecmat + lengths.solve + lengths.transpose_solve:]
        inner = f"{scope}/custom_linear_solve" if scope else "custom_linear_solve"
        for outer, value in zip(eqn.outvars, self.call(eqn.params["jaxprs"].solve, consts + b, inner)):
            self.env[outer] = value

    def unroll(self, eqn, scope: str) -> None:
        """lax.scan of a static length as its steps, one after the other: each step the body on the
        carry and the xs' slice at that step; the ys stacked along a new first dim."""
        from jax.extend.core import DropVar

        p = eqn.params
        steps, n_consts, n_carry = int(p["length"]), int(p["num_consts"]), int(p["num_carry"])
        values = [self.read(a) for a in eqn.invars]
        consts, carry = values[:n_consts], values[n_consts:n_consts + n_carry]
        xs = list(zip(values[n_consts + n_carry:], eqn.invars[n_consts + n_carry:]))
        ys_by_step = {}
        for i in (reversed(range(steps)) if p["reverse"] else range(steps)):
            e = Emitter(self.next_id(), "scan", scope)
            step_xs = []
            for value, var in xs:
                shape, dtype = tuple(int(d) for d in var.aval.shape), canonical_dtype(var.aval.dtype)
                row = e.emit("slice", [value], (1, *shape[1:]), dtype, start=[i] + [0] * (len(shape) - 1),
                             limit=[i + 1, *shape[1:]], step=[1] * len(shape))
                step_xs.append(e.reshape(row, shape[1:], dtype))
            for node in e.nodes:
                self.add(node)
            outs = self.call(p["jaxpr"], [*consts, *carry, *step_xs], f"{scope}/scan[{i}]" if scope else f"scan[{i}]")
            carry, ys_by_step[i] = outs[:n_carry], outs[n_carry:]
        for outer, value in zip(eqn.outvars[:n_carry], carry):
            self.env[outer] = value
        for j, outer in enumerate(eqn.outvars[n_carry:]):
            if isinstance(outer, DropVar):
                continue
            (out,) = self.outputs([outer], self.next_id())
            e = Emitter(self.next_id(), "scan", scope)
            rows = [ys_by_step[i][j] for i in range(steps)]
            rows = [r if isinstance(r, str) else e.emit("full", [], out.shape[1:], out.dtype,
                                                        **full_attrs(out.shape[1:], r, out.dtype)) for r in rows]
            e.emit("stack", rows, out.shape, out.dtype, out, dim=0)
            for node in e.nodes:
                self.add(node)

    def outputs(self, outvars, node_id: str) -> list[TensorMeta]:
        from jax.extend.core import DropVar

        metas = []
        for i, var in enumerate(outvars):
            name = f"{node_id}_dropped{i}" if isinstance(var, DropVar) else var.pretty_print(self.names)
            if name in self.taken:  # a shared sub-jaxpr inlined twice binds the same vars again
                name = f"{name}_{node_id}"
            self.taken.add(name)
            self.env[var] = name
            metas.append(_meta(name, var.aval))
        return metas

    def emit(self, eqn, scope: str, read: set) -> None:
        """The equation's nodes; `read`: the vars its jaxpr reads (an output none reads is dropped)."""
        prim = eqn.primitive.name
        node_id = self.next_id()
        inputs = [self.read(a) for a in eqn.invars]
        metas = [_meta(v if isinstance(v, str) else "", a.aval) for v, a in zip(inputs, eqn.invars)]
        outs = self.outputs(eqn.outvars, node_id)
        e = Emitter(node_id, prim, scope)
        reason = why_unknown(prim, eqn.params)
        if reason is None:
            try:
                dropped = frozenset(i for i, v in enumerate(eqn.outvars) if v not in read)
                HANDLERS[prim][0](e, Eqn(prim, dict(eqn.params), inputs, metas, outs, self.iotas,
                                         functools.partial(self.subgraph, node_id), dropped))
            except Unmapped as err:
                reason = str(err)
        if reason is not None:
            e.nodes = [Node(node_id, UNKNOWN_PREFIX + prim, inputs, outs, {"reason": reason}, native=prim, scope=scope)]
        elif prim == "iota":
            self.iotas[outs[0].name] = int(eqn.params["dimension"])
        for node in e.nodes:
            self.add(node)

    def add(self, node: Node) -> None:
        self.nodes.append(node)
        self.origins[node.id] = self.origin

    def subgraph(self, node_id: str, role: str, closed, inputs: list[TensorMeta], bound: list[int],
                 out_metas: list[TensorMeta]) -> Graph:
        """A loop's cond or body, or a conditional's branch: the closed jaxpr walked into a graph
        of its own over `inputs`, its invars taking `inputs[bound[k]]`."""
        sub = _Builder(self.names, inputs=list(inputs), taken={t.name for t in inputs}, stage=self.stage,
                       prefix=f"{node_id}.{role}.")
        sub.bind_consts(closed.jaxpr.constvars, closed.consts)
        if len(sub.inputs) != len(inputs):
            raise Unmapped(f"a {role} closing over an array of more than {MAX_CONSTANT_ELEMENTS} elements")
        for var, k in zip(closed.jaxpr.invars, bound):
            sub.env[var] = inputs[k].name
        sub.walk(closed.jaxpr, "", self.origin)
        outputs = [sub.read(v) for v in closed.jaxpr.outvars]
        return forms.closed_graph(f"{node_id}.{role}", sub.inputs, sub.nodes, outputs, out_metas, self.stage)


def why_unknown(prim: str, params: dict) -> str | None:
    """Why `prim` with `params` cannot become canonical ops (None: it can)."""
    if prim in CLASSIFIED:
        return CLASSIFIED[prim]
    if prim not in HANDLERS:
        return "no canonical op for this primitive"
    unread = sorted(k for k, v in params.items() if k not in HINTS and k not in HANDLERS[prim][1])
    if unread:
        return f"params not mapped: {', '.join(unread)}"
    return None


def _call_body(eqn):
    for param in CALLS.get(eqn.primitive.name, ()):
        if eqn.params.get(param) is not None:
            return eqn.params[param]
    return None


def source_span(file: str, line: int, column: int, end_line: int, end_column: int) -> str:
    """One spelling of a source range for jaxpr frames and HLO stack frames, so they compare."""
    return f"{file}:{line}:{column}-{end_line}:{end_column}"


@dataclass(frozen=True)
class EqnOrigin:
    """Where an equation came from, as XLA's op_name/source metadata can name it too: the
    primitive, whether it is on the backward pass (a `transpose(...)` name stack) and the
    user source frame. Equations inlined from a call without a frame take the call's."""

    primitive: str
    backward: bool
    source: str  # source_span(...), "" when unknown

    @classmethod
    def of(cls, eqn, caller: "EqnOrigin | None") -> "EqnOrigin":
        from jax._src import source_info_util

        frame = source_info_util.user_frame(eqn.source_info.traceback)
        stack = str(eqn.source_info.name_stack)
        source = source_span(frame.file_name, frame.start_line, frame.start_column, frame.end_line,
                             frame.end_column) if frame else ""
        backward = "transpose(" in stack
        if caller is not None:
            source = source or caller.source
            backward = backward or caller.backward
        return cls(eqn.primitive.name, backward, source)


def _build(closed_jaxpr, input_names: list[str] | None, stage: str = "jax.jaxpr") -> tuple[_Builder, list[Arg]]:
    from jax._src.core import JaxprPpContext

    jaxpr = closed_jaxpr.jaxpr
    b = _Builder(JaxprPpContext(), stage=stage)
    b.bind_consts(jaxpr.constvars, closed_jaxpr.consts)
    if input_names is not None and len(input_names) != len(jaxpr.invars):
        raise ValueError(f"{len(input_names)} input names for a jaxpr with {len(jaxpr.invars)} inputs")
    for i, var in enumerate(jaxpr.invars):
        b.bind_input(var, input_names[i] if input_names else var.pretty_print(b.names))
    b.walk(jaxpr, "")
    return b, [b.read(v) for v in jaxpr.outvars]


def jaxpr_to_graph(
    closed_jaxpr,
    *,
    name: str,
    frontend: str = "jax",
    stage: str = "jax.jaxpr",
    level: str = "composite",
    input_names: list[str] | None = None,
) -> Graph:
    """The common view of a ClosedJaxpr. `input_names` name its invars in order (default: jaxpr's names)."""
    b, outputs = _build(closed_jaxpr, input_names, stage)
    return at_level(Graph(name, frontend, stage, "composite", b.inputs, b.nodes, outputs), level)


def jaxpr_origins(closed_jaxpr) -> dict[str, EqnOrigin]:
    """Node id (as in `jaxpr_to_graph`'s composite graph) -> the equation's origin."""
    return _build(closed_jaxpr, None)[0].origins


def at_level(graph: Graph, level: str) -> Graph:
    """`graph` (composite) at `level`: primitive goes through the decomposition pass."""
    if level == "primitive":
        from irlens.decompose import to_primitive

        return to_primitive(graph)
    return graph
