"""One row of a results document: what one cell (workload x mode x backend, and in the cross
grid x acquiring frontend) did, and whether its numbers hold.

`Row` is the one type `irlens compare`, `compare --cross`, `bench` and `report` share. Its JSON
form depends on the document it is in (`Layout`): compare and bench rows name the backend and
the frontend whose graphs its kernels map onto; the cross grid names the same two
`executed_by` and `acquired_by`, and its `graphs` are the lowered graphs' sizes. A field that
a layout lists is always written; the others only when set (a row that failed before its
workload was instantiated has no dtype). `Row.from_json` reads a row back and says which row
and which field is missing or unknown.

Every field is read back as the type it declares (irlens.json_values): a number that is not one,
a kernel without a name, is a BadDocument (exit 2) naming the file, the row and the field. The
nested records are `irlens.matrix.records` (kernels, result checks, coverage, graphs, notes, the
work a step must do, its roofline) and `irlens.runtime.timing.DeviceTiming`. The result checks, one
record per result in `Row.results`, are written as maps, result name -> value (`per_result`,
`per_result_eager`, `per_result_allowed`, `ill_conditioned`, `vacuous`: `records.CHECK_MAPS`).

A field written only when set (None otherwise) goes in `OPTIONAL`: a document without it reads
as before. A change older documents cannot be read as (a field a layout writes always, a renamed
one) is a new version of the form with its migration step (irlens.matrix.schema), which the
reader applies first; tests/architecture/test_committed_documents.py migrates the committed ones.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from irlens.json_values import BadDocument, read_value, to_plain, type_hints
from irlens.matrix.records import (CHECK_MAPS, Coverage, KernelRecord, LoweredGraph, Notes, ResultCheck, RowRoofline,
                                   StageGraph, StepWork, checks_from_json, checks_to_json)
from irlens.runtime.timing import DeviceTiming

STATUSES = ("ok", "mismatch", "failed", "unavailable")
RAN = ("ok", "mismatch")  # statuses whose row has results, timings and kernels


# a row's phase when the run's time budget ran out before its cell started, or while it ran
# (irlens.matrix.execution.BUDGET_GRACE_S after the budget's end)
BUDGET_PHASE = "budget"
# a row's phase when its cell timed out waiting, for the most part, for turns on the device that
# the run's other cells held: it says nothing of the stack
STARVED_PHASE = "starved"
# a row's phase when its cell failed before its own work, in a worker an earlier cell's CUDA error had
# left unusable (documents written before such workers were restarted: IsolatedRunner._call)
BROKEN_WORKER_PHASE = "broken-worker"
# a row's phase in a document written while its run went on, or after the run stopped at an error,
# when its cell had not finished (irlens.bench.checkpoint)
STOPPED_PHASE = "stopped"
# a row's note: where its worker's cell spent its time, seconds per stage (the float64 reference,
# compiling, timing, checking numerics, waiting for a turn on the device)
STAGES_NOTE = "seconds_by_stage"
# rows a later run's row for the cell replaces (irlens zoo --from)
NOT_RUN_PHASES = (BUDGET_PHASE, STARVED_PHASE, BROKEN_WORKER_PHASE, STOPPED_PHASE)


@dataclass
class Row:
    workload: str  # the workload's name
    mode: str  # fwd | fwdbwd
    backend: str  # the backend that ran it (the cross grid: executed_by)
    frontend: str | None = None  # whose graphs its kernels map onto: dynamo | thunder | jax | None (eager); cross: acquired_by
    status: str = "failed"  # ok | mismatch | failed | unavailable
    reason: str = ""  # why not ok, first line first
    phase: str = ""  # where it failed: reference, availability, instantiate, acquire, run, compare, worker;
    # budget: never started (the time budget ran out); starved: timed out waiting for device turns
    # the run's other cells held (status unavailable: not measured)
    detail: str = ""  # the traceback, or the tail of a crashed worker's stderr
    # numerics, against the float64 reference
    max_rel_err: float | None = None
    tol: float | None = None  # the flat tolerance of the dtype and mode (irlens.numerics)
    # result name -> its error, the error it may have (judged against eager's own error in the same
    # dtype too: irlens.numerics.allowed_error), eager's own, and why its check is ill-conditioned
    results: dict[str, ResultCheck] = field(default_factory=dict)
    eager_err: float | None = None  # eager's own error on the decisive result (the one nearest its bound)
    allowed: float | None = None  # the error the decisive result may have
    reference_dtype: str | None = None  # the reference's precision (None in older documents: float64)
    reference_fallback: str | None = None  # why the reference is not float64 (set only then)
    # what ran
    compile_s: float | None = None
    run_us: float | None = None  # host wall time of one steady-state step (median)
    run_spread: float | None = None  # the steps' interquartile range / median (irlens.runtime.timing.HostTiming)
    # what the backend launched (bench adds each one's launch time_us, flops and its verdict against the ceilings)
    kernels: list[KernelRecord] = field(default_factory=list)
    kernel_count: int | None = None  # kernel launches the generated code makes per step (BackendRun.launch_count)
    kernels_unmapped: str | None = None  # why a row that ran has no kernels: their mapping failed (the verdict stands)
    notes: Notes = field(default_factory=dict)  # the backend's own notes (graph breaks, segments, ...)
    graphs: dict[str, StageGraph] = field(default_factory=dict)  # stage -> graph: what kernels' node ids refer to
    coverage: Coverage | None = None  # how the kernels cover the compute nodes (matrix.cell.kernel_coverage)
    dtype: str | None = None
    preset: str | None = None
    # the float32 precision policy its process computed under (irlens.precision: ieee, tf32); None in
    # documents written before irlens recorded it, and in rows made outside a run (the zoo's missing libraries)
    precision: str | None = None
    device_timing: DeviceTiming | None = None  # the step's device profile (bench)
    # a backend run through the common view's lowering of another frontend's graphs, its own
    # frontend unable to take the workload (errors.NoNativePath): shown as `xla (via dynamo)`
    via: str | None = None  # the frontend whose graphs it lowered (also `frontend`)
    via_reason: str | None = None  # why its own frontend's path was not taken
    # the cross grid
    native: bool | None = None  # the acquiring frontend is the backend's own
    level: str | None = None  # the common-view level lowered
    lowered: list[LoweredGraph] = field(default_factory=list)
    # bench
    must: StepWork | None = None  # the bytes and flops one step must move and do (irlens.core.cost)
    roofline: RowRoofline | None = None  # the step against the ceilings (irlens.reporting.roofline)
    gpu: str | None = None  # the GPU it ran on (bench --gpus)
    ceilings: dict | None = None  # that GPU's measured ceilings
    # a report merged from several runs
    device: str | None = None
    device_name: str | None = None
    # the module's train/eval mode as it ran (train, eval, mixed: irlens.workloads.workload.Instance.module_mode)
    module_mode: str | None = None
    # eager's step time in the run this row came from: its speedup's base where runs are joined
    # (irlens.matrix.join), since a step time is comparable only within one run
    eager_us: float | None = None

    @property
    def ran(self) -> bool:
        return self.status in RAN

    @property
    def label(self) -> str:
        """The backend as every output shows it: `xla (via dynamo)` for a row run through the lowering."""
        return f"{self.backend} (via {self.via})" if self.via else self.backend

    @property
    def decisive_result(self) -> str | None:
        """The result nearest its bound (or furthest over it), whose error, eager's and the
        bound the table shows; None for a row judged by the flat tolerance alone."""
        ratios = {n: c.err / c.allowed for n, c in self.results.items()
                  if c.err is not None and math.isfinite(c.err) and c.allowed}
        failed = [n for n, c in self.results.items() if c.failed]
        return failed[0] if failed else max(ratios, key=lambda n: ratios[n], default=None)

    @property
    def ill_conditioned(self) -> dict[str, str]:
        """The results whose check is ill-conditioned -> why (irlens.numerics.ill_conditioned)."""
        return {n: c.ill_conditioned for n, c in self.results.items() if c.ill_conditioned}

    @property
    def vacuous(self) -> list[str]:
        """The results whose check cannot fail: exactly zero in the reference and the run (irlens.numerics)."""
        return [n for n, c in self.results.items() if c.vacuous]

    @property
    def compared_nothing(self) -> bool:
        """The row is ok and its every output, or every result, is vacuous: an "ok" that says nothing
        of the computation (an all-zero classifier head). One all-zero gradient among others is not."""
        groups = ([c for n, c in self.results.items() if n.startswith("out")], list(self.results.values()))
        return self.status == "ok" and any(group and all(c.vacuous for c in group) for group in groups)

    @property
    def judged_over_draws(self) -> bool:
        """Ok over several input draws, a half-precision mismatch on the workload's own inputs alone
        (irlens.matrix.draws)."""
        return self.status == "ok" and (self.notes.get("draws") or {}).get("verdict") == "ok"

    @property
    def unmapped_note(self) -> str:
        """"kernels unmapped: <reason>" for a row whose kernels could not be mapped, else ""."""
        return f"kernels unmapped: {self.kernels_unmapped}" if self.kernels_unmapped else ""

    @property
    def capture_note(self) -> str:
        """"capture: <how>; <its split>" for a row whose stack captured the workload other than its
        usual way (Thunder through ThunderFX: notes "capture" and "splits"), else ""."""
        capture = self.notes.get("capture")
        if not capture:
            return ""
        splits = self.notes.get("splits")
        return f"capture: {capture}" + (f"; {splits}" if splits else "")

    def fail(self, phase: str, reason: str, detail: str = "") -> "Row":
        """Mark this row failed in `phase`; returns it."""
        self.status, self.phase, self.reason, self.detail = "failed", phase, reason, detail
        return self

    def unavailable(self, phase: str, reason: str, detail: str = "") -> "Row":
        """Mark this row unavailable (not run, or not measured) in `phase`; returns it."""
        self.status, self.phase, self.reason, self.detail = "unavailable", phase, reason, detail
        return self

    def to_json(self, layout: "Layout") -> dict:
        checks = checks_to_json(self.results)

        def value(key: str) -> Any:
            return checks[key] if key in checks else getattr(self, layout.attribute(key))

        out = {}
        for key in layout.fields:
            out[key] = to_plain(value(key))
        for key in OPTIONAL:
            if key not in out and value(key) is not None:
                out[key] = to_plain(value(key))
        return out

    @classmethod
    def from_json(cls, d: Any, layout: "Layout", where: str = "row") -> "Row":
        """The row `d` (a JSON object in `layout`); BadDocument names `where` and the field."""
        if not isinstance(d, dict):
            raise BadDocument(f"{where}: not a JSON object")
        known = set(layout.fields) | set(OPTIONAL)
        for key in d:
            if key not in known:
                raise BadDocument(f"{where}: unknown field {key!r}")
        for key in layout.required:
            if key not in d:
                raise BadDocument(f"{where}: missing field {key!r}")
        if d["status"] not in STATUSES:
            raise BadDocument(f"{where}: field 'status' is {d['status']!r}, not one of {', '.join(STATUSES)}")
        row = cls._typed({layout.attribute(k): (v, k) for k, v in d.items() if k not in _CHECKS}, where)
        row.results = checks_from_json(d, where)
        return row

    # between a worker and its parent: every field, by its own name
    def to_record(self) -> dict:
        return {f.name: to_plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_record(cls, d: dict) -> "Row":
        return cls._typed({k: (v, k) for k, v in d.items()}, "a worker's row")

    @classmethod
    def _typed(cls, values: dict[str, tuple[Any, str]], where: str) -> "Row":
        """The row of {attribute: (JSON value, its JSON name)}, each value read as its field's type."""
        hints = type_hints(cls)
        return cls(**{attr: read_value(v, hints[attr], f"{where}: field {key!r}") for attr, (v, key) in values.items()})


_CHECKS = tuple(key for key, _, _ in CHECK_MAPS)  # the JSON maps of Row.results


OPTIONAL = ("dtype", "preset", "device_timing", "must", "roofline", "gpu", "ceilings", "device", "device_name",
            # judged against eager's own error in the same dtype; the spread of the timed steps
            "per_result_eager", "per_result_allowed", "eager_err", "allowed", "reference_dtype",
            "reference_fallback", "run_spread", "kernels_unmapped", "module_mode", "ill_conditioned", "vacuous",
            # run through the lowering of another frontend's graphs (compare, bench), and at which level
            "via", "via_reason", "level", "eager_us", "precision")


@dataclass(frozen=True)
class Layout:
    """A row's JSON form in one kind of document: the fields always written, in order, and the
    JSON names of fields the Row calls otherwise."""

    fields: tuple[str, ...]
    required: tuple[str, ...]  # what a row read back must have
    names: tuple[tuple[str, str], ...] = ()  # (JSON name, Row attribute)

    def attribute(self, key: str) -> str:
        return dict(self.names).get(key, key)


_MATRIX = ("workload", "mode", "frontend", "backend", "status", "reason", "max_rel_err", "tol", "compile_s",
           "run_us", "kernels", "kernel_count", "per_result", "phase", "detail", "notes", "graphs", "coverage")
COMPARE = Layout(_MATRIX, ("workload", "mode", "backend", "status"))
BENCH = Layout(_MATRIX + ("must", "roofline"), COMPARE.required)
CROSS = Layout(("workload", "mode", "acquired_by", "executed_by", "native", "status", "reason", "max_rel_err", "tol",
                "per_result", "compile_s", "run_us", "kernel_count", "kernels", "graphs", "level", "phase", "detail"),
               ("workload", "mode", "acquired_by", "executed_by", "status"),
               (("acquired_by", "frontend"), ("executed_by", "backend"), ("graphs", "lowered")))
LAYOUTS = {"compare": COMPARE, "bench": BENCH, "cross": CROSS}
