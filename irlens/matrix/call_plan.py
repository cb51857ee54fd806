"""A big matrix split into calls by the time its cells took before, for a machine that limits each command.

A device that allows a command a fixed time runs a big matrix (`irlens zoo`, `irlens graphnet`) in
several calls. A split by name (`--shard`) ignores that some cells compile for minutes (Thunder,
nvFuser fwd+bwd: 60-400 s at the bench size) and most in seconds: a call then ends with nothing
written, or idles. Here each cell gets its cost from earlier documents' rows (`estimate_costs`:
its compile and run, or the timeout it hit), and `pack_calls` packs the cells into the fewest calls
whose estimated makespan (the cells over `jobs` lanes, longest first) fits the limit less a margin:
the slow cells spread one or few to a call, the quick ones filling the rest, so that every call
finishes a quick cell, and writes its document, early. A cell that does not fit a call alone gets
one of its own, flagged: it will time out.

Where a cell has a companion (eager beside each stack's cell of the same model and mode: a speedup
compares only with eager timed in the same call), the companion is packed beside it in every call
that holds one of its cells, and costed there.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from irlens.errors import UsageError
from irlens.matrix.row import Row
from irlens.wording import plural

Cell = tuple[str, str, str]  # (workload, mode, backend)

# a cell no document holds: seconds of compile and run by backend and mode, about the 75th percentile
# of the bench-size bfloat16 zoo on an H200 (docs/results/zoo-h200-bench), rounded up
DEFAULT_S = {"eager": {"fwd": 5.0, "fwdbwd": 5.0}, "inductor": {"fwd": 30.0, "fwdbwd": 60.0},
             "thunder+torchcompile": {"fwd": 90.0, "fwdbwd": 180.0}, "nvfuser": {"fwd": 90.0, "fwdbwd": 180.0},
             "xla": {"fwd": 15.0, "fwdbwd": 40.0}}
OTHER_BACKEND_S = {"fwd": 120.0, "fwdbwd": 240.0}  # a backend of the user's own
# what a cell costs beside its compile and timed steps (instantiating the model, its float64
# reference, reading its kernels), and a call beside its cells (imports, the first workers): guesses,
# no document records them
CELL_OVERHEAD_S = 10.0
CALL_START_S = 60.0
MARGIN = 0.1  # of the limit, for what the estimates miss: cells run in the plan's order, and wait for timing turns
STEPS = 10  # calls of the step a cell makes beside its compile (its first, the timed ones), at its median time
EARLY_S = 60.0  # a cell this quick, run first, puts a row in the call's document within a minute or so
_TIMED_OUT = re.compile(r"timed out after (\d+(?:\.\d+)?) s")


@dataclass(frozen=True)
class Cost:
    seconds: float  # what the cell takes in a call, its overhead included
    # "recorded" | "timed out" (it took at least its timeout) | "its backend's" (no row of it said: its
    # backend's and mode's recorded cells) | "default" (no row of it or of enough of its backend's cells)
    source: str
    times_out: bool = False  # longer than the run's per-cell timeout, or timed out at one as long before


@dataclass
class Call:
    cells: list[Cell]
    estimate_s: float  # its start and the makespan of its cells
    over_limit: bool = False  # one cell that cannot fit a call: it will time out
    writes_early: bool = True  # holds a cell quicker than EARLY_S


@dataclass
class CallPlan:
    calls: list[Call]
    limit_s: float
    jobs: int
    usable_s: float  # of each call, what its cells may take: the limit less the margin and the start
    costs: dict[Cell, Cost] = field(default_factory=dict)


def row_seconds(r: Row) -> tuple[float, str] | None:
    """(seconds, source) a row says its cell took: compile and steps where it ran, its timeout
    where it timed out; None where it says nothing (failed early, not run)."""
    if r.ran and r.compile_s is not None:
        return r.compile_s + STEPS * (r.run_us or 0.0) / 1e6, "recorded"
    m = _TIMED_OUT.search((r.reason or "").split("\n", 1)[0])
    return (float(m.group(1)), "timed out") if m else None


def default_seconds(backend: str, mode: str) -> float:
    return DEFAULT_S.get(backend, OTHER_BACKEND_S)[mode]


# rows of a backend and mode that make its recorded times the estimate of its cells no row holds
LIKE_ITS_BACKEND_MIN = 5
LIKE_ITS_BACKEND_QUANTILE = 0.75  # as DEFAULT_S: a cell more often shorter than its estimate than longer


def backend_seconds(known: dict[Cell, tuple[float, str]]) -> dict[tuple[str, str], float]:
    """(backend, mode) -> the upper quartile of the seconds its recorded cells took, where at least
    LIKE_ITS_BACKEND_MIN of them ran: the machine's and the corpus's own figure, for its other cells."""
    by_backend: dict[tuple[str, str], list[float]] = {}
    for (_, mode, backend), (seconds, source) in known.items():
        if source == "recorded":
            by_backend.setdefault((backend, mode), []).append(seconds)
    return {k: sorted(v)[min(len(v) - 1, int(LIKE_ITS_BACKEND_QUANTILE * len(v)))]
            for k, v in by_backend.items() if len(v) >= LIKE_ITS_BACKEND_MIN}


def estimate_costs(cells: Iterable[Cell], rows: Iterable[Row], timeout_s: float | None = None,
                   key: Callable[[str], str] = lambda name: name) -> dict[Cell, Cost]:
    """Each cell's cost: the longest any row of it says (`key` maps a row's workload to the cells'
    name for it), else what the rows say of its backend and mode (`backend_seconds`), else the
    backend's default, plus CELL_OVERHEAD_S; at most `timeout_s` (the run's per-cell timeout: the
    cell stops there), all of it for one that timed out before."""
    known: dict[Cell, tuple[float, str]] = {}
    for r in rows:
        said = row_seconds(r)
        cell = (key(r.workload), r.mode, r.backend)
        if said is not None and (cell not in known or said[0] > known[cell][0]):
            known[cell] = said
    alike = backend_seconds(known)
    costs = {}
    for cell in cells:
        like = alike.get((cell[2], cell[1]))
        seconds, source = known.get(cell) or ((like, "its backend's") if like is not None else
                                             (default_seconds(cell[2], cell[1]), "default"))
        times_out = False
        if timeout_s is not None:
            times_out = seconds >= timeout_s if source == "timed out" else seconds > timeout_s
            # one that timed out took at least its timeout then, and may take all of this one
            seconds = timeout_s if source == "timed out" else min(seconds, timeout_s)
        costs[cell] = Cost(seconds + CELL_OVERHEAD_S, source, times_out)
    return costs


def eager_companions(cells: Iterable[Cell], base: str = "eager") -> dict[Cell, Cell]:
    """cell -> the `base` backend's cell of its model and mode, where the cells hold one."""
    cells = set(cells)
    return {c: (c[0], c[1], base) for c in cells if c[2] != base and (c[0], c[1], base) in cells}


def listed_cells(listed: frozenset[Cell], selected: Iterable[Cell], selection: str) -> frozenset[Cell]:
    """`listed` (a `--cells` list, as a plan wrote it) where each is among the `selected` cells; else a
    UsageError naming how many are not and the first, and the options that made the `selection`."""
    outside = sorted(listed - set(selected))
    if outside:
        raise UsageError(f"--cells: {len(outside)} of the {plural(len(listed), 'cell')} listed not in the selection "
                         f"({selection}), the first: {' '.join(outside[0])}")
    return listed


def usable_seconds(limit_s: float) -> float:
    """What a call's cells may take of a `limit_s` call; a UsageError where nothing is left."""
    usable = limit_s * (1 - MARGIN) - CALL_START_S
    if not math.isfinite(limit_s) or usable <= 0:
        raise UsageError(f"a call of {limit_s:g} s leaves its cells no time ({MARGIN:.0%} margin and {CALL_START_S:g} s "
                         f"to start): give at least {math.ceil(CALL_START_S / (1 - MARGIN)) + 1} s")
    return usable


class _Bin:
    """A call being packed: its units (the cells packed for themselves), with their companions, over its lanes."""

    def __init__(self, jobs: int):
        self.jobs, self.lanes, self.cells, self.units = jobs, [0.0] * jobs, [], []

    def _added(self, items: list[tuple[Cell, float]]) -> tuple[list[float], list[Cell]]:
        lanes, cells = list(self.lanes), list(self.cells)
        for cell, s in items:
            if cell not in cells:  # a companion already beside another cell costs nothing more
                lanes[lanes.index(min(lanes))] += s
                cells.append(cell)
        return lanes, cells

    def span_with(self, items: list[tuple[Cell, float]]) -> float:
        return max(self._added(items)[0])

    def add(self, unit: Cell, items: list[tuple[Cell, float]]) -> None:
        self.lanes, self.cells = self._added(items)
        self.units.append(unit)


def pack_calls(costs: dict[Cell, Cost], limit_s: float, jobs: int = 1,
               companions: dict[Cell, Cell] | None = None) -> CallPlan:
    """The fewest calls of at most `limit_s` (less MARGIN and CALL_START_S) each, found by trying n
    calls from the lower bound up: the cells, longest first (then by name: the same plan every
    time), each to the call it leaves with the shortest makespan, its companion beside it. A cell
    (with its companion) longer than a call's usable time gets a call of its own, over the limit."""
    if jobs < 1:
        raise UsageError(f"jobs per call must be at least 1, not {jobs}")
    usable = usable_seconds(limit_s)
    companions = companions or {}
    beside = set(companions.values())
    units = sorted((c for c in costs if c not in beside), key=lambda c: (-costs[c].seconds, c))

    def items(u: Cell) -> list[tuple[Cell, float]]:
        return [(c, costs[c].seconds) for c in (u, companions.get(u)) if c is not None]

    alone = [u for u in units if _Bin(jobs).span_with(items(u)) > usable]
    fitting = [u for u in units if u not in alone]
    work = sum(costs[c].seconds for c in {c for u in fitting for c, _ in items(u)})
    bins: list[_Bin] = []
    for n in range(math.ceil(work / (usable * jobs)) if fitting else 0, len(fitting) + 1):
        bins = _assign(fitting, items, n, jobs, usable)
        if bins is not None:
            break
    bins = [b for b in bins if b.cells]
    _add_early_cells(bins, costs, items, usable)
    for u in alone:
        bins.append(_Bin(jobs))
        bins[-1].add(u, items(u))
    calls = [Call(sorted(b.cells), CALL_START_S + max(b.lanes), over_limit=max(b.lanes) > usable,
                  writes_early=min(costs[c].seconds for c in b.cells) <= EARLY_S) for b in bins]
    return CallPlan(calls, limit_s, jobs, usable, costs)


def _assign(units: list[Cell], items, n: int, jobs: int, usable: float) -> list[_Bin] | None:
    """n calls, each unit to the one it leaves with the shortest makespan; None where one fits none."""
    bins = [_Bin(jobs) for _ in range(n)]
    for u in units:
        fits = [(span, i) for i, b in enumerate(bins) if (span := b.span_with(items(u))) <= usable]
        if not fits:
            return None
        bins[min(fits)[1]].add(u, items(u))
    return bins


def _add_early_cells(bins: list[_Bin], costs: dict[Cell, Cost], items, usable: float) -> None:
    """A call of slow cells alone takes a quick unit from a call that keeps another quick cell, where
    it fits: every call then writes a row before its first slow cell ends."""
    def quick(cells: list[Cell]) -> list[Cell]:
        return sorted((c for c in cells if costs[c].seconds <= EARLY_S), key=lambda c: (costs[c].seconds, c))

    for b in bins:
        if quick(b.cells):
            continue
        for i, donor in enumerate(bins):
            movable = [u for u in quick(donor.units) if len(quick(donor.cells)) > len(items(u))
                       and b.span_with(items(u)) <= usable]
            if movable:
                b.add(movable[0], items(movable[0]))
                bins[i] = _Bin(donor.jobs)  # the donor packed again without it (and its companion, unless needed)
                for u in sorted((u for u in donor.units if u != movable[0]), key=lambda u: (-costs[u].seconds, u)):
                    bins[i].add(u, items(u))
                break
