"""% of ceiling: how close a timed kernel came to the device's roofline, and when a figure
cannot be a speed.

A kernel's ideal time is max(bytes / memory bandwidth, flops / peak rate of its dtype); its % of
ceiling is ideal time / measured time. The peaks are the ones `irlens bench` measured on the
device in the same run (`irlens.ceilings`: the best bandwidth kernel, the best matrix product
of a sweep that includes the workload's own shapes, each raised to the best rate a kernel of
the run was timed at within the vendor's figure), never datasheet figures alone; without them,
and for kernels without time or bytes, it is None.

Above 100 % the roofline model is wrong for that kernel, and the figure is flagged, never
shown as a speed: either the L2 cache kept enough of its bytes off DRAM (a DRAM ceiling does
not bound a kernel that reads what the kernel before it left in L2), or its bytes or flops
are over-counted.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.ceilings import Ceilings
from irlens.ir import Kernel


@dataclass(frozen=True)
class Ceiling:
    bandwidth: float  # bytes/s
    flops: dict[str, float]  # dtype -> flop/s
    l2_bytes: int | None = None

    def peak(self, dtype: str) -> float:
        if dtype == "float16" and "float16" not in self.flops:
            dtype = "bfloat16"
        return self.flops.get(dtype) or self.flops["float32"]


def ceiling_for(measured: dict | None) -> Ceiling | None:
    """The ceilings `irlens bench` measured in the same run (its document's "ceilings", in the
    current or the older form); None where none were measured (CPU runs, plain compare results)."""
    if not measured:
        return None
    c = Ceilings.from_json(measured)
    return Ceiling(c.memory_gbps * 1e9, {d: t * 1e12 for d, t in c.matmul_tflops.items()}, c.l2_bytes)


@dataclass(frozen=True)
class Verdict:
    pct: float | None  # % of ceiling; None: no time, no work counted, or no ceilings
    bound: str | None  # memory | compute: which term of the ideal time is larger
    model_error: str | None = None  # set when pct is above 100: why the figure is no speed


# the kernel a ceiling was raised to (irlens.roofline) is at 100 %, give or take float rounding
ROUNDING = 1e-9


def model_error(pct: float | None, nbytes: int | None, bound: str | None, l2_bytes: int | None) -> str | None:
    """Why a % of ceiling above 100 cannot be a speed; None at or below 100. A memory-bound
    kernel is explained by the L2 when, with as many of its bytes as the L2 holds kept off DRAM
    (read from what the kernel before it left there, or written and not yet written back), the
    rest fits within the DRAM ceiling."""
    if pct is None or pct <= 100.0 * (1 + ROUNDING):
        return None
    if bound == "memory" and l2_bytes and nbytes:
        dram_pct = pct * max(nbytes - l2_bytes, 0) / nbytes
        if dram_pct <= 100.0:
            return (f"model error: {pct:.0f} % of the DRAM ceiling; the {l2_bytes / 2**20:.0f} MiB L2 can hold "
                    f"enough of its {nbytes / 2**20:.1f} MiB to explain it (at most {dram_pct:.0f} % through DRAM)")
    return (f"model error: {pct:.0f} % of ceiling is not possible ({bound}-bound: its "
            f"{'bytes' if bound == 'memory' else 'flops'} are over-counted or the ceiling is too low)")


def ideal_us(kernel: Kernel, ceiling: Ceiling, dtype: str) -> tuple[float, str] | None:
    """(ideal µs, bound), or None for a kernel with neither bytes nor flops counted."""
    if kernel.bytes is None and kernel.flops is None:
        return None
    memory = (kernel.bytes or 0) / ceiling.bandwidth
    compute = (kernel.flops or 0) / ceiling.peak(dtype)
    return max(memory, compute) * 1e6, "memory" if memory >= compute else "compute"


def judge(kernel: Kernel, ceiling: Ceiling | None, dtype: str) -> Verdict:
    if ceiling is None or not kernel.time_us:
        return Verdict(None, None)
    ideal = ideal_us(kernel, ceiling, dtype)
    if ideal is None:
        return Verdict(None, None)
    pct = 100.0 * ideal[0] / kernel.time_us
    return Verdict(pct, ideal[1], model_error(pct, kernel.bytes, ideal[1], ceiling.l2_bytes))


def kernel_pct(kernel: Kernel, ceiling: Ceiling | None, dtype: str) -> float | None:
    return judge(kernel, ceiling, dtype).pct


@dataclass(frozen=True)
class BackendFigure:
    pct: float | None  # total ideal time / total measured time over the timed kernels not flagged
    flagged: int  # kernels left out: above 100 % (model errors)


def backend_pct(kernels: list[Kernel], ceiling: Ceiling | None, dtype: str) -> BackendFigure:
    """Over the timed kernels with a byte or flop count and a possible figure: total ideal time /
    total measured time; kernels above 100 % are left out and counted."""
    if ceiling is None:
        return BackendFigure(None, 0)
    pairs, flagged = [], 0
    for k in kernels:
        verdict = judge(k, ceiling, dtype)
        if verdict.model_error:
            flagged += 1
        elif verdict.pct is not None:
            pairs.append((verdict.pct * k.time_us / 100.0, k.time_us))
    if not pairs:
        return BackendFigure(None, flagged)
    return BackendFigure(100.0 * sum(i for i, _ in pairs) / sum(t for _, t in pairs), flagged)
