"""The records a Row holds besides plain values: its kernels, the work a step must do, and the
step's roofline figures (the device profile is `irlens.timing.DeviceTiming`).

Each is written as the JSON object it always was, and read back checked field by field
(`irlens.json_values`: a bad field is a usage error naming the file, row and field). A field
added after documents were first written is written only when set, so older documents read
back, and write again, unchanged.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from irlens.ir import Kernel
from irlens.json_values import read_record

# written only when set: added after the first documents, or set by `irlens bench` alone
_LATER = ("bytes_read", "bytes_written", "combines", "pct_of_ceiling", "bound", "model_error", "via_l2")


@dataclass
class KernelRecord(Kernel):
    """A kernel as a row keeps it (no source: documents stay small), with the verdict `irlens
    bench` gives it against the ceilings (irlens.reporting.roofline, irlens.reporting.ceiling)."""

    pct_of_ceiling: float | None = None
    bound: str | None = None  # memory | compute
    model_error: str | None = None  # why a figure above 100 % of ceiling is no speed
    via_l2: str | None = None  # the figure counts only the bytes beyond the L2 (a kernel faster than DRAM)

    @classmethod
    def of(cls, kernel: Kernel) -> "KernelRecord":
        base = {f.name: getattr(kernel, f.name) for f in dataclasses.fields(Kernel)}
        return cls(**{**base, "source": ""})

    def to_json(self, with_source: bool = False) -> dict:
        d = super().to_json(with_source)
        return {k: v for k, v in d.items() if k not in _LATER or v not in (None, [])}

    @classmethod
    def from_json(cls, d: Any, where: str = "kernel") -> "KernelRecord":
        return read_record(cls, d, where, required=("backend", "name", "kind", "nodes"), names=(("nodes", "node_ids"),))


@dataclass
class StepWork:
    """What one step must move and do, counted once from the common view (irlens.cost)."""

    bytes: int
    flops: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "must") -> "StepWork":
        return read_record(cls, d, where, required=("bytes", "flops"))


@dataclass
class RowRoofline:
    """A step's figures against the ceilings (irlens.reporting.roofline): the rates of the work it must do
    over its device time, its % of ceiling and which bound, why that % is no speed when above
    100, and how many of its kernels' own figures are."""

    gbps: float
    tflops: float
    pct_of_ceiling: float
    bound: str  # memory | compute
    model_error: str | None = None
    kernels_flagged: int | None = None  # None in documents written before kernels were judged

    def to_json(self) -> dict:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}

    @classmethod
    def from_json(cls, d: Any, where: str = "roofline") -> "RowRoofline":
        return read_record(cls, d, where, required=("gbps", "tflops", "pct_of_ceiling", "bound"))
