"""The cross grid (`irlens compare --cross` documents) as report sections: per workload x mode a
table with the acquiring frontend down and the executing backend across. Each cell says its
status, max relative error, kernel count and run time; the native pairings are marked * and
stand beside the compare rows of the same stacks elsewhere in the report."""
from __future__ import annotations

from irlens.matrix import Document
from irlens.reporting.blocks import Section, Table, Text
from irlens.reporting.build import anchor, fmt
from irlens.reporting.records import first_line
from irlens.wording import plural


def cross_sections(doc: Document) -> list[Section]:
    cases: dict[tuple[str, str], list] = {}
    for row in doc.rows:
        cases.setdefault((row.workload, row.mode), []).append(row)
    backends = doc.executed_by or sorted({r.backend for r in doc.rows})
    frontends = doc.acquired_by or sorted({r.frontend for r in doc.rows})
    sections = []
    for (workload, mode), rows in cases.items():
        table, flagged, reasons = [], set(), []
        for i, fe in enumerate(frontends):
            cells = {r.backend: r for r in rows if r.frontend == fe}
            line = [fe]
            for j, be in enumerate(backends, start=1):
                r = cells.get(be)
                if r is None:
                    line.append("-")
                    continue
                mark = " *" if r.cross and r.cross.native else ""
                if r.ran:
                    kernels = "- kernels" if r.kernel_count is None else plural(r.kernel_count, "kernel")
                    line.append(f"{r.status}{mark} · err {fmt(r.max_rel_err, '.1e')} · {kernels} · "
                                f"{fmt(r.run_us, '.0f')} µs")
                else:
                    line.append(f"{r.status}{mark}")
                if r.status in ("mismatch", "failed"):
                    flagged.add((i, j))
                if r.status != "ok" and r.reason:
                    reasons.append(f"{fe} → {be}: {first_line(r.reason)}")
                if r.unmapped_note:
                    reasons.append(f"{fe} → {be}: {first_line(r.unmapped_note)}")
            table.append(line)
        blocks = [Text([f"Graphs acquired by a frontend (rows), lowered from their primitive common view and "
                        f"executed by a backend (columns), on {doc.device or '?'}; * marks each stack's own "
                        "pairing. Numerics are checked against the float64 reference with compare's tolerances."]),
                  Table(["acquired by \\ executed by", *backends], table, flagged=flagged)]
        if reasons:
            blocks.append(Text(list(dict.fromkeys(reasons)), style="note"))
        sections.append(Section(f"Cross grid: {workload} · {mode}", anchor("cross", workload, mode), blocks))
    return sections
