"""Timing of a compiled step: host wall time, and on CUDA the device time of its kernels.

Device time comes from the torch profiler (CUPTI). CUPTI sees every kernel the process
launches, so the same measurement serves Inductor/Triton, nvFuser and XLA alike (XLA's
asynchronous dispatch makes host wall time around a jitted call meaningless as kernel time).
Each measured step starts with a cold L2: a 256 MiB buffer is overwritten before it, outside
the profiled region. Device time of a step = the sum of its kernels' durations (memcpy and
memset included). The median is taken twice, over two separate batches of steps, so a
result carries its own repeatability figure.
"""
from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable

_L2_FLUSH_BYTES = 256 << 20


@dataclass
class Timing:
    run_us: float  # median host wall time of a synchronized step
    device_us: float | None = None  # median device time (sum of kernel durations) per step, batch 1
    device_us_repeat: float | None = None  # the same, batch 2: repeatability
    kernel_us: dict[str, float] = field(default_factory=dict)  # kernel name -> median device µs per step
    kernel_launches: int | None = None  # kernels launched per step

    @property
    def repeat_spread(self) -> float | None:
        """|batch1 − batch2| / batch1: how far two measurements of the same row differ."""
        if not self.device_us or self.device_us_repeat is None:
            return None
        return abs(self.device_us - self.device_us_repeat) / self.device_us

    def to_json(self) -> dict:
        return {"run_us": self.run_us, "device_us": self.device_us, "device_us_repeat": self.device_us_repeat,
                "repeat_spread": self.repeat_spread, "kernel_us": self.kernel_us,
                "kernel_launches": self.kernel_launches}


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


def host_time_us(step: Callable[[], Any], device: str, warmup: int = 2, repeats: int = 10,
                 budget_s: float = 5.0) -> float:
    """Median wall time of `step`, synchronized; fewer repeats when one step is slow."""
    for _ in range(warmup):
        step()
    _sync(device)
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats and (not times or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        step()
        _sync(device)
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def device_profile(step: Callable[[], Any], steps: int) -> list[dict[str, float]]:
    """Per step: {kernel name: device µs} from the profiler, each step after an L2 flush."""
    import torch
    from torch.profiler import ProfilerActivity, profile

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


def time_step(step: Callable[[], Any], device: str, *, device_timing: bool = False, steps: int = 20) -> Timing:
    """Host timing always; device timing (two batches of `steps`) when asked and on CUDA."""
    run_us = host_time_us(step, device)
    if not (device_timing and device.startswith("cuda")):
        return Timing(run_us)
    batch1 = device_profile(step, steps)
    batch2 = device_profile(step, steps)
    totals1 = [sum(k.values()) for k in batch1]
    totals2 = [sum(k.values()) for k in batch2]
    names = sorted({n for k in batch1 for n in k})
    kernel_us = {n: statistics.median(k.get(n, 0.0) for k in batch1) for n in names}
    launches = statistics.median(len(k) for k in batch1)
    return Timing(run_us, statistics.median(totals1), statistics.median(totals2), kernel_us, int(launches))


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
    del src, dst
    m = 8192
    tflops = {}
    for dt in (torch.bfloat16, torch.float32):
        a, b = torch.randn(m, m, device="cuda", dtype=dt), torch.randn(m, m, device="cuda", dtype=dt)
        ms = do_bench(lambda: a @ b, warmup=50, rep=500, return_mode="median")
        tflops[dt] = 2 * m**3 / (ms * 1e-3) / 1e12
    return Ceilings(copy_gbps=2 * n * 4 / (copy_ms * 1e-3) / 1e9, bf16_tflops=tflops[torch.bfloat16],
                    fp32_tflops=tflops[torch.float32], device=torch.cuda.get_device_name())
