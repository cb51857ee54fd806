"""Rewrite a zoo document written before irlens restarted a worker an error had escaped a cell of
(IsolatedRunner._call): a failed row whose worker raised a CUDA error while loading the cell's
reference, before the cell's own work, had met a CUDA context an earlier cell of that worker left
unusable (on the H200s, hf_bart's nvFuser fwd+bwd hit an illegal memory access; the two
hf_gemma nvFuser cells after it in the same worker failed loading their references). It becomes an
`unavailable` row in BROKEN_WORKER_PHASE, which a join replaces with another run's row for the cell.

    python scripts/broken_worker_rows.py IN.json OUT.json.gz
"""
import dataclasses
import re
import sys

from irlens.matrix import read_document, write_document
from irlens.matrix.row import BROKEN_WORKER_PHASE

BEFORE_ITS_WORK = re.compile(r"in cell_in_worker\n\s+reference = Reference\.load\(")


def rewritten(row):
    # the sticky error only: out of memory or a busy device could meet a fresh worker too
    if row.status != "failed" or row.phase != "worker" or "illegal memory access" not in (row.reason or "") \
            or not BEFORE_ITS_WORK.search(row.detail or ""):
        return row
    return dataclasses.replace(row, status="unavailable", phase=BROKEN_WORKER_PHASE,
                               reason=f"not run: its worker's CUDA context was unusable before the cell began "
                                      f"(an earlier cell's error; its loading the reference met it: {row.reason})")


if __name__ == "__main__":
    doc = read_document(sys.argv[1])
    write_document(dataclasses.replace(doc, rows=[rewritten(r) for r in doc.rows]), sys.argv[2])
