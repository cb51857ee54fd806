"""Elementwise ops: numpy broadcasting, operands are tensors or scalar literals, the result
in torch's promoted dtype. Most are one line: the torch function of the same name is the
meaning, and `jax=` / `nvfuser=` name the library function that lowers them."""
from __future__ import annotations

import torch

from irlens.core.ops._torch import elementwise, jnp, lax
from irlens.core.ops.core import ELEMENTWISE, Attr, declare, lowering, lowers, meaning


def unary(name: str, fn=None, *, jax: str | None = None, nvfuser: str | None = None, doc: str = ""):
    return _simple(name, "x", fn, jax, nvfuser, doc)


def binary(name: str, fn=None, *, jax: str | None = None, nvfuser: str | None = None, doc: str = ""):
    return _simple(name, "x y", fn, jax, nvfuser, doc)


def _simple(name, operands, fn, jax, nvfuser, doc):
    op = declare(name, ELEMENTWISE, operands, doc=doc)
    meaning(op)(elementwise(fn or getattr(torch, name)))
    if jax:
        lowers(op, "jax", jax)
    if nvfuser:
        lowers(op, "nvfuser", nvfuser)
    return op


# --- unary -------------------------------------------------------------------------------
neg = unary("neg", jax="negative", nvfuser="neg")
abs_ = unary("abs", jax="abs", nvfuser="abs")
exp = unary("exp", jax="exp", nvfuser="exp")
exp2 = unary("exp2", jax="exp2", nvfuser="exp2")
expm1 = unary("expm1", jax="expm1", nvfuser="expm1")
log = unary("log", jax="log", nvfuser="log")
log1p = unary("log1p", jax="log1p", nvfuser="log1p")
log2 = unary("log2", jax="log2", nvfuser="log2")
log10 = unary("log10", jax="log10", nvfuser="log10")
sqrt = unary("sqrt", jax="sqrt", nvfuser="sqrt")
rsqrt = unary("rsqrt", jax="lax.rsqrt", nvfuser="rsqrt")
reciprocal = unary("reciprocal", jax="reciprocal", nvfuser="reciprocal")
sin = unary("sin", jax="sin", nvfuser="sin")
cos = unary("cos", jax="cos", nvfuser="cos")
tan = unary("tan", jax="tan", nvfuser="tan")
asin = unary("asin", jax="arcsin", nvfuser="asin")
acos = unary("acos", jax="arccos", nvfuser="acos")
atan = unary("atan", jax="arctan", nvfuser="atan")
sinh = unary("sinh", jax="sinh", nvfuser="sinh")
cosh = unary("cosh", jax="cosh", nvfuser="cosh")
tanh = unary("tanh", jax="tanh", nvfuser="tanh")
asinh = unary("asinh", jax="arcsinh", nvfuser="asinh")
acosh = unary("acosh", jax="arccosh", nvfuser="acosh")
atanh = unary("atanh", jax="arctanh", nvfuser="atanh")
erf = unary("erf", jax="scipy.special.erf", nvfuser="erf")
erfc = unary("erfc", jax="scipy.special.erfc", nvfuser="erfc")
erfinv = unary("erfinv", jax="scipy.special.erfinv", nvfuser="erfinv")
lgamma = unary("lgamma", jax="lax.lgamma", nvfuser="lgamma")
digamma = unary("digamma", jax="lax.digamma")
sigmoid = unary("sigmoid", jax="nn.sigmoid")
sign = unary("sign", jax="sign", nvfuser="sign")
floor = unary("floor", jax="floor", nvfuser="floor")
ceil = unary("ceil", jax="ceil", nvfuser="ceil")
trunc = unary("trunc", jax="trunc", nvfuser="trunc")
isnan = unary("isnan", jax="isnan")
isinf = unary("isinf", jax="isinf")
logical_not = unary("logical_not", jax="logical_not")
bitwise_not = unary("bitwise_not", jax="bitwise_not", nvfuser="bitwise_not", doc="~x: logical not on bool, two's complement not on integers")
erfcinv = unary("erfcinv", lambda x: torch.erfinv(1 - x), doc="inverse of erfc: erfinv(1 - x)")
lowers(erfcinv, "jax", lambda a, x: lax().erf_inv(1 - x))

round_ = declare("round", ELEMENTWISE, "x", decimals=Attr("int", 0),
                 doc="round half to even, at `decimals` digits after the point (torch.round)")


@meaning(round_)
def _round(a, x):
    return torch.round(x, decimals=a["decimals"]) if a["decimals"] else torch.round(x)


@lowering(round_, "jax")
def _round_jax(a, x):
    return jnp().round(x, a["decimals"])


# --- binary ------------------------------------------------------------------------------
add = binary("add", jax="add", nvfuser="add")
sub = binary("sub", jax="subtract", nvfuser="sub")
mul = binary("mul", jax="multiply", nvfuser="mul")
pow_ = binary("pow", jax="power", nvfuser="pow")
maximum = binary("maximum", jax="maximum", nvfuser="maximum")
minimum = binary("minimum", jax="minimum", nvfuser="minimum")
remainder = binary("remainder", jax="remainder", nvfuser="remainder", doc="x - floor(x / y) * y (Python's %)")
def _by_zero(fn, at_zero):
    """An integer quotient or remainder whose divisor may be zero, as XLA computes it (`at_zero(x)`
    there: x % 0 is x, x // 0 is -1) where torch raises. jnp.gcd's loop divides by a zero it
    then discards."""
    def run(p, q):
        if p.is_floating_point() or q.is_floating_point() or not bool((q == 0).any()):
            return fn(p, q)
        zero = q == 0
        return torch.where(zero, at_zero(p), fn(p, torch.where(zero, torch.ones_like(q), q)))
    return run


fmod = binary("fmod", _by_zero(torch.fmod, lambda x: x), jax="fmod", nvfuser="fmod",
              doc="x - trunc(x / y) * y (C's fmod); an integer x % 0 is x, as XLA has it")
atan2 = binary("atan2", jax="arctan2", nvfuser="atan2")
eq = binary("eq", jax="equal", nvfuser="eq")
ne = binary("ne", jax="not_equal", nvfuser="ne")
lt = binary("lt", jax="less", nvfuser="lt")
le = binary("le", jax="less_equal", nvfuser="le")
gt = binary("gt", jax="greater", nvfuser="gt")
ge = binary("ge", jax="greater_equal", nvfuser="ge")
logical_and = binary("logical_and", jax="logical_and")
logical_or = binary("logical_or", jax="logical_or")
logical_xor = binary("logical_xor", jax="logical_xor")
bitwise_and = binary("bitwise_and", jax="bitwise_and", nvfuser="bitwise_and")
bitwise_or = binary("bitwise_or", jax="bitwise_or", nvfuser="bitwise_or")
bitwise_xor = binary("bitwise_xor", jax="bitwise_xor", nvfuser="bitwise_xor")
bitwise_left_shift = binary("bitwise_left_shift", jax="left_shift", doc="x << y (integers)")
bitwise_right_shift = binary("bitwise_right_shift", jax="right_shift", doc="x >> y (integers; arithmetic on signed)")

div = declare("div", ELEMENTWISE, "x y", rounding_mode=Attr("str", None, choices=(None, "floor", "trunc")),
              doc="true division; rounding_mode floor (Python's //) or trunc rounds the quotient (an "
                  "integer one by zero is -1, as XLA has it)")


@meaning(div)
def _div(a, x, y):
    mode = a["rounding_mode"]
    if mode is None:
        return elementwise(torch.div)(a, x, y)
    return elementwise(_by_zero(lambda p, q: torch.div(p, q, rounding_mode=mode), lambda p: torch.full_like(p, -1)))(
        a, x, y)


@lowering(div, "jax")
def _div_jax(a, x, y):
    np_ = jnp()
    mode = a["rounding_mode"]
    if mode is None:
        return np_.true_divide(x, y)
    if mode == "floor":
        return np_.floor_divide(x, y)
    return np_.trunc(np_.true_divide(x, y)).astype(np_.result_type(x, y))  # trunc: toward zero


lowers(div, "nvfuser", "div", when=lambda node: node.attrs.get("rounding_mode") is None)

# --- three operands -----------------------------------------------------------------------
where = declare("where", ELEMENTWISE, "cond x y", doc="x where cond, else y")
meaning(where)(elementwise(torch.where))
lowers(where, "jax", "where")
lowers(where, "nvfuser", "where")

clamp = declare("clamp", ELEMENTWISE, "x lo? hi?", doc="min(max(x, lo), hi); an absent bound does not clamp")


@meaning(clamp)
def _clamp(a, x, lo=None, hi=None):
    if lo is None and hi is None:
        return x.clone()
    return elementwise(lambda t, l, h: torch.clamp(t, l, h))(a, x, lo, hi)


@lowering(clamp, "jax")
def _clamp_jax(a, x, lo=None, hi=None):
    return jnp().clip(x, lo, hi)


lerp = declare("lerp", ELEMENTWISE, "start end weight", doc="start + weight * (end - start) (torch.lerp)")
meaning(lerp)(elementwise(torch.lerp))


@lowering(lerp, "jax")
def _lerp_jax(a, start, end, weight):
    return start + weight * (end - start)


def _round_half_away(x):
    whole = torch.trunc(x)  # x - trunc(x) is exact, so the half-way test is too
    return whole + torch.sign(x) * (torch.abs(x - whole) >= 0.5).to(x.dtype)


round_half_away = unary("round_half_away", _round_half_away,
                        doc="round half away from zero (C's round; lax.round's default, HLO's round-nearest-afz)")


@lowering(round_half_away, "jax")
def _round_half_away_jax(a, x):
    return lax().round(x, lax().RoundingMethod.AWAY_FROM_ZERO)


reduce_precision = declare("reduce_precision", ELEMENTWISE, "x", exponent_bits=Attr("int"), mantissa_bits=Attr("int"),
                           doc="x rounded (to nearest even) to mantissa_bits, then out of the range of "
                               "exponent_bits: overflow to inf, underflow (subnormals included) to zero; NaN "
                               "stays NaN (XLA's reduce-precision, on x's own dtype)")
# (exponent, mantissa) bits of the formats whose bit patterns the meaning rounds
_FLOAT_BITS = {torch.float64: (11, 52, torch.int64), torch.float32: (8, 23, torch.int32)}
_NATIVE_BITS = {torch.float16: (5, 10), torch.bfloat16: (8, 7), torch.float32: (8, 23), torch.float64: (11, 52)}


@meaning(reduce_precision)
def _reduce_precision(a, x):
    native_e, native_m = _NATIVE_BITS[x.dtype]
    work = x if x.dtype in _FLOAT_BITS else x.to(torch.float32)  # half formats round within float32's range
    src_e, src_m, int_dtype = _FLOAT_BITS[work.dtype]
    width = src_e + src_m + 1
    bits = work.view(int_dtype).to(torch.int64)
    sign_mask = 1 << (width - 1)
    sign = bits & sign_mask if width == 64 else (bits & 0xFFFFFFFF) & sign_mask
    mag = bits & (sign_mask - 1)
    e_bits, m_bits = a["exponent_bits"], a["mantissa_bits"]
    if m_bits < native_m:
        shift = src_m - m_bits
        bias = (1 << (shift - 1)) - 1 + ((mag >> shift) & 1)
        mag = (mag + bias) & ~((1 << shift) - 1)
    if e_bits < native_e:
        exponent = mag >> src_m
        src_bias, reduced_bias = (1 << (src_e - 1)) - 1, (1 << (e_bits - 1)) - 1
        inf = ((1 << src_e) - 1) << src_m
        mag = torch.where(exponent > src_bias + reduced_bias, torch.full_like(mag, inf),
                          torch.where(exponent <= src_bias - reduced_bias, torch.zeros_like(mag), mag))
    out = sign | mag
    if width == 32:
        out = torch.where(out >= 1 << 31, out - (1 << 32), out)
    out = out.to(int_dtype).view(work.dtype)
    return torch.where(torch.isnan(work), work, out).to(x.dtype)


@lowering(reduce_precision, "jax")
def _reduce_precision_jax(a, x):
    return lax().reduce_precision(x, a["exponent_bits"], a["mantissa_bits"])


# --- bit counting on integers (two's complement, in x's width) -----------------------------------------
def _bits_of(x: torch.Tensor) -> tuple[int, torch.Tensor]:
    """x's width and its bit pattern as int64 (bit k of the result's k-th bit is x's)."""
    return torch.iinfo(x.dtype).bits, x.to(torch.int64)


def _population_count(x):
    width, bits = _bits_of(x)
    return sum((bits >> k) & 1 for k in range(width)).to(x.dtype)


def _clz(x):
    width, bits = _bits_of(x)
    length = torch.zeros_like(bits)
    for k in range(width):
        length = torch.where(((bits >> k) & 1).bool(), k + 1, length)
    return (width - length).to(x.dtype)


def _mulhi(x, y):
    width = torch.iinfo(x.dtype).bits
    if width > 32:
        raise NotImplementedError("mulhi of 64-bit integers needs a 128-bit product")
    return ((x.to(torch.int64) * y.to(torch.int64)) >> width).to(x.dtype)


population_count = unary("population_count", _population_count, jax="lax.population_count",
                         doc="number of set bits of an integer")
clz = unary("clz", _clz, jax="lax.clz", doc="number of leading zero bits of an integer")
mulhi = binary("mulhi", _mulhi, jax="lax.mulhi", doc="the high half of the double-width product of two integers")
