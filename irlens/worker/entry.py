"""The one entry point of a worker: `run_spec(spec, what, **runtime)`.

`spec` is a spec's JSON (irlens.matrix.spec): a cell's (`CellSpec.to_json()`), or, for what a
worker computes of a workload alone, with no backend, a `ReferenceSpec`'s or a `WorkSpec`'s;
`what` is what to do with it; `runtime` holds what only that call knows (the reference's file,
the device turns' lock, a folder or file to write into, a graph to run). The workload and the
backend are resolved here, once, and handed to the purpose. A cell's:

    cell       a compare or cross cell against its float64 reference: its Row as a record, the worker's
               reply (irlens.matrix.cell.cell_record; a cell run in this process is a Row: run_cell,
               irlens.matrix.cross.cell)
    warm       compiled and run once, nothing checked (irlens.matrix.compile_ahead)
    explain    one run's kernels with their source (irlens.explain.run)
    record     Thunder's nvFuser regions written down as they run (irlens.repro.nvfuser_regions)
    kernel     the kernel that dominates the cell's time, its source written down (irlens.repro.worker)
    file       the cell's standalone file (irlens.repro.worker)
    cases      the program of the cell's frontend, one reducer case per graph (irlens.repro.cases)
    candidate  one graph of that program through the backend's repro path: the reducer's try (irlens.repro.run_graph)
    graph      the standalone file of such a graph (irlens.repro.run_graph)

A workload's (its spec and the workload):

    reference  its float64 reference saved to a file (ReferenceSpec; irlens.matrix.plan_references)
    twin       its JAX twin's verdict (ReferenceSpec; irlens.matrix.plan_references)
    work       the work its steps must do (WorkSpec; irlens.bench.run)

irlens.runtime.isolation reaches it by name (`irlens.matrix.spec.ENTRY`).
"""
from __future__ import annotations

from irlens.runtime import call_progress
from irlens.backends import get_backend
from irlens.bench.run import work_in_worker
from irlens.explain.run import backend_run_record
from irlens.matrix.cell import cell_record
from irlens.matrix.compile_ahead import warm_cell
from irlens.matrix.plan_references import reference_in_worker, twin_in_worker
from irlens.matrix.spec import CellSpec, ReferenceSpec, WorkSpec
from irlens.workloads.builtin import resolve_workload
from irlens.repro.cases import prepare
from irlens.repro.nvfuser_regions import record
from irlens.repro.run_graph import run_candidate, write_graph_file
from irlens.repro.worker import dominant_kernel, write_cell_file

# each is handed the cell, its workload and its backend
PURPOSES = {"cell": cell_record, "warm": warm_cell, "explain": backend_run_record, "record": record,
            "kernel": dominant_kernel, "file": write_cell_file, "cases": prepare, "candidate": run_candidate,
            "graph": write_graph_file}
# each is handed its spec (of the kind named) and the workload: no backend
WORKLOAD_PURPOSES = {"reference": (ReferenceSpec, reference_in_worker), "twin": (ReferenceSpec, twin_in_worker),
                     "work": (WorkSpec, work_in_worker)}


def run_spec(spec: dict, what: str, **runtime):
    """Do `what` (one of PURPOSES or WORKLOAD_PURPOSES) with `spec`, its names resolved once; the
    purpose's JSON reply. A spec that is not of the purpose's kind, or not valid, is a BadDocument
    naming the field."""
    where = f"the {what} spec"
    if what in WORKLOAD_PURPOSES:
        kind, purpose = WORKLOAD_PURPOSES[what]
        asked = kind.from_json(spec, where)
        call_progress.stage("loading the workload")
        return purpose(asked, resolve_workload(asked.workload), **runtime)
    if what not in PURPOSES:
        raise ValueError(f"no purpose {what!r} for a spec; one of: {', '.join([*PURPOSES, *WORKLOAD_PURPOSES])}")
    cell = CellSpec.from_json(spec, where)
    call_progress.stage("loading the workload")
    return PURPOSES[what](cell, resolve_workload(cell.workload), get_backend(cell.backend), **runtime)
