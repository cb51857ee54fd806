"""The cross grid: graphs acquired by one stack, executed by another stack's backend.

A cell is a workload x mode x acquiring frontend (dynamo, thunder, jax) x executing backend
(every backend with a lowering of the common view: inductor, nvfuser, xla). It acquires the
workload with the frontend, takes the program its common views make (`irlens.frontends.bindings`:
forward graph, and in fwdbwd the backward graph fed by the forward's saved tensors; after
Dynamo's graph breaks, every graph, with the code between them run as Dynamo runs it), compiles
each graph's primitive view with the backend's lowering (`Backend.lower`), runs the chain, and
checks the named results against the same float64 reference and tolerances as `irlens compare`.
The grid is a matrix plan with frontends (plan.py's Plan): its cells run in worker processes
with a timeout like compare's. The diagonal cells (dynamo x inductor, thunder x nvfuser, jax x
xla) are each stack through the common view; the native pairings themselves are
`irlens compare`'s rows.

The document: {"kind": "cross", "device", "device_name", "versions", "preset", "dtype",
"acquired_by": [...] (the grid's frontends), "executed_by": [...] (its backends), "rows": [...]},
one row per workload x mode x frontend x backend in the form every document's rows have
(irlens.matrix.row): "frontend" is the acquiring one, "backend" the executing one, "run_us" one
chained call (lowered graphs, plus the loss in torch between forward and backward), "level" the
common-view level lowered, and "cross" the row's own record: "native" (the pairing is a stack's
own) and "lowered" (per lowered graph: stage and node count).
"""
from __future__ import annotations

import dataclasses

from irlens.backends import BACKENDS, get_backend
from irlens.frontends import get_frontend
from irlens.matrix.cell import run_cell
from irlens.matrix.document import Document
from irlens.matrix.execution import DEFAULT_TIMEOUT_S, run_plan
from irlens.matrix.plan import Plan, plan_matrix, split
from irlens.matrix.references import Reference
from irlens.matrix.row import Row
from irlens.matrix.spec import CellSpec
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION
from irlens.core.registry import UnknownName
from irlens.workloads.builtin import resolve_workload


def lowering_backends() -> list[str]:
    """The backends that compile the common view of any frontend: the grid's default columns."""
    return [b.name for b in BACKENDS.values() if b.lower is not None]


def plan_cross(workloads=None, modes=None, device: str = "cpu", preset: str = "tiny", dtype: str | None = None,
               acquired_by=None, executed_by=None, precision: str = DEFAULT_PRECISION) -> Plan:
    """Resolve and validate the grid's arguments (a UsageError on a bad one). The default rows
    are the frontends of the lowering backends, so each stack's own pairing is on the diagonal."""
    backends = split(executed_by) or lowering_backends()
    for name in backends:
        if name not in lowering_backends():
            raise UnknownName("backend", name, lowering_backends(), " (the backends with a lowering of the common view)")
    frontends = split(acquired_by) or list(dict.fromkeys(get_backend(b).frontend for b in lowering_backends()))
    for name in frontends:
        get_frontend(name)  # raises UnknownName
    plan = plan_matrix(workloads, backends, modes, device, preset, dtype, precision=precision)
    return dataclasses.replace(plan, frontends=frontends)


def run_grid(workloads=None, modes=None, device: str = "cpu", preset: str = "tiny", dtype: str | None = None,
             timeout: float = DEFAULT_TIMEOUT_S, acquired_by=None, executed_by=None, isolate: bool = True,
             progress: bool = True, precision: str = DEFAULT_PRECISION) -> Document:
    """The grid for `workloads` x `modes` (the document described in the module docstring)."""
    plan = plan_cross(workloads, modes, device, preset, dtype, acquired_by, executed_by, precision)
    return run_plan(plan, timeout, progress, isolate=isolate)


def cell(spec: CellSpec, reference: Reference) -> Row:
    """One cross cell in this process (`spec.frontend` acquires, `spec.backend` executes) against
    `reference`, its Row; every exception becomes the row's status."""
    return run_cell(spec, resolve_workload(spec.workload), get_backend(spec.backend), reference)


def format_grid(doc: Document) -> str:
    """One grid per workload x mode: acquired_by down, executed_by across; each cell
    `status err kernels run µs`, the native pairings marked *."""
    lines = []
    by_case: dict[tuple[str, str], list] = {}
    for r in doc.rows:
        by_case.setdefault((r.workload, r.mode), []).append(r)
    for (workload, mode), rows in by_case.items():
        lines.append(f"{workload} {mode} (acquired by \u2193, executed by \u2192; * native pairing)")
        cols = doc.executed_by
        table = [["", *cols]]
        for f in doc.acquired_by:
            cells = {r.backend: r for r in rows if r.frontend == f}
            table.append([f, *(cell_text(cells[b]) if b in cells else "-" for b in cols)])
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
        lines.append("")
    reasons = {}
    for r in doc.rows:
        if r.status != "ok" and r.reason:
            reasons.setdefault(f"{r.frontend} -> {r.backend}: {r.status}: {r.reason.splitlines()[0]}",
                               []).append(f"{r.workload}/{r.mode}")
        if r.unmapped_note:
            reasons.setdefault(f"{r.frontend} -> {r.backend}: {r.status}: {r.unmapped_note.splitlines()[0]}",
                               []).append(f"{r.workload}/{r.mode}")
    lines += [f"{why} ({', '.join(where)})" for why, where in reasons.items()]
    return "\n".join(lines).rstrip()


def cell_text(r) -> str:
    mark = "*" if r.cross and r.cross.native else ""
    if r.status not in ("ok", "mismatch"):
        return f"{r.status}{mark}"
    err = "-" if r.max_rel_err is None else f"{r.max_rel_err:.0e}"
    run = "-" if r.run_us is None else f"{r.run_us:.0f}us"
    return f"{r.status}{mark} {err} k={'-' if r.kernel_count is None else r.kernel_count} {run}"
