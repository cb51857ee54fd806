"""Rewrite a zoo document written before irlens told starved cells apart (commit da1b845 on): a
failed row whose timeout reason shows it was killed for waits on device turns that counted
(irlens.runtime.isolation.starved, read back from the reason's figures) becomes the `unavailable` row in
STARVED_PHASE irlens writes now, which a join replaces with another run's row for the cell.

    python scripts/starved_rows.py IN.json OUT.json.gz
"""
import dataclasses
import re
import sys

from irlens.runtime.call_progress import Progress
from irlens.runtime.isolation import starved
from irlens.matrix import read_document, write_document
from irlens.matrix.execution import STARVED_PHASE, starved_reason

TIMED_OUT = re.compile(r"timed out after (\d+) s \((.*?)\); it waited (\d+) s for turns on the device, "
                       r"of which (\d+) s did not count")


def rewritten(row):
    m = TIMED_OUT.fullmatch(row.reason or "")
    if row.status != "failed" or m is None:
        return row
    timeout, where, waited, excused = float(m[1]), m[2], float(m[3]), float(m[4])
    now = 0.0  # the wait going on at the kill (if any) is in `waited` already
    progress = Progress(where, now, waited, now if ": waiting for " in where else None)
    if not starved(timeout, progress, now, excused):
        return row
    return dataclasses.replace(row, status="unavailable", phase=STARVED_PHASE, reason=starved_reason(row.reason))


if __name__ == "__main__":
    doc = read_document(sys.argv[1])
    write_document(dataclasses.replace(doc, rows=[rewritten(r) for r in doc.rows]), sys.argv[2])
