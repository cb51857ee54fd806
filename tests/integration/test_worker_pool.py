"""The worker pool (irlens.runtime.pool): a slot's worker serves the calls of one key, a failed call
leaves the next a fresh worker unless its caller named the error as harmless, a caller closes a
worker after its call or asks for a fresh one, each thread has a slot of its own, a spare waits
beside a replaced worker where asked, a call that kills a used worker runs again in a fresh one
where asked, and the workers' output goes to the pool's log. Real worker processes, calling tiny functions."""
import os
import threading
from pathlib import Path

import pytest

from irlens.runtime.isolation import CallFailed
from irlens.runtime.pool import WorkerPool

ENTRIES = """
import os
import signal
import time

def pid():
    return os.getpid()

def env(name):
    return os.environ.get(name)

def crash():
    os.kill(os.getpid(), signal.SIGSEGV)

def hang():
    time.sleep(600)

def fail():
    raise ValueError("bad input")

def say(text):
    print(text)

def cores():
    return sorted(os.sched_getaffinity(0))

WEDGED = []

def wedge():
    WEDGED.append(True)
    return os.getpid()

def pid_unless_wedged():
    if WEDGED:
        crash()
    return os.getpid()

def marked(path, then):
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\\n")
    globals()[then]()
"""


@pytest.fixture
def entries(tmp_path, monkeypatch):
    """The module `entries`, importable in the workers (they get this process's import path)."""
    (tmp_path / "entries.py").write_text(ENTRIES)
    monkeypatch.syspath_prepend(str(tmp_path))
    _EARLIER.clear()
    _EARLIER.update(children())


_EARLIER: set[int] = set()  # set by `entries`


def children() -> set[int]:
    """The processes this one started and that are still there, but those it had before the test
    (an earlier test file's compile pool, in the same test worker): the pools' workers."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended while it was read
        if ppid == os.getpid():
            found.add(int(stat.parent.name))
    return found - _EARLIER


def ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_slot_reuses_its_worker_for_a_key_and_starts_another_for_a_new_key(entries):
    with WorkerPool(1) as pool:
        first = pool.call("entries:pid", {}, 60, key="a")
        assert pool.call("entries:pid", {}, 60, key="a") == first
        # the new key's worker gets the environment given with its call
        assert pool.call("entries:env", {"name": "IRLENS_POOL_KEY"}, 60, key="b", env={"IRLENS_POOL_KEY": "b"}) == "b"
        second = pool.call("entries:pid", {}, 60, key="b")
    assert second != first and ended(first) and ended(second)


def test_a_failed_call_leaves_its_slot_a_fresh_worker(entries):
    """A crash, a hang past its timeout or an error out of the function: the worker is closed, and
    the slot's next call of the same key runs in a new one."""
    pids = []
    with WorkerPool(1) as pool:
        for fn, timeout, reason in (("crash", 60, "worker process crashed (SIGSEGV)"),
                                    ("hang", 1, "timed out after 1 s (in entries:hang, its last "),
                                    ("fail", 60, "ValueError: bad input")):
            pids.append(pool.call("entries:pid", {}, 60, key="a"))
            with pytest.raises(CallFailed) as failure:
                pool.call(f"entries:{fn}", {}, timeout, key="a")
            assert failure.value.reason.startswith(reason), failure.value.reason
            assert ended(pids[-1]), fn
        pids.append(pool.call("entries:pid", {}, 60, key="a"))
    assert len(set(pids)) == 4


def test_an_error_named_in_kept_on_leaves_the_worker_serving(entries):
    """A function's error its caller knows leaves the worker whole (the references' wait for disk
    room) keeps the worker; another error, or the same one not named, closes it."""
    with WorkerPool(1) as pool:
        first = pool.call("entries:pid", {}, 60)
        with pytest.raises(CallFailed) as failure:
            pool.call("entries:fail", {}, 60, kept_on=("ValueError",))
        assert failure.value.raised == "ValueError" and not ended(first)
        assert pool.call("entries:pid", {}, 60) == first
        with pytest.raises(CallFailed):
            pool.call("entries:fail", {}, 60, kept_on=("KeyError",))
        assert ended(first)
        with pytest.raises(CallFailed) as failure:  # a crash is never kept: the worker is gone
            pool.call("entries:crash", {}, 60, kept_on=("ValueError",))
        assert failure.value.raised is None


def test_again_fresh_runs_a_call_that_kills_a_used_worker_once_more_in_a_fresh_one(entries):
    """An earlier call may leave the worker wedged: the call that then crashes runs again in a
    fresh worker, and only that one's failure is raised."""
    with WorkerPool(1) as pool:
        first = pool.call("entries:wedge", {}, 60)
        again = pool.call("entries:pid_unless_wedged", {}, 60, again_fresh=True)
        assert again != first and ended(first)
        wedged = pool.call("entries:wedge", {}, 60)
        with pytest.raises(CallFailed):  # not asked: the wedged worker's failure is the call's
            pool.call("entries:pid_unless_wedged", {}, 60)
        assert ended(wedged)


@pytest.mark.parametrize("then, earlier, runs", [
    ("crash", True, 2),  # the used worker's crash, then the fresh one's
    ("crash", False, 1),  # a fresh worker's crash is the call's own
    ("fail", True, 1),  # an error out of the function is the call's own
])
def test_again_fresh_runs_a_call_at_most_twice_and_only_after_its_worker_died(entries, tmp_path, then, earlier, runs):
    marks = tmp_path / "marks"
    with WorkerPool(1) as pool:
        if earlier:
            pool.call("entries:pid", {}, 60)
        with pytest.raises(CallFailed):
            pool.call("entries:marked", {"path": str(marks), "then": then}, 60, again_fresh=True)
    pids = marks.read_text().split()
    assert len(pids) == runs and len(set(pids)) == runs


@pytest.mark.slow
def test_a_worker_closed_after_its_call_or_replaced_for_a_fresh_one(entries):
    with WorkerPool(1) as pool:
        first = pool.call("entries:pid", {}, 60, key="a", close_after=True)
        assert ended(first)  # at once: what it held is freed before the next call starts
        second = pool.call("entries:pid", {}, 60, key="a")
        third = pool.call("entries:pid", {}, 60, key="a", fresh=True)
        assert ended(second) and not ended(third)
    assert ended(third)


def test_each_thread_has_a_slot_of_its_own_and_a_closed_pool_takes_no_call(entries):
    pool = WorkerPool(2)
    pids, errors, both = {}, [], threading.Barrier(2)

    def call(name: str) -> None:
        try:
            both.wait(30)  # both threads hold a slot at once
            pids[name] = pool.call("entries:pid", {}, 60, key="a")
            both.wait(30)
            pool.call("entries:pid", {}, 60, key="a")  # a third thread has no slot
        except Exception as e:  # noqa: BLE001  (asserted below, in the test's thread)
            errors.append(e)

    threads = [threading.Thread(target=call, args=(name,)) for name in "xy"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(set(pids.values())) == 2
    assert pool.call("entries:pid", {}, 60, key="a", slot=1) in pids.values()  # a slot named by the caller
    with pytest.raises(RuntimeError, match="a worker pool of 2 slots was called from more threads"):
        pool.call("entries:pid", {}, 60, key="a")
    pool.close()
    assert all(ended(pid) for pid in pids.values())
    with pytest.raises(CallFailed, match="the worker pool was closed"):
        pool.call("entries:pid", {}, 60, key="a", slot=0)


@pytest.mark.slow
def test_a_pool_with_a_spare_starts_the_next_worker_beside_one_that_replaced_another(entries):
    """The first worker starts alone; the one that replaces it has a spare starting beside it,
    which the next replacement is, so a run of crashing calls does not wait for each start."""
    with WorkerPool(1, spare=True) as pool:
        first = pool.call("entries:pid", {}, 60)
        assert children() == {first}
        with pytest.raises(CallFailed):
            pool.call("entries:crash", {}, 60)
        second = pool.call("entries:pid", {}, 60)
        (spare,) = children() - {second}
        with pytest.raises(CallFailed):
            pool.call("entries:crash", {}, 60)
        assert pool.call("entries:pid", {}, 60) == spare
        assert len(children() - {spare}) == 1  # the next spare
        kept = children()
    assert all(ended(pid) for pid in kept)


def test_a_pool_without_a_spare_runs_one_worker_at_a_time(entries):
    with WorkerPool(1) as pool:
        for _ in range(2):
            with pytest.raises(CallFailed):
                pool.call("entries:crash", {}, 60)
            worker = pool.call("entries:pid", {}, 60)
            assert children() == {worker}


def test_a_pools_workers_append_what_they_print_to_its_log(entries, tmp_path):
    log = tmp_path / "workers.log"
    with WorkerPool(1, log=log) as pool:
        pool.call("entries:say", {"text": "from the first worker"}, 60)
        pool.call("entries:say", {"text": "from the second worker"}, 60, fresh=True)
    text = log.read_text()
    assert text.index("from the first worker") < text.index("from the second worker")


@pytest.mark.slow
def test_a_pinned_pools_slots_keep_to_their_own_cores(entries):
    """Each slot's worker keeps to its share of the cores (a timing in one never shares a core with
    another's compile); an unpinned pool's worker may run on any."""
    cores = sorted(os.sched_getaffinity(0))
    with WorkerPool(2, pinned=True) as pool:
        got = [set(pool.call("entries:cores", {}, 60, slot=slot)) for slot in (0, 1)]
    if len(cores) > 1:
        assert got[0] and got[1] and not got[0] & got[1]
    assert got[0] | got[1] == set(cores)
    with WorkerPool(1) as pool:
        assert pool.call("entries:cores", {}, 60) == cores
