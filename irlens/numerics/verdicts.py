"""Numerics: a backend's named results against the float64 reference, with dtype-aware tolerances.

The error of one result is norm-wise, ||result - reference|| / ||reference|| (computed in
float64; an all-zero reference falls back to the absolute norm). Norm-wise rather than
element-wise so that a few tiny reference values (near-zeros of a GELU, a softmax's far tail)
do not dominate. A NaN or Inf is compared by value: where the reference holds the same (NaN where
NaN, the same infinity) it is the same value and left out of both norms (a drawn BatchNorm
running variance below zero makes NaN in float64 as in float32); a NaN or Inf where the reference
holds another value, or a finite value where the reference has a NaN or Inf, never passes.

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

A flat tolerance cannot tell a compiler's error from the dtype's. In bfloat16 a near-cancelling
loss (the mean of cubes of a normalized output) is off by 6 % in eager itself, while a compiled
module 1.5 % off everywhere stays under 2e-2. So, as the accuracy checker of torch.compile's
benchmark suites does, each result is also judged against eager's own error in the same dtype
(`Reference.eager_errors`, computed beside the float64 reference on the same weights and inputs):

    ok  when  err <= k x eager_err + max(floor, LOSS_ROUNDINGS x u x condition)   (`allowed_error`)

k and the floor are per dtype (CRITERIA); u is the dtype's unit roundoff. The floor covers a
result that eager happens to compute almost exactly (a copy, an index) where a compiler rounds
once more. `condition` is 0 for every result but the loss: how far the loss moves, relative to
itself, when each output it reduces is off by one relative unit independently (as rounding
leaves them; `irlens.matrix.conditions.loss_condition`, in float64). A near-cancelling loss is so allowed
the error its terms' rounding makes, even where eager's own error came out small by luck
(one of eight seeds of the mean of cubes: eager 4e-4, inductor 2.8e-2, thunder 5.6e-2).
In float32 the flat tolerance stays an upper bound (a result must pass both); in float16 and
bfloat16 it does not bound (eager itself exceeds it on near-cancelling results).

Ill-conditioned checks (`ill_conditioned`): where the float64 value itself is noise-sized, no
compiler can be held to it. A gradient the loss barely sees (its condition, |L| / (||g|| ||v||),
over 1/u: a conv bias before a train-mode BatchNorm, attention's key bias, both exactly zero in
truth), a result eager's own error puts over the flat tolerance where that caps (float32: BERT's
embedding gradient under a mean of squares of a LayerNorm output, eager 1.8e6 off), or in any
dtype one eager's own error is 1 or more of, is named in the row, and judged against eager only
(no cap) plus the error the loss's own rounding hides (the condition's floor). Where
eager's own error is 1 or more, the result has no correct digit in the run's dtype: two backends'
roundings are then two draws of noise, and only their order of magnitude can be held to
(NOISE_ORDER x eager's error; on the zoo's train-mode EfficientNet, Inductor's running means of
zero-mean channels were 2.03 x eager's error). A backend really off there is still caught: it is
orders beyond eager and the floor. Where eager's
own error is not known (eager failed or overflowed, or no precision above the run's ran: a
float64 run's reference is eager float64 itself) the flat tolerance alone judges. k, the
floors and LOSS_ROUNDINGS come from measurements: scripts/numerics_margins.py (docs/numerics.md).

Noise-sized gradients (`noise_scales`): a parameter's gradient that is zero in exact arithmetic
(a bias feeding a train-mode BatchNorm: the batch mean cancels it) is rounding noise in float64 too,
and its relative error is noise over noise (the zoo's ReXNet: a float64 norm of 2.6e-14 beside 0.47
for the weight of the same layer, a backend at 3.9e8 against eager's 3.8e7). Where its float64
norm is under the run dtype's unit roundoff of the largest gradient of the same module (its
siblings: weight and bias), it is judged by its size: its absolute error against that norm, within
the flat tolerance (as if it were one more element of the module's gradient), or NOISE_ORDER x
eager's own where eager is noisier than that. It is named in the row like an ill-conditioned check
(why: noise-sized). A gradient with no sibling (an input's) keeps the condition's rule above.

Vacuous checks (`Comparison.vacuous`): a result whose float64 reference and whose value in the run
are both exactly zero everywhere passes whatever the backend computed before it (timm's MLP-Mixer
zero-initializes its classifier head: its output, loss and every gradient are exactly 0); so does
one whose every element is a NaN or Inf both share, zero, or beyond the run dtype's range (nothing
compared). Each such
result is named; a row whose every output (or every result) is vacuous compared nothing
(`Row.compared_nothing`), and says so. One all-zero gradient among many (a parameter the loss
truly does not reach) is common and legitimate: it is named in the notes, not an alarm.

Values beyond the run dtype's range (`Comparison.beyond_range`): where the float64 reference
exceeds what the run's dtype holds (GraphNet's torchvision/mnasnet0_5 on random weights ends at
1.3e81, past float32's 3.4e38), no value in that dtype is right: eager overflows to NaN or Inf, and
a stack whose clamp turns a NaN into a bound returns finite numbers; which one it gets tells how NaN
flows through its ops, not whether it computes right. Those elements are not judged, in any stack,
and the row counts them (`notes.beyond_range`); where they are all a result has, it compared
nothing (vacuous).

Buffers a step updates in place (`buffer:<name>`): where the reference updated one and the run
did not, the run's value is the buffer as it was before the step (`before`): a wrong value, judged
as one ("buffer:<name> not updated (the backend left it as it was)", a mismatch), never missing
output. One the run updated and the reference did not is named the same way.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import torch

from irlens.core.dtypes import TORCH_DTYPES
from irlens.errors import UsageError
from irlens.wording import plural

TOLERANCES = {
    "float64": {"fwd": 1e-9, "fwdbwd": 1e-9},
    "float32": {"fwd": 1e-4, "fwdbwd": 5e-4},
    "float16": {"fwd": 2e-3, "fwdbwd": 1e-2},
    "bfloat16": {"fwd": 2e-2, "fwdbwd": 5e-2},
}


@dataclass(frozen=True)
class Criterion:
    """How far a result may be from the reference, given eager's own error in the same dtype."""

    k: float  # a multiple of eager's own error
    floor: float  # added to it
    capped: bool  # the flat tolerance bounds too


CRITERIA = {
    "float32": Criterion(2.0, 1e-5, capped=True),
    "float16": Criterion(3.0, 1e-3, capped=False),
    "bfloat16": Criterion(3.0, 4e-3, capped=False),
}
LOSS_ROUNDINGS = 4  # the roundings a loss's terms may carry, each of one unit roundoff (see above)
NOISE_ORDER = 10.0  # a result eager gets no digit of: held to eager's order of magnitude (see above)


@dataclass(frozen=True)
class Bound:
    """The error one result may have, and how it came about (for the reason a row gives)."""

    value: float
    why: str


def unit_roundoff(dtype: str) -> float:
    return torch.finfo(TORCH_DTYPES[dtype]).eps / 2


def allowed_error(dtype: str, mode: str, eager_err: float | None, condition: float = 0.0,
                  floor: float | None = None, ill: bool = False, scale: float | None = None) -> Bound:
    """What a result may differ from the reference: k x eager's own error + the larger of the
    floor and the loss's rounding (LOSS_ROUNDINGS x u x `condition`), capped by the flat
    tolerance in float32; the flat tolerance alone where eager's error is not known (None) or
    not finite (see the module's docstring). `floor` replaces the dtype's (one op's check,
    irlens.conformance, takes its own rtol: the dtype's floor is sized for whole models). An
    `ill`-conditioned result is not capped, and without eager's error gets the rounding floor.
    A noise-sized gradient (`scale`: its module's largest gradient norm over its own, from
    `noise_scales`) may be off by the flat tolerance of that norm, or NOISE_ORDER x eager's own
    error where that is more: relative bounds that judge its absolute error."""
    flat = tolerance(dtype, mode)
    known = eager_err is not None and math.isfinite(eager_err)
    if scale is not None:
        value = flat * scale
        if known and NOISE_ORDER * eager_err > value:
            return Bound(NOISE_ORDER * eager_err, f"{NOISE_ORDER:g} x eager's {eager_err:.1e} (noise-sized)")
        return Bound(value, f"{flat:.0e} of its module's largest gradient norm ({scale:.1e} x its own: noise-sized)")
    if not ill and (not known or dtype not in CRITERIA):
        return Bound(flat, f"tol {flat:.0e}")
    c = CRITERIA.get(dtype, Criterion(0.0, 0.0, capped=False))  # float64: the rounding floor alone
    floor = max(c.floor if floor is None else floor, LOSS_ROUNDINGS * unit_roundoff(dtype) * condition)
    if not known:  # ill-conditioned, eager's own error unknown: what the loss's rounding hides
        return Bound(floor, f"the loss's rounding {floor:.1e} (ill-conditioned)")
    k = max(c.k, NOISE_ORDER) if ill and eager_err >= 1.0 else c.k  # no correct digit: the same noise
    value = k * eager_err + floor
    if c.capped and flat < value and not ill:
        return Bound(flat, f"tol {flat:.0e}")
    return Bound(value, f"{k:g} x eager's {eager_err:.1e} + {floor:.1e}{' (ill-conditioned)' if ill else ''}")


def ill_conditioned(names, dtype: str, mode: str, eager_errors: dict[str, float] | None,
                    conditions: dict[str, float] | None = None,
                    scales: dict[str, float] | None = None) -> dict[str, str]:
    """The results whose check is ill-conditioned, each with why (see the module docstring): a
    noise-sized gradient (`scales`, see `noise_scales`), a gradient the loss barely sees
    (condition over 1/u of the run's dtype), eager's own error over the flat tolerance where that
    caps (float32), or in any dtype eager's own error of 1 or more (no correct digit: bfloat16 does
    not cap, and XLA's running mean of a zero-mean channel, at 3.07 x eager's 4.2e11 on the H200,
    was called a mismatch at k = 3)."""
    u, flat, c = unit_roundoff(dtype), tolerance(dtype, mode), CRITERIA.get(dtype)
    found = {}
    for n in names:
        condition = (conditions or {}).get(n, 0.0)
        eager_err = (eager_errors or {}).get(n)
        if n in (scales or {}):
            found[n] = (f"noise-sized: the float64 gradient vanishes beside its module's largest gradient "
                        f"({1 / scales[n]:.1e} of its norm, under {dtype}'s unit roundoff {u:.1e}): judged by its "
                        f"absolute error against that norm, not by its relative error")
        elif n.startswith("grad:") and condition * u > 1:
            found[n] = (f"the float64 gradient vanishes: a relative unit of the value moves the loss by "
                        f"{1 / condition:.1e}, under {dtype}'s unit roundoff {u:.1e}")
        elif eager_err is None or not math.isfinite(eager_err):
            continue
        elif c is not None and c.capped and eager_err > flat:
            found[n] = f"eager's own {dtype} error {eager_err:.1e} is over the tolerance {flat:.0e}"
        elif eager_err >= 1.0:
            found[n] = f"eager's own {dtype} error {eager_err:.1e} is 1 or more: no correct digit"
    return found


def allowed_errors(names, dtype: str, mode: str, eager_errors: dict[str, float] | None,
                   conditions: dict[str, float] | None = None, ill: dict[str, str] | None = None,
                   scales: dict[str, float] | None = None) -> dict[str, Bound]:
    """`allowed_error` for each result name; eager's errors None: the flat tolerance for all but
    the `ill`-conditioned and noise-sized (`scales`) results."""
    return {n: allowed_error(dtype, mode, None if eager_errors is None else eager_errors.get(n),
                             (conditions or {}).get(n, 0.0), ill=n in (ill or {}), scale=(scales or {}).get(n))
            for n in names}


def noise_scales(results: dict[str, torch.Tensor | None], dtype: str) -> dict[str, float]:
    """The noise-sized gradients of a reference's `results` (see the module docstring): a
    parameter's gradient whose float64 norm is under `dtype`'s unit roundoff of the largest
    gradient of the same module (`grad:<module>.<name>`; an input's gradient has no module) ->
    that largest norm over its own (its own counted 1 where it is exactly zero, as `rel_err`
    then measures absolutely)."""
    norms = {n: torch.linalg.vector_norm(t.detach().double()).item() for n, t in results.items()
             if n.startswith("grad:") and not _INPUT_GRAD.fullmatch(n) and t is not None and t.is_floating_point()}
    norms = {n: v for n, v in norms.items() if math.isfinite(v)}  # a NaN or Inf sibling gives no scale
    u, scales = unit_roundoff(dtype), {}
    for name, own in norms.items():
        module = name.rpartition(".")[0]
        largest = max((v for s, v in norms.items() if s != name and s.rpartition(".")[0] == module), default=0.0)
        if largest > 0 and own <= u * largest:
            scales[name] = largest / (own or 1.0)
    return scales


_INPUT_GRAD = re.compile(r"grad:input\d+")  # irlens.workloads.workload.eager_step's names of the inputs' gradients


def judged_bounds(results, dtype: str, mode: str, eager_errors: dict[str, float] | None,
                  conditions: dict[str, float] | None = None,
                  scales: dict[str, float] | None = None) -> tuple[dict[str, str], dict[str, Bound]]:
    """How a cell is judged (compare, and the repro file of that cell): the ill-conditioned results
    with why, and each result's bound. `results`: the reference's (name -> tensor), whose
    noise-sized gradients are found here; or the names alone, with their `scales` given."""
    if scales is None and isinstance(results, dict):
        scales = noise_scales(results, dtype)
    ill = ill_conditioned(results, dtype, mode, eager_errors, conditions, scales)
    return ill, allowed_errors(results, dtype, mode, eager_errors, conditions, ill, scales)


def tolerance(dtype: str, mode: str) -> float:
    if dtype not in TOLERANCES:
        raise ValueError(f"no tolerance for dtype {dtype!r}; known: {', '.join(TOLERANCES)}")
    return TOLERANCES[dtype][mode]


SLICE = 1 << 24  # elements a float64 comparison converts at once: a GB-sized result never gets a whole float64 copy


def float64_slices(result: torch.Tensor, reference: torch.Tensor):
    """`result` and `reference` (one shape) flattened, slice by slice, in float64 on the result's
    device: the checks of a cell beside others on a GPU stay within a few hundred MB, and a
    reference kept on the host comes to the GPU a slice at a time."""
    a, b = result.detach().reshape(-1), reference.detach().reshape(-1)
    for i in range(0, max(b.numel(), 1), SLICE):
        yield a[i:i + SLICE].to(torch.float64), b[i:i + SLICE].to(device=a.device, dtype=torch.float64)


def held_by(dtype: torch.dtype) -> float:
    """The largest magnitude a result of `dtype` holds (inf for a dtype that is not floating)."""
    return torch.finfo(dtype).max if dtype.is_floating_point else math.inf


def beyond(reference: torch.Tensor, limit: float) -> torch.Tensor:
    """Where the reference is finite and larger than `limit` (`held_by` the run's dtype)."""
    return torch.isfinite(reference) & (reference.abs() > limit)


def _judged(a: torch.Tensor, b: torch.Tensor, limit: float, ref_norm: float) -> tuple[torch.Tensor, torch.Tensor, int]:
    """`a`, `b` with the elements where the reference lies beyond the run dtype's range zeroed (not
    judged, see the module docstring), and how many they are; a reference norm within the range
    has none, and costs no pass over it."""
    if ref_norm <= limit:  # a NaN norm (a NaN in the slice) says nothing: looked at element by element
        return a, b, 0
    out = beyond(b, limit)
    n = int(out.sum())
    return (a.masked_fill(out, 0.0), b.masked_fill(out, 0.0), n) if n else (a, b, 0)


def rel_err(result: torch.Tensor, reference: torch.Tensor) -> float:
    """||result - reference|| / ||reference|| in float64 over the finite elements. A NaN or Inf equal
    in both (NaN where NaN, +inf where +inf, -inf where -inf) is the same value, left out of both
    norms; one where the other holds another value (finite, or another non-finite) makes it inf.
    Where the reference lies beyond what the result's dtype holds, the element is left out too."""
    return _rel_err(result, reference)[0]


def _rel_err(result: torch.Tensor, reference: torch.Tensor) -> tuple[float, int]:
    """`rel_err`, and how many elements it left out as beyond the result dtype's range."""
    if result.shape == reference.shape:
        pairs = float64_slices(result, reference)
    else:  # they broadcast: compared whole
        pairs = [(result.detach().to(device=reference.device, dtype=torch.float64), reference.detach().to(torch.float64))]
    limit = held_by(result.dtype)
    errs, refs, left_out, out_of_place = [], [], 0, False
    for a, b in pairs:
        ref = torch.linalg.vector_norm(b).item()
        a, b, n = _judged(a, b, limit, ref)
        if n:  # its norm again, without them
            left_out += n
            ref = torch.linalg.vector_norm(b).item()
        err = torch.linalg.vector_norm(a - b).item()
        if not (math.isfinite(err) and math.isfinite(ref)):  # a NaN or Inf on either side: only then masked
            if not bool((_same_non_finite(a, b) | (torch.isfinite(a) & torch.isfinite(b))).all()):
                out_of_place = True  # the error is inf; the later slices still count what is left out
                continue
            err = torch.linalg.vector_norm(torch.where(torch.isfinite(a), a - b, 0.0)).item()
            ref = torch.linalg.vector_norm(torch.where(torch.isfinite(b), b, 0.0)).item()
        errs.append(err)
        refs.append(ref)
    if out_of_place:
        return math.inf, left_out
    ref_norm, err = math.hypot(*refs), math.hypot(*errs)  # the slices' norms joined without squaring them
    return (err / ref_norm if ref_norm > 0 else err), left_out


def _same_non_finite(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Where `a` and `b` hold the same value, NaN counted equal to NaN."""
    return (a == b) | (a.isnan() & b.isnan())


def non_finite_problem(result: torch.Tensor, reference: torch.Tensor) -> str:
    """Why `rel_err` of two same-shaped tensors is inf because of a NaN or Inf, one line with the
    elements counted; "" where no NaN or Inf is out of place (a norm beyond float64's range)."""
    stray = displaced = 0  # NaN or Inf in the result where the reference differs; finite where it is not
    limit = held_by(result.dtype)
    for a, b in float64_slices(result, reference):
        a, b, _ = _judged(a, b, limit, torch.linalg.vector_norm(b).item())
        finite = torch.isfinite(a)
        stray += int((~finite & ~_same_non_finite(a, b)).sum())
        displaced += int((finite & ~torch.isfinite(b)).sum())
    total = reference.numel()
    problems = []
    if stray:
        problems.append(f"NaN or Inf in the result ({elements_of(stray, total)}) where the reference has another value")
    if displaced:
        problems.append(f"finite values where the reference has NaN or Inf ({elements_of(displaced, total)})")
    return "; ".join(problems)


def elements_of(n: int, total: int) -> str:
    """ "12 of 4,096 elements" """
    return f"{n:,} of {total:,} {'element' if total == 1 else 'elements'}"


BUFFER = "buffer:"  # the results that are buffers a step updates in place (irlens.workloads.workload.eager_step)


def exactly_zero(t: torch.Tensor, limit: float = math.inf) -> bool:
    """Every element `rel_err` compares is 0 (an empty tensor too, and one whose every element is a
    NaN or Inf, or beyond `limit`, the run dtype's range, which it leaves out): a check against it
    cannot tell anything apart."""
    t = t.detach()
    return not bool(t.any()) or not bool((torch.isfinite(t) & (t != 0) & (t.abs() <= limit)).any())


@dataclass
class Comparison:
    """The verdict on one set of named results."""

    tol: float | dict[str, Bound]
    errors: dict[str, float] = field(default_factory=dict)  # result name -> relative error
    allowed: dict[str, float] = field(default_factory=dict)  # result name -> the error it may have
    problems: list[str] = field(default_factory=list)  # why it does not match, one line each
    past_bound: list[str] = field(default_factory=list)  # the results whose problem is an error past its bound
    vacuous: list[str] = field(default_factory=list)  # exactly zero in the reference and the run (see above)
    beyond_range: dict[str, str] = field(default_factory=dict)  # result name -> its elements not judged (see above)

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

    @property
    def only_past_bound(self) -> bool:
        """It mismatches, and every problem is a finite error past its bound: nothing missing,
        extra or misshapen, no NaN or Inf, no buffer left as it was (irlens.matrix.draws)."""
        return bool(self.problems) and len(self.problems) == len(self.past_bound)


def compare_results(results: dict[str, torch.Tensor], reference: dict[str, torch.Tensor],
                    tol: float | dict[str, Bound], before: dict[str, torch.Tensor] | None = None) -> Comparison:
    """Compare by name; a missing or extra name, a shape change or an error above its bound (`tol`,
    or per name `tol[name]`, see `allowed_errors`) is a problem. A buffer the reference updated and
    the run did not is a wrong value: judged as its value before the step (`before`, by buffer
    name: the state the step started from), where known (see the module docstring)."""
    cmp = Comparison(tol)
    missing = [n for n in reference if n not in results and not n.startswith(BUFFER)]
    extra = [n for n in results if n not in reference and not n.startswith(BUFFER)]
    if missing:
        cmp.problems.append(f"missing results: {', '.join(missing)}")
    if extra:
        cmp.problems.append(f"unexpected results: {', '.join(extra)}")
    for name in results:
        if name.startswith(BUFFER) and name not in reference:
            cmp.problems.append(f"{name} updated, where the reference leaves it as it was")
    not_updated = [n for n in reference if n not in results and n.startswith(BUFFER)]
    if not_updated:
        _not_updated(cmp, {n: reference[n] for n in not_updated}, before or {})
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
        err, left_out = _rel_err(got, ref)
        if left_out:
            cmp.beyond_range[name] = elements_of(left_out, ref.numel())
        bound = tol[name] if isinstance(tol, dict) else Bound(tol, f"tol {tol:.0e}")
        cmp.errors[name], cmp.allowed[name] = err, bound.value
        out_of_place = non_finite_problem(got, ref) if not math.isfinite(err) else ""
        if out_of_place:
            cmp.problems.append(f"{name}: {out_of_place}")
        elif not err <= bound.value:
            cmp.problems.append(f"{name}: rel err {err:.2e} > {bound.why}")
            cmp.past_bound.append(name)
        elif err == 0 and exactly_zero(ref, held_by(got.dtype)):  # the run then equals it wherever it is compared
            cmp.vacuous.append(name)
    return cmp


def _not_updated(cmp: Comparison, references: dict[str, torch.Tensor | None], before: dict[str, torch.Tensor]) -> None:
    """Buffers the run left as they were (one problem for all): wrong values whatever their old
    values' errors (a running variance of unit-variance data barely moves), each judged as its old
    value where that is known."""
    for name, ref in references.items():
        old = before.get(name[len(BUFFER):])
        if old is not None and ref is not None and tuple(old.shape) == tuple(ref.shape):
            cmp.errors[name] = rel_err(old, ref)
            cmp.allowed[name] = (cmp.tol[name] if isinstance(cmp.tol, dict) else Bound(cmp.tol, "")).value
    errors = [cmp.errors[n] for n in references if n in cmp.errors]
    figure = f": rel err {'up to ' if len(errors) > 1 else ''}{max(errors):.2e}" if errors else ""
    them = "it as it was" if len(references) == 1 else "them as they were"
    cmp.problems.append(f"{', '.join(references)} not updated (the backend left {them}){figure}")


class TwinMismatch(UsageError):
    """A workload's JAX twin disagrees with its torch module (or fails) on the same inputs and weights."""


def check_jax_twin(inst, torch_outputs: dict[str, torch.Tensor]) -> None:
    """Run `inst`'s JAX twin on the instance's inputs and weights and compare its outputs by name
    with `torch_outputs` (the float64 forward reference: out0, out1, ...)."""
    import numpy as np

    from irlens.workloads.workload import as_tuple

    import jax

    from irlens.frontends.jax.frontend import MATMUL_PRECISION

    name = inst.workload.name
    try:
        with jax.default_matmul_precision(MATMUL_PRECISION):  # the precision the xla backend runs at
            outs = as_tuple(inst.jax_fn()(inst.jax_params(), *inst.jax_inputs()))
        twin = {f"out{i}": torch.from_numpy(np.asarray(o, dtype=np.float64)) for i, o in enumerate(outs)}
    except Exception as e:
        raise TwinMismatch(f"the JAX twin of workload {name!r} failed on the example inputs: {type(e).__name__}: {e}") from e
    if len(twin) != len(torch_outputs):
        raise TwinMismatch(f"the JAX twin of workload {name!r} returns {plural(len(twin), 'output')}, "
                           f"the torch module {len(torch_outputs)}")
    # JAX computes in float32 unless jax_enable_x64 is set, even for float64 inputs.
    tol = max(tolerance(inst.dtype, "fwd"), tolerance("float32", "fwd"))
    cmp = compare_results(twin, {k: v.cpu() for k, v in torch_outputs.items()}, tol)
    if not cmp.ok:
        raise TwinMismatch(f"the JAX twin of workload {name!r} disagrees with its torch module on the same inputs "
                           f"and weights (preset {inst.preset}, {inst.dtype}): {cmp.reason}")
