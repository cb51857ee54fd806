"""% of ceiling: how close a timed kernel came to the device's roofline.

A kernel's ideal time is max(bytes / memory bandwidth, flops / peak rate); its % of ceiling
is ideal time / measured time. The peaks are the ones `irlens bench` measured on the device in
the same run (a large device copy, large matrix products), never datasheet figures; without
them, and for kernels without time or bytes, it is None.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.ir import Kernel


@dataclass(frozen=True)
class Ceiling:
    bandwidth: float  # bytes/s
    flops: dict[str, float]  # dtype -> flop/s


def ceiling_for(measured: dict | None) -> Ceiling | None:
    """The ceilings `irlens bench` measured in the same run (its document's "ceilings");
    None where none were measured (CPU runs, plain compare results)."""
    if not measured:
        return None
    bf16, fp32 = measured["bf16_tflops"] * 1e12, measured["fp32_tflops"] * 1e12
    return Ceiling(measured["copy_gbps"] * 1e9, {"bfloat16": bf16, "float16": bf16, "float32": fp32, "float64": fp32})


def ideal_us(kernel: Kernel, ceiling: Ceiling, dtype: str) -> float | None:
    if kernel.bytes is None and kernel.flops is None:
        return None
    memory = (kernel.bytes or 0) / ceiling.bandwidth
    compute = (kernel.flops or 0) / ceiling.flops.get(dtype, ceiling.flops["float32"])
    return max(memory, compute) * 1e6


def kernel_pct(kernel: Kernel, ceiling: Ceiling | None, dtype: str) -> float | None:
    if ceiling is None or not kernel.time_us:
        return None
    ideal = ideal_us(kernel, ceiling, dtype)
    return None if ideal is None else 100.0 * ideal / kernel.time_us


def backend_pct(kernels: list[Kernel], ceiling: Ceiling | None, dtype: str) -> float | None:
    """Over the timed kernels with a byte or flop count: total ideal time / total measured time."""
    if ceiling is None:
        return None
    pairs = [(ideal_us(k, ceiling, dtype), k.time_us) for k in kernels if k.time_us]
    pairs = [(i, t) for i, t in pairs if i is not None]
    if not pairs:
        return None
    return 100.0 * sum(i for i, _ in pairs) / sum(t for _, t in pairs)
