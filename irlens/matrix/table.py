"""The table `irlens compare` prints: one line per row, then why each row is not ok."""
from __future__ import annotations

from irlens.matrix.document import Document


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def format_table(doc: Document) -> str:
    header = ("workload", "mode", "backend", "status", "max rel err / tol", "launches", "compile s", "run µs")
    lines = []
    for r in doc.rows:
        err = f"{_fmt(r.max_rel_err, '.1e')} / {r.tol:.0e}" if r.tol is not None else "-"
        lines.append((r.workload, r.mode, r.backend, r.status, err, _fmt(r.kernel_count, "d"), _fmt(r.compile_s, ".2f"),
                      _fmt(r.run_us, ".1f")))
    widths = [max(len(str(row[i])) for row in [header, *lines]) for i in range(len(header))]
    right = {4, 5, 6, 7}

    def fmt_line(cells) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [fmt_line(header), fmt_line(["-" * w for w in widths]), *map(fmt_line, lines)]
    # Why each row is not ok, one line per distinct reason (nvFuser on a CPU: once, not per cell).
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for r in doc.rows:
        if r.status != "ok" and r.reason:
            reasons.setdefault((r.backend, r.status, r.reason.splitlines()[0]), []).append(f"{r.workload}/{r.mode}")
    # A row that ran but whose kernels could not be mapped keeps its verdict, and says so.
    for r in doc.rows:
        if r.unmapped_note:
            reasons.setdefault((r.backend, r.status, r.unmapped_note.splitlines()[0]), []).append(
                f"{r.workload}/{r.mode}")
    if reasons:
        out.append("")
    for (backend, status, reason), cells in reasons.items():
        where = cells[0] if len(cells) == 1 else f"{len(cells)} cells"
        out.append(f"{backend} ({where}): {status}: {reason}")
    return "\n".join(out)
