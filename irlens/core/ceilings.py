"""The hardware's ceilings beside the vendor's figures: the record a bench document keeps, read by the
bench and by the reports (the sweep that measures them on the device is irlens.bench.sweep).

The sweep still under-states the device: event timing against the profiler's, kernels cuBLAS
picks for other layouts, clocks that depend on the data. So a run's ceilings are the sweep's
raised to the best rate any of its kernels was timed at (`raised_to`: GB/s of any kernel,
TFLOP/s per dtype), where that rate stays at or below the vendor's figure; a kernel above the
vendor's figure is a model error, not a faster device. Where `SPECS` does not know the device
nothing is raised: with no figure above them, the best kernel would be 100 % by definition and
no over-count could show.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from irlens.core.json_values import read_record


def _field_hash(record: Any) -> int:
    """A frozen record's hash over its fields, a dict by its items: equal ceilings are one key
    (irlens.reporting.roofline groups rows by the ceilings they were measured against)."""
    values = (getattr(record, f.name) for f in fields(record))
    return hash(tuple(tuple(sorted(v.items())) if isinstance(v, dict) else v for v in values))


@dataclass(frozen=True)
class Spec:
    """A device's datasheet figures: dense tensor-core rates (no sparsity), memory bandwidth."""

    name: str
    memory_gbps: float
    tflops: dict[str, float]  # bfloat16, float16, tfloat32 (tensor cores), float32 (no TF32)

    __hash__ = _field_hash

    @classmethod
    def from_json(cls, d: Any, where: str = "spec") -> "Spec":
        return read_record(cls, d, where, required=("name", "memory_gbps", "tflops"))


_HOPPER_SXM = {"bfloat16": 989.4, "float16": 989.4, "tfloat32": 494.7, "float32": 66.9}
# Keyed by torch.cuda.get_device_name(); figures from NVIDIA's H100 and H200 datasheets
SPECS = {
    "NVIDIA H100 80GB HBM3": Spec("H100 SXM5 80 GB", 3350.0, _HOPPER_SXM),
    "NVIDIA H200": Spec("H200 SXM 141 GB", 4800.0, _HOPPER_SXM),
}


def spec_for(device_name: str) -> Spec | None:
    return SPECS.get(device_name)


@dataclass(frozen=True)
class Raise:
    """A ceiling raised to a kernel's rate (`raised_to`): the sweep's own figure, and the kernel
    (and its row) that ran faster."""

    sweep: float
    by: str

    @classmethod
    def from_json(cls, d: Any, where: str = "raise") -> "Raise":
        return read_record(cls, d, where, required=("sweep", "by"))


@dataclass(frozen=True)
class Ceilings:
    """A run's ceilings, as its bench document keeps them (its own, a part's, a row's GPU's);
    changed only by `replace`, hashable: rows are grouped by them."""

    device: str
    memory_gbps: float  # DRAM bandwidth: the best of the bandwidth kernels, bytes moved per second / 1e9
    memory_best: str  # which kernel and size gave it
    matmul_tflops: dict[str, float]  # dtype -> the best matrix-product rate of the sweep
    matmul_best: dict[str, str] = field(default_factory=dict)  # dtype -> the shape that gave it
    tf32: bool = False  # float32 products used TF32 (as the workloads' do)
    l2_bytes: int | None = None
    spec: Spec | None = None  # the vendor's figures where known
    # "memory" or a matmul dtype -> the sweep's own figure and the kernel that ran faster: that
    # figure above was raised to a kernel's rate (`raised_to`)
    raised: dict[str, Raise] = field(default_factory=dict)
    source: str = ""  # where the sweep's figures came from: measured in the run, or kept (irlens.bench.ceilings_cache)

    __hash__ = _field_hash

    def matmul_key(self, dtype: str) -> str:
        """The matmul ceiling a dtype's work is held to (float16 by bfloat16's where not measured)."""
        return "bfloat16" if dtype == "float16" and "float16" not in self.matmul_tflops else dtype

    def peak_tflops(self, dtype: str) -> float | None:
        return self.matmul_tflops.get(self.matmul_key(dtype))

    def vendor(self, what: str) -> float | None:
        """The vendor's figure for "memory" (GB/s) or a matmul key (TFLOP/s; float32 as TF32 where used)."""
        if self.spec is None:
            return None
        if what == "memory":
            return self.spec.memory_gbps
        return self.spec.tflops.get("tfloat32" if what == "float32" and self.tf32 else what)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "ceilings") -> "Ceilings":
        """The record as `to_json` wrote it (a document's older forms are migrated to it first:
        irlens.matrix.schema); BadDocument names a field it cannot read."""
        return read_record(cls, d, where, required=tuple(f.name for f in fields(cls)))


@dataclass(frozen=True)
class Seen:
    """A rate a kernel of the run was timed at: `what` is "memory" (GB/s) or a matmul key (TFLOP/s)."""

    what: str
    rate: float
    by: str  # the kernel, and the row it ran in


def swept(c: Ceilings) -> Ceilings:
    """The ceilings as the sweep measured them, any raise undone."""
    tflops = {**c.matmul_tflops, **{d: r.sweep for d, r in c.raised.items() if d != "memory"}}
    memory = c.raised["memory"].sweep if "memory" in c.raised else c.memory_gbps
    return replace(c, memory_gbps=memory, matmul_tflops=tflops, raised={})


def raised_to(c: Ceilings, seen: Iterable[Seen]) -> Ceilings:
    """The sweep's ceilings `c`, each raised to the best rate seen for it that is at or below the
    vendor's figure; none raised where the vendor's figure is unknown (see the module docstring).
    A matmul dtype the sweep did not measure gets no ceiling from kernels alone."""
    figures = {"memory": c.memory_gbps, **c.matmul_tflops}
    raised: dict[str, Raise] = {}
    for s in seen:
        vendor = c.vendor(s.what) if s.what in figures else None
        if vendor is not None and figures[s.what] < s.rate <= vendor:
            raised[s.what] = Raise(raised[s.what].sweep if s.what in raised else figures[s.what], s.by)
            figures[s.what] = s.rate
    return replace(c, memory_gbps=figures.pop("memory"), matmul_tflops=figures, raised=raised)


def describe(c: Ceilings) -> str:
    """One line: each ceiling, the shape that gave it in the sweep or the kernel that raised it,
    beside the vendor's figure."""

    def source(what: str, best: str) -> str:
        vendor = c.vendor(what)
        spec = f"; {c.spec.name} spec {vendor:.0f}" if vendor else ""
        if what in c.raised:
            r = c.raised[what]
            return f"raised from the sweep's {r.sweep:.0f} by {r.by}; the sweep's {best}{spec}"
        return best + spec

    parts = [f"memory **{c.memory_gbps:.0f} GB/s** ({source('memory', 'best: ' + c.memory_best)})"]
    for dtype, rate in c.matmul_tflops.items():
        label = {"bfloat16": "bf16", "float32": "fp32 (TF32)" if c.tf32 else "fp32 (no TF32)"}.get(dtype, dtype)
        parts.append(f"{label} matmul **{rate:.0f} TFLOP/s** "
                     f"({source(dtype, 'best at ' + c.matmul_best.get(dtype, '?'))})")
    if c.l2_bytes:
        parts.append(f"L2 {c.l2_bytes / 2**20:.0f} MiB")
    if c.source:
        parts.append(f"the sweep's figures {c.source}")
    return "; ".join(parts)
