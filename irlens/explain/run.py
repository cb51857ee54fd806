"""The run `irlens explain` reads: one cell's, in a worker, as a compare cell runs."""
from __future__ import annotations

from dataclasses import dataclass

from irlens.backends import Backend
from irlens.core.ir import Graph, Kernel
from irlens.matrix.spec import ENTRY, ENTRY_PRELOAD, CellSpec
from irlens.workloads.workload import Workload


@dataclass
class ExplainedRun:
    """What `explain_run` reads of a backend's run (a BackendRun has the same fields)."""

    kernels: list[Kernel]
    graphs: list[Graph]
    unmapped: str | None
    run_us: float
    threads: int


def backend_run_record(spec: CellSpec, wl: Workload, backend: Backend) -> dict:
    """(a worker: irlens.worker.entry's `explain`) One run of the cell, as JSON: its kernels with their source."""
    import torch

    from irlens.matrix.backend_run import run_backend

    run = run_backend(backend, wl.instantiate(spec.preset, spec.dtype, spec.device), spec.mode)
    return {"kernels": [k.to_json(with_source=True) for k in run.kernels], "graphs": [g.to_json() for g in run.graphs],
            "unmapped": run.unmapped, "run_us": run.run_us, "threads": torch.get_num_threads()}


def run_as_compare_does(spec: CellSpec) -> ExplainedRun:
    """The cell's run (within `spec.timeout_s`) in a worker process whose thread pools are sized as
    `irlens compare --jobs 1` sizes its workers' (`isolation.worker_threads`): so a kernel's time here
    is the one compare and its report give, not a reading of this process's pools fighting over the cores."""
    from irlens.runtime.isolation import worker_threads
    from irlens.runtime.pool import WorkerPool
    from irlens.matrix.records import KernelRecord

    with WorkerPool(1, ENTRY_PRELOAD, threads=worker_threads(2)) as worker:
        record = worker.call(ENTRY, {"spec": spec.to_json(), "what": "explain"}, spec.timeout_s)
    return ExplainedRun([KernelRecord.from_json(k, "the explain worker's kernel") for k in record["kernels"]],
                        [Graph.from_json(g) for g in record["graphs"]], record["unmapped"], record["run_us"],
                        record["threads"])
