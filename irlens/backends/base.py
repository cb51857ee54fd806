"""What a backend is: something that compiles and runs a workload and reports its kernels."""
from __future__ import annotations

import contextlib
import contextvars
import statistics
import sys
import time
import traceback
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from irlens.runtime import call_progress
from irlens.frontends.base import Availability, Program, Stage, Unavailable
from irlens.frontends.bindings import run_program
from irlens.ir import Graph, Kernel
from irlens.lowering import LEVEL
from irlens.registry import Registry
from irlens.runtime.gpu_turns import timing_turn
from irlens.runtime.timing import active_recorder, record_host_times
from irlens.workload import Instance, Step


@dataclass
class BackendRun:
    """What one backend did with one workload in one mode."""

    results: dict[str, torch.Tensor]  # named like irlens.workload.run_eager: out0.., loss, grad:<name>
    compile_s: float  # first call (trace + compile + run) minus one steady-state run
    run_us: float  # median host wall time of a steady-state call, synchronized
    kernels: list[Kernel]
    graphs: list[Graph] = field(default_factory=list)  # common-view graphs that Kernel.stage/node_ids refer to
    notes: dict[str, Any] = field(default_factory=dict)
    lowered: list[Graph] = field(default_factory=list)  # run_program: the frontend's graphs it compiled
    launches: int | None = None  # kernel launches the generated code makes per step; None: one per kernel record
    unmapped: str | None = None  # why its kernels could not be read from the backend's records (`with_kernels`)

    def launch_count(self) -> int | None:
        """Kernel launches per step; None where the kernels could not be mapped (nothing is known)."""
        if self.unmapped is not None:
            return None
        return len(self.kernels) if self.launches is None else self.launches


def note_acquired(error: BaseException, graphs: list) -> None:
    """Mark a run's failure as one after the backend had acquired `graphs` (it captured the model,
    then failed compiling or running it): the row counts the model as acquired and keeps them."""
    if graphs:
        error.irlens_acquired_graphs = list(graphs)


def with_kernels(results: dict, compile_s: float, run_us: float, mapping: Callable[[], BackendRun],
                 **kept) -> BackendRun:
    """The finished run `mapping()` returns: its kernels (graphs, notes) read from the backend's
    records. Reading them is irlens's work, not the backend's: where it fails, the run stands as
    it ended, with its results and times (and `kept`), no kernels, and why in `unmapped` (the
    traceback in `notes["kernel_mapping_traceback"]`). So a failure to map kernels never fails
    a cell that ran."""
    try:
        return mapping()
    except Exception as e:  # noqa: BLE001  (any failure of the mapping; the run itself finished)
        text = str(e).strip()
        reason = f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
        notes = {**kept.pop("notes", {}), "kernel_mapping_traceback": traceback.format_exc()[-3000:]}
        return BackendRun(results, compile_s, run_us, [], notes=notes, unmapped=reason, **kept)


@dataclass
class KeptStep:
    """A backend's compiled step, kept past its run for a cell that judges it on other inputs
    (irlens.matrix.draws): `again()` runs it once more on the instance's inputs as they are then
    (`Instance.inputs`, rebound by the caller) and returns its results named as `run_eager` names
    them; None where the backend keeps none (it reads its inputs once, as a JAX twin's run does)."""

    again: Callable[[], dict] | None = None


_KEPT: contextvars.ContextVar[KeptStep | None] = contextvars.ContextVar("irlens_kept_step", default=None)


@contextlib.contextmanager
def keeping_step():
    """Within it, a backend's run keeps its compiled step (`keep_step`) in the KeptStep it yields;
    on leaving, the step is dropped and Dynamo's compiled code with it (a backend that keeps its
    step leaves that reset to here)."""
    kept = KeptStep()
    token = _KEPT.set(kept)
    try:
        yield kept
    finally:
        _KEPT.reset(token)
        kept.again = None
        if "torch._dynamo" in sys.modules:
            torch._dynamo.reset()


def keep_step(again: Callable[[], dict]) -> bool:
    """Offer `again` (see KeptStep) to a caller inside `keeping_step`; whether one took it (the
    backend must then leave its compiled code in place)."""
    kept = _KEPT.get()
    if kept is None:
        return False
    kept.again = again
    return True


def measure(step: Step | Callable[[], Any], device: str, min_repeats: int = 5, max_repeats: int = 1000,
            budget_s: float = 0.05) -> tuple[Any, float, float]:
    """Time `step` (`eager_step(compiled, inst, mode)`, or a plain callable, timed whole) the way
    BackendRun reports it: its arguments are prepared once and its results packaged after, outside
    the timed calls, as `torch.utils.benchmark.Timer` keeps setup out of what it times.

    Returns (results of the first call, compile_s, run_us): compile_s is the first call's time
    minus one steady-state run; run_us is the median of at least `min_repeats` synchronized
    steady-state calls, more (up to `max_repeats`) while they fit in `budget_s`: a call of tens of
    µs is read hundreds of times, as a timer's blocks would, not 20. Timed with the device alone where
    workers take turns on it (irlens.runtime.gpu_turns; the calls' times go to `recording_host_time`).
    """
    if not isinstance(step, Step):
        whole = step
        step = Step(lambda: None, lambda _: whole(), lambda _, raw: raw)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    args = step.prepare()
    start = time.perf_counter()
    raw = step.call(args)
    sync()
    first_s = time.perf_counter() - start
    results = step.package(args, raw)
    del raw
    times: list[float] = []
    call_progress.stage("timing")
    with timing_turn():
        # the second call on its own stage: one that compiles again (a module whose first call changed
        # what the compiler guards on: transformers' RWKV rescales its weights once) says so if it times out
        call_progress.stage("timing: its second call")
        while len(times) < max_repeats and (len(times) < min_repeats or sum(times) < budget_s):
            start = time.perf_counter()
            step.call(args)
            sync()
            times.append(time.perf_counter() - start)
            if len(times) == 1:
                call_progress.stage("timing")
        recorder = active_recorder()
        if recorder is not None and device.startswith("cuda"):
            recorder.record(lambda: step.call(args))
    record_host_times([t * 1e6 for t in times], lambda: step.call(args))
    call_progress.stage("reading kernels")  # what backends do after their timed step (launches, kernel records and times)
    run_s = statistics.median(times)
    return results, max(first_s - run_s, 0.0), run_s * 1e6


class Backend(ABC):
    name: str  # eager, inductor, thunder+torchcompile, nvfuser, xla
    frontend: str | None  # whose graphs the kernels map onto: dynamo | thunder | jax | None (eager)
    description: str
    devices: tuple[str, ...] = ("cpu", "cuda")

    @abstractmethod
    def availability(self, device: str) -> Availability: ...

    @abstractmethod
    def run(self, inst: Instance, mode: str) -> BackendRun: ...

    main_stage: str = ""  # prefix of the stage `irlens dump --backend` shows when none is asked for
    # its allocator keeps the device memory it took until its process ends (XLA's): a worker that
    # ran it on a shared GPU is ended after each cell
    keeps_device_memory: bool = False

    def eager_roundings(self):
        """A context manager in which this backend rounds intermediates to the compute dtype where
        eager does (None where it has none). A half-precision cell that mismatches is run again
        inside it (irlens.matrix.cell): a compiler that keeps float32 inside its fused kernels is more
        accurate in the forward, yet a bfloat16 backward can turn that one-unit difference into
        gradients far from eager's, and irlens' bound starts from eager's own error."""
        return None

    def worker_env(self) -> dict[str, str]:
        """Environment variables a worker process started to run this backend's cells needs
        (read when it starts, so set then); none by default."""
        return {}

    # How this backend compiles one common-view graph of any frontend (its primitive level), for
    # the cross grid (irlens.cross): `lower(graph, device, name) -> irlens.lowering.LoweredGraph`,
    # a method of the backends that have a lowering; None: it runs only its own frontend's graphs.
    lower: Callable[[Graph, str, str], Any] | None = None
    # The frontend whose program a backend with a lowering runs where its own frontend cannot take
    # the workload (errors.NoNativePath: no JAX twin; Thunder traces none of it): every torch
    # workload goes through Dynamo, and its graphs are the ones Inductor compiles natively.
    via: str = "dynamo"

    def run_program(self, inst: Instance, program: Program) -> BackendRun:
        """A frontend's program (irlens.frontends.bindings: its forward, and backward, common views) with
        each graph compiled by this backend's `lower` at the lowering level, run as one step."""
        if self.lower is None:
            raise Unavailable(f"backend {self.name} has no lowering of the common view")
        graphs: dict[str, Graph] = {}
        lowered: dict[str, Any] = {}

        def lowering(program_step):
            name = program_step.stage.name
            if name not in lowered:
                graphs[name] = program_step.graph(LEVEL)
                lowered[name] = self.lower(graphs[name], inst.device, name)
            return lowered[name]

        if program.runs is None:  # its graphs are known: lowered before its first call
            for program_step in program.steps:
                lowering(program_step)
        # else (several Dynamo graphs) each is lowered on its first call, as the program traces it

        def step(program_step, inputs):
            return lowering(program_step)(inputs)

        def call() -> dict:
            return run_program(program, inst, step)

        results, compile_s, run_us = measure(call, inst.device)
        keep_step(call)
        notes = {**program.notes, "lowered_graphs": len(lowered)}
        return with_kernels(results, compile_s, run_us, lambda: BackendRun(
            results, compile_s, run_us, [k for g in lowered.values() for k in g.kernels()],
            graphs=[g for low in lowered.values() for g in low.graphs()], lowered=list(graphs.values()), notes=notes),
            lowered=list(graphs.values()), notes=notes)

    def stages(self, inst: Instance, mode: str) -> dict[str, Stage]:
        """The backend's own IRs for `inst` in `mode`, in pipeline order (what it fused, the code
        it generated): `irlens dump --backend`. Compiles and runs once, untimed."""
        raise Unavailable(f"backend {self.name} keeps no IR stages of its own")


BACKENDS: Registry[Backend] = Registry("backend")  # filled by importing irlens.backends
