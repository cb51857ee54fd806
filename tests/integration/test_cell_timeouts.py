"""A cell's timeout counts its own work, not its waits for a turn on the device (irlens.runtime.call_progress):
a quick cell's timing that waits behind long sharers still finishes, and a cell that hangs says
which stage it hung in. A cell whose float64 reference is not ready within a run's time budget
does not start.

The long sharer is this test process, holding the run's device turns shared (as a worker
compiling for minutes would) until the timings behind it have waited longer than their timeout.
"""
import contextlib
import fcntl
import os
import re
import threading
import time

import pytest

import irlens.matrix as cmp
from irlens.runtime.isolation import CallFailed, Worker, worker_env
from irlens.matrix import execution
from irlens.matrix.execution import BUDGET_PHASE
from irlens.matrix.row import Row
from irlens.reporting.zoo_page import signature


# files the workers load: kept small, they cost little of a timeout (the reference worker loads
# only the workload's; a backend's imports all of irlens's backends)
WORKLOAD = """
import torch
from irlens.workloads.workload import Workload

TANH = Workload.from_module("tanh2", lambda x: torch.tanh(x) * 2.0, example_inputs=((4, 8),))  # no JAX twin to check
"""
BACKEND = """
import time
from irlens.backends.base import Backend
from irlens.frontends.base import Availability

class HangsWhileCompiling(Backend):
    name, frontend, description = "test-hang-compiling", None, "test-only: never returns from its compile"

    def availability(self, device):
        return Availability(True)

    def compile(self, inst, mode):
        time.sleep(3600)

HANG = HangsWhileCompiling()
"""


@contextlib.contextmanager
def long_sharer(lock: str, hold_after_wait_s: float, limit_s: float = 120.0):
    """Share the device turns at `lock` from now on; once a timing waits for them (it holds the
    turnstile), keep sharing `hold_after_wait_s` more seconds, then let go. Yields a dict that gets
    `waited_from` (time.monotonic())."""
    seen: dict = {}
    holder = open(lock, "a")
    fcntl.flock(holder, fcntl.LOCK_SH)
    stop = threading.Event()

    def release_after_a_wait():
        end = time.monotonic() + limit_s
        with open(lock + ".turnstile", "a") as turn:
            while not stop.is_set() and time.monotonic() < end:
                try:
                    fcntl.flock(turn, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    fcntl.flock(turn, fcntl.LOCK_UN)
                except BlockingIOError:  # a timing holds it: it waits for the device to itself
                    seen["waited_from"] = time.monotonic()
                    stop.wait(hold_after_wait_s)
                    break
                time.sleep(0.02)
        fcntl.flock(holder, fcntl.LOCK_UN)

    thread = threading.Thread(target=release_after_a_wait, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join()
        holder.close()


@pytest.mark.slow  # three workers start (torch, irlens's backends): 20 s on a loaded 2-core machine
def test_a_cells_timing_waits_behind_long_sharers_and_a_hung_cell_names_its_stage(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.setattr(execution.tempfile, "TemporaryDirectory", lambda prefix: contextlib.nullcontext(str(run_dir)))
    (tmp_path / "workload.py").write_text(WORKLOAD)
    (tmp_path / "backend.py").write_text(BACKEND)
    timeout = 4.0  # loading a workload file imports torchvision first: 2 s of a worker's call here
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager", f"{tmp_path}/backend.py:HANG"], ["fwd"],
                           "cpu", "tiny", None)
    with long_sharer(str(run_dir / "device-turns.lock"), hold_after_wait_s=timeout + 1.0) as seen:
        rows = cmp.run_plan(plan, timeout=timeout, progress=False, jobs=2).to_json()["rows"]
    assert "waited_from" in seen, [(r["status"], r["reason"]) for r in rows]
    eager, hung = rows
    # eager's timing (the only one) held the turnstile, waiting longer than its whole timeout behind
    # this process and the hung cell; it finished
    assert eager["status"] == "ok", eager
    # the hung cell was killed after its timeout of its own time, saying where it was (not starved)
    assert hung["status"] == "failed" and hung["phase"] == "worker"
    assert re.fullmatch(r"timed out after 4 s \(compiling, its last \d s\)"
                        r"(, not counting \d+ s waiting for turns on the device)?", hung["reason"]), hung["reason"]


@pytest.mark.slow
def test_a_cell_still_running_past_the_budget_stops_and_says_so(tmp_path, monkeypatch):
    """The budget bounds a run's wall time: a cell that started within it and still runs
    BUDGET_GRACE_S after its end is stopped, its row saying the stage (a cold bench on one H100
    with a 470 s budget was still running at 585 s, when its call's limit killed it)."""
    monkeypatch.setattr(execution, "BUDGET_GRACE_S", 5.0)
    (tmp_path / "workload.py").write_text(WORKLOAD)
    (tmp_path / "backend.py").write_text(BACKEND)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], [f"{tmp_path}/backend.py:HANG"], ["fwd"],
                           "cpu", "tiny", None)
    start = time.monotonic()
    (row,) = cmp.run_plan(plan, timeout=600, progress=False, jobs=1, budget_s=20).to_json()["rows"]
    assert time.monotonic() - start < 120
    assert (row["status"], row["phase"]) == ("unavailable", BUDGET_PHASE), row
    assert re.fullmatch(r"not finished: the run's time budget ended while it ran \(timed out after [\d.]+ s "
                        r"\(compiling, its last \d+ s\).*\)", row["reason"]), row["reason"]


SLOW_REFERENCE = """
import time
import torch
from irlens.workloads.workload import Workload

def tanh_slow_in_float64(x):
    if x.dtype == torch.float64:  # only the float64 reference is slow
        time.sleep(300)
    return torch.tanh(x)

SLOW = Workload.from_module("slow_reference", tanh_slow_in_float64, example_inputs=((4, 8),))
"""


def test_a_cell_whose_reference_is_not_ready_within_the_budget_does_not_start(tmp_path):
    """A cell waits for its float64 reference before it starts; past the run's budget it does not
    start (on an H200 a zoo process whose references waited behind long compiles ran minutes past
    its budget and was killed, its document never written)."""
    (tmp_path / "workload.py").write_text(SLOW_REFERENCE)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:SLOW"], ["eager"], ["fwd"], "cpu", "tiny", None)
    start = time.monotonic()
    (row,) = cmp.run_plan(plan, timeout=600, progress=False, jobs=2, budget_s=2).to_json()["rows"]
    assert time.monotonic() - start < 120
    assert (row["status"], row["phase"]) == ("unavailable", BUDGET_PHASE), row
    assert row["reason"] == "not run: the run's time budget ran out before its float64 reference was ready"



def test_a_part_of_a_run_names_the_runs_whole_budget():
    """A bench run times its dtypes one after another, each with what the budget has left: a cell
    the last part did not start names the run's budget, not what was left of it (a page read 'the
    run's time budget of 0 s ran out' for a run of 300 s)."""
    plan = cmp.plan_matrix(["gelu"], ["eager"], ["fwd"], "cpu", "tiny", None)
    (row,) = cmp.run_plan(plan, timeout=60, progress=False, budget_s=0, whole_budget_s=300).to_json()["rows"]
    assert (row["status"], row["phase"]) == ("unavailable", BUDGET_PHASE), row
    assert row["reason"] == "not run: the run's time budget of 300 s ran out"


WAITER = """
import os
from irlens.runtime import call_progress
from irlens.runtime.gpu_turns import sharing_gpu, timing_turn
from irlens.runtime.isolation import TURNS_ENV

def started():  # returns once the worker is ready: its start imports torch (irlens.core.precision), seconds
    return True

def timed():
    with sharing_gpu(os.environ[TURNS_ENV]):
        call_progress.stage("timing")
        with timing_turn():
            return "timed"
"""


def _waiter(tmp_path, lock: str) -> Worker:
    (tmp_path / "waiter.py").write_text(WAITER)
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp_path), env.get("PYTHONPATH")) if p)
    return Worker(preload=("waiter",), env=env, turns=lock)


def test_a_timing_that_waits_behind_a_long_sharer_longer_than_its_timeout_finishes(tmp_path):
    lock = str(tmp_path / "turns.lock")
    with long_sharer(lock, hold_after_wait_s=2.0) as seen:
        worker = _waiter(tmp_path, lock)
        try:
            assert worker.call("waiter:timed", {}, 1.0, max_wait_s=10.0) == "timed"
            done = time.monotonic()
        finally:
            worker.close()
    assert done - seen["waited_from"] >= 2.0  # twice its timeout


@pytest.mark.parametrize("max_wait_s", [0.0, 1.0])
def test_a_call_waits_uncounted_only_up_to_its_cap(tmp_path, max_wait_s):
    """Waits count beyond `max_wait_s` (a run's budget, one timeout per other worker): a call
    whose turn does not come is still ended, saying what it waited for and how much did not count."""
    lock = str(tmp_path / "turns.lock")
    with long_sharer(lock, hold_after_wait_s=30.0):
        worker = _waiter(tmp_path, lock)
        try:
            worker.call("waiter:started", {}, 60.0)  # the call alone is timed, not the worker's start
            start = time.monotonic()
            with pytest.raises(CallFailed) as failure:
                worker.call("waiter:timed", {}, 1.0, max_wait_s=max_wait_s)
            elapsed = time.monotonic() - start
        finally:
            worker.close()
    reason = failure.value.reason
    assert reason.startswith("timed out after 1 s (timing: waiting for the device to itself, its last "), reason
    assert f"of which {max_wait_s:.0f} s did not count" in reason
    assert failure.value.starved  # its counted time went to waiting: a row says "not measured"
    assert 1.0 + max_wait_s <= elapsed < 1.0 + max_wait_s + 3.0


def test_the_zoo_page_groups_timeouts_by_stage():
    def timed_out(workload: str, reason: str) -> Row:
        return Row(workload, "fwdbwd", "eager", None).fail("worker", reason)

    a = timed_out("hf_bert", "timed out after 450 s (compiling, its last 430 s)")
    b = timed_out("hf_mamba", "timed out after 450 s (compiling, its last 12 s)")
    c = timed_out("hf_t5", "timed out after 450 s (checking numerics, its last 30 s)")
    assert signature(a) == signature(b) == "eager fwdbwd: timed out after N s (compiling, its last N s)"
    assert signature(c) != signature(a)


class FakeWorker:
    """A worker whose every call gives `reply` (raised where it is an exception)."""

    def __init__(self, reply):
        self.reply, self.closed = reply, False

    @property
    def alive(self):
        return not self.closed

    def call(self, *args):
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply

    def close(self):
        self.closed = True


def fake_workers(monkeypatch, *replies) -> list[FakeWorker]:
    """The workers the worker pool starts from now on, in order: a FakeWorker per reply."""
    from irlens.runtime import pool

    started = []

    def start(*args, **kwargs):
        started.append(FakeWorker(replies[len(started)]))
        return started[-1]

    monkeypatch.setattr(pool, "Worker", start)
    return started


def test_a_cell_starved_of_the_device_is_not_measured_and_a_hung_one_fails(tmp_path, monkeypatch):
    """A worker call that timed out mostly waiting for turns (CallFailed.starved) gives an
    `unavailable` row in STARVED_PHASE, saying so (a later run's row replaces it in a join); one that
    timed out in its own work stays a failure."""
    (tmp_path / "workload.py").write_text(WORKLOAD)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager"], ["fwd"], "cpu", "tiny", None)
    (cell,) = plan.cells()
    runner = execution.IsolatedRunner(plan, None, 420.0, None)

    waited = ("timed out after 420 s (compiling, its last 5 s); it waited 400 s for turns on the device, "
              "of which 0 s did not count")
    fake_workers(monkeypatch, CallFailed(waited, starved=True),
                 CallFailed("timed out after 420 s (compiling, its last 409 s)"))
    row = runner._call(cell, {})
    assert (row.status, row.phase) == ("unavailable", execution.STARVED_PHASE)
    assert row.reason == f"not measured: {waited}: the run's other cells held the device (fewer cells at once: --jobs)"
    row = runner._call(cell, {})
    assert (row.status, row.phase) == ("failed", "worker")


def test_a_worker_an_error_escaped_a_cell_of_is_not_given_the_next_cell(tmp_path, monkeypatch):
    """A cell's failures are rows; an error out of its entry (a CUDA error a kernel left, found when
    the cell freed its memory) means the worker's state is broken: the next cell gets a new worker,
    not the poisoned one (on an H200 two hf_gemma cells failed loading their references after hf_bart's
    illegal memory access). A row that came back keeps its worker."""
    (tmp_path / "workload.py").write_text(WORKLOAD)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager"], ["fwd"], "cpu", "tiny", None)
    (cell,) = plan.cells()
    runner = execution.IsolatedRunner(plan, None, 420.0, None)

    started = fake_workers(monkeypatch,
                           CallFailed("AcceleratorError: CUDA error: an illegal memory access was encountered"),
                           Row("TANH", "fwd", "eager", None, status="ok").to_json())
    row = runner._call(cell, {})
    assert (row.status, row.phase) == ("failed", "worker") and "illegal memory access" in row.reason
    assert [w.closed for w in started] == [True]
    assert runner._call(cell, {}).status == "ok" and runner._call(cell, {}).status == "ok"
    assert [w.closed for w in started] == [True, False]  # the new worker serves on


@pytest.mark.parametrize("waited_s, waiting_for_s, max_wait_s, want", [
    (300.0, 0.0, 10.0, True),    # most of its 420 s went to counted waits
    (150.0, 30.0, 10.0, True),   # fewer, but over a quarter, and it was killed waiting for a turn
    (150.0, 0.0, 10.0, False),   # as many, killed in its own work
    (20.0, 5.0, 10.0, False),    # killed waiting, but after a compile that took nearly all its time
    (0.0, 400.0, 400.0, False),  # every wait excused: killed in its own time (the wait did not count)
    (0.0, 0.0, 0.0, False),      # no wait at all: its own work took the timeout (a hang, a long compile)
])
def test_a_timeout_is_starved_when_counted_waits_took_it(waited_s, waiting_for_s, max_wait_s, want):
    from irlens.runtime.call_progress import Progress
    from irlens.runtime.isolation import starved

    now = 1000.0
    progress = Progress("compiling", now - 100.0, waited_s, now - waiting_for_s if waiting_for_s else None,
                        "the device to itself" if waiting_for_s else "")
    assert starved(420.0, progress, now, max_wait_s) is want
    assert starved(420.0, None, now, max_wait_s) is False


def test_a_run_with_a_starved_cell_exits_1():
    """A cell not measured because the other cells starved it is no result: compare exits 1, as on
    a failure; a cell its budget left unstarted does not fail the run."""
    from irlens.matrix.document import Document, exit_status

    starved = Row("m", "fwd", "inductor", "dynamo", status="unavailable", phase=execution.STARVED_PHASE)
    budget = Row("m", "fwd", "xla", "dynamo", status="unavailable", phase=BUDGET_PHASE)
    ok = Row("m", "fwd", "eager", None, status="ok")
    assert exit_status(Document("compare", [ok, budget], "cpu")) == 0
    assert exit_status(Document("compare", [ok, budget, starved], "cpu")) == 1


def test_no_reference_starts_after_the_runs_deadline(tmp_path):
    """Past a run's budget no float64 reference is computed (its cells would not start): the
    entry says the budget ran out, and the cell gets a budget row, not a reference failure."""
    from irlens.matrix.plan_references import References

    (tmp_path / "workload.py").write_text(WORKLOAD)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager"], ["fwd"], "cpu", "tiny", None)
    (cell,) = plan.cells()
    late = time.monotonic() - 1.0
    refs = References(plan, str(tmp_path), 60.0, deadline=late)
    try:
        entry = refs.get(cell.workload, cell.mode)
        row = execution.planned_row(plan, cell, refs, late)
    finally:
        refs.close()
    assert entry.out_of_budget and entry.path is None and "budget" in entry.error
    assert (row.status, row.phase) == ("unavailable", BUDGET_PHASE), row


def test_compiling_ahead_gives_no_cell_to_a_worker_an_error_escaped_a_cell_of(tmp_path, monkeypatch):
    """As in the timed runs: the cell after a failed call to a worker gets a new worker."""
    from irlens.matrix import compile_ahead

    (tmp_path / "workload.py").write_text(WORKLOAD)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager"], ["fwd", "fwdbwd"], "cpu", "tiny", None)
    failed = CallFailed("AcceleratorError: CUDA error: an illegal memory access was encountered")
    started = fake_workers(monkeypatch, failed, failed)
    lost = compile_ahead.compile_ahead([plan], 60.0, 1, compile_ahead.Log(None, "key"))
    assert len(lost[plan.dtype]) == 2 and len(started) == 2 and all(w.closed for w in started)


def reference_entries(plan, tmp_path) -> list:
    """Each cell's reference entry from a references' worker run over `plan` (its workers faked)."""
    from irlens.matrix.plan_references import References

    refs = References(plan, str(tmp_path), 60.0)
    try:
        refs.start()
        return [refs.get(cell.workload, cell.mode) for cell in plan.cells()]
    finally:
        refs.close()


def test_the_references_worker_is_replaced_after_a_failed_reference(tmp_path, monkeypatch):
    """A reference that failed in its worker leaves the next reference a new worker (a CUDA error
    there would fail every later reference, each blamed on its own model)."""
    (tmp_path / "workload.py").write_text(WORKLOAD)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager"], ["fwd", "fwdbwd"], "cpu", "tiny", None)
    failed = CallFailed("AcceleratorError: CUDA error: an illegal memory access was encountered",
                        raised="AcceleratorError")
    started = fake_workers(monkeypatch, failed, failed)
    entries = reference_entries(plan, tmp_path)
    assert all(e.path is None and "illegal memory access" in e.error for e in entries)
    assert len(started) == 2 and all(w.closed for w in started)


def test_the_references_worker_serves_on_after_a_wait_for_disk_room_ran_out(tmp_path, monkeypatch):
    """NoRoom (the disk stayed full) breaks nothing in the worker: the next reference runs in it."""
    from irlens.matrix.references import NoRoom

    (tmp_path / "workload.py").write_text(WORKLOAD)
    plan = cmp.plan_matrix([f"{tmp_path}/workload.py:TANH"], ["eager"], ["fwd", "fwdbwd"], "cpu", "tiny", None)
    started = fake_workers(monkeypatch, CallFailed("NoRoom: not enough disk for the float64 reference",
                                                   raised=NoRoom.__name__))
    entries = reference_entries(plan, tmp_path)
    assert all(e.path is None and "not enough disk" in e.error for e in entries)
    assert len(started) == 1 and started[0].closed  # one worker for both, closed with the run
