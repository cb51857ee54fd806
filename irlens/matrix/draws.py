"""A half-precision mismatch, or a float32 one on ill-conditioned results, judged over several
draws of inputs (docs/numerics.md).

In bfloat16 or float16 a compiler that rounds elsewhere than eager (Inductor keeps float32 in
its fused kernels) can land past a bound made of eager's error on one draw of inputs while, on
the next draw, eager lands as far past the compiler's: which of the two a single draw calls the
worse changes with the draw. So does a float32 result that is ill-conditioned
(`irlens.numerics.verdicts.ill_conditioned`: a train-mode BatchNorm over two samples, whose eager float32
error moved from 6.4e-5 to 5.2e-4 between two processes on the same inputs). So a half-precision
cell whose every problem is an error past its bound (nothing missing, extra or misshapen, no NaN
or Inf, no buffer left as it was: `Comparison.only_past_bound`), and a float32 one whose results
past their bounds are all ill-conditioned (`rejudged`), is judged again over DRAWS draws of
inputs: the workload's own and DRAWS - 1 more from its own input factory (other seeds; integer,
boolean, one-element and non-finite inputs kept as they were), each against its own float64 reference on the same
weights (`Reference.state`, loaded, not drawn again) with eager's own error in the dtype beside
it, the backend's compiled step run again on each (`BackendRun.again`, irlens.matrix.backend_run). Each
result is then ok when

- its median error over the draws is within the bound made of eager's median error over them
  (`irlens.numerics.verdicts.allowed_error`: k x it + the floor, with the median condition), and
- on every draw its error is within the bound made of eager's largest error over the draws: a
  backend wrong on some inputs, past anything eager did on any, is a mismatch on that draw;
  a noise-sized gradient (judged by its size, `irlens.numerics.verdicts.noise_scales`) is within its own
  draw's bound on every draw;

and every draw has every result, each finite, each buffer updated. The row's figures become the
medians, its reason and notes say it was judged so and what the workload's own inputs alone
gave. Draws run in the cell's process, on its device, within its timeout: one that does not fit,
or fails (out of memory, say), leaves the row a mismatch, saying why.
"""
from __future__ import annotations

import gc
import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import torch

from irlens.runtime import call_progress
from irlens.core.dtypes import HALF_DTYPES
from irlens.matrix.records import ResultCheck
from irlens.matrix.references import Reference, first_line, reference_of
from irlens.matrix.row import Row
from irlens.numerics.verdicts import BUFFER, Bound, Comparison, compare_results, judged_bounds, noise_scales
from irlens.workloads.workload import Instance

DRAWS = 5  # the workload's own inputs and four more
DRAW_SEED = 1000  # draw d's inputs come from the input factory's generator seeded DRAW_SEED + d
FIRST_DRAW_BY = 0.5  # the draws start only before this share of the cell's timeout has gone
LAST_DRAW_BY = 0.9  # and a draw starts only if, at the pace of the slowest so far, it ends before this share


class DrawFailed(Exception):
    """A draw could not be judged (its reference ran in another precision, eager failed on it)."""


@dataclass
class DrawErrors:
    """One draw: each result's error, eager's own, the condition; what else went wrong in the run."""

    errors: dict[str, float]
    eager: dict[str, float]
    conditions: dict[str, float] = field(default_factory=dict)
    vacuous: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)  # missing, extra, misshapen, NaN or Inf, buffers not updated
    scales: dict[str, float] = field(default_factory=dict)  # the noise-sized gradients (irlens.numerics.verdicts.noise_scales)


@dataclass
class DrawsVerdict:
    """The results judged over the draws: median figures and why any is not ok."""

    checks: dict[str, ResultCheck]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def judge_draws(draws: list[DrawErrors], dtype: str, mode: str) -> DrawsVerdict:
    """Judge each result of the first draw (the workload's own inputs) over all of them (see the
    module docstring). A result not compared on some draw, or eager's error on it unknown there,
    is a problem: every result is compared on every draw."""
    problems = [f"draw {d}: {p}" for d, draw in enumerate(draws) for p in draw.problems]
    checks: dict[str, ResultCheck] = {}
    n = len(draws)
    for name in draws[0].errors:
        missing = [d for d, draw in enumerate(draws) if name not in draw.errors or name not in draw.eager]
        if missing:
            problems.append(f"{name}: not compared on draw {missing[0]}")
            continue
        errs = [draw.errors[name] for draw in draws]
        eager = [draw.eager[name] for draw in draws]
        overflow = [d for d, e in enumerate(eager) if not math.isfinite(e)]
        if overflow:  # no bound to take from it: its largest would be no ceiling at all
            problems.append(f"{name}: eager's own error is not finite on draw {overflow[0]}")
            continue
        conditions = [draw.conditions.get(name, 0.0) for draw in draws]
        median_err, median_eager = statistics.median(errs), statistics.median(eager)
        if name in draws[0].scales:  # judged by its size: on each draw against that draw's own scale
            _noise_sized(name, draws, dtype, mode, checks, problems)
            continue
        ill, typical = _bound(name, median_eager, statistics.median(conditions), dtype, mode, f"median over {n} draws")
        checks[name] = ResultCheck(median_err, typical.value, median_eager, ill,
                                   True if all(name in draw.vacuous for draw in draws) else None)
        if not median_err <= typical.value:
            problems.append(f"{name}: median rel err {median_err:.2e} over {n} draws > {typical.why}")
            continue
        for d, (err, condition) in enumerate(zip(errs, conditions)):
            _, ceiling = _bound(name, max(eager), condition, dtype, mode, f"largest over {n} draws")
            if not err <= ceiling.value:
                problems.append(f"{name}: rel err {err:.2e} on draw {d} > {ceiling.why}")
                break
    return DrawsVerdict(checks, problems)


def _bound(name: str, eager_err: float, condition: float, dtype: str, mode: str, which: str,
           scale: float | None = None) -> tuple[str | None, Bound]:
    ill, bounds = judged_bounds([name], dtype, mode, {name: eager_err}, {name: condition},
                                {} if scale is None else {name: scale})
    bound = bounds[name]
    return ill.get(name), Bound(bound.value, bound.why.replace("eager's ", f"eager's {which} ", 1))


def _noise_sized(name: str, draws: list[DrawErrors], dtype: str, mode: str, checks: dict[str, ResultCheck],
                 problems: list[str]) -> None:
    """A noise-sized gradient over the draws: within its own draw's bound (its size against that
    draw's scale) on every draw, where it is noise-sized on every draw; its figures the medians."""
    not_noise = [d for d, draw in enumerate(draws) if name not in draw.scales]
    if not_noise:
        problems.append(f"{name}: noise-sized on the workload's own inputs, not on draw {not_noise[0]}")
        return
    judged = [_bound(name, draw.eager[name], 0.0, dtype, mode, f"draw {d}'s", draw.scales[name])
              for d, draw in enumerate(draws)]
    errs = [draw.errors[name] for draw in draws]
    checks[name] = ResultCheck(statistics.median(errs), statistics.median(b.value for _, b in judged),
                               statistics.median(draw.eager[name] for draw in draws), judged[0][0])
    for d, (err, (_, bound)) in enumerate(zip(errs, judged)):
        if not err <= bound.value:
            problems.append(f"{name}: rel err {err:.2e} on draw {d} > {bound.why}")
            return


def rejudged(dtype: str, first: Comparison, ill: dict[str, str]) -> bool:
    """Whether a mismatch is judged again over input draws: in half precision, or in float32 where
    every result past its bound is ill-conditioned (see the module docstring)."""
    return first.only_past_bound and (dtype in HALF_DTYPES
                                      or (dtype == "float32" and all(n in ill for n in first.past_bound)))


def redrawn(original, fresh) -> bool:
    """Whether a draw takes the factory's `fresh` value for an input: a floating tensor of more
    than one element, all finite, with the same shape and dtype (a mask, token ids, a scalar or
    an input holding -inf stay as the workload gave them)."""
    return (isinstance(original, torch.Tensor) and isinstance(fresh, torch.Tensor)
            and original.is_floating_point() and original.numel() > 1 and bool(torch.isfinite(original).all())
            and fresh.shape == original.shape and fresh.dtype == original.dtype)


def draw_inputs(inst: Instance, reference: Reference, draw: int) -> tuple:
    """Draw `draw`'s inputs (1, 2, ...): the workload's input factory with another seed, where
    `redrawn`; the reference's own inputs elsewhere. DrawFailed where none changes."""
    fresh = tuple(inst.workload.inputs(inst.cfg, inst.torch_dtype, torch.Generator().manual_seed(DRAW_SEED + draw)))
    if len(fresh) != len(reference.inputs):
        raise DrawFailed("its input factory gives another number of inputs for another seed")
    # a redrawn input keeps the original's strides: the kept step's guards, and its code, stay as compiled
    inputs = tuple(torch.empty_strided(o.shape, o.stride(), dtype=o.dtype, device=o.device).copy_(f)
                   if redrawn(o, f) else o for o, f in zip(reference.inputs, fresh))
    if all(a is b or (isinstance(a, torch.Tensor) and torch.equal(a, b)) for a, b in zip(inputs, reference.inputs)):
        raise DrawFailed("its inputs do not change with the seed (none is a floating tensor its factory draws)")
    return inputs


def run_draw(again: Callable[[], dict], inst: Instance, mode: str, reference: Reference, draw: int) -> DrawErrors:
    """One more draw: its float64 reference and eager's error on it, then the kept step on it."""
    inputs = draw_inputs(inst, reference, draw)
    ref_inst = reference.pin(inst.workload.instantiate(inst.preset, inst.dtype, inst.device, inst.seed))
    ref_inst.inputs = inputs
    ref = reference_of(ref_inst, mode)
    del ref_inst
    if ref.dtype != reference.dtype:
        raise DrawFailed(f"its reference ran in {ref.dtype}, the workload's own in {reference.dtype}")
    if ref.eager_errors is None:
        raise DrawFailed(ref.eager_problem or "eager's own error is not known")
    # the backend's timed steps after its first went on updating the buffers: each draw starts, as its
    # reference does, from the state the workload's own step started from
    reference.pin(inst)
    inst.inputs = inputs  # the kept step reads the instance's inputs when called
    try:
        got = again()
    finally:
        inst.inputs = reference.inputs
    cmp = compare_results(got, ref.results, math.inf, before=reference.state)  # every error, no bound yet
    # a buffer the reference updated and the run reported as it was: not updated on this draw
    for name, value in got.items():
        old = reference.state.get(name[len(BUFFER):]) if name.startswith(BUFFER) else None
        want = ref.results.get(name)
        if old is not None and want is not None and torch.equal(value.to(old.device), old) \
                and not torch.equal(want.to(old.dtype), old):
            cmp.problems.append(f"{name} not updated (the backend left it as it was)")
    return DrawErrors(cmp.errors, ref.eager_errors, ref.conditions, set(cmp.vacuous), cmp.problems,
                      noise_scales(ref.results, inst.dtype))


def cell_time_used(started: float) -> float:
    """Seconds of the cell that count against its timeout: its worker's call's (irlens.runtime.call_progress,
    the worker's load included, its waits for device turns not), else since `started`."""
    counted = call_progress.counted_s()
    return time.monotonic() - started if counted is None else counted


def judge_over_draws(row: Row, first: Comparison, again: Callable[[], dict] | None, inst: Instance, mode: str,
                     reference: Reference, started: float, timeout_s: float | None) -> None:
    """Judge the mismatch `row` (half precision, or float32 on ill-conditioned results: `rejudged`;
    its comparison on the workload's own inputs: `first`) over DRAWS draws, and say so in its
    notes (`draws`) and reason; an ok verdict makes the row ok with the median figures. `started`
    (time.monotonic()) and `timeout_s` (None: none) are the cell's: a draw that would not fit in it
    is not started."""
    if not first.only_past_bound:
        return
    if reference.eager_errors is None:
        row.notes["draws"] = {"verdict": "not judged", "why": "eager's own error is not known (the flat tolerance "
                                                             "judges)"}
        return
    draws = [DrawErrors(first.errors, reference.eager_errors, reference.conditions, set(first.vacuous),
                        scales=noise_scales(reference.results, inst.dtype))]
    why_not = f"{row.label} keeps no compiled step to run on other inputs" if again is None else ""
    slowest = 0.0
    for d in range(1, DRAWS):
        if why_not:
            break
        if timeout_s is not None:
            used = cell_time_used(started)
            if (d == 1 and used > FIRST_DRAW_BY * timeout_s) or used + slowest > LAST_DRAW_BY * timeout_s:
                why_not = f"{d - 1} of {DRAWS - 1} more draws fit in the cell's timeout ({timeout_s:.0f} s)"
                break
        call_progress.stage(f"judging the mismatch over {DRAWS} input draws: draw {d + 1}")
        start = time.monotonic()
        try:
            draws.append(run_draw(again, inst, mode, reference, d))
        except Exception as e:  # noqa: BLE001  (a draw that cannot run leaves the verdict as it was)
            why_not = f"draw {d} could not run: {type(e).__name__}: {first_line(e)}"
        finally:
            gc.collect()
            if inst.device.startswith("cuda"):
                torch.cuda.empty_cache()
        slowest = max(slowest, time.monotonic() - start)
    if why_not:
        row.notes["draws"] = {"verdict": "not judged", "why": why_not}
        row.reason = f"{row.reason}; not judged over input draws: {why_not}"
        return
    verdict = judge_draws(draws, inst.dtype, mode)
    if not verdict.ok:
        row.notes["draws"] = {"verdict": "mismatch", "draws": DRAWS, "why": verdict.problems[0]}
        row.reason = f"{row.reason}; over {DRAWS} input draws too: {verdict.problems[0]}"
        return
    own_reason = row.reason
    row.status = "ok"
    row.results = {**row.results, **verdict.checks}
    row.max_rel_err = max(c.err for c in verdict.checks.values()) if verdict.checks else None
    decisive = row.decisive_result
    row.eager_err = verdict.checks[decisive].eager_err if decisive else None
    row.allowed = verdict.checks[decisive].allowed if decisive else None
    row.notes["draws"] = {"verdict": "ok", "draws": DRAWS, "own_inputs": own_reason}
    row.reason = (f"ok over {DRAWS} input draws (median errors within eager's median bound, no draw past eager's "
                  f"largest: docs/numerics.md); on the workload's own inputs alone: {own_reason}")
