"""Special functions: elementwise, each the torch function of the same meaning (the ones XLA and
Thunder have as primitives: lgamma-like, Bessel, incomplete gamma, zeta, orthogonal polynomials)."""
from __future__ import annotations

import torch

from irlens.core.ops._torch import elementwise, jnp, lax
from irlens.core.ops.core import ELEMENTWISE, Attr, declare, from_aten, lowering, lowers, meaning
from irlens.core.ops.elementwise import binary, unary

S = torch.special

bessel_i0 = unary("bessel_i0", torch.i0, jax="scipy.special.i0")
bessel_i0e = unary("bessel_i0e", S.i0e, jax="lax.bessel_i0e")
bessel_i1 = unary("bessel_i1", S.i1, jax="scipy.special.i1")
bessel_i1e = unary("bessel_i1e", S.i1e, jax="lax.bessel_i1e")
bessel_j0 = unary("bessel_j0", S.bessel_j0)
bessel_j1 = unary("bessel_j1", S.bessel_j1)
bessel_y0 = unary("bessel_y0", S.bessel_y0)
bessel_y1 = unary("bessel_y1", S.bessel_y1)
modified_bessel_i0 = unary("modified_bessel_i0", S.modified_bessel_i0)
modified_bessel_i1 = unary("modified_bessel_i1", S.modified_bessel_i1)
modified_bessel_k0 = unary("modified_bessel_k0", S.modified_bessel_k0)
modified_bessel_k1 = unary("modified_bessel_k1", S.modified_bessel_k1)
scaled_modified_bessel_k0 = unary("scaled_modified_bessel_k0", S.scaled_modified_bessel_k0)
scaled_modified_bessel_k1 = unary("scaled_modified_bessel_k1", S.scaled_modified_bessel_k1)
spherical_bessel_j0 = unary("spherical_bessel_j0", S.spherical_bessel_j0)
airy_ai = unary("airy_ai", S.airy_ai)
ndtri = unary("ndtri", S.ndtri, jax="scipy.special.ndtri")
log_ndtr = unary("log_ndtr", S.log_ndtr, jax="scipy.special.log_ndtr")
erfcx = unary("erfcx", S.erfcx)
signbit = unary("signbit", torch.signbit, jax="signbit", nvfuser="signbit")
angle = unary("angle", torch.angle, jax="angle", doc="the argument of x: 0 or pi for a real x (NaN stays NaN)")
isfinite = unary("isfinite", torch.isfinite, jax="isfinite", nvfuser="isfinite")
zeta = binary("zeta", S.zeta, jax="scipy.special.zeta", doc="Hurwitz zeta(x, q)")
igamma = binary("igamma", torch.igamma, jax="lax.igamma", doc="regularized lower incomplete gamma P(a, x)")
igammac = binary("igammac", torch.igammac, jax="lax.igammac", doc="regularized upper incomplete gamma Q(a, x)")
nextafter = binary("nextafter", torch.nextafter, jax="nextafter", nvfuser="nextafter")
hypot = binary("hypot", torch.hypot, jax="hypot")
copysign = binary("copysign", torch.copysign, jax="copysign")
fmax = binary("fmax", torch.fmax, jax="fmax", doc="maximum that ignores a NaN operand")
fmin = binary("fmin", torch.fmin, jax="fmin", doc="minimum that ignores a NaN operand")
POLYNOMIALS = {name: binary(name, getattr(S, name), doc="the degree-n polynomial at x") for name in (
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p")}

polygamma = declare("polygamma", ELEMENTWISE, "x", n=Attr("int"), doc="the n-th derivative of digamma")
meaning(polygamma)(lambda a, x: elementwise(lambda t: torch.polygamma(a["n"], t))(a, x))
frexp = from_aten("frexp", ELEMENTWISE, torch.ops.aten.frexp.Tensor, doc="mantissa and exponent: x = m * 2^e")


# --- XLA and lax have these as primitives too ---------------------------------------------------
def _cbrt(x):
    return torch.sign(x) * torch.abs(x).pow(1.0 / 3.0)


cbrt = unary("cbrt", _cbrt, jax="cbrt", doc="real cube root")


@lowering(polygamma, "jax")
def _polygamma_jax(a, x):
    return lax().polygamma(jnp().asarray(a["n"], x.dtype), x)


def _betainc(a, b, x):
    """torch has no incomplete beta function: scipy's, on the CPU, in the operands' promoted dtype."""
    from scipy import special

    a, b, x = torch.broadcast_tensors(a, b, x)
    dtype = torch.promote_types(torch.promote_types(a.dtype, b.dtype), x.dtype)
    out = special.betainc(*(t.detach().cpu().to(torch.float64).numpy() for t in (a, b, x)))
    return torch.from_numpy(out).to(device=x.device, dtype=dtype)


betainc = declare("betainc", ELEMENTWISE, "a b x", doc="regularized incomplete beta function I_x(a, b)")
meaning(betainc)(elementwise(_betainc))
lowers(betainc, "jax", "scipy.special.betainc")
