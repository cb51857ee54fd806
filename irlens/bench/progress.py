"""`irlens bench`'s progress on stderr: what it does, how far it is, and about how long is left.

A run goes through phases, each a number of cells run `width` at a time: compiling ahead, then
the timed cells of each dtype. Each cell that finishes prints one line: its phase, the phase's
cells done, the run's time so far and an estimate of the time left. The estimate adds, over the
phases not finished, the cells still to run times the mean time of a finished cell of that
phase (a phase with none finished yet borrows the mean of every cell finished so far), over its
width. Steps that are no cells (the ceilings, the work counts) print a line when they end.

It also keeps where the time went: when each phase and step began (`timeline`, seconds since
the start) and when each cell ran, with its group (the backend a compile ahead served), for the
bench document's `time_spent` (irlens.bench.timeline).
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, TextIO

from irlens.reporting.time_spent import clock_text


@dataclass
class Phase:
    name: str
    cells: int
    width: int = 1  # cells at once
    seconds: list[float] = field(default_factory=list)  # of each finished cell
    runs: list[tuple[str | None, float, float]] = field(default_factory=list)  # (group, began, ended) of each

    @property
    def left(self) -> int:
        return max(self.cells - len(self.seconds), 0)


class BenchProgress:
    """Thread-safe: cells of a phase finish in several threads (irlens.matrix.run_plan calls
    `start` and `finish` in the thread that runs the cell)."""

    def __init__(self, out: TextIO | None = None, clock: Callable[[], float] = time.monotonic):
        self.out, self.clock = out if out is not None else sys.stderr, clock
        self.started = clock()
        self.phases: dict[str, Phase] = {}
        self.current: Phase | None = None
        self.timeline: list[tuple[str, float]] = []  # (phase or step, when it began)
        self._begun: dict[int, tuple[float, str, str | None]] = {}  # thread -> when its cell began, which, its group
        self._lock = threading.Lock()

    def plan(self, name: str, cells: int, width: int = 1) -> None:
        """Add a phase the run will go through (in order)."""
        self.phases[name] = Phase(name, cells, max(1, width))

    def phase(self, name: str) -> None:
        """Enter a planned phase; the one before is over (none of its cells is left)."""
        self._enter(name, self.phases[name])

    def step(self, name: str) -> None:
        """Begin a step that is no phase of cells (waiting, measuring); the phase before is over."""
        self._enter(name, None)

    def _enter(self, name: str, phase: Phase | None) -> None:
        with self._lock:
            if self.current is not None:
                self.current.cells = len(self.current.seconds)
            self.current = phase
            self.timeline.append((name, self.clock() - self.started))

    def expect(self, cells: int) -> None:
        """The current phase runs this many cells after all (some needed no run)."""
        with self._lock:
            if self.current is not None:
                self.current.cells = cells

    def estimate_left(self) -> float | None:
        """Seconds left, by the rule of the module docstring; None before any cell finished."""
        finished = [s for p in self.phases.values() for s in p.seconds]
        if not finished:
            return None
        overall = sum(finished) / len(finished)
        total = 0.0
        for p in self.phases.values():
            mean = sum(p.seconds) / len(p.seconds) if p.seconds else overall
            total += p.left * mean / min(p.width, max(p.left, 1))
        return total

    def line(self, text: str) -> None:
        left = self.estimate_left()
        eta = "estimating the time left" if left is None else f"about {clock_text(left)} left"
        print(f"irlens bench: {text} · {clock_text(self.clock() - self.started)} elapsed, {eta}", file=self.out,
              flush=True)

    def note(self, text: str) -> None:
        """A step that is no cell has ended."""
        with self._lock:
            self.line(text)

    def start(self, label: str, group: str | None = None) -> None:
        with self._lock:
            self._begun[threading.get_ident()] = (self.clock(), label, group)

    def finish(self) -> None:
        with self._lock:
            begun = self._begun.pop(threading.get_ident(), None)
            phase = self.current
            if phase is None or begun is None:
                return
            now = self.clock()
            seconds = now - begun[0]
            phase.seconds.append(seconds)
            phase.runs.append((begun[2], begun[0] - self.started, now - self.started))
            self.line(f"{phase.name}: {len(phase.seconds)}/{phase.cells} cells ({begun[1]}: {seconds:.0f} s)")

    def close(self) -> None:
        pass
