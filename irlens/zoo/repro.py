"""Reproducers for a zoo run's upstream failures: one `irlens repro` file per kind of failure
(irlens.reporting.zoo_page.failures: backend, mode and first line) whose traceback ends in an
upstream package, for its first model. Written, not run (`irlens repro --reduce` runs and shrinks
one); a kind whose file cannot be written is listed with why."""
from __future__ import annotations

import sys
from pathlib import Path

from irlens.matrix.document import Document
from irlens.reporting.zoo_page import failures


def write_repros(doc: Document, out: Path, device: str | None) -> dict[str, str]:
    """signature -> the file written for it (or why none was); `device` None: the document's own."""
    from irlens.workloads.builtin import workload_names
    from irlens.matrix.spec import CellSpec
    from irlens.repro.pipeline import ReproFailed, repro

    device = device or str(doc.device or "cpu").split(" ")[0]
    written: dict[str, str] = {}
    for sig, rows, upstream in failures(doc):
        if upstream is None:
            continue
        r = rows[0]
        if r.workload not in workload_names(corpus=None):  # a user's file: a document keeps only its name
            written[sig] = (f"not written: {r.workload!r} is not a built-in workload (a user's file): irlens repro "
                            f"path/to/file.py:{r.workload} --backend {r.backend} --mode {r.mode} writes it")
            continue
        spec = CellSpec(r.workload, r.backend, r.mode, r.dtype, device, r.preset or doc.preset or "tiny")
        try:
            result = repro(spec, str(out), run=False)
            written[sig] = result.cell_file
        except (ReproFailed, ValueError) as e:  # a cell that cannot be one file (a UsageError is a ValueError)
            written[sig] = f"not written: {e}"
            print(f"[zoo] no reproducer for {sig}: {e}", file=sys.stderr, flush=True)
    return written
