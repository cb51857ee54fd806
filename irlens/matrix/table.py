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
    out += unknown_lines(doc)
    return "\n".join(out)


def unknown_lines(doc: Document) -> list[str]:
    """Rows whose kernels map onto ops the common view has no meaning for: never silent, counted
    as uncovered (`coverage.unknown`), one line per row with the native names."""
    lines = []
    for r in doc.rows:
        unknown = (r.coverage or {}).get("unknown") or []
        if unknown:
            natives = sorted({u[u.index("(") + 1:-1] for u in unknown})
            shown = ", ".join(natives[:6]) + (f", +{len(natives) - 6} more" if len(natives) > 6 else "")
            lines.append(f"{r.backend} ({r.workload}/{r.mode}): {len(unknown)} node(s) with no meaning in the common "
                         f"view, counted as uncovered: {shown}")
    return ([""] if lines else []) + lines
