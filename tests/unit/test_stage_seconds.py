"""A worker's call tallies its seconds per stage, its waits for turns on the device apart."""
from __future__ import annotations


import pytest

from irlens.runtime import call_progress


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(call_progress.time, "monotonic", lambda: now[0])
    monkeypatch.delenv(call_progress.PROGRESS_ENV, raising=False)
    yield now
    monkeypatch.setattr(call_progress, "_now", None)


def test_seconds_per_stage_leave_the_waits_out(clock):
    call_progress.begin("computing the float64 reference")
    clock[0] += 3.0
    call_progress.stage("compiling")
    clock[0] += 2.0
    with call_progress.waiting("the device to itself"):
        clock[0] += 10.0
    clock[0] += 1.0
    call_progress.stage("compiling")  # a stage entered again adds up
    clock[0] += 0.5
    call_progress.stage("timing")
    clock[0] += 4.0
    assert call_progress.spent() == pytest.approx(
        {"computing the float64 reference": 3.0, "compiling": 3.5, "timing": 4.0, "waiting for a turn": 10.0})


def test_a_new_call_starts_from_nothing(clock):
    call_progress.begin("first")
    clock[0] += 5.0
    call_progress.begin("second")
    clock[0] += 1.0
    assert call_progress.spent() == pytest.approx({"second": 1.0})


def test_no_call_no_tally(monkeypatch):
    monkeypatch.setattr(call_progress, "_now", None)
    assert call_progress.spent() == {}
