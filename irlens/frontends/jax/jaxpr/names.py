"""The jaxpr adapter's tables: primitives renamed to canonical ops (`PRIMITIVES`, `SCANS`, by dtype
`BY_DTYPE`), params that only guide the compiler (`HINTS`), call-like primitives inlined
(`CALLS`, `SOLVES`), identities (`IDENTITIES`) and the primitives kept `unknown:` with the
reason (`CLASSIFIED`)."""
from __future__ import annotations

from typing import Callable

from irlens.core.ops import check_vocabulary


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
    "real": "real", "imag": "imag", "complex": "complex",
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
_LINALG = "a linear-algebra decomposition: no canonical op"
_COLLECTIVE = "a named-axis collective (shard_map / pmap)"
# primitive -> why it stays unknown
CLASSIFIED: dict[str, str] = {
    **{p: _RANDOM for p in ("random_bits", "random_seed", "random_wrap", "random_unwrap", "random_split",
                            "random_fold_in", "random_clone", "threefry2x32", "rng_bit_generator", "rng_uniform",
                            "random_gamma", "threefry4x32", "philox2x32", "philox4x32")},
    **{p: _CONTROL for p in ("platform_index",)},
    "scan": f"control flow: a scan of more than {MAX_SCAN_STEPS} steps (shorter ones are unrolled)",
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
