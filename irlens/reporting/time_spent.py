"""Where a bench run's wall time went: the results page's table of its document's `time_spent`
(irlens.matrix.header.TimeSpent; the bench records it: irlens.bench.timeline).

The run's progress (irlens.bench.progress) knows when each phase and step began: compiling
ahead, waiting for the float64 references and the work counts, the ceilings, each dtype's timed
cells. Each span lasts until the next one began (the last until the document is made). A phase of
cells also keeps its cells' seconds added up, how many ran at once, and per backend (the compile
ahead serves each backend's cells in a row, several at once) its cells, their seconds and the span
from its first cell's start to its last cell's end. What no span covers (starting up before the
first, finishing after the last) is the rest of the wall time.
"""
from __future__ import annotations

from irlens.matrix.header import TimeSpent


def clock_text(seconds: float) -> str:
    seconds = max(int(round(seconds)), 0)
    return f"{seconds // 60}:{seconds % 60:02d}"


def _minutes(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 60:.1f}"


def time_lines(time_spent: TimeSpent, wall_s: float) -> list[str]:
    """The page's "Where the time went": each span from and to (m:ss since the start), its
    minutes and, for cells, their minutes added up (over `width` at once); per backend its share
    of a phase; the rest of `wall_s` that no span covers."""
    spans = time_spent.spans
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


def stage_lines(rows, note: str) -> list[str]:
    """"Inside the cells": their seconds per stage (each worker cell's `note`, irlens.matrix.cell),
    added up over the rows that have one, by backend; nothing where no row has one."""
    totals: dict[str, dict[str, float]] = {}
    for row in rows:
        for stage, seconds in (row.notes or {}).get(note, {}).items():
            by_backend = totals.setdefault(_stage_kind(stage), {})
            by_backend[row.backend] = by_backend.get(row.backend, 0.0) + seconds
    if not totals:
        return []
    backends = sorted({b for by_backend in totals.values() for b in by_backend})
    lines = ["### Inside the cells", "",
             "Each cell's minutes per stage, in its worker, added up (its waits for a turn on the device apart); "
             "the worker's start is not in them.", "",
             "| stage | " + " | ".join(backends) + " | all |", "|---|" + "---:|" * (len(backends) + 1)]
    for kind, by_backend in sorted(totals.items(), key=lambda item: -sum(item[1].values())):
        lines.append(f"| {kind} | " + " | ".join(_minutes(by_backend.get(b)) for b in backends)
                     + f" | {_minutes(sum(by_backend.values()))} |")
    return lines + [""]


def _stage_kind(stage: str) -> str:
    """A stage's kind: "computing the float64 reference on cuda alone" and "timing: its second call"
    count with their kind."""
    return stage.split(" on ")[0].split(":")[0]
