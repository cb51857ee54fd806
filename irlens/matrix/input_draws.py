"""A half-precision mismatch judged over other draws of the inputs.

A result's bound starts from eager's own error on it (irlens.numerics), one draw of a quantity that
in a bfloat16 backward varies widely between input draws and between neighbouring results: on
timm_resnet50 over four draws, Inductor was past 3 x eager's error on 9, 0, 0 and 16 results and
eager past 3 x Inductor's on 20, 0, 1 and 0 (docs/results/zoo-h200-bench/eager_roundings_seeds.py).
So a half-precision mismatch is run again on REDRAWS other draws of its floating-point inputs (same
weights; each draw with its own float64 reference and eager error, judged by the same rule), and
each result is judged by its error over its bound at the median over all the draws: a wrong result
is wrong on most draws, a rounding-order difference on some. Within the bound so, the row is ok,
marked (`notes["judged_over_draws"]`: the first draw's mismatch); otherwise the mismatch stands and
the notes say which result's median is past its bound.
"""
from __future__ import annotations

import math
import statistics
from typing import Callable

import torch

from irlens.matrix.records import ResultCheck
from irlens.matrix.row import Row

REDRAWS = 4  # five draws in all: a median of five


def redrawn(t, gen: torch.Generator):
    """A floating-point tensor drawn again (normal, with its mean and standard deviation); anything
    else (integer ids, labels) as it is."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point():
        return t
    f = t.detach().float().cpu()
    fresh = torch.randn(t.shape, generator=gen) * (f.std() if f.numel() > 1 else 1.0) + f.mean()
    return fresh.to(dtype=t.dtype, device=t.device)


def over_bound(check: ResultCheck) -> float | None:
    """A result's error over its bound (above 1: past it); NaN or Inf in it: inf; None: not compared."""
    if check.err is None or check.vacuous:
        return None
    if not math.isfinite(check.err):
        return math.inf
    return check.err / check.allowed if check.allowed else None


def judge_over_draws(row: Row, inputs: tuple, probe: Callable[[tuple], Row]) -> None:
    """Judge the mismatch `row` (of the draw `inputs`) over REDRAWS other draws; `probe(inputs)` runs
    the cell on other inputs, with their own reference, and returns its row."""
    if not any(isinstance(t, torch.Tensor) and t.is_floating_point() for t in inputs):
        row.notes["input_draws"] = "not judged over other input draws: no floating-point input to draw again"
        return
    gens = [torch.Generator().manual_seed(1000 + k) for k in range(REDRAWS)]
    draws = [tuple(redrawn(t, gen) for t in inputs) for gen in gens]
    ratios: dict[str, list[float]] = {}
    for checks in [row.results] + [probe(drawn).results for drawn in draws]:
        for name, check in checks.items():
            r = over_bound(check)
            if r is not None:
                ratios.setdefault(name, []).append(r)
    medians = {name: statistics.median(r) for name, r in ratios.items() if len(r) == REDRAWS + 1}
    worst = max(medians, key=medians.get, default=None)
    if worst is None:
        row.notes["input_draws"] = "not judged over other input draws: no result compared on every draw"
        return
    verdict = (f"over {REDRAWS + 1} input draws the median error of {worst}, the furthest, is "
               f"{medians[worst]:.2f} x its bound")
    if medians[worst] <= 1.0:
        row.notes["judged_over_draws"] = (row.reason or "mismatch").splitlines()[0]
        row.notes["input_draws"] = f"{verdict}: ok"
        row.status, row.reason = "ok", ""
    else:
        row.notes["input_draws"] = verdict
        row.reason = f"{row.reason}; {verdict}" if row.reason else verdict
