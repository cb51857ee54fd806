"""The comparison matrix: every workload x mode x backend (the cross grid: x acquiring
frontend), each cell run in a worker process and checked against a float64 reference.

    spec.py        CellSpec: one cell as it travels (to a worker and back), the one check of its coordinates
    plan.py        Plan, plan_matrix: every bad argument is found before anything runs; its cells as CellSpecs
    references.py  the float64 references and the JAX twins' checks
    cell.py        one cell, in this process or in a worker: its Row
    execution.py   run_plan: workers, timeouts, GPU turns, progress
    row.py         Row: what one cell did (the one row type of compare, cross, bench, report)
    document.py    Document: a run's rows; the one reader and the one writer of results files
    header.py      a document header's records: a bench run's parts and time spent, a corpus run's choice
    schema.py      the version of a document's JSON form; older documents migrated to it
    cells.py       a row's cell; the cells an earlier document did not get right (bench --rerun, zoo --fill)
    join.py        several documents as one, by policy (a report's union, shards, reruns, a bench's GPUs)
    table.py       the table `irlens compare` prints
    cross.py       the frontend x backend grid (`irlens compare --cross`): a plan with frontends

`irlens compare` is this package; `irlens bench` (irlens.bench.run) plans and runs its matrices
through it.
"""
from irlens.matrix.document import Document, exit_status, read_document, write_document
from irlens.matrix.execution import DEFAULT_TIMEOUT_S, run_plan
from irlens.matrix.plan import Plan, plan_matrix
from irlens.matrix.row import RAN, STATUSES, BadDocument, Row
from irlens.matrix.spec import CellSpec
from irlens.matrix.table import format_table

__all__ = ["CellSpec", "Plan", "plan_matrix", "run_plan", "run_matrix", "Row", "RAN", "STATUSES", "Document",
           "BadDocument", "read_document", "write_document", "exit_status", "format_table", "DEFAULT_TIMEOUT_S"]


def run_matrix(workloads=None, backends=None, modes=None, device: str = "cpu", preset: str = "tiny",
               dtype: str | None = None, timeout: float = DEFAULT_TIMEOUT_S, progress: bool = True,
               jobs: int = 1, isolate: bool = True) -> Document:
    """Plan and run the matrix: the Document `irlens compare` prints and writes, one row per
    workload x mode x backend.

    Bad arguments raise a UsageError (UnknownName, BadReference, ...) before anything runs; a
    JAX twin that disagrees raises TwinMismatch. See `run_plan` for `jobs` and `isolate`.
    """
    return run_plan(plan_matrix(workloads, backends, modes, device, preset, dtype), timeout, progress, jobs, isolate)
