"""Fourier transforms (as JAX's lax.fft and ATen's _fft_* have them) and the complex conjugate.
Their values are complex: the interpreter carries them as complex128.

ATen's `normalization` scales a transform by 1 (0), 1/sqrt(n) (1) or 1/n (2), whichever its
direction; jax.numpy's `norm` names where 1/n goes: "backward" on the inverse, "forward" on the
forward, "ortho" 1/sqrt(n) on both. So a forward transform takes NORM[normalization] and an inverse
one INVERSE_NORM[normalization]."""
from __future__ import annotations

import torch

from irlens.core.ops._torch import jnp, lax
from irlens.core.ops.core import DATA_MOVEMENT, ELEMENTWISE, OTHER, declare, from_aten, lowering, meaning
from irlens.core.ops.elementwise import unary

A = torch.ops.aten
fft_r2c = from_aten("fft_r2c", OTHER, A._fft_r2c.default, doc="real -> complex DFT over dim (onesided: half the spectrum)")
fft_c2r = from_aten("fft_c2r", OTHER, A._fft_c2r.default, doc="complex (half spectrum) -> real inverse DFT over dim")
fft_c2c = from_aten("fft_c2c", OTHER, A._fft_c2c.default, doc="complex DFT over dim, forward or inverse")
conj = unary("conj", torch.conj_physical, jax="conj", doc="the complex conjugate (the identity on real values)")
real = unary("real", torch.real, jax="real", doc="the real part (x itself for a real x)")
imag = unary("imag", lambda x: torch.imag(x) if x.is_complex() else torch.zeros_like(x), jax="imag",
             doc="the imaginary part (0 for a real x)")
view_as_real = declare("view_as_real", DATA_MOVEMENT, "x", doc="a complex x as [..., 2] real pairs")
view_as_complex = declare("view_as_complex", DATA_MOVEMENT, "x", doc="[..., 2] real pairs as a complex x")
complex_ = declare("complex", ELEMENTWISE, "real imag", doc="real + i * imag")
meaning(view_as_real)(lambda a, x: torch.view_as_real(x).clone())
meaning(view_as_complex)(lambda a, x: torch.view_as_complex(x.contiguous()).clone())
# either part may be a literal (a complex constant read from HLO text)
meaning(complex_)(lambda a, re, im: torch.complex(*torch.broadcast_tensors(
    torch.as_tensor(re, dtype=torch.float64), torch.as_tensor(im, dtype=torch.float64))))

NORM = ("backward", "ortho", "forward")
INVERSE_NORM = ("forward", "ortho", "backward")


@lowering(fft_c2c, "jax")
def _fft_c2c_jax(a, x):
    fft = jnp().fft
    axes = tuple(a["dim"])
    if a["forward"]:
        return fft.fftn(x, axes=axes, norm=NORM[a["normalization"]])
    return fft.ifftn(x, axes=axes, norm=INVERSE_NORM[a["normalization"]])


@lowering(fft_r2c, "jax")
def _fft_r2c_jax(a, x):
    fft, norm = jnp().fft, NORM[a["normalization"]]
    axes = tuple(a["dim"])  # onesided: half the spectrum along the last of them, as rfftn gives
    return fft.rfftn(x, axes=axes, norm=norm) if a["onesided"] else fft.fftn(x, axes=axes, norm=norm)


@lowering(fft_c2r, "jax")
def _fft_c2r_jax(a, x):
    axes = tuple(a["dim"])  # the other transformed dims keep their sizes; the last becomes last_dim_size
    sizes = [x.shape[d] for d in axes[:-1]] + [a["last_dim_size"]]
    return jnp().fft.irfftn(x, s=sizes, axes=axes, norm=INVERSE_NORM[a["normalization"]])


@lowering(view_as_real, "jax")
def _view_as_real_jax(a, x):
    return jnp().stack([jnp().real(x), jnp().imag(x)], axis=-1)


@lowering(view_as_complex, "jax")
def _view_as_complex_jax(a, x):
    return lax().complex(x[..., 0], x[..., 1])


@lowering(complex_, "jax")
def _complex_jax(a, re, im):
    return lax().complex(re, im)
