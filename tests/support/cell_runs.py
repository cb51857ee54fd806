"""A cell run in the test's own process on objects it built (a workload or a backend with no name a
worker could resolve): its spec names them, run_cell takes them as they are."""
from __future__ import annotations

from irlens.backends import Backend
from irlens.matrix.cell import run_cell
from irlens.matrix.references import Reference
from irlens.matrix.row import Row
from irlens.matrix.spec import CellSpec
from irlens.workloads.workload import Workload


def run_in_process(wl: Workload, backend: Backend, mode: str, device: str, preset: str, dtype: str | None,
                   reference: Reference, timeout_s: float | None = None) -> Row:
    return run_cell(CellSpec(wl.name, backend.name, mode, dtype, device, preset, timeout_s=timeout_s), wl, backend,
                    reference)
