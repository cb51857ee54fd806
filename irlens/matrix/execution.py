"""Running a plan: every cell in a worker process with a timeout, beside its float64 reference.

A crash, a hang or an exception is a `failed` row and the rest of the matrix goes on. A worker
serves consecutive cells of one backend (a cross grid: of one acquiring frontend), so their
imports are paid once per worker; torch._dynamo is reset between cells. Isolated, each thread
takes the next cell whose reference is ready, of its worker's backend where it can
(irlens.matrix.cell_queue); the rows keep the plan's order.

Where device work happens: isolated (the default), nowhere in this process. On the CPU one
worker computes every reference into a file and checks the JAX twins, in the background (cells
start as soon as their own reference is there); cell workers load the files, and a file goes when
the last cell of its workload x mode has finished (irlens.matrix.plan_references says how the disk
is kept). On a GPU each cell's worker computes its own reference first (`computed_in_cells`: no
files, no wait for one worker), and the background worker only checks the twins. On a GPU, the memory
torch's and JAX's allocators keep after any work in this process would otherwise starve the
cell workers. In-process (`isolate=False`, for tests and unpicklable workloads) everything
runs here, without timeouts.

Workers take turns on the device (irlens.runtime.gpu_turns; on a CPU run, the CPU): they share it
while they start, compile, run and compute references, and each timing has it alone, so no
timed step shares its cores (or its GPU) with irlens's own work. Their thread pools are sized so
that all of them at once fit the cores (`isolation.worker_threads`; the document says how many). Timed on the device
(`Plan.device_timing`), a timed cell that runs out of memory beside other cells runs again
alone, and a JAX cell's worker ends with its cell (XLA keeps its memory until its process ends).

Every process of the run computes under the plan's float32 precision policy (irlens.core.precision):
this one applies it first, and the workers it starts inherit it.
"""
from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import torch

from irlens.core import precision
from irlens.runtime.gpu_turns import COMPILES_SHARE_ENV
from irlens.runtime.isolation import THREAD_COUNTS, WORKER_ENV, CallFailed, worker_threads
from irlens.runtime.pool import WorkerPool
from irlens.matrix.cell import new_row, out_of_memory, refused_natively, run_cell
from irlens.matrix.cell_queue import CellQueue
from irlens.matrix.document import Document, device_name, versions
from irlens.matrix.plan import Plan
from irlens.matrix.plan_references import References
from irlens.matrix.row import BUDGET_PHASE, STARVED_PHASE, Row
from irlens.matrix.spec import ENTRY, CellSpec

DEFAULT_TIMEOUT_S = 300.0
# how long past the time budget's end a cell that started within it may still run: then it stops and
# its row says so, so that `budget_s` bounds a run's wall time, not only when its last cell starts
BUDGET_GRACE_S = 30.0
# imported before a worker says it is ready, so that they do not count against a cell's timeout
WORKER_PRELOAD = ("irlens.worker.entry", "irlens.backends", "irlens.frontends", "irlens.workloads.builtin")


def run_plan(plan: Plan, timeout: float = DEFAULT_TIMEOUT_S, progress=True, jobs: int = 1,
             isolate: bool = True, budget_s: float | None = None, known: dict[CellSpec, Row] | None = None,
             references: References | None = None, on_row=None, compiles_share: bool = True,
             whole_budget_s: float | None = None) -> Document:
    """Run a planned matrix: one row per cell, in `Plan.cells()` order. Each cell and each float64
    reference has `timeout` seconds, not counting its waits for turns on the device (up to one
    timeout per other worker, and for a cell only until the budget's end: `IsolatedRunner.max_wait_s`);
    one that times out says the stage it was in. `jobs` cells run at once, each in a worker process;
    `isolate=False` runs them one by one in this process (no timeout, no crash protection). With
    `budget_s`, cells not started within that many seconds are `unavailable` rows saying so (a
    long GPU run then still ends with a complete document). `known` holds rows of cells that do
    not run again (irlens.matrix.compile_ahead's). `references`: the plan's float64 references,
    already computed (isolated; the caller closes them), where the caller started them early
    (irlens.bench.run: beside the compiles, so none is computed beside a timing). `progress`: a bar on stderr, none, or an
    object with `start(label)`, `finish()` and `close()` that hears of each cell. `on_row(cell, row)`
    hears of each row as it finishes (in the thread that ran it), so a caller can write what is done
    so far. A JAX twin that disagrees raises TwinMismatch before any cell runs. `compiles_share`:
    timed on the device, a cell's compile keeps its share of the device's turns, so no timing runs
    beside it; False: it steps aside as elsewhere (irlens.runtime.gpu_turns.stepped_aside), and
    timings run beside other cells' compiles. `whole_budget_s`: the budget a row left by it names,
    where this plan is a part of a run and `budget_s` what the run had left for it (default: `budget_s`)."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    stated_budget_s = budget_s if whole_budget_s is None else whole_budget_s
    if os.environ.get(WORKER_ENV):  # a user file that compares at import time, loaded by a worker
        raise RuntimeError("irlens.compare was called while a compare worker loaded a workload file; "
                           "put the call under `if __name__ == \"__main__\":` in that file")
    if isolate and not plan.isolatable:
        raise ValueError("a workload given as an object has no module-level name another process can import; "
                         "run it with isolate=False or declare it at the top level of a file")
    precision.apply(plan.precision)  # before any worker starts: they inherit it
    with tempfile.TemporaryDirectory(prefix="irlens-matrix-") as tmp:
        # the device turns (irlens.runtime.gpu_turns): every worker shares the device, a timing has it alone;
        # in this process one thing runs at a time
        lock = os.path.join(tmp, "device-turns.lock") if isolate else None
        # the cell workers and the reference worker compute at once: their pools fit the cores together
        threads = worker_threads(jobs + 1) if isolate else None
        refs = references or References(plan, tmp if isolate else None, timeout, check_twins=plan.kind == "compare",
                                        gpu_lock=lock, threads=threads, max_wait_s=timeout * jobs, deadline=deadline)
        try:
            if progress and references is None:
                where = " in a worker, cells start as theirs are ready" if isolate else ""
                print(f"irlens: computing the float64 references{where} ...", file=sys.stderr, flush=True)
            if isolate:
                refs.start()
            elif plan.device_timing:  # in this process: all float64 work first, none of it beside a timing
                refs.prepare()
            refs.check_twins_agree()
            cells = plan.cells(timeout if isolate else None)  # in this process a cell has no timeout
            if plan.device_timing and not isolate and plan.device.startswith("cuda"):
                torch.cuda.empty_cache()
            bar = progress if hasattr(progress, "start") else Progress(len(cells), bool(progress))
            runner = (IsolatedRunner(plan, refs, timeout, lock, threads, jobs, deadline, compiles_share) if isolate
                      else InProcessRunner(plan, refs))
            order = run_order(plan, cells, budgeted=deadline is not None)

            def run(cell: CellSpec) -> Row:
                bar.start(label(plan, cell))
                if deadline is not None and time.monotonic() > deadline:
                    row = cell_row(plan, cell).unavailable(BUDGET_PHASE,
                                                           f"not run: the run's time budget of {stated_budget_s:.0f} s ran out")
                elif known and cell in known:
                    row = known[cell]
                else:
                    row = planned_row(plan, cell, refs, deadline) or runner.run(cell)
                if on_row is not None:
                    on_row(cell, row)
                refs.finished(cell.workload, cell.mode)  # the last cell of its key: its reference file goes
                bar.finish()
                return row

            refs.serving()
            try:
                if isolate:  # each thread takes the next cell whose reference is ready (irlens.matrix.cell_queue)
                    queue = CellQueue(order, lambda c: worker_key(plan, c),
                                      lambda c: c in (known or {}) or refs.is_ready(c.workload, c.mode),
                                      lambda c: refs.rank(c.workload, c.mode))

                    def serve(_) -> dict[CellSpec, Row]:
                        rows, cell = {}, queue.take()
                        try:
                            while cell is not None:
                                rows[cell] = run(cell)
                                cell = queue.take(cell)
                        except BaseException:  # the other threads stop after their cell, not after the queue
                            queue.close()
                            raise
                        return rows

                    with ThreadPoolExecutor(max(1, jobs)) as pool:
                        try:
                            done = {cell: row for rows in pool.map(serve, range(max(1, jobs)))
                                    for cell, row in rows.items()}
                        except BaseException:  # Ctrl-C in this thread
                            queue.close()
                            raise
                else:
                    done = {cell: run(cell) for cell in order}
            finally:
                if bar is not progress:
                    bar.close()
                runner.close()
        finally:  # before the folder goes: the reference worker may still be writing into it
            if references is None:
                refs.close()
    cross = plan.frontends is not None
    return Document(plan.kind, [done[c] for c in cells], plan.device, device_name(plan.device), versions(),
                    plan.preset, plan.dtype, acquired_by=list(plan.frontends) if cross else None,
                    executed_by=[b.name for b in plan.backends.values()] if cross else None,
                    threads=threads_used(threads))


def threads_used(threads: int | None) -> int | None:
    """The intra-op threads the workers ran with: the user's setting where there is one (MKL's
    wins in torch), else irlens's; None in this process (torch's own default)."""
    if threads is None:
        return None
    user = next((os.environ[k] for k in reversed(THREAD_COUNTS) if os.environ.get(k, "").isdigit()), None)
    return int(user) if user else threads


def run_order(plan: Plan, cells: list[CellSpec], budgeted: bool) -> list[CellSpec]:
    """The order threads take cells in (each the first whose reference is ready: CellQueue). Without a
    budget, backend by backend: a worker serves consecutive cells of one backend (one acquiring
    frontend). Under one, in document order, workload by workload: a run the budget cuts leaves every
    stack the same first workloads, where backend by backend left the last stacks none (a GraphNet run
    on a GPU had eager, Inductor and Thunder rows on 20 samples and XLA rows on none)."""
    return list(cells) if budgeted else sorted(cells, key=lambda cell: worker_key(plan, cell))


def worker_key(plan: Plan, cell: CellSpec) -> int:
    """Cells with the same key share a worker: a backend's, or in the cross grid a frontend's."""
    return plan.frontends.index(cell.frontend) if cell.frontend else list(plan.backends).index(cell.backend)


def cell_row(plan: Plan, cell: CellSpec) -> Row:
    return new_row(plan.workloads[cell.workload], cell.mode, plan.backends[cell.backend], cell.frontend)


def label(plan: Plan, cell: CellSpec) -> str:
    backend = plan.backends[cell.backend].name
    through = backend if cell.frontend is None else f"{cell.frontend} \u2192 {backend}"
    return f"{plan.workloads[cell.workload].name} \u00b7 {through} \u00b7 {cell.mode}"


def starved_reason(timed_out: str) -> str:
    """A starved cell's reason (STARVED_PHASE), from its worker's timeout."""
    return f"not measured: {timed_out}: the run's other cells held the device (fewer cells at once: --jobs)"


def planned_row(plan: Plan, cell: CellSpec, refs: References, deadline: float | None = None) -> Row | None:
    """The row a cell gets without running: a backend that does not run on the device, or a
    workload its own frontend refuses (a JAX backend and no JAX twin) where it has no lowering to
    run Dynamo's graphs instead (irlens.matrix.cell.via_program) (unavailable, whatever the
    reference did), or a failed reference; or, with a `deadline` (time.monotonic()) that passes
    before its reference is ready, a budget row (a cell waits for its reference before its timeout
    starts: a run's cells would otherwise start, and end, long after its budget). None: it runs."""
    wl, backend = plan.workloads[cell.workload], plan.backends[cell.backend]
    if plan.device.split(":")[0] not in backend.devices:  # asking it does no device work (nvFuser on a CPU)
        return cell_row(plan, cell).unavailable("", backend.availability(plan.device).reason)
    refused = refused_natively(wl, backend) if cell.frontend is None and backend.lower is None else None
    if refused:
        return cell_row(plan, cell).unavailable("", refused)
    entry = refs.get(cell.workload, cell.mode) if refs.ready_by(cell.workload, cell.mode, deadline) else None
    if entry is None or entry.out_of_budget:
        return cell_row(plan, cell).unavailable(
            BUDGET_PHASE, "not run: the run's time budget ran out before its float64 reference was ready")
    if entry.error:
        return cell_row(plan, cell).fail("reference", entry.error)
    return None


class Progress:
    """A progress bar on stderr (tqdm where installed and stderr is a terminal), else a line per
    cell with the time elapsed and an estimate of the time left (a log file of a long run)."""

    def __init__(self, total: int, enabled: bool):
        self.enabled, self.total, self.done = enabled, total, 0
        self._bar = None
        self._start = time.monotonic()
        if enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, file=sys.stderr, unit="cell", dynamic_ncols=True)
            except ImportError:
                pass
        self._lock = threading.Lock()

    def start(self, label: str) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.set_description_str(label)
            elif self.enabled:
                elapsed = time.monotonic() - self._start
                eta = f", about {_minutes(elapsed / self.done * (self.total - self.done))} left" if self.done else ""
                print(f"[{self.done + 1}/{self.total}, {_minutes(elapsed)} in{eta}] {label}", file=sys.stderr, flush=True)

    def finish(self) -> None:
        with self._lock:
            self.done += 1
            if self._bar is not None:
                self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.set_description_str("done")
            self._bar.close()


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


class InProcessRunner:
    def __init__(self, plan: Plan, refs: References):
        self.plan, self.refs = plan, refs

    def run(self, cell: CellSpec) -> Row:
        p = self.plan
        return run_cell(cell, p.workloads[cell.workload], p.backends[cell.backend],
                        self.refs.get(cell.workload, cell.mode).reference)

    def close(self) -> None:
        pass


class IsolatedRunner:
    """Runs cells in a pool of worker processes (irlens.runtime.pool): one per thread, each on its own
    share of the cores (a timing never shares a core with another cell's compile), serving consecutive
    cells of one backend (a cross grid: of one acquiring frontend), started again after a crash, a hang or
    an error out of the cell's entry (its own failures are rows). A cell's waits for turns on the device
    do not count against its timeout (irlens.runtime.call_progress), up to `max_wait_s(timeout)`."""

    def __init__(self, plan: Plan, refs: References, timeout: float, timing_lock: str | None, threads: int | None = None,
                 jobs: int = 1, deadline: float | None = None, compiles_share: bool = True):
        self.plan, self.refs, self.timeout, self.timing_lock = plan, refs, timeout, timing_lock
        self.jobs, self.deadline, self.compiles_share = jobs, deadline, compiles_share
        self.pool = WorkerPool(jobs, WORKER_PRELOAD, turns=timing_lock, threads=threads, pinned=True)

    def run(self, cell: CellSpec) -> Row:
        p = self.plan
        kwargs = dict(spec=cell.to_json(), what="cell", reference_path=self.refs.get(cell.workload, cell.mode).path,
                      timing_lock=self.timing_lock)
        # on a shared GPU, the worker ends with the cell, so the next cells get that memory
        ends = p.device_timing and p.backends[cell.backend].keeps_device_memory
        row = self._call(cell, kwargs, close_after=ends)
        if p.device_timing and out_of_memory(row):
            # out of memory beside the other workers' cells: once more with the GPU alone, in a
            # fresh worker (the old one's allocator may hold what it got)
            row = self._call(cell, {**kwargs, "alone": True}, fresh=True, close_after=ends)
            row.notes["gpu_alone"] = "ran out of device memory beside other cells; run again alone"
        return row

    def worker_env(self, cell: CellSpec) -> dict[str, str]:
        """The backend's environment; a bench's (device-timed) compiles keep their share of the GPU,
        unless they step aside (`compiles_share` False)."""
        env = self.plan.backends[cell.backend].worker_env()
        return {**env, COMPILES_SHARE_ENV: "1"} if self.plan.device_timing and self.compiles_share else env

    def max_wait_s(self, timeout: float) -> float:
        """How long a cell starting now with `timeout` may wait for turns without it counting: one
        timeout per other worker sharing the device (the other cells', the references'), whose turns
        each end within their own timeout; with a time budget, only what its end (and grace) leaves
        past the cell's own timeout, so that the budget bounds the run's wall time."""
        wait = self.timeout * self.jobs
        if self.deadline is None:
            return wait
        return max(0.0, min(wait, self.deadline + BUDGET_GRACE_S - time.monotonic() - timeout))

    def _call(self, cell: CellSpec, kwargs: dict, fresh: bool = False, close_after: bool = False) -> Row:
        timeout, cut = self.timeout, False
        if self.deadline is not None:  # the budget bounds the run's wall time: a cell still running past it stops
            left = self.deadline + BUDGET_GRACE_S - time.monotonic()
            if left < timeout:
                timeout, cut = max(left, 1.0), True
        try:
            return Row.from_json(self.pool.call(ENTRY, kwargs, timeout, self.max_wait_s(timeout),
                                                key=worker_key(self.plan, cell), env=self.worker_env(cell),
                                                fresh=fresh, close_after=close_after), "a worker's row")
        except CallFailed as e:
            # a cell's own failures come back as rows: what escaped it broke the worker's state (the pool
            # closed it), e.g. a CUDA context a kernel's illegal memory access left unusable, which the next
            # cells would meet at their first allocation (two hf_gemma nvFuser cells on an H200, after hf_bart's)
            if cut and e.timed_out:
                return cell_row(self.plan, cell).unavailable(
                    BUDGET_PHASE, f"not finished: the run's time budget ended while it ran ({e.reason})", e.detail)
            if e.starved:
                return cell_row(self.plan, cell).unavailable(STARVED_PHASE, starved_reason(e.reason), e.detail)
            return cell_row(self.plan, cell).fail("worker", e.reason, e.detail)

    def close(self) -> None:
        self.pool.close()
