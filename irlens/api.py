"""The public Python API: declare a workload, then dump, compare and report it.

    import irlens
    wl = irlens.Workload.from_module("rmsnorm", RMSNorm(64), example_inputs=((8, 64),), jax=rmsnorm_jax)
    doc = irlens.compare(wl, backends=["eager", "inductor", "xla"])
    print(irlens.compare_table(doc))

Everything here returns what the CLI prints or writes: `compare` the `--json` document (the library
passes `Document`s; here and in the CLI they become JSON), `dump` a common-view Graph (or the native
text), `report` the paths of the pages it wrote. Built-in workloads are the same `Workload`s,
registered under their names; any of these functions takes a Workload, a built-in name or a
`path/to/file.py:NAME` reference.
"""
from __future__ import annotations

import warnings

from irlens.core.ir import Graph
from irlens.workloads.workload import Workload, register  # noqa: F401  (part of the API)

__all__ = ["Workload", "register", "compare", "compare_table", "dump", "report"]


def compare(workload, backends: list[str] | None = None, modes: list[str] | None = None, device: str = "cpu",
            preset: str = "tiny", dtype: str | None = None, timeout: float = 300.0, jobs: int = 1,
            isolate: bool | None = None, progress: bool = False) -> dict:
    """Run one workload (or a list) through `backends` (default: all) in `modes` (default: fwd and
    fwdbwd); returns {"device", "versions", "rows"}, one row per workload x backend x mode.

    Each cell runs in a worker process unless `isolate=False`; a Workload that no other process
    can import (built inside a function, say) runs in this process, with a warning.
    Raises a UsageError (UnknownName, BadReference, ...) on bad arguments, TwinMismatch when a
    JAX twin disagrees.
    """
    from irlens.matrix import plan_matrix, run_plan

    items = list(workload) if isinstance(workload, (list, tuple)) else [workload]
    plan = plan_matrix(items, backends, modes, device, preset, dtype)
    if isolate is None:
        isolate = plan.isolatable
        if not isolate:
            warnings.warn("a workload has no module-level name another process can import; "
                          "its cells run in this process, without crash isolation or timeouts", stacklevel=2)
    return run_plan(plan, timeout, progress, jobs, isolate).to_json()


def compare_table(doc: dict) -> str:
    """The table `irlens compare` prints for a document from `compare`."""
    from irlens.matrix import Document, format_table

    return format_table(Document.from_json(doc))


def dump(workload, frontend: str, stage: str | None = None, level: str = "composite", mode: str = "fwd",
         preset: str = "tiny", dtype: str | None = None, device: str = "cpu", native: bool = False) -> Graph | str:
    """One stage of one frontend's IR of `workload`: the common-view Graph at `level`, or with
    `native=True` the frontend's own text. `stage` defaults to the frontend's main one (a Thunder
    acquisition through ThunderFX: its split summary, which is native text only)."""
    from irlens.frontends import get_frontend
    from irlens.frontends.base import Unavailable
    from irlens.workloads.builtin import resolve_workload

    wl = workload if isinstance(workload, Workload) else resolve_workload(workload)
    fe = get_frontend(frontend)
    available = fe.availability()
    if not available:
        raise Unavailable(f"frontend {fe.name} is unavailable here: {available.reason}")
    acq = fe.acquire(wl.instantiate(preset, dtype, device), mode)
    st = acq.stage(stage or acq.default_stage or fe.default_stage(mode))  # a ThunderFX split: its summary
    return st.native_text if native else st.common(level)


def report(results, out: str = "irlens-report", frontends: bool = True) -> dict:
    """Render compare results as `out/report.html` and `out/report.md`, the rows drawn as
    `out/results.json` (what `irlens report` writes).

    `results`: a document from `compare` (or a `Document`), the path of an `irlens compare --json`
    file, or a list of those (a CPU and a GPU run side by side). `frontends=False` leaves out the
    frontend table (which traces every workload again). Returns the paths written, by kind.
    """
    from pathlib import Path

    from irlens.matrix import Document, read_document, write_document
    from irlens.reporting import RESULTS, write_report

    items = results if isinstance(results, list) else [results]
    docs = [d if isinstance(d, Document) else Document.from_json(d) if isinstance(d, dict) else read_document(d)
            for d in items]
    paths, drawn = write_report(docs, out, frontends=frontends)
    paths["json"] = Path(out) / RESULTS
    write_document(drawn, paths["json"])
    return paths
