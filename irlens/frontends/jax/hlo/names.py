"""The HLO and StableHLO adapters' tables: opcodes renamed to canonical ops (`OPCODES`, by dtype
`BY_DTYPE`, compare directions `COMPARE`), opcodes kept `unknown:` with the reason
(`CLASSIFIED`), and StableHLO op names as HLO opcodes (`stablehlo_opcode`)."""
from __future__ import annotations


from irlens.core.ops import check_vocabulary


# HLO opcode (as printed in HLO text) -> canonical op, for opcodes whose attrs need no
# translation. StableHLO names map onto these through `stablehlo_opcode`; the structured
# opcodes (data movement and casts: shapes.py; shifts: elementwise.py) are converted by
# `HANDLERS`, the rest classified in `CLASSIFIED`.
OPCODES: dict[str, str] = {
    "add": "add", "subtract": "sub", "multiply": "mul", "negate": "neg",
    "maximum": "maximum", "minimum": "minimum", "power": "pow", "remainder": "fmod", "atan2": "atan2",
    "exponential": "exp", "log": "log", "log-plus-one": "log1p", "exponential-minus-one": "expm1",
    "tanh": "tanh", "logistic": "sigmoid", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "sine": "sin",
    "cosine": "cos", "tan": "tan", "erf": "erf", "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "round-nearest-afz": "round_half_away", "round-nearest-even": "round", "is-finite": "isfinite",
    "popcnt": "population_count", "count-leading-zeros": "clz", "clz": "clz",
    "select": "where", "real": "real", "imag": "imag", "complex": "complex",
    # chlo ops StableHLO keeps whole
    "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan", "atanh": "atanh",
    "cosh": "cosh", "sinh": "sinh", "erfc": "erfc", "erf-inv": "erfinv", "lgamma": "lgamma", "digamma": "digamma",
    "igamma": "igamma", "igammac": "igammac", "bessel-i1e": "bessel_i1e", "zeta": "zeta",
    "next-after": "nextafter", "is-inf": "isinf", "mulhi": "mulhi",
}
# opcodes whose canonical op depends on the operand's dtype: (bool, integer, floating)
BY_DTYPE: dict[str, tuple[str, str, str]] = {
    "and": ("logical_and", "bitwise_and", ""), "or": ("logical_or", "bitwise_or", ""),
    "xor": ("logical_xor", "bitwise_xor", ""), "not": ("logical_not", "bitwise_not", ""),
    "divide": ("", "div", "div"),
}
COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}
check_vocabulary({**OPCODES, **COMPARE, **{op: op for ops in BY_DTYPE.values() for op in ops if op}})

_RANDOM = "random bits: a counter-based generator, no canonical op"
# opcode -> why it stays unknown
CLASSIFIED: dict[str, str] = {
    "rng": _RANDOM, "rng-bit-generator": _RANDOM, "rng-get-and-update-state": _RANDOM,
    # XLA leaves the factor's other triangle, and the result for a matrix that is not positive
    # definite, implementation-defined
    "cholesky": "a Cholesky factor whose other triangle is implementation-defined: no canonical meaning",
    **{op: "a collective across devices" for op in ("all-reduce", "all-gather", "all-to-all", "reduce-scatter",
                                                      "collective-permute", "all-reduce-start", "all-reduce-done",
                                                      "all-gather-start", "all-gather-done",
                                                      "collective-permute-start", "collective-permute-done")},
    "stochastic-convert": "a conversion with random rounding",
}

# StableHLO names that differ from the HLO opcode beyond `_` -> `-`
_STABLEHLO_RENAMES = {"broadcast_in_dim": "broadcast", "dot_general": "dot", "round_nearest_afz": "round-nearest-afz",
                      "round_nearest_even": "round-nearest-even", "count_leading_zeros": "count-leading-zeros",
                      "popcnt": "popcnt", "top_k": "top-k", "bessel_i1e": "bessel-i1e", "erf_inv": "erf-inv",
                      "next_after": "next-after", "is_inf": "is-inf", "reduce_precision": "reduce-precision"}


def stablehlo_opcode(op_name: str) -> str:
    """`stablehlo.dot_general` -> `dot`, `chlo.erf` -> `erf`, `stablehlo.log_plus_one` -> `log-plus-one`."""
    short = op_name.split(".", 1)[1] if "." in op_name else op_name
    return _STABLEHLO_RENAMES.get(short, short.replace("_", "-"))
