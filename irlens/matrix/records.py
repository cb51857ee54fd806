"""The records a Row holds besides plain values: its kernels, each result's check against the
reference, how the kernels cover the graphs, the graphs themselves, the notes irlens reads, and
the records only some rows have: a bench row's (`BenchRecord`: the work a step must do, its device
profile, `irlens.runtime.timing.DeviceTiming`, its roofline figures, its GPU and that GPU's ceilings)
and a cross row's (`CrossRecord`: the pairing, the graphs it lowered).

Each is written as the JSON it always was, and read back checked field by field
(`irlens.core.json_values`: a bad field is a usage error naming the file, row and field). Figures
a record may lack are written only when set; what older documents wrote otherwise (null) the
migration to the current form drops (irlens.matrix.schema). The result checks are the one record written otherwise: as
maps, result name -> value, one per attribute (`CHECK_MAPS`; `vacuous` only where a result is).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

from irlens.core.ceilings import Ceilings
from irlens.core.ir import Graph, Kernel
from irlens.core.json_values import BadDocument, read_record, read_value, set_fields
from irlens.runtime.timing import DeviceTiming

# written only when set: added after the first documents, or set by `irlens bench` alone (documents
# of schema 0 wrote them as null: irlens.matrix.schema)
KERNEL_WHEN_SET = ("bytes_read", "bytes_written", "combines", "matmul_flops", "pct_of_ceiling", "bound", "model_error", "via_l2")


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
        return {k: v for k, v in d.items() if k not in KERNEL_WHEN_SET or v not in (None, [])}

    @classmethod
    def from_json(cls, d: Any, where: str = "kernel") -> "KernelRecord":
        return read_record(cls, d, where, required=("backend", "name", "kind", "nodes"), names=(("nodes", "node_ids"),))


@dataclass
class StepWork:
    """What one step must move and do, counted once from the common view (irlens.core.cost)."""

    bytes: int
    flops: int  # all of them: matmul flops are exact, the rest an estimate (irlens.core.cost)
    matmul_flops: int | None = None  # the exact part; None in documents written before it was counted

    def to_json(self) -> dict:
        return set_fields(self)

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
    matmul_tflops: float | None = None  # the exact part of `tflops` (matrix products); None: not told apart

    def to_json(self) -> dict:
        return set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "roofline") -> "RowRoofline":
        return read_record(cls, d, where, required=("gbps", "tflops", "pct_of_ceiling", "bound"))


@dataclass
class ResultCheck:
    """One named result against the reference (irlens.numerics.verdicts). A JSON null stands for a value
    that is not finite (strict JSON has no NaN or Inf) and reads back as inf."""

    err: float | None = None  # its relative error; None: not compared (missing, or of another shape)
    allowed: float | None = None  # the error it may have; None: judged by the flat tolerance alone (older rows)
    eager_err: float | None = None  # eager's own error in the same dtype; None: not known
    ill_conditioned: str | None = None  # why its check is ill-conditioned: judged against eager only
    vacuous: bool | None = None  # exactly zero in the reference and the run: the check cannot fail (None: no)

    @property
    def failed(self) -> bool:
        """Compared, and NaN or Inf in the result."""
        return self.err is not None and not math.isfinite(self.err)

    # between a worker and its parent (a row's record): one object per result
    def to_json(self) -> dict:
        return set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "result") -> "ResultCheck":
        check = read_record(cls, d, where)
        for name in ("err", "eager_err"):
            if name in d and d[name] is None:
                setattr(check, name, math.inf)
        return check


# A row's result checks as documents write them: one map per attribute, result name -> value,
# each written only where a result has one (`per_result` always). Eager's map comes first: it
# names every result of the reference, in its order.
CHECK_MAPS = (("per_result_eager", "eager_err", float | None), ("per_result", "err", float | None),
              ("per_result_allowed", "allowed", float), ("ill_conditioned", "ill_conditioned", str),
              ("vacuous", "vacuous", bool))


def checks_from_json(maps: dict[str, Any], where: str) -> dict[str, ResultCheck]:
    """The checks of the maps `maps` (JSON name -> the map as written, or null)."""
    checks: dict[str, ResultCheck] = {}
    for key, attribute, hint in CHECK_MAPS:
        values = read_value(maps.get(key), dict[str, hint] | None, f"{where}: field {key!r}") or {}
        for name, value in values.items():
            setattr(checks.setdefault(name, ResultCheck()), attribute, math.inf if value is None else value)
    return checks


def checks_to_json(checks: dict[str, ResultCheck]) -> dict[str, dict | None]:
    """The maps of `checks`, JSON name -> map (None: no result has that value)."""
    out = {}
    for key, attribute, _ in CHECK_MAPS:
        values = {name: getattr(c, attribute) for name, c in checks.items() if getattr(c, attribute) is not None}
        out[key] = values if values or key == "per_result" else None
    return out


@dataclass
class Coverage:
    """How a row's kernels cover the nodes they must explain (matrix.cell.kernel_coverage); node
    ids as `stage:id`."""

    compute_nodes: int  # the compute and unknown nodes of the graphs the kernels refer to
    uncovered: list[str]  # those in no kernel
    duplicates: list[str]  # those in more than one
    unknown: list[str] | None = None  # every unknown node, `stage:id (native)`; None in older documents

    def to_json(self) -> dict:
        return set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "coverage") -> "Coverage":
        return read_record(cls, d, where, required=("compute_nodes", "uncovered", "duplicates"))


@dataclass
class LoweredGraph:
    """A graph a cross row lowered (`CrossRecord.lowered`): its stage and size."""

    stage: str
    nodes: int

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "lowered graph") -> "LoweredGraph":
        return read_record(cls, d, where, required=("stage", "nodes"))


@dataclass
class BenchRecord:
    """What `irlens bench` adds to a row (`Row.bench`), each field written only when set."""

    must: StepWork | None = None  # the bytes and flops one step must move and do (irlens.core.cost)
    device_timing: DeviceTiming | None = None  # the step's device profile
    roofline: RowRoofline | None = None  # the step against the ceilings (irlens.reporting.roofline)
    gpu: str | None = None  # the GPU it ran on (bench --gpus)
    ceilings: Ceilings | None = None  # that GPU's measured ceilings (bench --gpus, a report of several runs)

    def to_json(self) -> dict:
        return set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "bench") -> "BenchRecord":
        return read_record(cls, d, where)


def bench_with(bench: BenchRecord | None, **values: Any) -> BenchRecord | None:
    """A copy of a row's bench record (an empty one where it has none) with `values` set; None
    where nothing of it is set."""
    record = dataclasses.replace(bench or BenchRecord(), **values)
    return record if set_fields(record) else None


@dataclass
class CrossRecord:
    """What a cell of the cross grid adds to a row (`Row.cross`, irlens.matrix.cross): its frontend acquired
    the graphs, its backend lowered and ran them."""

    native: bool | None = None  # the acquiring frontend is the backend's own (None: a document did not say)
    lowered: list[LoweredGraph] = field(default_factory=list)  # the graphs it lowered: stage and size

    def to_json(self) -> dict:
        return set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "cross") -> "CrossRecord":
        return read_record(cls, d, where)


def read_graph(d: Any, where: str) -> Graph:
    """A common-view graph as `Graph.to_json` wrote it."""
    if not isinstance(d, dict):
        raise BadDocument(f"{where} is not a JSON object")
    try:
        return Graph.from_json(d)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        what = f"missing field {e}" if isinstance(e, KeyError) else f"{type(e).__name__}: {e}"
        raise BadDocument(f"{where}: not a common-view graph ({what})") from None


StageGraph = Annotated[Graph, read_graph]


class _Region(TypedDict):
    region: str
    taken_by: str  # thunder | inductor
    ops: int


class SplitRegion(_Region, total=False):  # (NotRequired is not seen under postponed annotations)
    """One region of a ThunderFX split, as the report reads it (irlens.reporting.splits)."""

    reasons: list[str]  # why it fell back


class SplitSummary(TypedDict):
    """notes["thunderfx"]: the regions Thunder took and those that fell back (the frontend writes
    more: counts, kept as written)."""

    regions: list[SplitRegion]


class _Draws(TypedDict):
    verdict: str  # ok | mismatch | not judged


class DrawsNote(_Draws, total=False):
    """notes["draws"]: a half-precision mismatch judged over input draws (irlens.matrix.draws)."""

    draws: int  # how many
    why: str  # the first problem over them, or why it was not judged
    own_inputs: str  # an ok verdict: what the workload's own inputs alone gave


# The notes irlens itself reads back (tables, report), each checked as its type; a backend's other
# notes are its own, any JSON value.
NOTE_TYPES: dict[str, Any] = {"capture": str, "splits": str, "graph_breaks": int, "gpu_alone": str,
                              "thunderfx": SplitSummary, "draws": DrawsNote}


def read_notes(d: Any, where: str) -> dict[str, Any]:
    notes = read_value(d, dict, where)
    return {k: read_value(v, NOTE_TYPES.get(k, Any), f"{where}[{k!r}]") for k, v in notes.items()}


Notes = Annotated[dict[str, Any], read_notes]
