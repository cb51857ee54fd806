"""With a time budget, a cell's timeout and its uncounted waits for device turns together end by
the budget's end plus its grace (irlens.matrix.execution.IsolatedRunner.max_wait_s): a GraphNet
run on one H100 with a 450 s budget ran past 545 s on waits that did not count."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from irlens.matrix.execution import BUDGET_GRACE_S, IsolatedRunner


def runner(deadline: float | None, timeout: float = 150.0, jobs: int = 6) -> IsolatedRunner:
    return IsolatedRunner(SimpleNamespace(), None, timeout, None, jobs=jobs, deadline=deadline)


@pytest.mark.parametrize("timeout", [10.0, 60.0, 150.0])
def test_a_cells_timeout_and_waits_end_by_the_budgets_end(timeout):
    left = 100.0
    r = runner(time.monotonic() + left, timeout)
    wait = r.max_wait_s(min(timeout, left + BUDGET_GRACE_S))
    assert min(timeout, left + BUDGET_GRACE_S) + wait <= left + BUDGET_GRACE_S + 0.5
    assert r.max_wait_s(left + BUDGET_GRACE_S) == 0.0  # a cut timeout leaves no uncounted wait


def test_without_a_budget_a_cell_may_wait_one_timeout_per_other_worker():
    assert runner(None, 150.0, 6).max_wait_s(150.0) == 150.0 * 6
