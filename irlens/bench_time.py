"""Where a bench run's wall time went: its document's `time_spent`, and the results page's table.

The run's progress (irlens.bench_progress) knows when each phase and step began: compiling
ahead, waiting for the float64 references and the work counts, the ceilings, each dtype's timed
cells. Each span lasts until the next one began (the last until the document is made). A phase of
cells also keeps its cells' seconds added up, how many ran at once, and per backend (the compile
ahead serves each backend's cells in a row, several at once) its cells, their seconds and the span
from its first cell's start to its last cell's end. What no span covers (starting up before the
first, finishing after the last) is the rest of the wall time.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from irlens.bench_progress import BenchProgress, clock_text
from irlens.json_values import BadDocument, read_record

WAITING = "waiting for the references and work counts"
CEILINGS = "measuring the ceilings"


@dataclass
class Share:
    """One backend's cells in a phase."""

    cells: int
    busy_s: float  # their seconds, added up
    start_s: float  # its first cell's start, seconds since the run's
    end_s: float  # its last cell's end

    @classmethod
    def from_json(cls, d: Any, where: str = "share") -> "Share":
        return read_record(cls, d, where, required=("cells", "busy_s", "start_s", "end_s"))


@dataclass
class Span:
    """A phase or step of the run, seconds since its start; a phase of cells says how they ran."""

    name: str
    start_s: float
    end_s: float
    cells: int | None = None  # None: a step that runs no cells
    busy_s: float | None = None  # the cells' seconds, added up
    width: int | None = None  # cells at once
    backends: dict[str, Share] | None = None  # where its cells say which backend they served

    def to_json(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, d: Any, where: str = "span") -> "Span":
        return read_record(cls, d, where, required=("name", "start_s", "end_s"))


def _shares(runs: list[tuple[str | None, float, float]]) -> dict[str, Share] | None:
    shares: dict[str, Share] = {}
    for group, began, ended in runs:
        if group is None:
            continue
        s = shares.setdefault(group, Share(0, 0.0, began, ended))
        s.cells, s.busy_s = s.cells + 1, s.busy_s + ended - began
        s.start_s, s.end_s = min(s.start_s, began), max(s.end_s, ended)
    return shares or None


def time_spent(progress: BenchProgress) -> dict:
    """The document's `time_spent` from the run's progress so far: {"spans": [...]}."""
    now = progress.clock() - progress.started
    timeline = progress.timeline
    spans = []
    for (name, began), ended in zip(timeline, [t for _, t in timeline[1:]] + [now]):
        phase = progress.phases.get(name)
        span = Span(name, began, ended)
        if phase is not None:
            span.cells, span.busy_s, span.width = len(phase.seconds), sum(phase.seconds), phase.width
            span.backends = _shares(phase.runs)
        spans.append(span)
    return {"spans": [s.to_json() for s in spans]}


def read_spans(time_spent: Any, where: str = "the document: field 'time_spent'") -> list[Span]:
    """The spans of a document's `time_spent`; BadDocument says where it cannot read one."""
    if not isinstance(time_spent, dict) or not isinstance(time_spent.get("spans"), list):
        raise BadDocument(f"{where} is not a JSON object with a 'spans' list")
    return [Span.from_json(s, f"{where} span {i + 1}") for i, s in enumerate(time_spent["spans"])]


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def time_lines(time_spent: dict, wall_s: float) -> list[str]:
    """The page's "Where the time went": each span from and to (m:ss since the start), its
    minutes and, for cells, their minutes added up (over `width` at once); per backend its share
    of a phase; the rest of `wall_s` that no span covers."""
    spans = read_spans(time_spent)
    lines = ["## Where the time went", "",
             "From and to: m:ss since the run began. Cell minutes: the cells' own times added up (a phase runs "
             "up to `at once` of them side by side); per backend, its cells of the phase, from its first start to "
             "its last end. The rest: what no step covers (starting up, writing the results).", "",
             "| step | from | to | minutes | cells | at once | cell minutes |", "|---|---:|---:|---:|---:|---:|---:|"]
    for s in spans:
        lines.append(f"| {s.name} | {clock_text(s.start_s)} | {clock_text(s.end_s)} | {_minutes(s.end_s - s.start_s)} "
                     f"| {'-' if s.cells is None else s.cells} | {s.width or '-'} | {_minutes(s.busy_s)} |")
        for backend, share in sorted((s.backends or {}).items(), key=lambda item: item[1].start_s):
            lines.append(f"| · {backend} | {clock_text(share.start_s)} | {clock_text(share.end_s)} | "
                         f"{_minutes(share.end_s - share.start_s)} | {share.cells} | | {_minutes(share.busy_s)} |")
    rest = max(wall_s - sum(s.end_s - s.start_s for s in spans), 0.0)
    lines += [f"| the rest | | | {_minutes(rest)} | | | |", f"| wall time | 0:00 | {clock_text(wall_s)} | "
              f"{_minutes(wall_s)} | | | |", ""]
    return lines
