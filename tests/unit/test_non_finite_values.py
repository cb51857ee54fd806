"""NaN and Inf in a result and its reference (irlens.numerics.verdicts, irlens.numerics.tolerance_ladder).

irlens's check compares them by value: the same non-finite value in both is the same value, left
out of the norms; one out of place makes the error inf, with the elements counted; a result
nothing but zeros and shared NaN or Inf compared nothing (vacuous). GraphNet's check is
torch.allclose's (equal_nan off): an infinity equal to eager's passes, a NaN never does."""
from __future__ import annotations

import math

import pytest
import torch

from irlens.numerics import verdicts
from irlens.numerics.verdicts import compare_results, exactly_zero, rel_err
from irlens.numerics.tolerance_ladder import ABOVE_ZERO, LEVELS, passing_level, tolerances

INF, NAN = math.inf, math.nan


def pair(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A float32 result 1e-3 off a float64 reference, both with NaN, +inf and -inf at the same places."""
    g = torch.Generator().manual_seed(seed)
    ref = torch.randn(300, 101, dtype=torch.float64, generator=g)
    result = (ref + 1e-3 * torch.randn(ref.shape, dtype=torch.float64, generator=g)).float()
    for t in (ref, result):
        t[0, 0], t[150, 7], t[-1, -1] = NAN, INF, -INF
    return result, ref


def finite_rel_err(result: torch.Tensor, reference: torch.Tensor) -> float:
    keep = torch.isfinite(reference)
    a, b = result.double()[keep], reference[keep]
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item()


# 997 elements a slice: the non-finite values in the first, a middle and the last slice
@pytest.mark.parametrize("slice_size", [997, 1 << 24])
def test_matched_nan_and_inf_are_left_out_and_the_finite_rest_compared(monkeypatch, slice_size):
    monkeypatch.setattr(verdicts, "SLICE", slice_size)
    result, ref = pair()
    err = rel_err(result, ref)
    assert err == pytest.approx(finite_rel_err(result, ref), rel=1e-12)
    assert 1e-4 < err < 1e-2  # the finite rest's error, not hidden by the NaN and Inf
    cmp = compare_results({"out0": result}, {"out0": ref}, 1e-2)
    assert cmp.ok and cmp.vacuous == []


@pytest.mark.parametrize("value, why", [
    (5.0, "finite values where the reference has NaN or Inf"),  # at the reference's +inf
    (-INF, "NaN or Inf in the result"),  # the other infinity
    (NAN, "NaN or Inf in the result"),  # NaN where +inf
])
def test_a_non_finite_value_out_of_place_makes_it_inf_and_is_counted(monkeypatch, value, why):
    monkeypatch.setattr(verdicts, "SLICE", 997)
    result, ref = pair()
    result[150, 7] = value
    assert rel_err(result, ref) == math.inf
    cmp = compare_results({"out0": result}, {"out0": ref}, 1e-2)
    assert cmp.reason.startswith(f"out0: {why}") and f"(1 of {ref.numel():,} elements)" in cmp.reason
    assert not cmp.only_past_bound


def test_a_non_finite_result_where_the_reference_is_finite_and_the_reverse():
    result, ref = pair()
    result[10, 10] = INF
    cmp = compare_results({"out0": result}, {"out0": ref}, 1e-2)
    assert rel_err(result, ref) == math.inf
    assert cmp.reason == (f"out0: NaN or Inf in the result (1 of {ref.numel():,} elements) "
                          "where the reference has another value")
    result, ref = pair()
    ref[10, 10] = NAN
    assert rel_err(result, ref) == math.inf  # a value where the reference is NaN
    reason = compare_results({"out0": result}, {"out0": ref}, 1e-2).reason
    assert reason == f"out0: finite values where the reference has NaN or Inf (1 of {ref.numel():,} elements)"


def test_a_result_all_non_finite_and_matched_compared_nothing_like_an_all_zero_one():
    ref = torch.tensor([NAN, INF, -INF, 0.0], dtype=torch.float64)
    same = ref.float()
    assert exactly_zero(ref) and rel_err(same, ref) == 0.0
    cmp = compare_results({"out0": same}, {"out0": ref}, 1e-4)
    assert cmp.ok and cmp.vacuous == ["out0"]
    live = torch.tensor([NAN, INF, -INF, 1e-6])  # one finite value off the reference's 0: compared
    cmp = compare_results({"out0": live}, {"out0": ref}, 1e-4)
    assert cmp.ok and cmp.vacuous == []
    assert not exactly_zero(torch.tensor([NAN, 2.0]))
    off = compare_results({"out0": torch.tensor([NAN, INF, INF, 0.0])}, {"out0": ref}, 1e-4)
    assert not off.ok and off.vacuous == []


def test_broadcast_comparisons_match_non_finite_values_too():
    ref = torch.tensor([1.0, INF, NAN], dtype=torch.float64)
    assert rel_err(torch.tensor([[1.0, INF, NAN]] * 2), ref) == 0.0
    assert rel_err(torch.tensor([[1.0, INF, NAN], [1.0, 3.0, NAN]]), ref) == math.inf


def test_noise_scales_take_no_scale_from_a_non_finite_sibling():
    grads = {"grad:m.weight": torch.tensor([INF, 1.0]), "grad:m.bias": torch.tensor([1e-3])}
    assert verdicts.noise_scales(grads, "float32") == {}


CASES = {  # result, eager baseline
    "an infinity equal to eager's": ([1.0, INF, -INF], [1.0, INF, -INF]),
    "a NaN where eager has NaN": ([1.0, NAN], [1.0, NAN]),
    "a finite value where eager has an infinity": ([1.0, 3e38], [1.0, INF]),
    "the other infinity": ([1.0, -INF], [1.0, INF]),
    "an infinity where eager is finite": ([1.0, INF], [1.0, 3e38]),
    "finite and close": ([1.0, 2.0 + 1e-4], [1.0, 2.0]),
}


@pytest.mark.parametrize("case", CASES)
def test_graphnets_level_is_where_torch_allclose_first_passes(case):
    x, y = (torch.tensor(v, dtype=torch.float32) for v in CASES[case])
    passing = [t for t in LEVELS if torch.allclose(x, y, *reversed(tolerances(torch.float32, t)))]
    assert passing_level({"out0": x}, {"out0": y}) == (passing[0] if passing else ABOVE_ZERO)
    assert passing == [t for t in LEVELS if t >= (passing[0] if passing else ABOVE_ZERO)]  # monotone in t


def test_elements_beyond_the_run_dtypes_range_are_not_judged_and_counted():
    """A float64 reference past float32's 3.4e38 (GraphNet's mnasnet0_5 on random weights ends at
    1e81): no float32 value is right there, so eager's NaN and a stack's clamped finite number are
    both left out; the rest is compared, and a result with nothing else compared nothing."""
    ref = torch.tensor([1.0, 2.0, 1e81, -3e40], dtype=torch.float64)
    eager = torch.tensor([1.0, 2.0, NAN, -INF], dtype=torch.float32)
    clamped = torch.tensor([1.0, 2.0, 6.0, 0.0], dtype=torch.float32)
    for result in (eager, clamped):
        assert rel_err(result, ref) == 0.0
        cmp = compare_results({"out0": result}, {"out0": ref}, 1e-6)
        assert cmp.ok and cmp.beyond_range == {"out0": verdicts.elements_of(2, 4)} and not cmp.vacuous
    off = torch.tensor([1.0, 2.5, NAN, 0.0], dtype=torch.float32)
    assert not compare_results({"out0": off}, {"out0": ref}, 1e-6).ok
    huge = ref[2:]
    cmp = compare_results({"out0": eager[2:]}, {"out0": huge}, 1e-6)
    assert cmp.ok and cmp.vacuous == ["out0"] and exactly_zero(huge, verdicts.held_by(torch.float32))
    assert rel_err(huge.clone(), huge) == 0.0 and not exactly_zero(huge)  # float64 itself holds them: judged
    in_float64 = compare_results({"out0": huge * (1 + 1e-3)}, {"out0": huge}, 1e-6)  # a float64 run holds them
    assert not in_float64.ok and not in_float64.beyond_range


def test_a_nan_beside_a_value_past_the_range_does_not_hide_it():
    """A NaN in the reference's slice makes its norm NaN: the elements past the range are still found."""
    ref = torch.tensor([NAN, 1e81, 1.0], dtype=torch.float64)
    cmp = compare_results({"out0": torch.tensor([NAN, NAN, 1.0])}, {"out0": ref}, 1e-6)
    assert cmp.ok and cmp.beyond_range == {"out0": verdicts.elements_of(1, 3)}
