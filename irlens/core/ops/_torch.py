"""What the meanings share: dtype names, literal operands as tensors, the elementwise wrapper.

Meanings preserve dtypes: an op computes in its operands' dtypes (`irlens.backends.inductor.lower` runs them
in the graph's dtypes); the interpreter hands them float64 values.
"""
from __future__ import annotations

from typing import Callable

import torch

from irlens.core.dtypes import TORCH_DTYPES

F64 = torch.float64


def torch_dtype(name: str) -> torch.dtype:
    if name not in TORCH_DTYPES:
        raise ValueError(f"no torch dtype for {name!r}")
    return TORCH_DTYPES[name]


def scalar_tensor(v, like: torch.Tensor | None, device: str | None = None):
    """A literal operand as a 0-d tensor. A float is float64 (a 0-d operand does not promote a
    tensor operand, and the constant keeps its precision), unless the op's floating operand is
    0-d itself: then it takes that one's dtype, so that a float32 graph stays float32. An int is
    int64, unless `like` is a 0-d integer operand it fits: then its dtype, as a Python int (or a
    JAX weakly typed one) leaves an int32 scalar int32. It lives on `like`'s device, else on `device`."""
    if isinstance(v, torch.Tensor) or v is None:
        return v
    device = like.device if like is not None else device
    scalar_like = like is not None and like.dim() == 0
    if isinstance(v, float):
        return torch.tensor(v, dtype=like.dtype if scalar_like and like.is_floating_point() else F64, device=device)
    if isinstance(v, bool):
        return torch.tensor(v, dtype=torch.bool, device=device)
    narrow = scalar_like and _fits(v, like.dtype)
    return torch.tensor(v, dtype=like.dtype if narrow else torch.int64, device=device)


def _fits(v: int, dtype: torch.dtype) -> bool:
    if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool:
        return False
    info = torch.iinfo(dtype)
    return info.min <= v <= info.max


# torch computes next to nothing on uint16/32: such operands are computed on in int64 (every
# value fits) and an integer result wrapped back to their dtype, as unsigned arithmetic wraps.
_WIDE_UNSIGNED = (torch.uint16, torch.uint32)
# uint64 cannot be widened: its values past 2**63 do not fit int64. It is carried in int64's
# bits instead (a view): two's complement arithmetic is arithmetic modulo 2**64, so these
# ops give the uint64 bits exactly on every value. Any other op reads a value's order or
# magnitude (comparisons, max, division, conversions): the bits read as int64 are the uint64
# value only below 2**63, and a value past it is refused, not misread.
UINT64_EXACT = (torch.add, torch.sub, torch.mul, torch.neg, torch.bitwise_and, torch.bitwise_or, torch.bitwise_xor,
                torch.bitwise_not, torch.bitwise_left_shift, torch.eq, torch.ne, torch.where)


def as_int64_bits(tensors: list, modular: bool, what: str) -> list:
    """`tensors` with each uint64 one viewed as int64 (the same bits); unless the op is
    `modular` (exact modulo 2**64), a uint64 value of 2**63 or more raises."""
    out = []
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.dtype == torch.uint64:
            t = t.view(torch.int64)
            if not modular and bool((t < 0).any()):
                raise NotImplementedError(f"{what} of uint64 values of 2**63 or more: the interpreter carries "
                                          "uint64 in int64's bits, exact there only for wrap-around arithmetic "
                                          "and bitwise ops")
        out.append(t)
    return out


def _from_int64_bits(t):
    return t.view(torch.uint64) if isinstance(t, torch.Tensor) and t.dtype == torch.int64 else t


def elementwise(fn: Callable) -> Callable:
    """A torch function of tensors as a meaning: literals become 0-d tensors. An op of literals
    only computes where a lowering says (`a["device"]`, see irlens.backends.lowering.node_attrs), else on the CPU.
    uint16/32 operands are computed on in int64, uint64 ones in int64's bits (see above)."""
    name = getattr(fn, "__name__", "elementwise")

    def run(a, *xs):
        tensors = [x for x in xs if isinstance(x, torch.Tensor)]
        like = next((x for x in tensors if x.is_floating_point()), None)
        if like is None and tensors and all(x.dim() == 0 for x in tensors):  # integer scalars only
            like = tensors[0]
        args = [scalar_tensor(x, like, a.get("device")) for x in xs]
        dtypes = {t.dtype for t in args if isinstance(t, torch.Tensor)}
        if torch.uint64 in dtypes:
            return _from_int64_bits(fn(*as_int64_bits(args, fn in UINT64_EXACT, name)))
        unsigned = next((d for d in _WIDE_UNSIGNED if d in dtypes), None)
        if unsigned is None:
            return fn(*args)
        out = fn(*[t.to(torch.int64) if isinstance(t, torch.Tensor) and t.dtype in _WIDE_UNSIGNED else t
                   for t in args])
        return out.to(unsigned) if out.dtype == torch.int64 else out
    run.__name__ = name
    return run


def with_grad(fn: Callable, n_diff: int) -> Callable:
    """A backward op's meaning as autograd of its forward meaning `fn(a, *args)`: the gradients
    of the first n_diff args, for the cotangent g. Grad mode is on even where the caller runs
    the table under no_grad (a lowered graph does)."""
    @torch.enable_grad()
    def run(a, g, *args):
        leaves = [t.detach().requires_grad_(True) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                  for t in args]
        out = fn(a, *leaves)
        diff = [t for t in leaves[:n_diff] if isinstance(t, torch.Tensor) and t.requires_grad]
        return torch.autograd.grad(out, diff, g, allow_unused=True)
    return run


def widened(fn: Callable, bools: bool = False) -> Callable:
    """A meaning `fn(a, x, ...)` whose torch kernels lack uint16/32/64 (matmuls, reductions,
    scans, selections; `bools`: bool too): such a first operand, and the others of its dtype,
    are computed on in int64 and the integer result (of several, the first: the values beside
    indices) cast back to its dtype (wrapping, as unsigned arithmetic does; nonzero is True).
    uint64 goes in int64's bits, its values below 2**63 (they order and add as int64 does)."""
    kinds = (*_WIDE_UNSIGNED, torch.uint64, torch.bool) if bools else (*_WIDE_UNSIGNED, torch.uint64)

    def run(a, x, *rest):
        if not isinstance(x, torch.Tensor) or x.dtype not in kinds:
            return fn(a, x, *rest)
        dtype = x.dtype
        if dtype == torch.uint64:
            wide = as_int64_bits([x, *rest], False, getattr(fn, "__name__", "a reduction"))
            back = _from_int64_bits
        else:
            wide = [t.to(torch.int64) if isinstance(t, torch.Tensor) and t.dtype == dtype else t for t in (x, *rest)]
            back = lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.int64 else t  # noqa: E731
        out = fn(a, *wide)
        return (back(out[0]), *out[1:]) if isinstance(out, tuple) else back(out)  # (values, indices ...)
    run.__name__ = getattr(fn, "__name__", "widened")
    return run


def dims_of(a: dict, x: torch.Tensor) -> list[int]:
    """A reduction's `dims` attr; None means every dim."""
    dims = a.get("dims")
    return list(range(x.dim())) if dims is None else list(dims)


def jnp():
    import jax.numpy

    return jax.numpy


def lax():
    from jax import lax as jax_lax

    return jax_lax


# canonical dtype name -> nvFuser's DataType member
NV_DTYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Int",
             "int32": "Int32", "bool": "Bool"}


def nv_dtype(nv, dtype: str):
    return getattr(nv.DataType, NV_DTYPES[dtype])
