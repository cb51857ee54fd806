"""Rewrite a document written before irlens judged a half-precision mismatch with eager's roundings
(irlens.matrix.cell._recheck_with_eager_roundings): a mismatch row whose own recheck found it within
the bound when rounding where eager rounds (`notes["eager_roundings"]`, measured in its run) becomes
the ok row irlens writes now, the default run's mismatch kept in `notes["rounding_judged"]` (marked
≈ on the pages). Rows without that recheck are left as they are.

    python docs/results/zoo-h200-bench/rounding_rows.py IN.json OUT.json.gz
"""
import dataclasses
import sys

from irlens.matrix import read_document, write_document


def rewritten(row):
    verdict = (row.notes or {}).get("eager_roundings", "")
    if row.status != "mismatch" or "it is within the bound" not in verdict:
        return row
    default = (row.reason or "").split("; with eager's roundings")[0].splitlines()[0] or "mismatch"
    return dataclasses.replace(row, status="ok", reason="", notes={**row.notes, "rounding_judged": default})


if __name__ == "__main__":
    doc = read_document(sys.argv[1])
    write_document(dataclasses.replace(doc, rows=[rewritten(r) for r in doc.rows]), sys.argv[2])
