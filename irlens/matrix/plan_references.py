"""A plan's float64 references (irlens.matrix.references): `References` computes them in this process
when first asked for, or (isolated) in one worker process in the background, twins first, so that a
cell starts as soon as its own reference is there while costly ones are still being computed; or
(`computed_in_cells`: on a GPU) each cell's worker computes its own. Each reference obeys the run's
timeout; one that fails or times out fails its cells, saying so.

Isolated, the files are what fills a run's disk (float64 results and gradients at the bench size
take GBs each): a file goes as soon as the last cell of its workload x mode has finished
(`References.finished`), and a reference is saved only where it leaves `MIN_FREE_BYTES` free on
the folder's disk. One that does not fit waits, within its timeout, while references the running
cells will release are held; else (nothing to wait for: no cell is running yet) its cells fail
with the reason (`NoRoom`).
"""
from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from irlens.caches.upkeep import MIN_FREE_BYTES, GiB, disk_free
from irlens.matrix.plan import Plan
from irlens.matrix.spec import ENTRY, ReferenceSpec
from irlens.matrix.references import (NoRoom, Reference, compute_reference, failure_reason, reference_anywhere,
                                      release_memory, twin_problem)
from irlens.numerics.verdicts import TwinMismatch
from irlens.runtime import call_progress
from irlens.runtime.gpu_turns import sharing_gpu
from irlens.workloads.workload import Workload

ROOM_POLL_S = 2.0  # how often a reference that waits for disk looks again
ROOM_WAIT_SHARE = 0.8  # the share of a reference's timeout it may have spent when it gives up waiting for disk


def twin_in_worker(spec: ReferenceSpec, wl: Workload, gpu_lock: str | None = None) -> str:
    """(a worker: irlens.worker.entry's `twin`) `twin_problem` in the spec's device and dtype."""
    call_progress.stage("checking the JAX twin")
    with sharing_gpu(gpu_lock):
        return twin_problem(wl, spec.device, spec.dtype)


def reference_in_worker(spec: ReferenceSpec, wl: Workload, path: str, gpu_lock: str | None = None,
                        room_wait_s: float = 0.0) -> None:
    """(a worker: irlens.worker.entry's `reference`) Save the reference (`reference_anywhere`) to
    `path`, and give the memory back before the next. It is saved only where its disk keeps
    MIN_FREE_BYTES, waiting for room until `room_wait_s` of the call counted (`save_with_room`)."""
    print(f"[irlens] reference {spec.workload} {spec.mode}", file=sys.stderr, flush=True)
    reference = reference_anywhere(wl, spec.mode, spec.device, spec.preset, spec.dtype, gpu_lock)
    save_with_room(reference, path, room_wait_s)
    del reference
    release_memory(spec.device)


def save_with_room(reference: Reference, path: str, wait_s: float) -> None:
    """Save `reference` to `path` once its disk keeps MIN_FREE_BYTES after it, waiting (polling),
    while other references in its folder are held, for them to be released, until `wait_s` of the
    call counted against its timeout; NoRoom, naming the sizes, where it does not fit by then, or
    where the save itself runs out of disk (other writers share it), its partial file removed."""
    needs = reference.nbytes()
    while (free := disk_free(Path(path).parent)) - needs < MIN_FREE_BYTES:
        spent = call_progress.counted_s()  # None: not in a worker, no timeout to wait within
        if spent is None or spent + ROOM_POLL_S > wait_s or not others_held(path):
            raise NoRoom(f"not enough disk for the float64 reference: needs {needs / GiB:.1f} GiB, "
                         f"{free / GiB:.1f} GiB free (irlens keeps {MIN_FREE_BYTES / GiB:.0f} GiB free)")
        call_progress.stage("waiting for disk to save the float64 reference")
        time.sleep(ROOM_POLL_S)
    try:
        reference.save(path)
    except OSError as e:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        raise NoRoom(f"not enough disk for the float64 reference: needs {needs / GiB:.1f} GiB, saving it failed: "
                     f"{e}") from e


def others_held(path: str) -> bool:
    """Whether other reference files are in `path`'s folder: each goes when its last cell has finished."""
    folder, own = os.path.split(path)
    return any(name.startswith("reference") and name != own for name in os.listdir(folder or "."))


def computed_in_cells(device: str) -> bool:
    """Where an isolated run computes its references: on a GPU each cell's worker computes its own;
    on the CPU one worker computes each once into a file the cells load. On a GPU a float64
    reference takes seconds, and at the bench size GBs of disk: a bench's files filled a 64 GiB
    disk, and writing them one after another made them its critical path. On the CPU the
    computing is what costs, and the files are small."""
    return device != "cpu"


@dataclass
class Entry:
    reference: Reference | None  # in-process only
    path: str | None  # isolated, from the references' worker; None with `error` "": the cell computes its own
    error: str  # why there is no reference, or ""
    out_of_budget: bool = False  # not computed: the run's time budget ran out first


class References:
    """The float64 reference per workload x mode of a plan, computed once, and with `check_twins`
    each JAX twin's verdict. In-process (no `directory`) they are computed here when first asked
    for. Isolated, one worker computes them into files in `directory`, in the background from
    the first `start` or `get` on (the twins first, the check waits for them), each call within
    `timeout`; `get` waits for its own. With `gpu_lock`, the worker takes its turns on the device
    (a GPU, or the CPU) like a cell (irlens.runtime.gpu_turns), and up to `max_wait_s` of a call's waits
    for them do not count against its timeout. Past `deadline` (time.monotonic(): a run's budget)
    no reference starts: no cell that needs one starts then either, and the worker would only take
    turns from the cells still running. `in_cells` (isolated; default `computed_in_cells` of the
    plan's device): each cell's worker computes its own reference, and the worker here only checks
    the twins."""

    def __init__(self, plan: Plan, directory: str | None, timeout: float, check_twins: bool = False,
                 gpu_lock: str | None = None, threads: int | None = None, max_wait_s: float = 0.0,
                 deadline: float | None = None, in_cells: bool | None = None):
        self.plan, self.directory, self.timeout, self.check_twins = plan, directory, timeout, check_twins
        self.in_cells = directory is not None and (computed_in_cells(plan.device) if in_cells is None else in_cells)
        self.gpu_lock, self.threads, self.max_wait_s, self.deadline = gpu_lock, threads, max_wait_s, deadline
        self._left = Counter((c.workload, c.mode) for c in plan.cells())  # per key: its cells not finished
        self._serving = False  # cells are running: a reference without room may wait for the files they release
        self._cache: dict[tuple[str, str], Entry] = {}
        self._twins: dict[str, str] = {}
        self._ready: dict[tuple[str, str], threading.Event] = {}
        self._twins_ready = threading.Event()
        self._ranks: dict[tuple[str, str], int] | None = None
        self._worker: threading.Thread | None = None
        self._pool = None  # the worker thread's one-worker pool, for `close`
        self._stop = threading.Event()
        self._lock = threading.RLock()

    def get(self, workload: str, mode: str) -> Entry:
        """The reference of a workload (plan key) x mode: in-process, or its file when isolated, or why none."""
        key = (workload, mode)
        if self.in_cells:
            return Entry(None, None, "")
        if self.directory is None:
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = self._compute(workload, mode)
                return self._cache[key]
        self._event(key).wait()
        return self._cache[key]

    def ready_by(self, workload: str, mode: str, until: float | None) -> bool:
        """Whether the reference of a workload x mode is ready by `until` (time.monotonic(); None:
        wait for it however long it takes). In-process it is computed now."""
        if self.directory is None or self.in_cells:
            self.get(workload, mode)
            return True
        return self._event((workload, mode)).wait(None if until is None else max(0.0, until - time.monotonic()))

    def is_ready(self, workload: str, mode: str) -> bool:
        """Whether the reference of a workload x mode is there (or will never be), now; in-process it
        is computed when a cell asks for it."""
        return self.directory is None or self.in_cells or self._event((workload, mode)).is_set()

    def rank(self, workload: str, mode: str) -> int:
        """Where the reference of a workload x mode comes in the order they are computed."""
        if self._ranks is None:
            self._ranks = {key: i for i, key in enumerate(self._keys())}
        return self._ranks[(workload, mode)]

    def _event(self, key: tuple[str, str]) -> threading.Event:
        """Isolated: the event set when the reference of `key` is ready (the worker started)."""
        self.start()
        if key not in self._ready:
            raise KeyError(f"no reference was planned for {key[0]} {key[1]}")
        return self._ready[key]

    def twin_problem(self, workload: str) -> str:
        """Why the workload's JAX twin disagrees, or cannot be checked ("" when it agrees)."""
        if self.directory is None:
            with self._lock:
                if workload not in self._twins:
                    self._twins[workload] = self._twin(workload)
                return self._twins[workload]
        self.start()
        self._twins_ready.wait()
        return self._twins.get(workload, "")

    def check_twins_agree(self) -> None:
        """Each JAX twin must match its torch module, before anything runs (raises TwinMismatch).
        Skipped where JAX is not installed: no JAX backend can run there either."""
        if not self.check_twins or importlib.util.find_spec("jax") is None:
            return
        for key in self._twinned():
            problem = self.twin_problem(key)
            if problem:
                raise TwinMismatch(problem)

    def prepare(self) -> None:
        """Compute every reference the plan's cells need, now."""
        for key in self._keys():
            self.get(*key)

    def start(self) -> None:
        """Isolated: start computing the twin verdicts and every planned reference in the background."""
        with self._lock:
            if self.directory is None or self._worker is not None:
                return
            keys = [] if self.in_cells else self._keys()
            self._ready = {k: threading.Event() for k in keys}
            if not keys and not self._twinned():
                self._twins_ready.set()
                return
            self._worker = threading.Thread(target=self._compute_in_worker, args=(keys,), daemon=True)
            self._worker.start()

    def serving(self) -> None:
        """The plan's cells run from now on: a reference that waits for disk may wait for the files
        their last cells release."""
        self._serving = True

    def finished(self, workload: str, mode: str) -> None:
        """A cell of the workload x mode has finished: after the last, its file goes."""
        key = (workload, mode)
        with self._lock:
            self._left[key] -= 1
            entry = self._cache.get(key) if self._left[key] == 0 else None
        if entry is not None:
            self._release(entry)

    def _release(self, entry: Entry) -> None:
        if entry.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(entry.path)
            entry.path = None

    def close(self) -> None:
        """Stop the background worker (its process killed mid-call) and wait for its thread, so
        nothing writes into `directory` after this returns (a run that stops early, a twin that
        disagrees, removes it)."""
        self._stop.set()
        pool = self._pool
        if pool is not None:
            pool.close()
        if self._worker is not None:
            self._worker.join()

    def _keys(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((c.workload, c.mode) for c in self.plan.cells()))

    def _twinned(self) -> list[str]:
        return [w for w, wl in self.plan.workloads.items() if wl.jax is not None] if self.check_twins else []

    def _compute(self, workload: str, mode: str) -> Entry:
        p = self.plan
        try:
            return Entry(compute_reference(p.workloads[workload], mode, p.device, p.preset, p.dtype), None, "")
        except Exception as e:
            return Entry(None, None, f"the float64 eager reference failed: {type(e).__name__}: {e}")

    def _twin(self, workload: str) -> str:
        p = self.plan
        try:
            return twin_problem(p.workloads[workload], p.device, p.dtype)
        except Exception as e:
            return f"cannot check the JAX twin of workload {p.workloads[workload].name!r}: {type(e).__name__}: {e}"

    def _compute_in_worker(self, keys: list[tuple[str, str]]) -> None:
        from irlens.runtime.isolation import CallFailed
        from irlens.runtime.pool import WorkerPool

        p = self.plan
        try:
            # a failed call's worker is closed (a CUDA error would fail every later reference), but for
            # a wait for disk room that ran out
            with WorkerPool(1, preload=("irlens.worker.entry", "irlens.workloads.builtin"), turns=self.gpu_lock,
                            threads=self.threads) as worker:
                self._pool = worker
                for workload in self._twinned():
                    if self._stop.is_set():
                        return
                    try:
                        twin = ReferenceSpec(workload, device=p.device, dtype=p.dtype)
                        self._twins[workload] = worker.call(ENTRY, dict(
                            spec=twin.to_json(), what="twin", gpu_lock=self.gpu_lock), self.timeout, self.max_wait_s)
                    except CallFailed as e:
                        self._twins[workload] = (f"cannot check the JAX twin of workload "
                                                 f"{p.workloads[workload].name!r}: {e.reason}")
                self._twins_ready.set()
                for i, (workload, mode) in enumerate(keys):
                    if self._stop.is_set() or self._past_deadline():
                        return
                    path = os.path.join(self.directory, f"reference{i}.pt")
                    spec = ReferenceSpec(workload, mode, p.dtype, p.device, p.preset)
                    kwargs = dict(spec=spec.to_json(), what="reference", path=path, gpu_lock=self.gpu_lock,
                                  room_wait_s=ROOM_WAIT_SHARE * self.timeout if self._serving else 0.0)
                    try:
                        worker.call(ENTRY, kwargs, self.timeout, self.max_wait_s, kept_on=(NoRoom.__name__,))
                        entry = Entry(None, path, "")
                    except CallFailed as e:
                        entry = Entry(None, None, failure_reason(e.reason))
                    with self._lock:
                        self._cache[(workload, mode)] = entry
                        unneeded = self._left[(workload, mode)] <= 0  # its cells went without it (the budget)
                    if unneeded:
                        self._release(entry)
                    self._ready[(workload, mode)].set()
        finally:  # whatever stopped this thread, nobody may wait forever
            for workload in self._twinned():
                self._twins.setdefault(workload, "cannot check the JAX twin: the reference worker stopped")
            self._twins_ready.set()
            late = self._past_deadline()
            for key in keys:
                if key not in self._cache:
                    self._cache[key] = (Entry(None, None, "the run's time budget ran out before it was computed", True)
                                        if late else
                                        Entry(None, None, "the float64 reference was not computed: its worker stopped"))
                self._ready[key].set()

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline
