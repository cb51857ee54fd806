"""One row of a results document: what one cell (workload x mode x backend, and in the cross
grid x acquiring frontend) did, and whether its numbers hold.

`Row` is the one type `irlens compare`, `compare --cross`, `bench` and `report` share: the core
every cell has, and the records only some rows have, each None elsewhere: `bench`
(`records.BenchRecord`: the work a step must do, its device profile and roofline, its GPU and
ceilings) and `cross` (`records.CrossRecord`: the pairing, the lowered graphs). A GraphNet sample's
row adds nothing but notes (its passing tolerance, `irlens.numerics.tolerance_ladder.NOTE`).

One JSON form in every document and in a worker's reply: a key per attribute, by its name, a
record as its own object. The fields of `ALWAYS` are always written; any other only when set (a
row that failed before its workload was instantiated has no dtype, a compare row no `bench`).
`Row.from_json` reads a row back and says which row and which field is missing or unknown.

Every field is read back as the type it declares (irlens.core.json_values): a number that is not one,
a kernel without a name, is a BadDocument (exit 2) naming the file, the row and the field. The
nested records are `irlens.matrix.records`. The result checks, one record per result in
`Row.results`, are written as maps, result name -> value (`per_result`, `per_result_eager`,
`per_result_allowed`, `ill_conditioned`, `vacuous`: `records.CHECK_MAPS`).

A field written only when set needs nothing more: a document without it reads as before. A change
older documents cannot be read as (a field written always, a renamed or moved one) is a new
version of the form with its migration step (irlens.matrix.schema), which the reader applies
first; tests/architecture/test_committed_documents.py migrates the committed ones.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from irlens.core.json_values import BadDocument, read_value, to_plain, type_hints
from irlens.matrix.records import (CHECK_MAPS, BenchRecord, Coverage, CrossRecord, KernelRecord, Notes, ResultCheck,
                                   StageGraph, checks_from_json, checks_to_json)

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
    backend: str  # the backend that ran it
    # whose graphs its kernels map onto: dynamo | thunder | jax | None (eager); in the cross grid, the acquiring one
    frontend: str | None = None
    status: str = "failed"  # ok | mismatch | failed | unavailable
    reason: str = ""  # why not ok, first line first
    phase: str = ""  # where it failed: reference, availability, instantiate, acquire, run, compare, worker;
    # budget: never started (the time budget ran out); starved: timed out waiting for device turns
    # the run's other cells held (status unavailable: not measured)
    detail: str = ""  # the traceback, or the tail of a crashed worker's stderr
    # numerics, against the float64 reference
    max_rel_err: float | None = None
    tol: float | None = None  # the flat tolerance of the dtype and mode (irlens.numerics.verdicts)
    # result name -> its error, the error it may have (judged against eager's own error in the same
    # dtype too: irlens.numerics.verdicts.allowed_error), eager's own, and why its check is ill-conditioned
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
    # the float32 precision policy its process computed under (irlens.core.precision: ieee, tf32); None in
    # documents written before irlens recorded it, and in rows made outside a run (the zoo's missing libraries)
    precision: str | None = None
    # a backend run through the common view's lowering of another frontend's graphs, its own
    # frontend unable to take the workload (errors.NoNativePath): shown as `xla (via dynamo)`
    via: str | None = None  # the frontend whose graphs it lowered (also `frontend`)
    via_reason: str | None = None  # why its own frontend's path was not taken
    level: str | None = None  # the common-view level lowered (a row `via` another frontend, a cross row)
    # a report merged from several runs
    device: str | None = None
    device_name: str | None = None
    # the module's train/eval mode as it ran (train, eval, mixed: irlens.workloads.workload.Instance.module_mode)
    module_mode: str | None = None
    # eager's step time in the run this row came from: its speedup's base where runs are joined
    # (irlens.matrix.join), since a step time is comparable only within one run
    eager_us: float | None = None
    bench: BenchRecord | None = None  # `irlens bench`'s row
    cross: CrossRecord | None = None  # a cell of the cross grid

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
        """The results whose check is ill-conditioned -> why (irlens.numerics.verdicts.ill_conditioned)."""
        return {n: c.ill_conditioned for n, c in self.results.items() if c.ill_conditioned}

    @property
    def vacuous(self) -> list[str]:
        """The results whose check cannot fail: exactly zero in the reference and the run (irlens.numerics.verdicts)."""
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

    def bench_field(self, name: str) -> Any:
        """One field of the row's bench record; None where the row has none (not a bench row)."""
        return getattr(self.bench, name) if self.bench else None

    def fail(self, phase: str, reason: str, detail: str = "") -> "Row":
        """Mark this row failed in `phase`; returns it."""
        self.status, self.phase, self.reason, self.detail = "failed", phase, reason, detail
        return self

    def unavailable(self, phase: str, reason: str, detail: str = "") -> "Row":
        """Mark this row unavailable (not run, or not measured) in `phase`; returns it."""
        self.status, self.phase, self.reason, self.detail = "unavailable", phase, reason, detail
        return self

    def to_json(self) -> dict:
        """The row's JSON form (documents and a worker's reply alike): ALWAYS, then every other field that is set."""
        checks = checks_to_json(self.results)
        out = {}
        for key in _KEYS:
            value = checks[key] if key in checks else getattr(self, key)
            if key in ALWAYS or value is not None:
                out[key] = to_plain(value)
        return out

    @classmethod
    def from_json(cls, d: Any, where: str = "row") -> "Row":
        """The row `d` (its JSON form); BadDocument names `where` and the field."""
        if not isinstance(d, dict):
            raise BadDocument(f"{where}: not a JSON object")
        for key in d:
            if key not in _KEYS:
                raise BadDocument(f"{where}: unknown field {key!r}")
        for key in REQUIRED:
            if key not in d:
                raise BadDocument(f"{where}: missing field {key!r}")
        if d["status"] not in STATUSES:
            raise BadDocument(f"{where}: field 'status' is {d['status']!r}, not one of {', '.join(STATUSES)}")
        hints = type_hints(cls)
        row = cls(**{k: read_value(v, hints[k], f"{where}: field {k!r}") for k, v in d.items() if k not in _CHECKS})
        row.results = checks_from_json(d, where)
        return row


_CHECKS = tuple(key for key, _, _ in CHECK_MAPS)  # the JSON maps of Row.results
# written in every row, in this order (a row read back must have REQUIRED); any other field only when set
ALWAYS = ("workload", "mode", "frontend", "backend", "status", "reason", "max_rel_err", "tol", "compile_s", "run_us",
          "kernels", "kernel_count", "per_result", "phase", "detail", "notes", "graphs", "coverage")
REQUIRED = ("workload", "mode", "backend", "status")
# every key of the form, in the order written: ALWAYS, then the other fields as Row declares them
# (the result checks' maps in the place of `results`)
_KEYS = ALWAYS + tuple(key for f in dataclasses.fields(Row)
                       for key in (_CHECKS if f.name == "results" else (f.name,)) if key not in ALWAYS)
