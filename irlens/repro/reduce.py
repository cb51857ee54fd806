"""Delta debugging over the common view: the smallest graph that still fails the same way.

Starting from a graph that fails (a `Case` of the cell's program whose run through the path's
lowering fails), the reducer tries smaller graphs, each run in an isolated worker (a crash
costs the worker, which is started again: `Runner`), and keeps one when it fails the same way: the same
status class and the same first error line (`Outcome.same_failure`). In order:

1. prefix: the shortest prefix of the nodes that still fails (bisection);
2. fusion region (nvFuser): each region `irlens.backends.thunder.lower` makes, alone;
3. nodes: ddmin over the nodes that are left (a dropped node's outputs become inputs);
4. shapes: each dimension size made 1, else halved while it still fails, where the graph's
   shapes still hold (`shape_problem`).

Every try is printed (what, the size it would leave, the outcome, kept or not) with the time
spent against `budget_s`; when the budget runs out the smallest failing graph so far is the
result. A candidate is never kept unless it was run and failed the same way.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import Callable

from irlens.core.ir import Graph
from irlens.matrix.spec import ENTRY, ENTRY_PRELOAD, CellSpec
from irlens.repro.cases import Case
from irlens.runtime.isolation import CallFailed
from irlens.repro.cell import Outcome, worker_failure
from irlens.repro.graphs import dimension_sizes, shape_problem, shrink, size_text, subgraph
from irlens.runtime.pool import WorkerPool
from irlens.wording import plural


@dataclass
class Attempt:
    what: str
    size: str
    outcome: str
    kept: bool
    elapsed_s: float


@dataclass
class Reduction:
    graph: Graph  # the smallest graph that fails the same way
    target: Outcome  # how it fails
    attempts: list[Attempt] = field(default_factory=list)
    stopped: str = ""  # why it stopped early ("" when no smaller graph fails the same way)


class Runner:
    """Runs candidates in a pool of one worker (irlens.runtime.pool), a fresh one after a failed call
    (a crash, a timeout, an error out of the function) or a candidate's CUDA fault. Once one has
    been replaced, the pool keeps a spare starting: a crashing graph's candidates then do not each
    wait for a worker to import torch and the backends."""

    def __init__(self, spec: CellSpec, timeout: float):
        self.spec, self.timeout = spec, timeout  # the cell whose graphs the candidates are
        self.pool = WorkerPool(1, ENTRY_PRELOAD, spare=True)
        self._fresh = False  # the last candidate left its worker's CUDA context broken

    def outcome(self, graph: Graph, case: Case) -> Outcome:
        kwargs = dict(spec=self.spec.to_json(), what="candidate", graph=graph.to_json(), case=case.to_json())
        try:
            outcome = Outcome.from_json(self.call(ENTRY, kwargs))
        except CallFailed as e:
            return worker_failure(e)
        self._fresh = bool(outcome.cuda_fault)  # broken for good: the next candidate needs another worker
        return outcome

    def call(self, fn: str, kwargs: dict, timeout: float | None = None):
        fresh, self._fresh = self._fresh, False
        return self.pool.call(fn, kwargs, timeout or self.timeout, fresh=fresh)

    def close(self) -> None:
        self.pool.close()


class Reducer:
    def __init__(self, runner: Runner, case: Case, target: Outcome, budget_s: float,
                 log: Callable[[str], None] | None = None, nvfuser_regions: bool = False):
        self.runner, self.case, self.target = runner, case, target
        self.budget_s, self.nvfuser_regions = budget_s, nvfuser_regions
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.start = time.monotonic()
        self.attempts: list[Attempt] = []
        self.stopped = ""
        self._tried: dict[tuple, bool] = {}  # a candidate met again (ddmin's halves) is not run again

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def out_of_time(self) -> bool:
        if self.elapsed() > self.budget_s and not self.stopped:
            self.stopped = f"the budget of {self.budget_s:.0f} s ran out"
            self.log(f"[repro {self.elapsed():6.1f}s] {self.stopped}: keeping the smallest failing graph so far")
        return bool(self.stopped)

    def fails(self, graph: Graph, what: str) -> bool:
        """Run `graph`; True (and it is kept) when it fails the way the target does."""
        key = (tuple(n.id for n in graph.nodes), tuple(t.shape for t in graph.inputs))
        if key in self._tried:
            return self._tried[key]
        if self.out_of_time():
            return False
        outcome = self.runner.outcome(graph, self.case)
        kept = outcome.same_failure(self.target)
        attempt = Attempt(what, size_text(graph), str(outcome), kept, self.elapsed())
        self.attempts.append(attempt)
        self.log(f"[repro {attempt.elapsed_s:6.1f}s/{self.budget_s:.0f}s] try {what}: {attempt.size} -> "
                 f"{_short(attempt.outcome)}: {'kept' if kept else 'not kept'}")
        self._tried[key] = kept
        return kept

    def reduce(self, graph: Graph) -> Reduction:
        self.log(f"[repro] reducing {size_text(graph)} that fails: {self.target}")
        for phase in (self.prefix, self.regions, self.nodes, self.shapes):
            if self.out_of_time():
                break
            graph = phase(graph)
        self.log(f"[repro {self.elapsed():6.1f}s] smallest graph: {size_text(graph)} "
                 f"({plural(len(self.attempts), 'try', 'tries')}{'; ' + self.stopped if self.stopped else ''})")
        return Reduction(graph, self.target, self.attempts, self.stopped)

    # --- the phases -------------------------------------------------------------------------

    def prefix(self, graph: Graph) -> Graph:
        ids = [n.id for n in graph.nodes]
        lo, hi = 1, len(ids)  # the prefix of hi nodes fails (the whole graph)
        while lo < hi and not self.out_of_time():
            mid = (lo + hi) // 2
            if self.fails(subgraph(graph, ids[:mid]), f"the first {mid} of {len(ids)} nodes"):
                hi = mid
            else:
                lo = mid + 1
        return subgraph(graph, ids[:hi]) if hi < len(ids) else graph

    def regions(self, graph: Graph) -> Graph:
        if not self.nvfuser_regions:
            return graph
        from irlens.backends.thunder.lower import Region, regions

        found = [item for item in regions(graph) if isinstance(item, Region)]
        for region in reversed(found):  # the last first: a prefix ends at the failing op
            candidate = subgraph(graph, [n.id for n in region.nodes])
            if len(candidate.nodes) < len(graph.nodes) and self.fails(candidate, f"fusion region {region.name} alone"):
                return candidate
        return graph

    def nodes(self, graph: Graph) -> Graph:
        """ddmin (Zeller and Hildebrandt) over the nodes: chunks alone, then complements."""
        keep = [n.id for n in graph.nodes]
        chunks = 2
        while len(keep) >= 2 and not self.out_of_time():
            parts = _split(keep, chunks)
            reduced = False
            for i, part in enumerate(parts):
                if len(parts) > 2 or i == 0:  # with two parts, a part alone is the other's complement
                    if self.fails(subgraph(graph, part), f"{len(part)} of {len(keep)} nodes ({_ids(part)})"):
                        keep, chunks, reduced = part, 2, True
                        break
            if not reduced:
                for part in parts:
                    rest = [i for i in keep if i not in set(part)]
                    if self.fails(subgraph(graph, rest), f"dropping {len(part)} of {len(keep)} nodes ({_ids(part)})"):
                        keep, chunks, reduced = rest, max(chunks - 1, 2), True
                        break
            if not reduced:
                if chunks >= len(keep):
                    break
                chunks = min(len(keep), chunks * 2)
        return subgraph(graph, keep)

    def shapes(self, graph: Graph) -> Graph:
        tried: set[tuple[int, int]] = set()
        while not self.out_of_time():
            moves = [(size, smaller) for size in dimension_sizes(graph) for smaller in (1, size // 2)
                     if smaller < size and (size, smaller) not in tried]
            if not moves:
                return graph
            size, smaller = moves[0]
            tried.add((size, smaller))
            candidate = shrink(graph, size, smaller)
            problem = shape_problem(candidate)
            if problem:
                self.log(f"[repro {self.elapsed():6.1f}s] size {size} -> {smaller}: the graph does not allow it "
                         f"({_short(problem)})")
            elif self.fails(candidate, f"size {size} -> {smaller}"):
                graph = candidate
        return graph


def _split(items: list, n: int) -> list[list]:
    size, extra = divmod(len(items), n)
    parts, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        if end > start:
            parts.append(items[start:end])
        start = end
    return parts


def _ids(ids: list[str]) -> str:
    return ", ".join(ids) if len(ids) <= 4 else f"{ids[0]} .. {ids[-1]}"


def _short(text: str) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= 160 else line[:157] + "..."
