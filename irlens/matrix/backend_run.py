"""The one way a backend's compiled workload runs: `run_compiled` measures its compile time and its
steady state (`measure`), keeps its step, reads its kernels (timed where the backend asks:
`time_kernels`), and marks a failure with the graphs the backend had captured. Every backend only
compiles (irlens.backends.base.Compiled); the timing, the turns on the device and the progress
stages are all here.
"""
from __future__ import annotations

import contextlib
import statistics
import sys
import time
import traceback
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from irlens.backends.base import Backend, Compiled
from irlens.core.ir import Graph, Kernel
from irlens.runtime import call_progress
from irlens.runtime.gpu_turns import stepped_aside, timing_turn
from irlens.runtime.timing import active_recorder, cupti_taken, mark_cupti_taken, profiled, record_host_times
from irlens.workloads.workload import Instance, Step


@dataclass
class BackendRun:
    """What one backend did with one workload in one mode."""

    results: dict[str, torch.Tensor]  # named like irlens.workloads.workload.run_eager: out0.., loss, grad:<name>
    compile_s: float  # first call (trace + compile + run) minus one steady-state run, or the ahead-of-time compile
    run_us: float  # median host wall time of a steady-state call, synchronized
    kernels: list[Kernel]
    graphs: list[Graph] = field(default_factory=list)  # common-view graphs that Kernel.stage/node_ids refer to
    notes: dict[str, Any] = field(default_factory=dict)
    lowered: list[Graph] = field(default_factory=list)  # compile_program: the frontend's graphs it compiled
    launches: int | None = None  # kernel launches the generated code makes per step; None: one per kernel record
    unmapped: str | None = None  # why its kernels could not be read from the backend's records
    # the compiled step, kept: run again on the instance's inputs as the caller rebinds them, it returns
    # its results named as `results` (irlens.matrix.draws); None where the backend offers none
    again: Callable[[], dict] | None = field(default=None, repr=False, compare=False)

    def launch_count(self) -> int | None:
        """Kernel launches per step; None where the kernels could not be mapped (nothing is known)."""
        if self.unmapped is not None:
            return None
        return len(self.kernels) if self.launches is None else self.launches


def run_backend(backend: Backend, inst: Instance, mode: str) -> BackendRun:
    """`backend` compiles `inst` for `mode` and the result runs once through `run_compiled`; its step
    is not kept (Dynamo's compiled code is dropped after)."""
    try:
        run = run_compiled(backend.compile(inst, mode), inst.device)
        run.again = None
        return run
    finally:
        drop_compiled_code()


def drop_compiled_code() -> None:
    """Dynamo's compiled code and guards dropped, where Dynamo was loaded: a kept step goes with them."""
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()


def run_compiled(compiled: Compiled, device: str) -> BackendRun:
    """Run what a backend compiled: its compile time and steady state measured, then its kernels read
    from its records. Reading them is irlens's work, not the backend's: where it fails, the run stands
    as it ended, with its results and times, no kernels, and why in `unmapped` (the traceback in
    `notes["kernel_mapping_traceback"]`), so a failure to map kernels never fails a run. Where the
    step fails and the backend has a fallback, the fallback runs instead."""
    while True:
        events = [] if compiled.profiler_name is not None else None
        try:
            results, compile_s, run_us = _measured(compiled, device, events)
            break
        except Exception as e:  # noqa: BLE001  (the backend's own fallback decides what it takes)
            if compiled.fallback is None:
                raise
            compiled = compiled.fallback(e)
    again = compiled.step if compiled.reruns else None
    try:
        read = compiled.read_kernels(cupti_taken())
        if events is not None:
            time_kernels(events, read.kernels, device, compiled.profiler_name)
    except Exception as e:  # noqa: BLE001  (any failure of the mapping; the run itself finished)
        text = str(e).strip()
        reason = f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
        notes = {**compiled.notes(), "kernel_mapping_traceback": traceback.format_exc()[-3000:]}
        return BackendRun(results, compile_s, run_us, [], notes=notes, lowered=compiled.lowered(), unmapped=reason,
                          again=again)
    return BackendRun(results, compile_s, run_us, read.kernels, read.graphs, {**compiled.notes(), **read.notes},
                      compiled.lowered(), read.launches, again=again)


def _measured(compiled: Compiled, device: str, kernel_events: list | None) -> tuple[dict, float, float]:
    """(results, compile_s, run_us) of the compiled step (`measure`, which profiles its kernels
    into `kernel_events` where that is a list); a failure after the backend captured the model (it
    failed compiling or running it) carries the captured graphs, so the row counts the model as
    acquired and keeps them (`irlens_acquired_graphs`)."""
    try:
        if compiled.ahead is None:
            return measure(compiled.step, device, kernel_events=kernel_events)
        start = time.perf_counter()
        with compiling(device):
            compiled.ahead()
        ahead_s = time.perf_counter() - start
        results, _, run_us = measure(compiled.step, device, kernel_events=kernel_events)
        return results, ahead_s, run_us
    except Exception as e:
        graphs = compiled.acquired()
        if graphs:
            e.irlens_acquired_graphs = list(graphs)
        raise


def compiling(device: str):
    """A compile holds no turn on a GPU (irlens.runtime.gpu_turns.stepped_aside); on the CPU it shares."""
    return stepped_aside() if device.startswith("cuda") else contextlib.nullcontext()


def _whole(call: Callable[[], Any]) -> Step:
    return Step(lambda: None, lambda _: call(), lambda _, raw: raw)


def measure(step: Step | Callable[[], Any], device: str, min_repeats: int = 5, max_repeats: int = 1000,
            budget_s: float = 0.05, kernel_events: list | None = None) -> tuple[Any, float, float]:
    """Time `step` (`eager_step(compiled, inst, mode)`, or a plain callable, timed whole) the way
    BackendRun reports it: its arguments are prepared once and its results packaged after, outside
    the timed calls, as `torch.utils.benchmark.Timer` keeps setup out of what it times.

    Returns (results of the first call, compile_s, run_us): compile_s is the first call's time
    minus one steady-state run; run_us is the median of at least `min_repeats` synchronized
    steady-state calls, more (up to `max_repeats`) while they fit in `budget_s`: a call of tens of
    µs is read hundreds of times, as a timer's blocks would, not 20. Timed with the device alone where
    workers take turns on it (irlens.runtime.gpu_turns; the calls' times go to `recording_host_time`).
    With a `kernel_events` list, profiled steady-state calls follow in the same turn and their
    events go there (`profile_kernels`, for `time_kernels`): one wait for the device, not two.
    """
    if not isinstance(step, Step):
        step = _whole(step)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    args = step.prepare()
    start = time.perf_counter()
    with compiling(device):  # the first call compiles (a lazy compiler's)
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
        if kernel_events is not None:
            kernel_events += profile_kernels(lambda: step.call(args), device)
    record_host_times([t * 1e6 for t in times], lambda: step.call(args))
    call_progress.stage("reading kernels")  # what follows the timed steps (launches, kernel records and times)
    run_s = statistics.median(times)
    return results, max(first_s - run_s, 0.0), run_s * 1e6


KERNEL_REPEATS = 10  # profiled steady-state calls a kernel's time is the median of


def profile_kernels(call: Callable[[], object], device: str, repeats: int = KERNEL_REPEATS) -> list[tuple[str, float]]:
    """(profiler event name, time µs) of `repeats` + 1 profiled steady-state calls (the first, the
    profiler's own warm-up, left out later), in order of their start: on CUDA each device event's
    device time and each ATen op's device time (a library call's), on the CPU host times. The
    caller has the device alone (`measure`)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity

    cuda = device.startswith("cuda")
    if cuda:
        mark_cupti_taken()  # a later nvFuser profiler in this process would end it
    with profiled([ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        for _ in range(repeats + 1):
            call()
        if cuda:
            torch.cuda.synchronize()
    events = []
    for e in sorted(prof.events(), key=lambda e: e.time_range.start):
        if not cuda:
            events.append((e.name, e.cpu_time_total))
        elif e.device_type == DeviceType.CUDA or e.name.startswith("aten::"):
            events.append((e.name, e.device_time_total))
    return events


def time_kernels(events: list[tuple[str, float]], kernels: list[Kernel], device: str,
                 profiler_name: Callable[[str], str], repeats: int = KERNEL_REPEATS) -> None:
    """Fill `Kernel.time_us` from `profile_kernels`' events: the median over the `repeats` calls
    after the first, launches matched to events by name (`profiler_name` of each) in order. On
    CUDA a fused kernel's time is its device kernel's and a library call's the device time of the
    ATen op that made it; on CPU both are host times. A kernel the profiler did not record keeps
    None."""
    times: dict[str, list[float]] = defaultdict(list)
    for name, us in events:
        times[profiler_name(name)].append(us)
    per_call = Counter(profiler_name(k.name) for k in kernels)
    seen: Counter = Counter()
    for k in kernels:
        name = profiler_name(k.name)
        samples = times[name][seen[name]::per_call[name]]
        seen[name] += 1
        k.time_us = statistics.median(samples[1:]) if len(samples) == repeats + 1 else None
