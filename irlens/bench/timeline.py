"""The bench document's `time_spent` from the run's progress: its timeline as spans (read back and
paged by irlens.reporting.time_spent)."""
from __future__ import annotations

from irlens.bench.progress import BenchProgress
from irlens.matrix.header import Share, Span, TimeSpent

WAITING = "waiting for the references and work counts"
CEILINGS = "measuring the ceilings"


def _shares(runs: list[tuple[str | None, float, float]]) -> dict[str, Share] | None:
    shares: dict[str, Share] = {}
    for group, began, ended in runs:
        if group is None:
            continue
        s = shares.setdefault(group, Share(0, 0.0, began, ended))
        s.cells, s.busy_s = s.cells + 1, s.busy_s + ended - began
        s.start_s, s.end_s = min(s.start_s, began), max(s.end_s, ended)
    return shares or None


def time_spent(progress: BenchProgress) -> TimeSpent:
    """The document's `time_spent` from the run's progress so far."""
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
    return TimeSpent(spans)
