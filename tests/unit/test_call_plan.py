"""Device calls packed by the time cells took before (irlens.matrix.call_plan): each cell in one
call, no call past the limit but a cell that alone cannot fit (flagged), the slow cells spread, a
quick cell in every call, the fewest calls, the same plan for the same cells in any order; and
each cell's cost as earlier rows give it."""
from __future__ import annotations

import random
from collections import Counter

import pytest

from irlens.errors import UsageError
from irlens.matrix.call_plan import (CALL_START_S, CELL_OVERHEAD_S, EARLY_S, Cost, eager_companions, estimate_costs,
                                     default_seconds, pack_calls, usable_seconds)
from irlens.matrix.row import Row


def costs_of(seconds: dict) -> dict:
    return {cell: Cost(s, "recorded") for cell, s in seconds.items()}


def cell(i: int, backend: str = "inductor", mode: str = "fwd") -> tuple[str, str, str]:
    return (f"model_{i:02d}", mode, backend)


def once_each(plan) -> Counter:
    return Counter(c for call in plan.calls for c in call.cells)


def test_each_cell_is_in_one_call_and_no_call_passes_the_limit():
    rng = random.Random(3)
    costs = costs_of({cell(i, b): rng.choice([2, 15, 40, 90, 250, 330]) for i in range(30)
                      for b in ("inductor", "nvfuser")})
    for jobs in (1, 2, 4):
        plan = pack_calls(costs, 600, jobs)
        assert once_each(plan) == Counter(list(costs))  # every cell, each once
        assert all(not call.over_limit and call.estimate_s <= 600 for call in plan.calls)
        assert all(call.estimate_s - CALL_START_S <= plan.usable_s for call in plan.calls)


def test_a_cell_longer_than_a_call_gets_a_call_of_its_own_flagged():
    costs = costs_of({cell(0): 900, cell(1): 30, cell(2): 30})
    plan = pack_calls(costs, 600, 2)
    over = [call for call in plan.calls if call.over_limit]
    assert [c.cells for c in over] == [[cell(0)]] and over[0].estimate_s > 600
    assert [c.cells for c in plan.calls if not c.over_limit] == [[cell(1), cell(2)]]


def test_the_fewest_calls_and_slow_cells_spread_over_them():
    # 10 cells of 100 s fill calls of 480 usable seconds four at a time: three calls, none fewer
    assert usable_seconds(600) == pytest.approx(480)
    assert len(pack_calls(costs_of({cell(i): 100 for i in range(10)}), 600).calls) == 3
    # 5 slow compiles among 60 quick cells, 2 jobs a call: the slow ones one or two to a call, never stacked
    seconds = {cell(i, "nvfuser", "fwdbwd"): 300 for i in range(5)} | {cell(i): 12 for i in range(60)}
    plan = pack_calls(costs_of(seconds), 600, 2)
    slow = [sum(seconds[c] == 300 for c in call.cells) for call in plan.calls]
    assert max(slow) - min(slow) <= 1 and sum(slow) == 5
    assert len(plan.calls) == 3  # 2220 s of cells over 2 x 480 s a call: 3 at least


def test_every_call_finishes_a_quick_cell_early():
    # balanced by load, the quick cells would all go beside the shortest slow one; each call takes one
    costs = costs_of({cell(0): 450, cell(1): 400, cell(2): 300, cell(3): 20, cell(4): 20, cell(5): 20})
    plan = pack_calls(costs, 600, 1)
    assert len(plan.calls) == 3 and all(call.writes_early for call in plan.calls)
    assert all(min(costs[c].seconds for c in call.cells) <= EARLY_S for call in plan.calls)
    assert once_each(plan) == Counter(list(costs)) and all(call.estimate_s <= 600 for call in plan.calls)
    # with no quick cell to spare, the call is said not to write early
    lone = pack_calls(costs_of({cell(0): 450, cell(1): 400, cell(2): 20}), 600, 1)
    assert sorted(call.writes_early for call in lone.calls) == [False, True]


def test_eager_goes_beside_each_of_its_models_cells_and_is_costed_there():
    seconds = {cell(i, b, m): s for i in range(6) for m in ("fwd", "fwdbwd")
               for b, s in (("eager", 5), ("inductor", 60), ("nvfuser", 280))}
    costs = costs_of(seconds)
    companions = eager_companions(costs)
    assert companions[cell(3, "nvfuser", "fwdbwd")] == cell(3, "eager", "fwdbwd") and cell(3, "eager") not in companions
    plan = pack_calls(costs, 600, 2, companions)
    counts = once_each(plan)
    assert all(counts[c] == 1 for c in costs if c[2] != "eager")
    for call in plan.calls:
        assert {(c[0], c[1]) for c in call.cells if c[2] == "eager"} == {(c[0], c[1]) for c in call.cells}
        # its lanes carry every cell it holds, eager's included
        assert CALL_START_S + sum(costs[c].seconds for c in call.cells) / 2 <= call.estimate_s <= 600
    # two slow cells of one model that no call holds together: its eager cell runs in both calls
    apart = pack_calls(costs_of({cell(0, "eager"): 5, cell(0, "nvfuser"): 300, cell(0, "xla"): 300}), 600, 1,
                       eager_companions([cell(0, "eager"), cell(0, "nvfuser"), cell(0, "xla")]))
    assert [call.cells for call in apart.calls] == [[cell(0, "eager"), cell(0, "nvfuser")],
                                                    [cell(0, "eager"), cell(0, "xla")]]
    assert [call.estimate_s for call in apart.calls] == [CALL_START_S + 305] * 2


def test_the_same_cells_in_any_order_make_the_same_plan():
    rng = random.Random(7)
    seconds = {cell(i, b): rng.choice([3, 30, 120, 200]) for i in range(25) for b in ("inductor", "xla")}
    items = list(seconds.items())
    plans = []
    for seed in range(3):
        random.Random(seed).shuffle(items)
        plans.append([call.cells for call in pack_calls(costs_of(dict(items)), 600, 3).calls])
    assert plans[0] == plans[1] == plans[2]


def test_a_limit_that_leaves_no_time_is_bad_input():
    for limit in (0, 30, CALL_START_S):
        with pytest.raises(UsageError, match="leaves its cells no time"):
            pack_calls(costs_of({cell(0): 1}), limit, 1)


def test_costs_come_from_the_rows_that_ran_timed_out_or_a_default():
    rows = [Row("m", "fwd", "inductor", status="ok", compile_s=20.0, run_us=5e5),
            Row("m", "fwd", "inductor", status="ok", compile_s=12.0, run_us=1.0),  # another run: the longer counts
            Row("m", "fwdbwd", "nvfuser", status="failed", phase="worker",
                reason="timed out after 180 s (compiling, its last 170 s)"),
            Row("m", "fwdbwd", "xla", status="failed", phase="run", reason="run: RuntimeError: boom")]
    cells = [("m", "fwd", "inductor"), ("m", "fwdbwd", "nvfuser"), ("m", "fwdbwd", "xla"), ("n", "fwd", "eager")]
    costs = estimate_costs(cells, rows)
    assert costs[cells[0]] == Cost(20.0 + 10 * 0.5 + CELL_OVERHEAD_S, "recorded")
    assert costs[cells[1]] == Cost(180.0 + CELL_OVERHEAD_S, "timed out")
    assert costs[cells[2]] == Cost(default_seconds("xla", "fwdbwd") + CELL_OVERHEAD_S, "default")  # failed early
    assert costs[cells[3]].source == "default"
    # the run's per-cell timeout: past it a cell stops (and times out); one that timed out may take all of it
    capped = estimate_costs(cells, rows, timeout_s=150)
    assert capped[cells[1]] == Cost(150 + CELL_OVERHEAD_S, "timed out", times_out=True)
    longer = estimate_costs(cells, rows, timeout_s=300)
    assert longer[cells[1]] == Cost(300 + CELL_OVERHEAD_S, "timed out", times_out=False)
    assert not longer[cells[0]].times_out and estimate_costs(cells, rows, timeout_s=20)[cells[0]].times_out
    # rows named otherwise than the cells (a sample's absolute path): `key` maps them
    keyed = estimate_costs([("s", "fwd", "inductor")], [Row("/x/samples/s", "fwd", "inductor", status="ok",
                                                            compile_s=7.0, run_us=0.0)], key=lambda w: w.rsplit("/")[-1])
    assert keyed[("s", "fwd", "inductor")] == Cost(7.0 + CELL_OVERHEAD_S, "recorded")


def test_a_cell_no_row_holds_costs_what_its_backends_recorded_cells_took():
    """Enough recorded cells of a backend and mode: their upper quartile for its other cells (the
    machine's and the corpus's own figure); too few, or another mode: the default."""
    rows = [Row(f"m{i}", "fwd", "nvfuser", status="ok", compile_s=float(s), run_us=0.0)
            for i, s in enumerate((40, 50, 60, 70, 80, 130))]
    rows += [Row(f"m{i}", "fwd", "xla", status="ok", compile_s=5.0, run_us=0.0) for i in range(4)]
    cells = [("new", "fwd", "nvfuser"), ("new", "fwdbwd", "nvfuser"), ("new", "fwd", "xla"), ("m0", "fwd", "nvfuser")]
    costs = estimate_costs(cells, rows)
    assert costs[cells[0]] == Cost(80.0 + CELL_OVERHEAD_S, "its backend's")
    assert costs[cells[1]] == Cost(default_seconds("nvfuser", "fwdbwd") + CELL_OVERHEAD_S, "default")
    assert costs[cells[2]].source == "default"  # 4 xla rows: too few to speak for the others
    assert costs[cells[3]] == Cost(40.0 + CELL_OVERHEAD_S, "recorded")
