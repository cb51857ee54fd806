"""Compiling a bench's cells ahead of their timed runs, many at once.

A timed cell has the GPU to itself (irlens.runtime.gpu_turns), and in a bench a cell's compile keeps
its share of the device (gpu_turns.COMPILES_SHARE_ENV), so a timing waits for the compiles beside it
and they for the timing. Each timed cell compiles too, but first every cell of the run is compiled
and run once in `jobs` worker processes side by side, nothing timed and nothing checked: what that
leaves are the compilers' persistent caches (irlens.bench.compile_caches: Triton kernels and their
autotuning, XLA executables, nvFuser kernels), so the timed cells find their kernels compiled.

A cell whose worker crashed or hung here is not run again: it would crash or hang again, after
its whole timeout; its row says so (a cell out of device memory beside the others runs again
in its turn). A cell compiled ahead once before with the same caches and software is skipped
(`Log`, the cache folder's `compiled-ahead.json`). Past its deadline (its share of a run's time
budget) no further compile starts: the cells left compile in their timed turn, so that a budget
never runs out before any cell was timed.
"""
from __future__ import annotations

import gc
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from irlens.backends import Backend
from irlens.caches.upkeep import warn_once
from irlens.runtime.isolation import CallFailed, worker_threads
from irlens.runtime.pool import WorkerPool
from irlens.matrix.backend_run import run_backend
from irlens.matrix.cell import new_row, out_of_memory, refused_natively
from irlens.matrix.execution import WORKER_PRELOAD, label
from irlens.matrix.plan import Plan
from irlens.matrix.row import Row
from irlens.matrix.spec import ENTRY, CellSpec
from irlens.workloads.workload import Workload

LOG = "compiled-ahead.json"


def cell_id(plan: Plan, cell: CellSpec) -> str:
    return "/".join((plan.workloads[cell.workload].name, cell.mode, plan.backends[cell.backend].name,
                     cell.dtype or "default", cell.preset, cell.device))


class Log:
    """The cells compiled ahead into a cache folder, per software (a key naming the device and
    the versions): a later run with the same key skips them. Built-in workloads only: a user's
    file may have changed since."""

    def __init__(self, path: Path | None, key: str):
        self.path, self.key = path, key
        self.compiled: set[str] = set()
        if path is not None and path.is_file():
            try:
                self.compiled = set(json.loads(path.read_text()).get(key, []))
            except (OSError, ValueError, AttributeError):
                self.compiled = set()

    def save(self) -> None:
        """Written whole or not at all; a folder or disk that refuses it is a warning (the next run
        compiles those cells ahead again)."""
        if self.path is None:
            return
        try:
            every = json.loads(self.path.read_text()) if self.path.is_file() else {}
        except (OSError, ValueError):
            every = {}
        every[self.key] = sorted(self.compiled)
        partial = self.path.with_suffix(".new")
        try:
            partial.write_text(json.dumps(every, indent=1))
            partial.replace(self.path)
        except OSError as e:
            partial.unlink(missing_ok=True)
            warn_once(f"the log of cells compiled ahead ({self.path})", e)


def warm_cell(spec: CellSpec, wl: Workload, backend: Backend) -> dict:
    """(a worker: irlens.worker.entry's `warm`) Compile and run one cell, check nothing;
    {"status": ok | unavailable | failed, "reason"}."""
    import torch

    from irlens.frontends.base import Unavailable
    from irlens.workloads.workload import NoJaxTwin

    print(f"[irlens] compile ahead: {spec.workload} {backend.name} {spec.mode} {spec.dtype}", file=sys.stderr,
          flush=True)
    try:
        available = backend.availability(spec.device)
        if not available:
            return {"status": "unavailable", "reason": available.reason}
        if "torch._dynamo" in sys.modules:
            torch._dynamo.reset()
        run_backend(backend, wl.instantiate(spec.preset, spec.dtype, spec.device), spec.mode)
        return {"status": "ok", "reason": ""}
    except (Unavailable, NoJaxTwin) as e:
        return {"status": "unavailable", "reason": str(e)}
    except Exception as e:  # noqa: BLE001  (the timed run says what went wrong, with its traceback)
        return {"status": "failed", "reason": f"{type(e).__name__}: {e}"}
    finally:
        gc.collect()
        if spec.device.startswith("cuda"):
            torch.cuda.empty_cache()


def compile_ahead(plans: list[Plan], timeout: float, jobs: int, log: Log, progress=None,
                  deadline: float | None = None, after_cell=None) -> dict[str, dict[CellSpec, Row]]:
    """Compile every cell of `plans` (one per dtype) that `log` does not hold, `jobs` at a time,
    each within `timeout`, none started after `deadline` (time.monotonic()). Returns, per dtype,
    the rows of the cells that must not run again (their worker crashed or hung). `progress`
    (irlens.bench.progress) hears of each cell, and of those left to their timed turn; `after_cell()`
    is called after each (irlens.bench.compile_caches.Caches.check_disk)."""
    todo = [(plan, cell) for plan in plans for cell in plan.cells(timeout)
            if cell_id(plan, cell) not in log.compiled and _runs(plan, cell)]
    # a worker serves a backend's cells in a row: its imports and its compiler's warm state are paid once
    todo.sort(key=lambda pc: list(pc[0].backends).index(pc[1].backend))
    if progress is not None:
        progress.expect(len(todo))
    lock = threading.Lock()
    # a worker per thread, serving one backend's cells (a backend may need its own environment)
    workers = WorkerPool(jobs, WORKER_PRELOAD, threads=worker_threads(jobs))
    lost: dict[str, dict[CellSpec, Row]] = {}
    late: list[CellSpec] = []

    def run(item: tuple[Plan, CellSpec]) -> None:
        plan, cell = item
        backend = plan.backends[cell.backend]
        if deadline is not None and time.monotonic() > deadline:
            with lock:
                late.append(cell)
            return
        if progress is not None:
            progress.start(f"{label(plan, cell)} · {plan.dtype}", backend.name)
        try:
            # what it took on the GPU is freed only when its process ends
            reply = workers.call(ENTRY, {"spec": cell.to_json(), "what": "warm"}, timeout, key=backend.name,
                                 env=backend.worker_env(),
                                 close_after=plan.device.startswith("cuda") and backend.keeps_device_memory)
            if reply["status"] == "ok" and ":" not in cell.workload:  # built-ins only (see Log)
                with lock:
                    log.compiled.add(cell_id(plan, cell))
        except CallFailed as e:  # the pool closed its worker: what escaped the cell may have broken its state
            row = new_row(plan.workloads[cell.workload], cell.mode, backend).fail(
                "compile ahead", f"while compiling ahead: {e.reason}", e.detail)
            if not out_of_memory(row):  # beside the other compiles; alone, in its turn, it may fit
                row.dtype, row.preset = plan.dtype, plan.preset
                with lock:
                    lost.setdefault(plan.dtype, {})[cell] = row
        if progress is not None:
            progress.finish()
        if after_cell is not None:
            after_cell()

    try:
        with ThreadPoolExecutor(max(1, jobs)) as pool:
            list(pool.map(run, todo))
    finally:
        workers.close()
        log.save()
    if late and progress is not None:
        progress.expect(len(todo) - len(late))
        progress.note(f"compiling ahead stopped at its share of the time budget: {len(late)} of {len(todo)} "
                      f"cells compile in their timed turn")
    return lost


def _runs(plan: Plan, cell: CellSpec) -> bool:
    """Whether the cell compiles anything: not where the backend's own frontend refuses the
    workload (a JAX backend needs the workload's JAX twin)."""
    return not (cell.frontend is None and refused_natively(plan.workloads[cell.workload], plan.backends[cell.backend]))
