"""What the meanings share: dtype names, literal operands as tensors, the elementwise wrapper.

Meanings preserve dtypes: an op computes in its operands' dtypes (`irlens.backends.inductor.lower` runs them
in the graph's dtypes); the interpreter hands them float64 values.
"""
from __future__ import annotations

from typing import Callable

import torch

from irlens.dtypes import TORCH_DTYPES

F64 = torch.float64


def torch_dtype(name: str) -> torch.dtype:
    if name not in TORCH_DTYPES:
        raise ValueError(f"no torch dtype for {name!r}")
    return TORCH_DTYPES[name]


def scalar_tensor(v, like: torch.Tensor | None, device: str | None = None):
    """A literal operand as a 0-d tensor. A float is float64 (a 0-d operand does not promote a
    tensor operand, and the constant keeps its precision), unless the op's floating operand is
    0-d itself: then it takes that one's dtype, so that a float32 graph stays float32. It lives on
    `like`'s device, else on `device`."""
    if isinstance(v, torch.Tensor) or v is None:
        return v
    device = like.device if like is not None else device
    if isinstance(v, float):
        return torch.tensor(v, dtype=like.dtype if like is not None and like.dim() == 0 else F64, device=device)
    return torch.tensor(v, dtype=torch.bool if isinstance(v, bool) else torch.int64, device=device)


# uint64 is not widened: int64 holds its values past 2**63 only as negatives, which compare wrongly
_WIDE_UNSIGNED = (torch.uint16, torch.uint32)


def elementwise(fn: Callable) -> Callable:
    """A torch function of tensors as a meaning: literals become 0-d tensors. An op of literals
    only computes where a lowering says (`a["device"]`, see irlens.lowering.node_attrs), else on the CPU.
    torch computes next to nothing on uint16/32: such operands are computed on in int64 and an
    integer result wrapped back to their dtype (as the unsigned arithmetic wraps)."""
    def run(a, *xs):
        like = next((x for x in xs if isinstance(x, torch.Tensor) and x.is_floating_point()), None)
        args = [scalar_tensor(x, like, a.get("device")) for x in xs]
        unsigned = next((t.dtype for t in args if isinstance(t, torch.Tensor) and t.dtype in _WIDE_UNSIGNED), None)
        if unsigned is None:
            return fn(*args)
        out = fn(*[t.to(torch.int64) if isinstance(t, torch.Tensor) and t.dtype in _WIDE_UNSIGNED else t
                   for t in args])
        return out.to(unsigned) if out.dtype == torch.int64 else out
    run.__name__ = getattr(fn, "__name__", "elementwise")
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
    """A meaning `fn(a, x, ...)` whose torch kernels lack uint16/32 (matmuls, reductions,
    scans, selections; `bools`: bool too): such a first operand, and the others of its dtype,
    are computed on in int64 and the integer result (of several, the first: the values beside
    indices) cast back to its dtype (wrapping, as unsigned arithmetic does; nonzero is True)."""
    kinds = (*_WIDE_UNSIGNED, torch.bool) if bools else _WIDE_UNSIGNED

    def run(a, x, *rest):
        if not isinstance(x, torch.Tensor) or x.dtype not in kinds:
            return fn(a, x, *rest)
        dtype = x.dtype
        wide = [t.to(torch.int64) if isinstance(t, torch.Tensor) and t.dtype == dtype else t for t in (x, *rest)]
        out = fn(a, *wide)
        back = lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == torch.int64 else t  # noqa: E731
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
