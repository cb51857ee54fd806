"""Numerics: a backend's named results against the float64 reference, with dtype-aware tolerances.

The error of one result is norm-wise, ||result - reference|| / ||reference|| (computed in
float64; an all-zero reference falls back to the absolute norm). Norm-wise rather than
element-wise so that a few tiny reference values (near-zeros of a GELU, a softmax's far tail)
do not dominate. A NaN or Inf where the reference is finite never passes.

Tolerances hold for eager torch in the same dtype too (eager float32 is not float64):

    dtype      fwd     fwdbwd   why
    float64    1e-9    1e-9     only reassociation differs
    float32    1e-4    5e-4     eager float32 is ~1e-7..1e-6; fused/reordered reductions and
                                approximate transcendentals (XLA's tanh on CPU) stay well below
    float16    2e-3    1e-2     10-bit mantissa: rounding of the output alone is ~3e-4
    bfloat16   2e-2    5e-2     7-bit mantissa: rounding of the output alone is ~2e-3, and
                                backends differ in where they round intermediates

fwdbwd is looser: the loss reduces over every element, and weight gradients reduce over the
whole batch and sequence, so rounding accumulates over long dimensions.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from irlens.errors import UsageError

TOLERANCES = {
    "float64": {"fwd": 1e-9, "fwdbwd": 1e-9},
    "float32": {"fwd": 1e-4, "fwdbwd": 5e-4},
    "float16": {"fwd": 2e-3, "fwdbwd": 1e-2},
    "bfloat16": {"fwd": 2e-2, "fwdbwd": 5e-2},
}


def tolerance(dtype: str, mode: str) -> float:
    if dtype not in TOLERANCES:
        raise ValueError(f"no tolerance for dtype {dtype!r}; known: {', '.join(TOLERANCES)}")
    return TOLERANCES[dtype][mode]


def rel_err(result: torch.Tensor, reference: torch.Tensor) -> float:
    """||result - reference|| / ||reference|| in float64; inf when the result is not finite."""
    a = result.detach().to(device=reference.device, dtype=torch.float64)
    b = reference.detach().to(torch.float64)
    if not torch.isfinite(a).all():
        return math.inf
    ref_norm = torch.linalg.vector_norm(b).item()
    err = torch.linalg.vector_norm(a - b).item()
    return err / ref_norm if ref_norm > 0 else err


@dataclass
class Comparison:
    """The verdict on one set of named results."""

    tol: float
    errors: dict[str, float] = field(default_factory=dict)  # result name -> relative error
    problems: list[str] = field(default_factory=list)  # why it does not match, one line each

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def max_rel_err(self) -> float | None:
        finite = [e for e in self.errors.values() if math.isfinite(e)]
        if len(finite) < len(self.errors):
            return math.inf
        return max(finite) if finite else None

    @property
    def reason(self) -> str:
        return "; ".join(self.problems)


def compare_results(results: dict[str, torch.Tensor], reference: dict[str, torch.Tensor], tol: float) -> Comparison:
    """Compare by name; a missing or extra name, a shape change or an error above `tol` is a problem."""
    cmp = Comparison(tol)
    missing = [n for n in reference if n not in results]
    extra = [n for n in results if n not in reference]
    if missing:
        cmp.problems.append(f"missing results: {', '.join(missing)}")
    if extra:
        cmp.problems.append(f"unexpected results: {', '.join(extra)}")
    for name, ref in reference.items():
        if name not in results:
            continue
        got = results[name]
        if got is None or ref is None:
            if (got is None) != (ref is None):
                cmp.problems.append(f"{name}: {'no value' if got is None else 'a value'} where the reference has "
                                    f"{'none' if ref is None else 'one'}")
            continue
        if tuple(got.shape) != tuple(ref.shape):
            cmp.problems.append(f"{name}: shape {tuple(got.shape)} vs reference {tuple(ref.shape)}")
            continue
        err = rel_err(got, ref)
        cmp.errors[name] = err
        if not math.isfinite(err):
            cmp.problems.append(f"{name}: NaN or Inf in the result")
        elif not err <= tol:
            cmp.problems.append(f"{name}: rel err {err:.2e} > tol {tol:.0e}")
    return cmp


class TwinMismatch(UsageError):
    """A workload's JAX twin disagrees with its torch module (or fails) on the same inputs and weights."""


def check_jax_twin(inst, torch_outputs: dict[str, torch.Tensor]) -> None:
    """Run `inst`'s JAX twin on the instance's inputs and weights and compare its outputs by name
    with `torch_outputs` (the float64 forward reference: out0, out1, ...)."""
    import numpy as np

    from irlens.workload import as_tuple

    import jax

    from irlens.frontends.jax import MATMUL_PRECISION

    name = inst.workload.name
    try:
        with jax.default_matmul_precision(MATMUL_PRECISION):  # the precision the xla backend runs at
            outs = as_tuple(inst.jax_fn()(inst.jax_params(), *inst.jax_inputs()))
        twin = {f"out{i}": torch.from_numpy(np.asarray(o, dtype=np.float64)) for i, o in enumerate(outs)}
    except Exception as e:
        raise TwinMismatch(f"the JAX twin of workload {name!r} failed on the example inputs: {type(e).__name__}: {e}") from e
    if len(twin) != len(torch_outputs):
        raise TwinMismatch(f"the JAX twin of workload {name!r} returns {len(twin)} output(s), "
                           f"the torch module {len(torch_outputs)}")
    # JAX computes in float32 unless jax_enable_x64 is set, even for float64 inputs.
    tol = max(tolerance(inst.dtype, "fwd"), tolerance("float32", "fwd"))
    cmp = compare_results(twin, {k: v.cpu() for k, v in torch_outputs.items()}, tol)
    if not cmp.ok:
        raise TwinMismatch(f"the JAX twin of workload {name!r} disagrees with its torch module on the same inputs "
                           f"and weights (preset {inst.preset}, {inst.dtype}): {cmp.reason}")
