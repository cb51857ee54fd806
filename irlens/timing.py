"""Device timing of a compiled step (CUDA), and the hardware's ceilings.

Device time comes from the torch profiler (CUPTI). CUPTI sees every kernel the process
launches, so the same measurement serves Inductor/Triton, nvFuser and XLA alike (XLA's
asynchronous dispatch makes host wall time around a jitted call meaningless as kernel time).
Each measured step starts with a cold L2: a 256 MiB buffer is overwritten before it, outside
the profiled region. Device time of a step = the sum of its kernels' durations (memcpy and
memset included). The median is taken twice, over two separate batches of steps, so a
result carries its own repeatability figure. Host wall time stays with
`irlens.backends.base.measure`.
"""
from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.gpu_turns import gpu_alone

_L2_FLUSH_BYTES = 256 << 20


@dataclass
class DeviceTiming:
    device_us: float  # median device time (sum of kernel durations) per step, batch 1
    device_us_repeat: float  # the same, batch 2: repeatability
    kernel_us: dict[str, float] = field(default_factory=dict)  # kernel name -> median device µs per step
    kernel_launches: int = 0  # kernels launched per step
    steps: int = 0  # steps per batch

    @property
    def repeat_spread(self) -> float:
        """|batch1 − batch2| / batch1: how far two measurements of the same row differ."""
        return abs(self.device_us - self.device_us_repeat) / self.device_us if self.device_us else 0.0

    def to_json(self) -> dict:
        return {"device_us": self.device_us, "device_us_repeat": self.device_us_repeat,
                "repeat_spread": self.repeat_spread, "kernel_us": self.kernel_us,
                "kernel_launches": self.kernel_launches, "steps": self.steps}


_CUPTI_TAKEN = False


def cupti_taken() -> bool:
    """Whether this process has profiled CUDA through torch.profiler: its CUPTI subscription
    stays, and CUPTI allows one subscriber (nvFuser's own profiler then cannot start)."""
    return _CUPTI_TAKEN


def mark_cupti_taken() -> None:
    """Say that this process is about to profile CUDA through torch.profiler (see `cupti_taken`):
    every such caller marks it, so nvFuser's profiler is not started after it (that ends the process)."""
    global _CUPTI_TAKEN
    _CUPTI_TAKEN = True


def device_profile(step: Callable[[], Any], steps: int) -> list[dict[str, float]]:
    """Per step: {kernel name: device µs} from the profiler, each step after an L2 flush."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    mark_cupti_taken()
    flush = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
    per_step = []
    for _ in range(steps):
        flush.zero_()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kernels: dict[str, float] = {}
        for e in prof.events():
            if e.device_type == torch.autograd.DeviceType.CUDA:
                kernels[e.name] = kernels.get(e.name, 0.0) + e.device_time
        per_step.append(kernels)
    return per_step


def time_on_device(step: Callable[[], Any], steps: int = 15) -> DeviceTiming:
    """Two batches of `steps` profiled steps; the medians of their device times."""
    batch1, batch2 = device_profile(step, steps), device_profile(step, steps)
    names = sorted({n for k in batch1 for n in k})
    return DeviceTiming(
        device_us=statistics.median(sum(k.values()) for k in batch1),
        device_us_repeat=statistics.median(sum(k.values()) for k in batch2),
        kernel_us={n: statistics.median(k.get(n, 0.0) for k in batch1) for n in names},
        kernel_launches=int(statistics.median(len(k) for k in batch1)),
        steps=steps,
    )


class DeviceTimingRecorder:
    """Collects the device timing of the step a backend measures, while it is active.

    Backends time their steady state through `irlens.backends.base.measure`, which hands the
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


# --- the hardware's ceilings, measured in the same run --------------------------------------

@dataclass
class Ceilings:
    copy_gbps: float  # device-to-device copy, bytes read + written per second / 1e9
    bf16_tflops: float  # large bf16 matrix product
    fp32_tflops: float  # large fp32 matrix product (tf32 off: full fp32)
    device: str

    def to_json(self) -> dict:
        return {"copy_gbps": self.copy_gbps, "bf16_tflops": self.bf16_tflops, "fp32_tflops": self.fp32_tflops,
                "device": self.device}


def measure_ceilings() -> Ceilings:
    """A 2 GiB device copy and 8192³ matrix products, timed with events (median of many)."""
    import torch
    from triton.testing import do_bench

    n = 1 << 29  # 2 GiB of float32
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    copy_ms = do_bench(lambda: dst.copy_(src), warmup=50, rep=500, return_mode="median")
    m = 8192
    tflops = {}
    for dt in (torch.bfloat16, torch.float32):
        a, b = torch.randn(m, m, device="cuda", dtype=dt), torch.randn(m, m, device="cuda", dtype=dt)
        ms = do_bench(lambda: a @ b, warmup=50, rep=500, return_mode="median")
        tflops[dt] = 2 * m**3 / (ms * 1e-3) / 1e12
    return Ceilings(copy_gbps=2 * n * 4 / (copy_ms * 1e-3) / 1e9, bf16_tflops=tflops[torch.bfloat16],
                    fp32_tflops=tflops[torch.float32], device=torch.cuda.get_device_name())
