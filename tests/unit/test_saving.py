"""A run's document written off the cells' threads (irlens.matrix.saving), and a corpus run's rows."""
from __future__ import annotations

import threading

from irlens.core.ir import Graph
from irlens.matrix.row import Row
from irlens.matrix.saving import BackgroundSave
from irlens.zoo.run import CorpusRows


def test_asks_during_a_write_are_answered_by_one_write_of_the_newest_state():
    state, written = [], []
    writing, go_on = threading.Event(), threading.Event()

    def save():
        snapshot = list(state)  # as a document is made: the rows so far
        writing.set()
        go_on.wait(5)
        written.append(snapshot)

    saver = BackgroundSave(save)
    state.append(1)
    saver.request()
    assert writing.wait(5)  # the first write is under way, held until go_on
    for n in (2, 3, 4):  # the asking threads do not wait for it
        state.append(n)
        saver.request()
    go_on.set()
    saver.close()
    assert written == [[1], [1, 2, 3, 4]]


def test_close_writes_what_was_asked_for_and_a_failed_write_is_a_warning(capsys):
    calls = []

    def save():
        calls.append(len(calls))
        if len(calls) == 1:
            raise OSError(28, "No space left on device")

    saver = BackgroundSave(save, "the test's document")
    saver.request()
    saver.close()  # the failed write warned; nothing is asked for any more
    saver.close()
    assert calls == [0]
    assert "irlens: warning: could not write the test's document while running: OSError: [Errno 28] " \
           "No space left on device" in capsys.readouterr().err


def test_a_corpus_run_keeps_its_rows_without_their_graphs():
    written = []
    done = []
    rows = CorpusRows(written.append, done, [Row("m", "fwd", "eager", None, status="unavailable")], "cpu", "tiny",
                      None, [], None)
    row = Row("m", "fwd", "inductor", "dynamo", status="ok")
    row.graphs = {"inductor.post_grad.forward": Graph("m", "dynamo", "inductor.post_grad.forward", "composite", [], [], [])}
    rows(None, row)
    rows.close()
    assert done == [row] and row.graphs == {}
    assert [(r.backend, r.status) for r in written[-1].rows] == [("inductor", "ok"), ("eager", "unavailable")]
