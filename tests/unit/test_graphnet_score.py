"""GraphNet's S(t) and ES(t) on hand-made rows, each figure derived by hand here, and its
tolerance ladder on hand-made tensors."""
from __future__ import annotations

import math

import pytest
import torch

from irlens.graphnet.score import B, P, scores
from irlens.matrix.row import Row
from irlens.numerics.tolerance_ladder import ABOVE_ZERO, NOTE, passing_level, tolerances


def rows() -> list[Row]:
    """Five samples; eager takes 100 us on each. On `inductor`:
    a: 50 us (speedup 2), passes from t=-6;   b: 200 us (speedup 0.5), passes from t=-3;
    c: a runtime crash;   d: a compilation failure;   e: 100 us, fails even at t=0 (an accuracy error)."""
    eager = [Row(w, "fwd", "eager", status="ok", run_us=100.0, notes={NOTE: -10}) for w in "abcde"]
    ran = lambda w, us, t: Row(w, "fwd", "inductor", status="ok", run_us=us, notes={NOTE: t})  # noqa: E731
    return eager + [ran("a", 50.0, -6), ran("b", 200.0, -3),
                    Row("c", "fwd", "inductor", status="failed", reason="run: RuntimeError: CUDA error"),
                    Row("d", "fwd", "inductor", status="failed",
                        reason="run: BackendCompilerFailed: backend='inductor' raised: LoweringException"),
                    Row("e", "fwd", "inductor", status="mismatch", run_us=100.0, notes={NOTE: ABOVE_ZERO})]


def eq1(speedups_correct: list[float], n: int, b: float = B, p: float = P) -> float:
    """The report's eq. 1, S = alpha^lambda * beta^(lambda eta p) * b^(1 - lambda), written out."""
    m = len(speedups_correct)
    slow = [s for s in speedups_correct if s < 1]
    alpha = math.prod(speedups_correct) ** (1 / m) if m else 1.0
    beta = math.prod(slow) ** (1 / len(slow)) if slow else 1.0
    lam, eta = m / n, (len(slow) / m if m else 0.0)
    return alpha ** lam * beta ** (lam * eta * p) * b ** (1 - lam)


def test_s_and_es_match_the_report_by_hand():
    (score,) = scores(rows())
    assert score.backend == "inductor" and len(score.outcomes) == 5
    # t=-7: nothing passes; every sample counts b
    assert score.s(-7) == pytest.approx(0.1)
    # t=-5: only a (speedup 2): (2 * 0.1^4)^(1/5)
    assert score.s(-5) == pytest.approx((2 * 0.1 ** 4) ** (1 / 5))
    assert score.s(-5) == pytest.approx(eq1([2.0], 5))
    # t=-3: a and b; b's slowdown counts 0.5^(1 + p)
    assert score.s(-3) == pytest.approx((2 * 0.5 ** 1.1 * 0.1 ** 3) ** (1 / 5))
    assert score.s(-3) == pytest.approx(eq1([2.0, 0.5], 5))
    # ES equals S at t <= 0; t=1 forgives e's accuracy error, t=2 c's crash, t=3 d's compilation failure
    assert score.es(0) == pytest.approx(score.s(0))
    assert score.es(1) == pytest.approx((2 * 0.5 ** 1.1 * 1 * 0.1 * 0.1) ** (1 / 5))
    assert score.es(2) == pytest.approx((2 * 0.5 ** 1.1 * 1 * 1 * 0.1) ** (1 / 5))
    assert score.es(3) == pytest.approx((2 * 0.5 ** 1.1) ** (1 / 5))
    assert [score.correct(t) for t in (-7, -5, -3, 0)] == [0, 1, 2, 2]


def test_penalties_are_parameters():
    (score,) = scores(rows())
    assert score.s(-3, b=0.5, p=0.0) == pytest.approx((2 * 0.5 * 0.5 ** 3) ** (1 / 5))


def test_samples_without_a_base_or_a_run_are_left_out():
    r = rows()
    r = [x for x in r if not (x.backend == "eager" and x.workload == "a")]  # eager did not run a
    r.append(Row("f", "fwd", "eager", status="ok", run_us=100.0, notes={NOTE: -10}))
    r.append(Row("f", "fwd", "inductor", status="unavailable", reason="inductor does not run here"))
    (score,) = scores(r)
    assert set(score.left_out) == {"a", "f"} and len(score.outcomes) == 4
    assert score.s(-3) == pytest.approx((0.5 ** 1.1 * 0.1 ** 3) ** (1 / 4))
    assert score.left_out["f"] == "not run: inductor does not run here"


def test_a_row_the_budget_left_says_so_once():
    r = [Row("g", "fwd", "eager", status="ok", run_us=100.0, notes={NOTE: -10}),
         Row("g", "fwd", "xla", status="unavailable", reason="not run: the run's time budget of 390 s ran out")]
    (score,) = scores(r)
    assert score.left_out == {"g": "not run: the run's time budget of 390 s ran out"}


def test_tolerances_follow_the_reports_tables():
    assert tolerances(torch.float32, -5) == pytest.approx((1e-5, 10 ** (-5.886)))
    assert tolerances(torch.float16, -5) == pytest.approx((1e-5, 1e-3))
    assert tolerances(torch.bfloat16, 0) == (1.0, 1.0)
    assert tolerances(torch.float64, -5) == pytest.approx((1e-7, 1e-7))
    assert tolerances(torch.int64, -3) == (0.0, 0.0)


def test_passing_level_is_the_lowest_level_every_output_passes():
    y = torch.tensor([1.0, -2.0, 0.0])
    # an error of 2e-3 at |y| = 2 against atol + rtol |y|: at t=-3, 1e-3 + 2 * 10^(-3 * 1.1772) = 1.59e-3 (fails);
    # at t=-2, 1e-2 + 2 * 10^(-2 * 1.1772) = 1.89e-2 (passes)
    x = y + torch.tensor([0.0, 2e-3, 0.0])
    assert passing_level({"out0": x}, {"out0": y}) == -2
    assert passing_level({"out0": y.clone()}, {"out0": y}) == -10
    # the row's level is its worst output's; a non-finite or reshaped output passes at no level
    assert passing_level({"out0": x, "out1": y.clone()}, {"out0": y, "out1": y}) == -2
    assert passing_level({"out0": y + float("nan")}, {"out0": y}) == ABOVE_ZERO
    assert passing_level({"out0": y[:2]}, {"out0": y}) == ABOVE_ZERO
    assert passing_level({"out0": torch.tensor([1, 2])}, {"out0": torch.tensor([1, 3])}) == ABOVE_ZERO
