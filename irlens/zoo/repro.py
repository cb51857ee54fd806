"""Reproducers for a run's failures that are a stack's own (`irlens zoo --repro`, `irlens graphnet
--repro`): one `irlens repro` file per kind of failure (irlens.reporting.zoo_page.failures: backend,
mode and first line) whose traceback ends in an upstream package, and, where asked, per kind of
mismatch (the stack's results beyond their bounds against the float64 reference), for its first
row. Written, not run (`irlens repro --reduce` runs and shrinks one); a kind whose file cannot be
written is listed with why. A row's workload is rebuilt from its name: a built-in, or a GraphNet
sample (`graphnet:PATH`, its path); a user's file is not (a document keeps only its name)."""
from __future__ import annotations

import sys
from pathlib import Path

from irlens.matrix.document import Document
from irlens.matrix.row import Row
from irlens.reporting.zoo_page import failures


def by_reference(backends: list[str] | None) -> dict[str, str]:
    """name -> reference of each backend a command named by reference (`path/to/file.py:NAME`): a
    document knows it by its name alone."""
    from irlens.backends import get_backend

    return {get_backend(b).name: b for b in backends or [] if ":" in b}


def write_repros(doc: Document, out: Path, device: str | None, mismatches: bool = False,
                 backends: dict[str, str] | None = None) -> dict[str, str]:
    """signature -> the file written for it (or why none was); `device` None: the document's own;
    `mismatches`: also a file per kind of mismatch; `backends`: name -> reference of each backend the
    run named by reference (`path/to/file.py:NAME`), which the document knows by its name alone."""
    from irlens.matrix.spec import CellSpec
    from irlens.repro.pipeline import ReproFailed, repro

    device = device or str(doc.device or "cpu").split(" ")[0]
    written: dict[str, str] = {}
    for sig, rows, upstream in failures(doc):
        r = rows[0]
        if upstream is None and not (mismatches and r.status == "mismatch"):
            continue
        if not _rebuilt_by_name(r):
            written[sig] = (f"not written: {r.workload!r} is not a built-in workload (a user's file): irlens repro "
                            f"path/to/file.py:{r.workload} --backend {r.backend} --mode {r.mode} writes it")
            continue
        spec = CellSpec(r.workload, (backends or {}).get(r.backend, r.backend), r.mode, r.dtype, device,
                        r.preset or doc.preset or "tiny")
        try:
            result = repro(spec, str(out), run=False)
            written[sig] = result.cell_file
        except (ReproFailed, ValueError) as e:  # a cell that cannot be one file (a UsageError is a ValueError)
            written[sig] = f"not written: {e}"
            print(f"[repro] no reproducer for {sig}: {e}", file=sys.stderr, flush=True)
    return written


def _rebuilt_by_name(r: Row) -> bool:
    from irlens.workloads.builtin import workload_names
    from irlens.workloads.graphnet import is_graphnet

    return is_graphnet(r.workload) or r.workload in workload_names(corpus=None)
