"""The pool of worker processes (irlens.runtime.isolation.Worker), one per slot, reused call after call:
the one way irlens runs calls in workers.

A slot's worker serves consecutive calls of one key (a backend, a frontend: whatever its imports
and environment are for), so those pay its start once; a call of another key starts a new one.
A call that fails (CallFailed: a crash, a hang past its timeout, an error out of its function)
leaves its worker closed: a crash or a hang ended it, and what escaped the function may have
broken its state (a CUDA context an illegal memory access left unusable would fail every later
call); the slot's next call starts a fresh worker. A caller names the errors its function raises
that leave the worker's state whole (`kept_on`: the references' wait for disk room), closes a
worker after its call where the worker must not keep what it holds (`close_after`: XLA keeps its
device memory until its process ends), or gives a call a fresh worker (`fresh`: a call run again
alone). A pool of one slot is one worker for a run of calls (the references', a bench's work
counts and ceilings, `irlens explain`'s cell, `irlens repro`'s reducer, a parallel table's row): a
caller that must hold no device memory does its device work there, and everything the worker held
goes with the pool. A pool that keeps a `spare` starts a slot's next worker beside the one that
replaced another, so that a run of calls that each end their worker (a reducer's crashing
candidates) does not wait for every worker's start. A caller whose calls may wedge a worker for
the calls after them (Thunder after some failed traces: every later call hangs) asks for a call
whose worker died or hung after serving earlier calls to run once more in a fresh one
(`again_fresh`: the conformance sweep's cases), so that only a fresh worker's failure is the
call's own. The pool knows nothing of what the calls compute.
"""
from __future__ import annotations

import os
import threading

from irlens.runtime.isolation import CallFailed, Worker, cpu_slice, worker_env


class WorkerPool:
    def __init__(self, slots: int, preload: tuple[str, ...] = (), turns: str | None = None,
                 threads: int | None = None, log: str | os.PathLike | None = None, spare: bool = False,
                 pinned: bool = False):
        """`slots` workers at most; `preload`, `turns`, `threads` and `log` as Worker's, for each of
        them; with `spare`, a slot's worker that replaced another has the next one starting beside it;
        `pinned`: each slot's workers keep to that slot's share of the cores (`cpu_slice`)."""
        self.preload, self.turns, self.threads, self.log, self.pinned = preload, turns, threads, log, pinned
        self._slots: list[tuple[object, Worker] | None] = [None] * max(1, slots)
        self._spares: list[tuple[object, Worker] | None] | None = [None] * len(self._slots) if spare else None
        self._started = [0] * len(self._slots)  # the workers each slot started
        self._served = [0] * len(self._slots)  # the calls each slot's current worker answered
        self._lock = threading.Lock()
        self._local = threading.local()
        self._taken = 0  # the slots given to threads so far (`slot=None`)
        self._closed = False

    def call(self, fn: str, kwargs: dict, timeout: float, max_wait_s: float = 0.0, *, key=None,
             env: dict[str, str] | None = None, slot: int | None = None, fresh: bool = False,
             close_after: bool = False, kept_on: tuple[str, ...] = (), again_fresh: bool = False):
        """Call `fn` in slot `slot`'s worker (None: the calling thread's own slot), as Worker.call,
        in a worker of `key`: the one there if it serves `key`, is alive and not `fresh`, else a new
        one with `env` beside the parent's (worker_env). Raise CallFailed as Worker.call does, the
        worker then closed unless the function raised an exception named in `kept_on`; with
        `close_after` the worker is closed after the call whatever it gave. With `again_fresh`, a
        call whose worker died or hung (nothing raised) after answering earlier calls runs once more
        in a fresh worker, and that call's failure is raised."""
        slot = self._thread_slot() if slot is None else slot
        worker = self._worker(slot, key, env, fresh)
        used = self._served[slot] > 0
        try:
            return self._call_in(slot, worker, fn, kwargs, timeout, max_wait_s, close_after, kept_on)
        except CallFailed as e:
            if not (again_fresh and used and e.raised is None):
                raise
        return self.call(fn, kwargs, timeout, max_wait_s, key=key, env=env, slot=slot, fresh=True,
                         close_after=close_after, kept_on=kept_on)

    def _call_in(self, slot: int, worker: Worker, fn: str, kwargs: dict, timeout: float, max_wait_s: float,
                 close_after: bool, kept_on: tuple[str, ...]):
        try:
            value = worker.call(fn, kwargs, timeout, max_wait_s)
        except CallFailed as e:
            close_after = close_after or e.raised not in kept_on
            raise
        finally:
            if close_after:
                self._drop(slot, worker)
            else:
                self._served[slot] += 1  # only a worker that stays serves the slot's next call
        return value

    def _thread_slot(self) -> int:
        slot = getattr(self._local, "slot", None)
        if slot is None:
            with self._lock:
                if self._taken == len(self._slots):
                    raise RuntimeError(f"a worker pool of {len(self._slots)} slots was called from more threads")
                slot, self._taken = self._taken, self._taken + 1
            self._local.slot = slot
        return slot

    def _worker(self, slot: int, key, env: dict[str, str] | None, fresh: bool) -> Worker:
        with self._lock:
            if self._closed:
                raise CallFailed("the worker pool was closed")
            current = self._slots[slot]
        if current is not None and current[0] == key and current[1].alive and not fresh:
            return current[1]
        if current is not None:
            self._drop(slot, current[1])
        worker = self._spare(slot, key) or self._start(env, slot)
        with self._lock:
            self._slots[slot], self._served[slot] = (key, worker), 0
            replaced, self._started[slot] = self._started[slot] > 0, self._started[slot] + 1
            closed = self._closed
        if closed:  # closed while it started (another thread's run that stops early)
            self._drop(slot, worker)
            raise CallFailed("the worker pool was closed")
        if replaced and self._spares is not None:
            self._keep_spare(slot, key, self._start(env, slot))
        return worker

    def _start(self, env: dict[str, str] | None, slot: int) -> Worker:
        return Worker(preload=self.preload, env={**worker_env(), **(env or {})}, turns=self.turns,
                      threads=self.threads, log=self.log,
                      cpus=cpu_slice(slot, len(self._slots)) if self.pinned else None)

    def _spare(self, slot: int, key) -> Worker | None:
        """The slot's spare if it serves `key` and lives (closed otherwise); None without one."""
        if self._spares is None:
            return None
        with self._lock:
            spare, self._spares[slot] = self._spares[slot], None
        if spare is None:
            return None
        if spare[0] == key and spare[1].alive:
            return spare[1]
        spare[1].close()
        return None

    def _keep_spare(self, slot: int, key, worker: Worker) -> None:
        with self._lock:
            closed = self._closed
            if not closed:
                self._spares[slot] = (key, worker)
        if closed:
            worker.close()

    def _drop(self, slot: int, worker: Worker) -> None:
        with self._lock:
            if self._slots[slot] is not None and self._slots[slot][1] is worker:
                self._slots[slot] = None
        worker.close()

    def close(self) -> None:
        """Close every worker, mid-call ones included (their calls fail); the pool takes no more calls."""
        with self._lock:
            self._closed = True
            workers = [entry[1] for entry in [*self._slots, *(self._spares or [])] if entry is not None]
            self._slots = [None] * len(self._slots)
            self._spares = None if self._spares is None else [None] * len(self._slots)
        for worker in workers:
            worker.close()

    def __enter__(self) -> "WorkerPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
