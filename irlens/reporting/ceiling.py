"""% of ceiling: how close a timed kernel came to the device's roofline, and when a figure
cannot be a speed.

A kernel's ideal time is max(bytes / memory bandwidth, flops / peak rate of its dtype); its % of
ceiling is ideal time / measured time. The peaks are the ones `irlens bench` measured on the
device in the same run (`irlens.core.ceilings`: the best bandwidth kernel, the best matrix product
of a sweep that includes the workload's own shapes, each raised to the best rate a kernel of
the run was timed at within the vendor's figure), never datasheet figures alone; without them,
and for kernels without time or bytes, it is None.

A memory-bound kernel faster than DRAM allows for its bytes was served partly by the L2 (a
DRAM ceiling does not bound a kernel that reads what the kernel before it left in L2): its
figure counts only the bytes beyond the L2's size, and says so. Above 100 % even then, the
roofline model is wrong for that kernel (its bytes or flops are over-counted), and the figure
is flagged as a model error in every output, never shown as a speed.

Only exact flops count toward a compute bound: a matrix product's 2·m·n·k. The flops of
elementwise ops and reductions are an estimate (irlens.core.cost: one per op and element, not the
instructions a kernel runs), shown as one and never enough to make a kernel or a step compute-bound.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.core.ceilings import Ceilings
from irlens.core.ir import Kernel


@dataclass(frozen=True)
class Ceiling:
    bandwidth: float  # bytes/s
    flops: dict[str, float]  # dtype -> flop/s
    l2_bytes: int | None = None

    def peak(self, dtype: str) -> float:
        if dtype == "float16" and "float16" not in self.flops:
            dtype = "bfloat16"
        return self.flops.get(dtype) or self.flops["float32"]


def ceiling_for(c: Ceilings | None) -> Ceiling | None:
    """The ceilings `irlens bench` measured in the same run (its document's "ceilings") in the
    units of a kernel's figures; None where none were measured (CPU runs, plain compare results)."""
    if c is None:
        return None
    return Ceiling(c.memory_gbps * 1e9, {d: t * 1e12 for d, t in c.matmul_tflops.items()}, c.l2_bytes)


@dataclass(frozen=True)
class Verdict:
    pct: float | None  # % of ceiling; None: no time, no work counted, or no ceilings
    bound: str | None  # memory | compute: which term of the ideal time is larger
    model_error: str | None = None  # set when pct is above 100: why the figure is no speed
    via_l2: str | None = None  # set when the kernel beat DRAM: its pct counts only the bytes beyond the L2


# the kernel a ceiling was raised to (irlens.reporting.roofline) is at 100 %, give or take float rounding
ROUNDING = 1e-9


def above_100(pct: float | None) -> bool:
    return pct is not None and pct > 100.0 * (1 + ROUNDING)


def model_error(pct: float | None, bound: str | None) -> str | None:
    """Why a % of ceiling above 100 cannot be a speed; None at or below 100."""
    if not above_100(pct):
        return None
    return (f"model error: {pct:.0f} % of ceiling is not possible ({bound}-bound: its "
            f"{'bytes' if bound == 'memory' else 'flops'} are over-counted or the ceiling is too low)")


def dram_bytes(nbytes: int | None, l2_bytes: int | None) -> int | None:
    """The fewest of a kernel's bytes that must cross DRAM: all but as many as the L2 holds
    (read from what earlier kernels left there, or written and not yet written back)."""
    return None if nbytes is None else max(nbytes - (l2_bytes or 0), 0)


def exact_flops(flops: int | None, matmul_flops: int | None) -> int:
    """The flops a compute bound is judged on: the matmul part where it was counted apart, else
    (documents written before) all of them, as they were judged then."""
    return (flops or 0) if matmul_flops is None else matmul_flops


def flops_estimated(flops: int | None, matmul_flops: int | None) -> bool:
    """Whether a flop count holds estimated (not matmul) flops, or may: not counted apart."""
    return bool(flops) and (matmul_flops is None or flops > matmul_flops)


def ideal_us(kernel: Kernel, ceiling: Ceiling, dtype: str, nbytes: int | None = None) -> tuple[float, str] | None:
    """(ideal µs, bound) of the kernel's bytes (or `nbytes` of them) and flops; None for a kernel
    with neither counted."""
    if kernel.bytes is None and kernel.flops is None:
        return None
    memory = ((kernel.bytes if nbytes is None else nbytes) or 0) / ceiling.bandwidth
    compute = exact_flops(kernel.flops, kernel.matmul_flops) / ceiling.peak(dtype)
    return max(memory, compute) * 1e6, "memory" if memory >= compute else "compute"


def judge(kernel: Kernel, ceiling: Ceiling | None, dtype: str) -> Verdict:
    """The kernel's % of ceiling. A memory-bound kernel faster than DRAM allows for its bytes had
    part of them served by the L2 (each step starts with a cold L2, but a kernel reads what the
    ones before it left there): its figure is then against the bytes that must still have crossed
    DRAM, and says so (`via_l2`). Above 100 % even so, the model over-counts: a model error."""
    if ceiling is None or not kernel.time_us:
        return Verdict(None, None)
    ideal = ideal_us(kernel, ceiling, dtype)
    if ideal is None:
        return Verdict(None, None)
    pct = 100.0 * ideal[0] / kernel.time_us
    if not above_100(pct):
        return Verdict(pct, ideal[1])
    dram = dram_bytes(kernel.bytes, ceiling.l2_bytes)
    if ideal[1] == "memory" and ceiling.l2_bytes and dram is not None:
        us, bound = ideal_us(kernel, ceiling, dtype, dram)
        if not above_100(100.0 * us / kernel.time_us):
            mib = 2 ** 20
            return Verdict(100.0 * us / kernel.time_us, bound, via_l2=(
                f"faster than DRAM for its {kernel.bytes / mib:.1f} MiB ({pct:.0f} %): the {ceiling.l2_bytes / mib:.0f} "
                f"MiB L2 served part; the figure counts the {dram / mib:.1f} MiB beyond it"))
    return Verdict(pct, ideal[1], model_error(pct, ideal[1]))


def kernel_pct(kernel: Kernel, ceiling: Ceiling | None, dtype: str) -> float | None:
    return judge(kernel, ceiling, dtype).pct


@dataclass(frozen=True)
class BackendFigure:
    pct: float | None  # total ideal time / total measured time over the timed kernels not flagged
    flagged: int  # kernels left out: above 100 % (model errors)


def backend_pct(kernels: list[Kernel], ceiling: Ceiling | None, dtype: str) -> BackendFigure:
    """Over the timed kernels with a byte or flop count and a possible figure: total ideal time /
    total measured time (an L2-served kernel's ideal time counts the bytes beyond the L2);
    kernels above 100 % are left out and counted."""
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
