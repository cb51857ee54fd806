"""Where a bench run's wall time went (irlens.bench.timeline, irlens.reporting.time_spent): the spans its progress records on a
fake clock, stored in the document (older documents without them still read), and the page's table."""
import io
import threading

import pytest

from irlens.bench.progress import BenchProgress
from irlens.bench.timeline import CEILINGS, WAITING, time_spent
from irlens.core.json_values import BadDocument
from irlens.matrix import Document
from irlens.reporting.bench_page import write_results_page


def _run() -> tuple[BenchProgress, list[float]]:
    """A run on a fake clock: 4 cells compiled ahead 2 at once (eager twice, xla twice), waiting,
    the ceilings, 2 timed cells."""
    now = [0.0]
    progress = BenchProgress(io.StringIO(), clock=lambda: now[0])
    progress.plan("compiling ahead", 4, width=2)
    progress.plan("timed float32", 2)
    now[0] = 2.0
    progress.phase("compiling ahead")

    def cell(start: float, end: float, group: str) -> None:  # in a thread of its own, as compile_ahead runs them
        def run():
            now[0] = start
            progress.start(f"gelu · {group} · fwd · float32", group)
            now[0] = end
            progress.finish()
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()

    for start, end, group in ((2.0, 12.0, "eager"), (12.0, 20.0, "eager"), (20.0, 50.0, "xla"), (50.0, 62.0, "xla")):
        cell(start, end, group)
    now[0] = 62.0
    progress.step(WAITING)
    now[0] = 282.0
    progress.step(CEILINGS)
    now[0] = 330.0
    progress.phase("timed float32")
    for start, end in ((330.0, 340.0), (340.0, 360.0)):
        cell(start, end, None)
    now[0] = 361.0
    return progress, now


def test_the_spans_follow_the_phases_and_steps_with_each_backends_compiles():
    progress, _ = _run()
    spent = time_spent(progress).to_json()  # as the document writes it
    assert [(s["name"], s["start_s"], s["end_s"]) for s in spent["spans"]] == [
        ("compiling ahead", 2.0, 62.0), (WAITING, 62.0, 282.0), (CEILINGS, 282.0, 330.0), ("timed float32", 330.0, 361.0)]
    compiling, waiting, _, timed = spent["spans"]
    assert (compiling["cells"], compiling["busy_s"], compiling["width"]) == (4, 60.0, 2)
    assert compiling["backends"] == {"eager": {"cells": 2, "busy_s": 18.0, "start_s": 2.0, "end_s": 20.0},
                                     "xla": {"cells": 2, "busy_s": 42.0, "start_s": 20.0, "end_s": 62.0}}
    assert "cells" not in waiting  # a step runs no cells
    assert (timed["cells"], timed["busy_s"], timed["width"]) == (2, 30.0, 1) and "backends" not in timed


def test_the_document_keeps_them_and_the_page_shows_where_the_time_went(tmp_path):
    progress, _ = _run()
    doc = Document("bench", [], "cuda", "GPU", {}, "tiny", driver="1", wall_s=367.0, time_spent=time_spent(progress))
    again = Document.from_json(doc.to_json())
    assert again.time_spent == doc.time_spent
    page = write_results_page(again, tmp_path / "r.md", "r.json", "irlens bench")[0].read_text()
    table = page[page.index("## Where the time went"):].split("\n\n")[2].splitlines()
    assert table[2:] == [
        "| compiling ahead | 0:02 | 1:02 | 1.0 | 4 | 2 | 1.0 |",
        "| · eager | 0:02 | 0:20 | 0.3 | 2 | | 0.3 |",
        "| · xla | 0:20 | 1:02 | 0.7 | 2 | | 0.7 |",
        f"| {WAITING} | 1:02 | 4:42 | 3.7 | - | - | - |",
        f"| {CEILINGS} | 4:42 | 5:30 | 0.8 | - | - | - |",
        "| timed float32 | 5:30 | 6:01 | 0.5 | 2 | 1 | 0.5 |",
        "| the rest | | | 0.1 | | | |",  # 367 s of wall time, 359 s in the spans
        "| wall time | 0:00 | 6:07 | 6.1 | | | |"]


def test_a_document_without_them_reads_and_a_bad_one_names_the_field(tmp_path):
    old = Document("bench", [], "cuda", "GPU", {}, "tiny", driver="1", wall_s=60.0).to_json()
    assert "time_spent" not in old
    page = write_results_page(Document.from_json(old), tmp_path / "r.md", "r.json", "irlens bench")[0].read_text()
    assert "wall time 1.0 min" in page and "Where the time went" not in page
    bad = {**old, "time_spent": {"spans": [{"name": "ceilings", "start_s": "soon", "end_s": 3.0}]}}
    with pytest.raises(BadDocument, match=r"field 'time_spent': field 'spans' item 1: field 'start_s' is 'soon', "
                                          r"not a number"):
        Document.from_json(bad)


def test_the_page_adds_up_the_cells_stages_by_backend():
    """Each worker cell's seconds per stage (Row.notes), added up by stage kind and backend: a
    reference computed alone counts with the others, minutes to one decimal."""
    from irlens.matrix.row import STAGES_NOTE, Row
    from irlens.reporting.time_spent import stage_lines

    rows = [Row("gelu", "fwd", "eager", notes={STAGES_NOTE: {"computing the float64 reference on cuda": 60.0,
                                                             "timing": 30.0}}),
            Row("gelu", "fwd", "xla", notes={STAGES_NOTE: {"computing the float64 reference on cuda alone": 120.0,
                                                           "compiling": 240.0, "timing: its second call": 6.0}}),
            Row("block", "fwd", "xla", notes={})]
    lines = stage_lines(rows, STAGES_NOTE)
    table = [line for line in lines if line.startswith("| ")]
    assert table[0] == "| stage | eager | xla | all |"
    assert table[1:] == ["| compiling | - | 4.0 | 4.0 |", "| computing the float64 reference | 1.0 | 2.0 | 3.0 |",
                         "| timing | 0.5 | 0.1 | 0.6 |"]
    assert stage_lines(rows[2:], STAGES_NOTE) == []
