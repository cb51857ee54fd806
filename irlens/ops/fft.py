"""Fourier transforms (as JAX's lax.fft and ATen's _fft_* have them) and the complex conjugate.
Their values are complex: the interpreter carries them as complex128."""
from __future__ import annotations

import torch

from irlens.ops.core import DATA_MOVEMENT, ELEMENTWISE, OTHER, declare, from_aten, meaning
from irlens.ops.elementwise import unary

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
meaning(complex_)(lambda a, re, im: torch.complex(re, im))
