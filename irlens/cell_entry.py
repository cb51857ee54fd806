"""The one entry point of a worker that runs a cell: `run_spec(spec, what, **runtime)`.

`spec` is a `CellSpec.to_json()` (irlens.matrix.spec); `what` is what to do with the cell; `runtime`
holds what only that call knows (the reference's file, the device turns' lock, a folder to write
into). The workload and the backend are resolved here, once, and handed to the purpose:

    cell     a compare or cross cell against its float64 reference: its Row as a record, the worker's
             reply (irlens.matrix.cell.cell_record; a cell run in this process is a Row: run_cell, cross_row)
    warm     compiled and run once, nothing checked (irlens.matrix.compile_ahead)
    explain  one run's kernels with their source (irlens.explain)
    record   Thunder's nvFuser regions written down as they run (irlens.repro.nvfuser_regions)
    kernel   the kernel that dominates the cell's time, its source written down (irlens.repro.worker)
    cases    the program of the cell's frontend, one reducer case per graph (irlens.repro.cases)

irlens.runtime.isolation reaches it by name (`irlens.matrix.spec.ENTRY`).
"""
from __future__ import annotations

from irlens.runtime import call_progress
from irlens.backends import get_backend
from irlens.explain import backend_run_record
from irlens.matrix.cell import cell_record
from irlens.matrix.compile_ahead import warm_cell
from irlens.matrix.spec import CellSpec
from irlens.workloads.builtin import resolve_workload
from irlens.repro.cases import prepare
from irlens.repro.nvfuser_regions import record
from irlens.repro.worker import dominant_kernel

PURPOSES = {"cell": cell_record, "warm": warm_cell, "explain": backend_run_record, "record": record,
            "kernel": dominant_kernel, "cases": prepare}


def run_spec(spec: dict, what: str, **runtime) -> dict:
    """Do `what` (one of PURPOSES) with the cell `spec`, its names resolved once; the purpose's JSON reply."""
    if what not in PURPOSES:
        raise ValueError(f"no purpose {what!r} for a cell; one of: {', '.join(PURPOSES)}")
    cell = CellSpec.from_json(spec, f"the {what} cell")
    call_progress.stage("loading the workload")
    return PURPOSES[what](cell, resolve_workload(cell.workload), get_backend(cell.backend), **runtime)
