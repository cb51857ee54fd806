"""The order a run's threads take cells in (irlens.matrix.cell_queue): no thread waits for a later
reference while a cell whose reference is there is left, and every waiting thread waits for the
same, next reference."""
import threading

from irlens.matrix.cell_queue import CellQueue
from irlens.matrix.spec import CellSpec

WORKLOADS, BACKENDS = ("a", "b", "c"), ("eager", "inductor", "xla")
# a run's order: backend-major (a worker serves consecutive cells of one backend)
ORDER = [CellSpec(w, b) for b in BACKENDS for w in WORKLOADS]


def queue(ready: set[str]) -> CellQueue:
    return CellQueue(ORDER, lambda c: c.backend, lambda c: c.workload in ready, lambda c: WORKLOADS.index(c.workload))


def test_waiting_threads_all_wait_for_the_first_reference():
    q = queue(ready=set())
    taken = [q.take() for _ in range(3)]
    assert [c.workload for c in taken] == ["a", "a", "a"]  # not eager's a, b, c: threads idle behind b and c
    assert [c.backend for c in taken] == list(BACKENDS)


def test_a_waiting_thread_keeps_its_worker():
    q = queue(ready=set())
    assert q.take(CellSpec("c", "inductor")) == CellSpec("a", "inductor")  # the next reference, same backend


def test_a_closed_queue_hands_out_nothing():
    q = queue(ready={"a"})
    q.close()
    assert q.take() is None


def test_a_ready_cell_of_the_threads_own_backend_comes_first():
    q = queue(ready={"a", "b"})
    first = q.take()
    assert first == CellSpec("a", "eager")
    assert q.take(first) == CellSpec("b", "eager")  # the same worker: no new process
    assert q.take(CellSpec("b", "eager")) == CellSpec("a", "inductor")  # eager's c not ready: another ready one
    assert q.take(CellSpec("a", "xla")) == CellSpec("a", "xla")


def test_every_cell_is_taken_once_by_concurrent_threads():
    ready: set[str] = set()
    q = CellQueue(ORDER, lambda c: c.backend, lambda c: c.workload in ready, lambda c: WORKLOADS.index(c.workload))
    taken, lock = [], threading.Lock()

    def serve():
        cell = q.take()
        while cell is not None:
            with lock:
                taken.append(cell)
                ready.add(cell.workload)  # as the references arrive
            cell = q.take(cell)

    threads = [threading.Thread(target=serve) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken, key=ORDER.index) == ORDER
    assert q.take() is None


def test_under_a_budget_threads_take_the_stacks_workload_by_workload():
    """A run a budget cuts leaves every stack the same first workloads: with every reference ready,
    three threads start on three stacks of the first workload, and each keeps its stack."""
    from irlens.matrix.execution import run_order
    from irlens.matrix.plan import plan_matrix

    plan = plan_matrix(["gelu", "tinyhead"], ["eager", "inductor", "xla"], ["fwd"], "cpu", "tiny", None)
    cells = plan.cells()
    backends = [plan.backends[c.backend].name for c in run_order(plan, cells, budgeted=False)]
    assert backends == ["eager", "eager", "inductor", "inductor", "xla", "xla"]  # a worker's cells in a row
    order = run_order(plan, cells, budgeted=True)
    q = CellQueue(order, lambda c: c.backend, lambda c: True, lambda c: 0)
    first = [q.take() for _ in range(3)]
    assert {plan.workloads[c.workload].name for c in first} == {"gelu"}
    assert {plan.backends[c.backend].name for c in first} == {"eager", "inductor", "xla"}
    assert all(q.take(c).backend == c.backend for c in first)  # then each thread its stack's next workload
