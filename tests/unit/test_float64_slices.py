"""Float64 checks of large results go slice by slice (no whole float64 copy on a shared GPU): the
relative error and GraphNet's passing level are those of the whole tensors."""
from __future__ import annotations

import math

import pytest
import torch

from irlens.numerics import verdicts
from irlens.numerics.tolerance_ladder import ABOVE_ZERO, passing_level


@pytest.fixture
def small_slices(monkeypatch):
    monkeypatch.setattr(verdicts, "SLICE", 997)  # not a divisor: the last slice is short


def pair(seed: int = 0, noise: float = 1e-3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    ref = torch.randn(300, 101, dtype=torch.float64, generator=g)
    return (ref + noise * torch.randn(ref.shape, dtype=torch.float64, generator=g)).float(), ref


def whole_rel_err(result: torch.Tensor, reference: torch.Tensor) -> float:
    return (torch.linalg.vector_norm(result.double() - reference) / torch.linalg.vector_norm(reference)).item()


def test_sliced_rel_err_is_the_whole_tensors(small_slices):
    result, ref = pair()
    assert verdicts.rel_err(result, ref) == pytest.approx(whole_rel_err(result, ref), rel=1e-12)


def test_a_non_finite_element_in_the_last_slice_makes_it_infinite(small_slices):
    result, ref = pair()
    result[-1, -1] = float("nan")
    assert verdicts.rel_err(result, ref) == math.inf
    assert passing_level({"o": result}, {"o": ref.float()}) == ABOVE_ZERO


def test_sliced_passing_level_is_the_whole_tensors(monkeypatch):
    for noise in (1e-6, 1e-3, 1e-1):
        result, ref = pair(noise=noise)
        whole = passing_level({"o": result}, {"o": ref.float()})
        monkeypatch.setattr(verdicts, "SLICE", 997)
        assert passing_level({"o": result}, {"o": ref.float()}) == whole
        monkeypatch.setattr(verdicts, "SLICE", 1 << 24)


def test_one_slice_failing_decides_the_level(small_slices):
    result, ref = pair(noise=1e-7)
    base = passing_level({"o": result}, {"o": ref.float()})
    result[200, 50] += 0.5  # one element far off, in a middle slice
    assert passing_level({"o": result}, {"o": ref.float()}) > base
