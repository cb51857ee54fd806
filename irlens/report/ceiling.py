"""% of ceiling: how close a timed kernel came to the device's roofline.

A kernel's ideal time is max(bytes / memory bandwidth, flops / peak rate); its % of ceiling
is ideal time / measured time. Only devices whose peaks we know (vendor datasheet figures,
dense, no sparsity) get a figure; elsewhere, and for kernels without time or bytes, it is None.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.ir import Kernel


@dataclass(frozen=True)
class Ceiling:
    bandwidth: float  # bytes/s
    flops: dict[str, float]  # dtype -> flop/s


_HOPPER_FLOPS = {"float32": 67e12, "float64": 67e12, "bfloat16": 989e12, "float16": 989e12}
# Checked in order: the first substring of the device name that matches wins.
CEILINGS = (
    ("H100 PCIe", Ceiling(2.0e12, {"float32": 51e12, "float64": 51e12, "bfloat16": 756e12, "float16": 756e12})),
    ("H100", Ceiling(3.35e12, _HOPPER_FLOPS)),
    ("H200", Ceiling(4.8e12, _HOPPER_FLOPS)),
)


def ceiling_for(device_name: str | None) -> Ceiling | None:
    for key, ceiling in CEILINGS:
        if device_name and key in device_name:
            return ceiling
    return None


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
