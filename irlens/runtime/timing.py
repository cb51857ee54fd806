"""Device timing of a compiled step (CUDA), and the spread of the host timing. The hardware's
ceilings are `irlens.core.ceilings`.

Device time comes from the torch profiler (CUPTI). CUPTI sees every kernel the process
launches, so the same measurement serves Inductor/Triton, nvFuser and XLA alike (XLA's
asynchronous dispatch makes host wall time around a jitted call meaningless as kernel time).
Each measured step starts with a cold L2: a 256 MiB buffer is overwritten before it, outside
the profiled region. Device time of a step = the sum of its kernels' durations (memcpy and
memset included). The median is taken twice, over two separate batches of steps, so a
result carries its own repeatability figure. Host wall time stays with
`irlens.matrix.backend_run.measure`, which hands its steps' times to `recording_host_time` (the
spread a row reports, flagged above UNSTEADY_SPREAD).

A kernel launch, on the GPU, is one device operation the profiler records in a step: a
kernel, a memset or a memcpy. `kernel_launches` counts them per step (the same for every
backend, eager included); `kernel_names` counts their distinct names; `launch_us` keeps the
step's launches in order, each with its own time (one kernel launched twice is two entries).
"""
from __future__ import annotations

import contextlib
import os
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.runtime.gpu_turns import gpu_alone
from irlens.core.json_values import read_record

_L2_FLUSH_BYTES = 256 << 20
# a host timing whose steps' interquartile range exceeds this fraction of their median is flagged
# as unsteady in every output (docs/timing.md)
UNSTEADY_SPREAD = 0.5


@dataclass
class HostTiming:
    """The host wall times of one measurement's steady-state steps."""

    steps_us: list[float]

    @property
    def spread(self) -> float:
        """Interquartile range / median: how widely the steps spread (0 for fewer than two)."""
        if len(self.steps_us) < 2:
            return 0.0
        q1, median, q3 = statistics.quantiles(self.steps_us, n=4, method="inclusive")
        return (q3 - q1) / median if median > 0 else 0.0


def unsteady(spread: float | None) -> bool:
    return spread is not None and spread > UNSTEADY_SPREAD


class HostTimingRecorder:
    """The host timing of the last step `measure` timed while it is active, and the call it
    timed (on the same arguments), so that another timer can time exactly the same thing."""

    timing: HostTiming | None = None
    call: Callable[[], Any] | None = None


_HOST_RECORDER: HostTimingRecorder | None = None


@contextlib.contextmanager
def recording_host_time():
    """Within this block, `measure` leaves its steps' times in the recorder it yields."""
    global _HOST_RECORDER
    previous, _HOST_RECORDER = _HOST_RECORDER, HostTimingRecorder()
    try:
        yield _HOST_RECORDER
    finally:
        _HOST_RECORDER = previous


def record_host_times(steps_us: list[float], call: Callable[[], Any] | None = None) -> None:
    if _HOST_RECORDER is not None:
        _HOST_RECORDER.timing = HostTiming(list(steps_us))
        _HOST_RECORDER.call = call


@dataclass
class DeviceTiming:
    device_us: float  # median device time (sum of kernel durations) per step, batch 1
    device_us_repeat: float  # the same, batch 2: repeatability
    kernel_us: dict[str, float] = field(default_factory=dict)  # kernel name -> median device µs per step (all its launches)
    kernel_launches: int = 0  # launches per step (kernels, memsets, memcpys)
    steps: int = 0  # steps per batch
    # None in documents written before they were recorded (written only when set)
    kernel_names: int | None = None  # distinct names among them
    launch_us: list[tuple[str, float]] | None = None  # the step's launches in order, median µs each

    @property
    def repeat_spread(self) -> float:
        """|batch1 − batch2| / batch1: how far two measurements of the same row differ."""
        return abs(self.device_us - self.device_us_repeat) / self.device_us if self.device_us else 0.0

    def to_json(self) -> dict:
        d = {"device_us": self.device_us, "device_us_repeat": self.device_us_repeat,
             "repeat_spread": self.repeat_spread, "kernel_us": self.kernel_us,
             "kernel_launches": self.kernel_launches, "kernel_names": self.kernel_names,
             "launch_us": None if self.launch_us is None else [list(x) for x in self.launch_us], "steps": self.steps}
        return {k: v for k, v in d.items() if v is not None}

    @classmethod
    def from_json(cls, d: Any, where: str = "device timing") -> "DeviceTiming":
        """As `to_json` wrote it (`repeat_spread` is computed again); BadDocument names `where` and the field."""
        return read_record(cls, d, where, required=("device_us", "device_us_repeat"), derived=("repeat_spread",))


# Kineto's own progress lines (profiler_start / profiler_stop markers, stages): printed to fd 2
# at every profiler start and stop, at any KINETO_LOG_LEVEL short of one that hides its errors too.
_KINETO_CHATTER = re.compile(r"^(USDT|STAGE):\S+ \S+ \d+:\d+ \S+\.cpp:\d+\] ")


@contextlib.contextmanager
def kineto_chatter_dropped():
    """Within this block, fd 2 goes through a filter that drops Kineto's progress lines and
    passes on everything else (its warnings and errors included) when the block ends."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            caught.seek(0)
            kept = [line for line in caught.read().decode(errors="replace").splitlines(keepends=True)
                    if not _KINETO_CHATTER.match(line)]
            if kept:
                sys.stderr.write("".join(kept))
                sys.stderr.flush()


@contextlib.contextmanager
def profiled(activities: list):
    """`torch.profiler.profile(activities=...)` around the block, without Kineto's progress lines
    on stderr (only its start and stop are filtered: what the block prints passes as printed)."""
    from torch.profiler import profile

    prof = profile(activities=activities)
    with kineto_chatter_dropped():
        prof.start()
    try:
        yield prof
    finally:
        with kineto_chatter_dropped():
            prof.stop()


_CUPTI_TAKEN = False


def cupti_taken() -> bool:
    """Whether this process has profiled CUDA through torch.profiler, runs under a tool CUDA injects
    where it says so (`CUDA_INJECTION64_PATH`), or was told (`mark_cupti_taken`: scripts/ncu_check.py's
    run under Nsight Compute, which that variable did not reveal): CUPTI allows one subscriber, and
    nvFuser's own profiler started beside another ends the process
    (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)."""
    return _CUPTI_TAKEN or bool(os.environ.get("CUDA_INJECTION64_PATH"))


def mark_cupti_taken() -> None:
    """Say that this process is about to profile CUDA through torch.profiler (see `cupti_taken`):
    every such caller marks it, so nvFuser's profiler is not started after it (that ends the process)."""
    global _CUPTI_TAKEN
    _CUPTI_TAKEN = True


def device_profile(step: Callable[[], Any], steps: int) -> list[list[tuple[str, float]]]:
    """Per step: its device launches in start order, (name, device µs), each step after an L2 flush."""
    import torch
    from torch.profiler import ProfilerActivity

    mark_cupti_taken()
    flush = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    per_step = []
    for _ in range(steps):
        flush.zero_()
        torch.cuda.synchronize()
        with profiled([ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        launches = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        launches.sort(key=lambda e: e.time_range.start)
        per_step.append([(e.name, e.device_time) for e in launches])
    return per_step


def time_on_device(step: Callable[[], Any], steps: int = 15) -> DeviceTiming:
    """Two batches of `steps` profiled steps; the medians of their device times."""
    batch1, batch2 = device_profile(step, steps), device_profile(step, steps)
    per_name = [_by_name(launches) for launches in batch1]
    names = sorted({n for k in per_name for n in k})
    return DeviceTiming(
        device_us=statistics.median(sum(us for _, us in launches) for launches in batch1),
        device_us_repeat=statistics.median(sum(us for _, us in launches) for launches in batch2),
        kernel_us={n: statistics.median(k.get(n, 0.0) for k in per_name) for n in names},
        kernel_launches=int(statistics.median(len(launches) for launches in batch1)),
        steps=steps,
        kernel_names=len(names),
        launch_us=launch_medians(batch1),
    )


def _by_name(launches: list[tuple[str, float]]) -> dict[str, float]:
    total: dict[str, float] = {}
    for name, us in launches:
        total[name] = total.get(name, 0.0) + us
    return total


def launch_medians(steps: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """The steps' launches in order, each with the median of its own times over the steps that
    launched the same sequence of kernels as the most common one (a step that differs, a first
    step's one-off work, say, is left out)."""
    sequences = [tuple(name for name, _ in launches) for launches in steps]
    common = max(set(sequences), key=sequences.count) if sequences else ()
    same = [launches for launches, seq in zip(steps, sequences) if seq == common]
    return [(name, statistics.median(launches[i][1] for launches in same)) for i, name in enumerate(common)]


class DeviceTimingRecorder:
    """Collects the device timing of the step a backend measures, while it is active.

    A backend's steady state is timed by `irlens.matrix.backend_run.measure`, which hands the
    step to `record(...)`: so device timing needs no code in any backend. With `lock_path`,
    a timing has the GPU alone (`gpu_alone`) among the worker processes sharing it."""

    def __init__(self, lock_path: str | None):
        self.lock_path = lock_path
        self.timing: DeviceTiming | None = None

    def record(self, step: Callable[[], Any]) -> None:
        with gpu_alone(self.lock_path):
            timing = time_on_device(step)
            if timing.repeat_spread > 0.03:  # disturbed (clocks ramping): measure once more
                timing = time_on_device(step)
            self.timing = timing


_RECORDER: DeviceTimingRecorder | None = None


@contextlib.contextmanager
def recording_device_time(lock_path: str | None = None):
    """Within this block, steps measured through `measure` on CUDA also get device timing."""
    global _RECORDER
    previous, _RECORDER = _RECORDER, DeviceTimingRecorder(lock_path)
    try:
        yield _RECORDER
    finally:
        _RECORDER = previous


def active_recorder() -> DeviceTimingRecorder | None:
    return _RECORDER
