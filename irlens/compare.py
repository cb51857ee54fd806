"""The comparison matrix: every workload x backend x mode, checked against a float64 reference.

`run_matrix` plans the cells, computes the float64 reference once per workload x mode, and
runs each cell in a worker process (irlens.isolation) with a timeout: a crash, a hang or an
exception is a `failed` row and the rest of the matrix goes on. A worker serves consecutive
cells of one backend, so a backend's imports are paid once per worker; torch._dynamo is
reset between cells.

Where device work happens: isolated (the default), nowhere in this process. One worker
computes every reference into a file and checks the JAX twins, and is closed before the
first cell starts; cell workers load the files. On a GPU, the memory torch's and JAX's
allocators keep after any work in this process would otherwise starve the cell workers.
In-process (`isolate=False`, for tests and unpicklable workloads) everything runs here.

`compare_main` is `irlens compare`: progress on stderr, a table on stdout, the JSON document
on request, and the exit status.

Test-only backends (one that crashes, hangs or raises) come in through the environment:
IRLENS_EXTRA_BACKENDS="path/to/file.py:NAME,package.module:NAME", each a Backend instance;
workers inherit the environment, so they see the same backends.
"""
from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import math
import os
import platform
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import torch

from irlens import _callable_submodule
from irlens.backends.base import BACKENDS, Backend, BackendRun
from irlens.frontends.base import Unavailable
from irlens.ir import Graph, Kernel
from irlens.numerics import TwinMismatch, check_jax_twin, compare_results, tolerance
from irlens.ops import is_compute
from irlens.registry import UnknownName
from irlens.timing import gpu_alone, recording_device_time, sharing_gpu
from irlens.user_workload import absolute_reference, load_object, reference_of, resolve_workload
from irlens.workload import DTYPES, MODES, PRESETS, Instance, Workload, run_eager, workload_names

STATUSES = ("ok", "mismatch", "failed", "unavailable")
DEVICES = ("cpu", "cuda")
EXTRA_BACKENDS_ENV = "IRLENS_EXTRA_BACKENDS"
# a float64 reference at the bench size can take minutes (minigpt fwd+bwd: ~2e16 flops); with
# cells starting as their references are ready, the costly ones need not hold the others up
REFERENCE_TIMEOUT_S = 900.0
DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Cell:
    workload: str  # a built-in name or a reference a worker can resolve
    backend: str
    mode: str


@dataclass
class Plan:
    """A validated matrix: what `run_matrix` runs."""

    workloads: dict[str, Workload]  # reference -> workload
    backends: dict[str, Backend]
    modes: list[str]
    device: str
    preset: str
    dtype: str | None
    device_timing: bool = False  # also measure kernels' device time (CUDA; `irlens bench`)
    # (workload name, mode, backend) of the cells to run, where not all of the product are
    # (`irlens bench --rerun`); None: all of them
    only: frozenset[tuple[str, str, str]] | None = None

    @property
    def isolatable(self) -> bool:
        """Whether a worker process can resolve every workload."""
        return not any(k.startswith("<object>:") for k in self.workloads)

    def cells(self) -> list[Cell]:
        return [Cell(w, b, m) for w in self.workloads for m in self.modes for b in self.backends
                if self.only is None or (self.workloads[w].name, m, b) in self.only]


# --- planning: every bad argument is found here, before anything runs ----------------------

def known_backends() -> dict[str, Backend]:
    """The registered backends, plus the test-only ones named in the environment (never registered)."""
    import irlens.backends  # noqa: F401  (registers the built-ins)

    known = {b.name: b for b in BACKENDS}
    for ref in filter(None, os.environ.get(EXTRA_BACKENDS_ENV, "").split(",")):
        backend = load_object(ref)
        if not isinstance(backend, Backend):
            raise ValueError(f"{EXTRA_BACKENDS_ENV}: {ref} is a {type(backend).__name__}, not a Backend instance")
        known.setdefault(backend.name, backend)
    return known


def get_backend(name: str) -> Backend:
    known = known_backends()
    if name not in known:
        raise UnknownName("backend", name, list(known))
    return known[name]


def _split(names: list[str] | str | None) -> list[str] | None:
    """Accept ["a", "b"], ["a,b"] and "a,b" (a CLI may pass any)."""
    if names is None:
        return None
    if isinstance(names, str):
        names = [names]
    return [n.strip() for item in names for n in item.split(",") if n.strip()]


def _workload_items(workloads) -> list[str | Workload]:
    if workloads is None:
        return workload_names()
    if isinstance(workloads, (str, Workload)):
        workloads = [workloads]
    items = []
    for item in workloads:
        items += [item] if isinstance(item, Workload) else _split(item)
    return items


def workload_key(item: str | Workload) -> str:
    """How a worker finds the workload: its name or reference; `<object>:NAME` when there is none
    (a Workload built where no other process can import it; such a plan runs only in-process)."""
    if isinstance(item, Workload):
        return reference_of(item) or f"<object>:{item.name}"
    return absolute_reference(item)


def _check_choice(kind: str, value: str, choices) -> None:
    if value not in choices:
        raise ValueError(f"unknown {kind} {value!r}; choose from: {', '.join(choices)}")


def plan_matrix(workloads, backends, modes, device, preset, dtype, device_timing: bool = False) -> Plan:
    """Resolve and validate every argument; raises UnknownName or ValueError (exit 2) on a bad one."""
    backend_names = _split(backends) or list(known_backends())
    modes = _split(modes) or list(MODES)
    for mode in modes:
        _check_choice("mode", mode, MODES)
    _check_choice("device", device.split(":")[0], DEVICES)
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(f"device {device!r} asked for, but torch sees no CUDA device here")
    _check_choice("preset", preset, PRESETS)
    if dtype is not None:
        _check_choice("dtype", dtype, DTYPES)
    resolved = {}
    for item in _workload_items(workloads):
        wl = item if isinstance(item, Workload) else resolve_workload(item)
        wl.cfg(preset)  # raises if this workload has no such preset
        resolved[workload_key(item)] = wl
    return Plan(resolved, {b: get_backend(b) for b in dict.fromkeys(backend_names)}, modes, device, preset, dtype,
                device_timing)


# --- one cell ----------------------------------------------------------------------------

def new_row(workload: str, mode: str, backend: Backend, **fields) -> dict:
    row = {
        "workload": workload, "mode": mode, "frontend": backend.frontend, "backend": backend.name,
        "status": "failed", "reason": "", "max_rel_err": None, "tol": None, "compile_s": None, "run_us": None,
        "kernels": [], "kernel_count": None, "per_result": {}, "phase": "", "detail": "", "notes": {},
        "graphs": {}, "coverage": None,
    }
    row.update(fields)
    return row


def failed(row: dict, phase: str, reason: str, detail: str = "") -> dict:
    """Mark `row` failed in `phase` (reference, availability, instantiate, run, compare, worker)."""
    row.update(status="failed", phase=phase, reason=reason, detail=detail)
    return row


@dataclass
class Reference:
    """What the cells of one workload x mode are checked against, and the weights and inputs
    they run on: a worker is handed these, so a workload whose weights are drawn at random when
    its file loads still computes on the same numbers in every process."""

    results: dict[str, torch.Tensor]  # float64 eager results, named like run_eager's
    state: dict[str, torch.Tensor]  # the module's state_dict in the compute dtype
    inputs: tuple

    def pin(self, inst: Instance) -> Instance:
        inst.module.load_state_dict(self.state)
        inst.inputs = self.inputs
        return inst

    def save(self, path: str) -> None:
        torch.save({"results": self.results, "state": self.state, "inputs": list(self.inputs)}, path)

    @classmethod
    def load(cls, path: str, device: str) -> "Reference":
        d = torch.load(path, map_location=device, weights_only=True)
        return cls(d["results"], d["state"], tuple(d["inputs"]))


def compute_reference(wl: Workload, mode: str, device: str, preset: str, dtype: str | None) -> Reference:
    """The float64 eager results, from the same weights and inputs a backend gets (rounded to its dtype)."""
    inst = wl.instantiate(preset, dtype, device)
    ref = inst.cast("float64")
    return Reference(run_eager(ref.module, ref, mode), inst.module.state_dict(), inst.inputs)


TWIN_PRESET = "tiny"  # a twin computes the same function at every size: checked where it is cheap


def twin_problem(wl: Workload, device: str, dtype: str | None) -> str:
    """Why `wl`'s JAX twin disagrees with its torch module on the same weights and inputs ("" when
    it agrees, or there is no twin or no JAX to run it), at the small preset: at the bench size
    the check would cost minutes (JAX in float32 at `highest` precision) and say nothing more."""
    if wl.jax is None or importlib.util.find_spec("jax") is None:
        return ""
    reference = compute_reference(wl, "fwd", device, TWIN_PRESET, dtype)
    try:
        check_jax_twin(reference.pin(wl.instantiate(TWIN_PRESET, dtype, device)), reference.results)
    except TwinMismatch as e:
        return str(e)
    return ""


def twin_in_worker(workload: str, device: str, dtype: str | None, gpu_lock: str | None = None) -> str:
    """The worker's entry point for `twin_problem`."""
    with sharing_gpu(gpu_lock):
        return twin_problem(resolve_workload(workload), device, dtype)


def reference_in_worker(workload: str, mode: str, device: str, preset: str, dtype: str | None, path: str,
                        gpu_lock: str | None = None) -> None:
    """The worker's entry point (irlens.isolation calls it by name): save the reference to `path`,
    and give the memory back before the next. With `gpu_lock` it shares the GPU like a cell (no
    timing runs beside it). Out of device memory, it tries again with the GPU alone, then on the
    CPU: float64 needs twice float32's memory (attention_manual's [B, H, S, S] scores at the
    bench size do not fit twice over). Cells pin the reference's own weights and inputs, so they
    compute on the same numbers."""
    print(f"[irlens] reference {workload} {mode}", file=sys.stderr, flush=True)
    wl = resolve_workload(workload)
    tries = [(device, sharing_gpu), (device, gpu_alone)] if gpu_lock else [(device, sharing_gpu)]
    if device != "cpu":
        tries.append(("cpu", sharing_gpu))
    for i, (where, turn) in enumerate(tries):
        try:
            with turn(gpu_lock if where != "cpu" else None):
                reference = compute_reference(wl, mode, where, preset, dtype)
            break
        except torch.OutOfMemoryError:
            if i == len(tries) - 1:
                raise
            print(f"[irlens] reference {workload} {mode}: out of memory in float64 on {where}; next: "
                  f"{'the GPU alone' if tries[i + 1][1] is gpu_alone else tries[i + 1][0]}", file=sys.stderr, flush=True)
            gc.collect()
            torch.cuda.empty_cache()
    reference.save(path)
    del reference
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def run_cell(wl: Workload, backend: Backend, mode: str, device: str, preset: str, dtype: str | None,
             reference: Reference, device_timing: bool = False, timing_lock: str | None = None,
             alone: bool = False) -> dict:
    """Run one cell in this process; every exception becomes a failed row naming the phase.
    With `device_timing`, the backend's steady-state step is also timed on the device
    (irlens.timing); with `timing_lock`, the cell shares the GPU with other workers' cells,
    has it alone while it is timed, and with `alone` throughout."""
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()  # a previous cell's compiled code and guards must not leak into this one
    with gpu_alone(timing_lock) if alone else sharing_gpu(timing_lock):
        return _run_cell(wl, backend, mode, device, preset, dtype, reference, device_timing, timing_lock)


def _run_cell(wl: Workload, backend: Backend, mode: str, device: str, preset: str, dtype: str | None,
              reference: Reference, device_timing: bool, timing_lock: str | None) -> dict:
    row = new_row(wl.name, mode, backend)
    phase = "availability"
    try:
        available = backend.availability(device)
        if not available:
            row.update(status="unavailable", reason=available.reason)
            return row
        phase = "instantiate"
        inst = reference.pin(wl.instantiate(preset, dtype, device))
        row.update(tol=tolerance(inst.dtype, mode), dtype=inst.dtype, preset=preset)
        phase = "run"
        with recording_device_time(timing_lock) if device_timing else contextlib.nullcontext() as recorder:
            run = backend.run(inst, mode)
        if recorder is not None and recorder.timing is not None:
            row["device_timing"] = recorder.timing.to_json()
        phase = "compare"
        return _finish_row(row, run, reference.results)
    except Unavailable as e:
        row.update(status="unavailable", reason=str(e), phase=phase)
        return row
    except Exception as e:
        return failed(row, phase, f"{phase}: {type(e).__name__}: {e}", traceback.format_exc()[-3000:])


def _finish_row(row: dict, run: BackendRun, reference: dict[str, torch.Tensor]) -> dict:
    cmp = compare_results(run.results, reference, row["tol"])
    row.update(
        status="ok" if cmp.ok else "mismatch",
        reason=cmp.reason,
        max_rel_err=cmp.max_rel_err,
        per_result=cmp.errors,
        compile_s=run.compile_s,
        run_us=run.run_us,
        kernels=[k.to_json() for k in run.kernels],
        kernel_count=run.launch_count(),  # launches per step (README: "Kernel launches")
        notes=run.notes,
        graphs={g.stage: g.to_json() for g in run.graphs},  # what the kernels' node ids refer to (the report's fusion map)
        coverage=kernel_coverage(run.kernels, run.graphs) if run.graphs else None,
    )
    return row


def kernel_coverage(kernels: list[Kernel], graphs: list[Graph]) -> dict:
    """How the kernels cover the compute nodes of the graphs they refer to: each compute node
    should be in exactly one kernel's `node_ids` (a recomputation is listed in `recompute` instead).
    Node ids are given as `stage:id`."""
    stages = {g.stage for g in graphs}
    only = next(iter(stages)) if len(stages) == 1 else None
    covered = Counter()
    referred = set()  # a row may carry graphs its kernels do not refer to (XLA's jaxpr beside its HLO)
    for k in kernels:
        stage = k.stage if k.stage in stages else (only if not k.stage else None)
        referred.add(stage)
        covered.update(f"{stage}:{n}" for n in k.node_ids)
    compute = [f"{g.stage}:{n.id}" for g in graphs if g.stage in referred for n in g.nodes if is_compute(n.op)]
    return {
        "compute_nodes": len(compute),
        "uncovered": [n for n in compute if not covered[n]],
        "duplicates": sorted(n for n, c in covered.items() if c > 1),
    }


def cell_in_worker(workload: str, backend: str, mode: str, device: str, preset: str, dtype: str | None,
                   reference_path: str, device_timing: bool = False, timing_lock: str | None = None,
                   alone: bool = False) -> dict:
    """The worker's entry point (irlens.isolation calls it by name): one cell, a JSON-able row."""
    print(f"[irlens] {workload} {backend} {mode}", file=sys.stderr, flush=True)
    reference = Reference.load(reference_path, device)
    try:
        return jsonable(run_cell(resolve_workload(workload), get_backend(backend), mode, device, preset, dtype,
                                 reference, device_timing, timing_lock, alone))
    finally:
        # a worker waiting for its next cell holds no cached device memory: a cell beside it, or one
        # run again alone after running out, gets what this one used
        del reference
        gc.collect()
        if device.startswith("cuda"):
            torch.cuda.empty_cache()


_OUT_OF_MEMORY = ("out of memory", "resource_exhausted", "outofmemoryerror")


def out_of_memory(row: dict) -> bool:
    """A failed row whose cause was device memory (torch's, JAX's or the CUDA driver's words for it)."""
    text = f"{row.get('reason') or ''}\n{row.get('detail') or ''}".lower()
    return row["status"] == "failed" and any(words in text for words in _OUT_OF_MEMORY)


# --- the matrix ------------------------------------------------------------------------------

@dataclass
class _Entry:
    reference: Reference | None  # in-process only
    path: str | None  # isolated only
    error: str  # why there is no reference, or ""


class _References:
    """The float64 reference per workload x mode, computed once, and with `check_twins` each
    JAX twin's verdict. In-process (no `directory`) they are computed here when first asked for.
    Isolated, one worker computes them into files in `directory`, in the background from the
    first `start` or `get` on (the twins first, the check waits for them), and `get` waits for
    its own: cells start as soon as their reference is there, while costly ones (float64 at the
    bench size takes minutes) are still being computed. With `gpu_lock`, the worker takes its
    GPU turns like a cell (irlens.timing)."""

    def __init__(self, plan: Plan, directory: str | None, timeout: float = DEFAULT_TIMEOUT_S,
                 check_twins: bool = False, gpu_lock: str | None = None):
        self.plan, self.directory, self.timeout, self.check_twins = plan, directory, timeout, check_twins
        self.gpu_lock = gpu_lock
        self._cache: dict[tuple[str, str], _Entry] = {}
        self._twins: dict[str, str] = {}
        self._ready: dict[tuple[str, str], threading.Event] = {}
        self._twins_ready = threading.Event()
        self._worker: threading.Thread | None = None
        self._lock = threading.RLock()

    def get(self, workload: str, mode: str) -> tuple[Reference | None, str | None, str]:
        """(reference in-process, its file when isolated, error message or "")."""
        entry = self._entry(workload, mode)
        return entry.reference, entry.path, entry.error

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

    def prepare(self) -> None:
        """Compute every reference the plan's cells need, now."""
        for key in self._keys():
            self._entry(*key)

    def start(self) -> None:
        """Isolated: start computing the twin verdicts and every planned reference in the background."""
        with self._lock:
            if self.directory is None or self._worker is not None:
                return
            keys = self._keys()
            self._ready = {k: threading.Event() for k in keys}
            self._worker = threading.Thread(target=self._compute_in_worker, args=(keys,), daemon=True)
            self._worker.start()

    def _keys(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((c.workload, c.mode) for c in self.plan.cells()))

    def _twinned(self) -> list[str]:
        return [w for w, wl in self.plan.workloads.items() if wl.jax is not None] if self.check_twins else []

    def _entry(self, workload: str, mode: str) -> _Entry:
        key = (workload, mode)
        if self.directory is None:
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = self._compute(workload, mode)
                return self._cache[key]
        self.start()
        if key not in self._ready:
            raise KeyError(f"no reference was planned for {workload} {mode}")
        self._ready[key].wait()
        return self._cache[key]

    def _compute(self, workload: str, mode: str) -> _Entry:
        p = self.plan
        try:
            return _Entry(compute_reference(p.workloads[workload], mode, p.device, p.preset, p.dtype), None, "")
        except Exception as e:
            return _Entry(None, None, f"the float64 eager reference failed: {type(e).__name__}: {e}")

    def _twin(self, workload: str) -> str:
        p = self.plan
        try:
            return twin_problem(p.workloads[workload], p.device, p.dtype)
        except Exception as e:
            return f"cannot check the JAX twin of workload {p.workloads[workload].name!r}: {type(e).__name__}: {e}"

    def _compute_in_worker(self, keys: list[tuple[str, str]]) -> None:
        from irlens.isolation import CallFailed, WorkerSession

        p = self.plan
        try:
            with WorkerSession(preload=("irlens.compare", "irlens.models")) as worker:
                for workload in self._twinned():
                    try:
                        self._twins[workload] = worker.call("irlens.compare:twin_in_worker", dict(
                            workload=workload, device=p.device, dtype=p.dtype, gpu_lock=self.gpu_lock), self.timeout)
                    except CallFailed as e:
                        self._twins[workload] = (f"cannot check the JAX twin of workload "
                                                 f"{p.workloads[workload].name!r}: {e.reason}")
                self._twins_ready.set()
                for i, (workload, mode) in enumerate(keys):
                    path = os.path.join(self.directory, f"reference{i}.pt")
                    kwargs = dict(workload=workload, mode=mode, device=p.device, preset=p.preset, dtype=p.dtype,
                                  path=path, gpu_lock=self.gpu_lock)
                    try:
                        worker.call("irlens.compare:reference_in_worker", kwargs, self.timeout)
                        self._cache[(workload, mode)] = _Entry(None, path, "")
                    except CallFailed as e:
                        self._cache[(workload, mode)] = _Entry(None, None, f"the float64 eager reference failed: {e.reason}")
                    self._ready[(workload, mode)].set()
        finally:  # whatever stopped this thread, nobody may wait forever
            for workload in self._twinned():
                self._twins.setdefault(workload, "cannot check the JAX twin: the reference worker stopped")
            self._twins_ready.set()
            for key in keys:
                if key not in self._cache:
                    self._cache[key] = _Entry(None, None, "the float64 reference was not computed: its worker stopped")
                self._ready[key].set()


def check_twins(plan: Plan, refs: _References) -> None:
    """Each JAX twin must match its torch module, before anything runs (raises TwinMismatch).
    Skipped where JAX is not installed: no JAX backend can run there either."""
    if importlib.util.find_spec("jax") is None:
        return
    for ref, wl in plan.workloads.items():
        if wl.jax is None:
            continue
        problem = refs.twin_problem(ref)
        if problem:
            raise TwinMismatch(problem)


class _Progress:
    """A progress bar on stderr (tqdm where installed, else a counter), showing the current cell."""

    def __init__(self, total: int, enabled: bool):
        self.enabled, self.total, self.done = enabled, total, 0
        self._bar = None
        if enabled:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, file=sys.stderr, unit="cell", dynamic_ncols=True)
            except ImportError:
                pass
        self._lock = threading.Lock()

    def start(self, cell: Cell, name: str) -> None:
        label = f"{name} · {cell.backend} · {cell.mode}"
        with self._lock:
            if self._bar is not None:
                self._bar.set_description_str(label)
            elif self.enabled:
                print(f"[{self.done + 1}/{self.total}] {label}", file=sys.stderr, flush=True)

    def finish(self) -> None:
        with self._lock:
            self.done += 1
            if self._bar is not None:
                self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.set_description_str("done")
            self._bar.close()


def run_matrix(workloads=None, backends=None, modes=None, device: str = "cpu", preset: str = "tiny",
               dtype: str | None = None, timeout: float = DEFAULT_TIMEOUT_S, progress: bool = True,
               jobs: int = 1, isolate: bool = True) -> dict:
    """Run the matrix and return the JSON document {"device", "device_name", "versions", "preset",
    "dtype", "rows"}: one row per workload x mode x backend, in that order.

    Bad arguments raise (UnknownName, ValueError) before anything runs; a JAX twin that
    disagrees raises TwinMismatch. `jobs` cells run at once, each in a worker process;
    `isolate=False` runs them one by one in this process (no timeout, no crash protection):
    for tests and debugging.
    """
    return execute(plan_matrix(workloads, backends, modes, device, preset, dtype), timeout, progress, jobs, isolate)


def execute(plan: Plan, timeout: float = DEFAULT_TIMEOUT_S, progress: bool = True, jobs: int = 1,
            isolate: bool = True, budget_s: float | None = None) -> dict:
    """Run a planned matrix. With `budget_s`, cells not started within that many seconds are
    `unavailable` rows saying so (a long GPU run then still ends with a complete document)."""
    deadline = None if budget_s is None else time.monotonic() + budget_s
    from irlens.isolation import WORKER_ENV

    if os.environ.get(WORKER_ENV):  # a user file that compares at import time, loaded by a worker
        raise RuntimeError("irlens.compare was called while a compare worker loaded a workload file; "
                           "put the call under `if __name__ == \"__main__\":` in that file")
    if isolate and not plan.isolatable:
        raise ValueError("a workload given as an object has no module-level name another process can import; "
                         "run it with isolate=False or declare it at the top level of a file")
    with tempfile.TemporaryDirectory(prefix="irlens-compare-") as tmp:
        # the GPU turns (irlens.timing) matter only where cells are timed on the device
        lock = os.path.join(tmp, "device-timing.lock") if plan.device_timing else None
        refs = _References(plan, tmp if isolate else None, max(timeout, REFERENCE_TIMEOUT_S), check_twins=True,
                           gpu_lock=lock)
        if progress:
            print(f"irlens: computing the float64 references{' in a worker, cells start as theirs are ready' if isolate else ''} ...",
                  file=sys.stderr, flush=True)
        if isolate:
            refs.start()
        elif plan.device_timing:  # in this process: all float64 work first, none of it beside a timing
            refs.prepare()
        check_twins(plan, refs)
        cells = plan.cells()
        if plan.device_timing and not isolate and plan.device.startswith("cuda"):
            torch.cuda.empty_cache()
        bar = _Progress(len(cells), progress)
        runner = _IsolatedRunner(plan, refs, timeout, lock) if isolate else _InProcessRunner(plan, refs)
        # Backend-major order, so that a worker serves one backend's cells in a row.
        order = sorted(cells, key=lambda c: list(plan.backends).index(c.backend))

        def run(cell: Cell) -> dict:
            bar.start(cell, plan.workloads[cell.workload].name)
            if deadline is not None and time.monotonic() > deadline:
                row = new_row(plan.workloads[cell.workload].name, cell.mode, plan.backends[cell.backend],
                              status="unavailable", reason=f"not run: the run's time budget of {budget_s:.0f} s ran out")
            else:
                row = planned_row(plan, cell, refs) or runner.run(cell)
            bar.finish()
            return row

        try:
            if jobs > 1 and isolate:
                with ThreadPoolExecutor(jobs) as pool:
                    done = dict(zip(order, pool.map(run, order)))
            else:
                done = {cell: run(cell) for cell in order}
        finally:
            bar.close()
            runner.close()
    return {"device": plan.device, "device_name": device_name(plan.device), "versions": versions(),
            "preset": plan.preset, "dtype": plan.dtype, "rows": [jsonable(done[c]) for c in cells]}


def planned_row(plan: Plan, cell: Cell, refs: _References) -> dict | None:
    """The row a cell gets without running: no JAX twin for a JAX backend, or a failed reference."""
    wl, backend = plan.workloads[cell.workload], plan.backends[cell.backend]
    if backend.frontend == "jax" and wl.jax is None:
        return new_row(wl.name, cell.mode, backend, status="unavailable",
                       reason=f"workload {wl.name!r} has no JAX twin")
    _, _, error = refs.get(cell.workload, cell.mode)
    if error:
        return failed(new_row(wl.name, cell.mode, backend), "reference", error)
    return None


class _InProcessRunner:
    def __init__(self, plan: Plan, refs: _References):
        self.plan, self.refs = plan, refs

    def run(self, cell: Cell) -> dict:
        p = self.plan
        reference, _, _ = self.refs.get(cell.workload, cell.mode)
        return run_cell(p.workloads[cell.workload], p.backends[cell.backend], cell.mode, p.device, p.preset,
                        p.dtype, reference, p.device_timing)

    def close(self) -> None:
        pass


class _IsolatedRunner:
    """Runs cells in worker processes: one per thread, restarted on a crash, a hang or a new backend."""

    def __init__(self, plan: Plan, refs: _References, timeout: float, timing_lock: str | None):
        self.plan, self.refs, self.timeout, self.timing_lock = plan, refs, timeout, timing_lock
        self._local = threading.local()
        self._workers: list = []
        self._lock = threading.Lock()

    def _worker(self, backend: str):
        from irlens.isolation import Worker

        current = getattr(self._local, "worker", None)
        if current is not None and current[0] == backend and current[1].alive:
            return current[1]
        if current is not None:
            current[1].close()
        # Imports before the worker says it is ready, so that they do not count against a cell's timeout.
        worker = Worker(preload=("irlens.compare", "irlens.backends", "irlens.models"))
        self._local.worker = (backend, worker)
        with self._lock:
            self._workers.append(worker)
        return worker

    def run(self, cell: Cell) -> dict:
        p = self.plan
        _, path, _ = self.refs.get(cell.workload, cell.mode)
        kwargs = dict(workload=cell.workload, backend=cell.backend, mode=cell.mode, device=p.device,
                      preset=p.preset, dtype=p.dtype, reference_path=path, device_timing=p.device_timing,
                      timing_lock=self.timing_lock)
        row = self._call(cell, kwargs)
        if self.timing_lock and out_of_memory(row):
            # out of memory beside the other workers' cells: once more with the GPU alone, in a
            # fresh worker (the old one's allocator may hold what it got)
            self._local.worker[1].close()
            row = self._call(cell, {**kwargs, "alone": True})
            row.setdefault("notes", {})["gpu_alone"] = "ran out of device memory beside other cells; run again alone"
        if self.timing_lock and p.backends[cell.backend].frontend == "jax":
            # XLA's allocator keeps what it took until its process ends: on a shared GPU, a JAX
            # cell's worker ends with the cell, so the next cells get that memory
            self._local.worker[1].close()
        return row

    def _call(self, cell: Cell, kwargs: dict) -> dict:
        from irlens.isolation import CallFailed

        try:
            return self._worker(cell.backend).call("irlens.compare:cell_in_worker", kwargs, self.timeout)
        except CallFailed as e:
            row = new_row(self.plan.workloads[cell.workload].name, cell.mode, self.plan.backends[cell.backend])
            return failed(row, "worker", e.reason, e.detail)

    def close(self) -> None:
        for worker in self._workers:
            worker.close()


# --- the document --------------------------------------------------------------------------

def jsonable(value: Any) -> Any:
    """Plain JSON: NaN and Inf become null (the row's reason says why), unknown objects their str."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found = {"python": platform.python_version(), "platform": platform.platform(), "torch": torch.__version__}
    for key, dist in (("jax", "jax"), ("jaxlib", "jaxlib"), ("thunder", "lightning-thunder"),
                      ("triton", "triton"), ("irlens", "irlens")):
        try:
            found[key] = version(dist)
        except PackageNotFoundError:
            found[key] = None
    if found["irlens"] is None:  # run from a checkout on the import path, not installed
        import irlens

        found["irlens"] = f"{irlens.__version__} (source checkout)"
    return found


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def write_document(doc: dict, path: str) -> None:
    """A results document as strict JSON (NaN and Inf were made null by `jsonable`)."""
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)


def exit_status(doc: dict) -> int:
    """0 when every available row is ok, 1 on any mismatch or failure."""
    return 1 if any(r["status"] in ("mismatch", "failed") for r in doc["rows"]) else 0


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_table(doc: dict) -> str:
    header = ("workload", "mode", "backend", "status", "max rel err / tol", "launches", "compile s", "run µs")
    lines = []
    for r in doc["rows"]:
        err = f"{_fmt(r['max_rel_err'], '.1e')} / {r['tol']:.0e}" if r["tol"] is not None else "-"
        lines.append((r["workload"], r["mode"], r["backend"], r["status"], err,
                      _fmt(r["kernel_count"], "d"), _fmt(r["compile_s"], ".2f"), _fmt(r["run_us"], ".1f")))
    widths = [max(len(str(row[i])) for row in [header, *lines]) for i in range(len(header))]
    right = {4, 5, 6, 7}

    def fmt_line(cells) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [fmt_line(header), fmt_line(["-" * w for w in widths]), *map(fmt_line, lines)]
    # Why each row is not ok, one line per distinct reason (nvFuser on a CPU: once, not per cell).
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for r in doc["rows"]:
        if r["status"] != "ok" and r["reason"]:
            key = (r["backend"], r["status"], r["reason"].splitlines()[0])
            reasons.setdefault(key, []).append(f"{r['workload']}/{r['mode']}")
    if reasons:
        out.append("")
    for (backend, status, reason), cells in reasons.items():
        where = cells[0] if len(cells) == 1 else f"{len(cells)} cells"
        out.append(f"{backend} ({where}): {status}: {reason}")
    return "\n".join(out)


def compare_main(args) -> int:
    """`irlens compare`: args has workloads, backends, device, modes, preset, dtype, json, timeout, jobs."""
    try:
        plan = plan_matrix(args.workloads, args.backends, args.modes, args.device, args.preset, args.dtype)
    except (UnknownName, ValueError) as e:
        print(f"irlens compare: {e}", file=sys.stderr)
        return 2
    try:
        doc = execute(plan, args.timeout, progress=True, jobs=getattr(args, "jobs", 1) or 1)
    except TwinMismatch as e:
        print(f"irlens compare: {e}", file=sys.stderr)
        return 2
    print(format_table(doc))
    if args.json:
        write_document(doc, args.json)
    return exit_status(doc)


_callable_submodule(__name__)  # `irlens.compare(workload, ...)` stays the API call once this module is imported
