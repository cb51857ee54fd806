"""The table `irlens compare` prints: one line per row, then why each row is not ok, which rows
were judged against a reference other than float64, which were captured other than their stack's
usual way (ThunderFX), which checks could not fail (vacuous), and which timings are unsteady."""
from __future__ import annotations

import re
from collections import Counter

from irlens.matrix.document import Document
from irlens.matrix.row import Row
from irlens.runtime.timing import UNSTEADY_SPREAD, unsteady
from irlens.wording import plural

FALLBACK_MARK = "†"  # judged against a reference below float64
UNSTEADY_MARK = "!"  # the timed steps spread above UNSTEADY_SPREAD
VACUOUS_MARK = "∅"  # every output (or result) exactly zero in the reference and the run: nothing compared
DRAWS_MARK = "≈"  # ok over several input draws, a half-precision mismatch on the workload's own inputs alone


def status_text(r: Row) -> str:
    """The row's status as tables show it: marked where its check compared nothing (Row.compared_nothing)
    or where it is ok over several input draws alone (Row.judged_over_draws)."""
    marks = [VACUOUS_MARK] * r.compared_nothing + [DRAWS_MARK] * r.judged_over_draws
    return " ".join([r.status, *marks])


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def error_figures(r: Row) -> tuple[str, str, str]:
    """(its error, eager's own error, the error allowed) on the row's decisive result (the one
    nearest its bound); eager's row is the baseline. Older rows: the largest error and the flat
    tolerance."""
    if not r.ran:
        return "-", "-", "-"
    decisive = r.decisive_result
    if decisive is None:
        return _fmt(r.max_rel_err, ".1e"), "-", _fmt(r.tol, ".0e")
    check = r.results[decisive]
    shown = "NaN/Inf" if check.failed else f"{check.err:.1e}"
    if r.reference_fallback:
        shown += FALLBACK_MARK
    eager = "baseline" if r.backend == "eager" else _fmt(r.eager_err, ".1e")
    return shown, eager, _fmt(r.allowed, ".1e")


def run_figure(r: Row) -> str:
    return _fmt(r.run_us, ".1f") + (UNSTEADY_MARK if unsteady(r.run_spread) else "")


def format_table(doc: Document) -> str:
    header = ("workload", "mode", "backend", "status", "rel err", "eager err", "allowed", "launches", "compile s",
              "run µs", "spread")
    lines = []
    for r in doc.rows:
        lines.append((r.workload, r.mode, r.label, status_text(r), *error_figures(r), _fmt(r.kernel_count, "d"),
                      _fmt(r.compile_s, ".2f"), run_figure(r),
                      "-" if r.run_spread is None else f"{r.run_spread:.0%}"))
    widths = [max(len(str(row[i])) for row in [header, *lines]) for i in range(len(header))]
    right = set(range(4, len(header)))

    def fmt_line(cells) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [fmt_line(header), fmt_line(["-" * w for w in widths]), *map(fmt_line, lines)]
    # Why each row is not ok, one line per distinct reason (nvFuser on a CPU: once, not per cell).
    reasons: dict[tuple[str, str, str], list[str]] = {}
    for r in doc.rows:
        if r.status != "ok" and r.reason:
            reasons.setdefault((r.label, r.status, r.reason.splitlines()[0]), []).append(f"{r.workload}/{r.mode}")
    # A row that ran but whose kernels could not be mapped keeps its verdict, and says so.
    for r in doc.rows:
        if r.unmapped_note:
            reasons.setdefault((r.label, r.status, r.unmapped_note.splitlines()[0]), []).append(
                f"{r.workload}/{r.mode}")
    notes = [f"{backend} ({_where(cells)}): {status}: {reason}" for (backend, status, reason), cells in reasons.items()]
    notes += via_lines(doc.rows)
    fallbacks: dict[tuple[str, str], list[str]] = {}
    for r in doc.rows:
        if r.ran and r.reference_fallback:
            fallbacks.setdefault((r.reference_dtype, r.reference_fallback), []).append(f"{r.workload}/{r.mode}")
    for (dtype, why), cells in fallbacks.items():
        notes.append(f"{FALLBACK_MARK} judged against eager {dtype}, not float64 ({_where(sorted(set(cells)))}): {why}")
    # How a row's stack captured the workload where not its usual way (ThunderFX), and its split.
    notes += [f"{r.backend} ({r.workload}/{r.mode}): {r.capture_note}" for r in doc.rows if r.capture_note]
    notes += ill_conditioned_lines(doc)
    notes += draws_lines(doc.rows)
    notes += vacuous_lines(doc.rows)
    notes += beyond_range_lines(doc.rows)
    notes += module_mode_lines(doc.rows)
    shaky = [r for r in doc.rows if r.ran and unsteady(r.run_spread)]
    if shaky:
        notes.append(f"{UNSTEADY_MARK} unsteady timing ({plural(len(shaky), 'row')}): the timed steps' interquartile range is "
                     f"above {UNSTEADY_SPREAD:.0%} of their median")
    return "\n".join(out + ([""] + notes if notes else []) + unknown_lines(doc))


def module_mode_lines(rows: list[Row]) -> list[str]:
    """The workloads not in eval mode: in train mode, or mixed (a module handed over in train mode
    around submodules in eval mode: each submodule computes in its own mode); and those whose step
    updates buffers in place (BatchNorm's running statistics in train mode), which are results."""
    lines = []
    for mode, what in (("train", "in train mode"),
                       ("mixed", "submodules in train mode and in eval mode, each run in its own (as handed over)")):
        names = sorted({r.workload for r in rows if r.module_mode == mode})
        if names:
            lines.append(f"{what}: {', '.join(names)}")
    updated = sorted({r.workload for r in rows if any(k.startswith("buffer:") for k in r.results)})
    if updated:
        lines.append(f"buffers the step updates in place are results too (buffer:<name>): {', '.join(updated)}")
    return lines


def ill_conditioned_lines(doc: Document) -> list[str]:
    """One line per workload and mode whose checks are ill-conditioned (the float64 value is
    noise-sized): judged against eager, not the flat tolerance (irlens.numerics.verdicts). The results are
    named by pattern (layer numbers as N, with how many), then the first one's numbers."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for r in doc.rows:
        for result, why in r.ill_conditioned.items():
            found.setdefault((r.workload, r.mode), {}).setdefault(result, why)
    lines = []
    for (w, m), results in found.items():
        first, why = next(iter(results.items()))
        lines.append(f"ill-conditioned check, judged against eager ({w}/{m}, {_named(list(results))}): {first}: {why}")
    return lines


def draws_lines(rows: list[Row]) -> list[str]:
    """One line per row ok over several input draws: what the workload's own inputs alone gave."""
    return [f"{DRAWS_MARK} {r.label} ({r.workload}/{r.mode}): ok judged over {r.notes['draws'].get('draws')} input "
            f"draws (docs/numerics.md); on the workload's own inputs alone a mismatch: "
            f"{r.notes['draws'].get('own_inputs', '')}" for r in rows if r.judged_over_draws]


def beyond_range_lines(rows: list[Row]) -> list[str]:
    """One line per workload, mode and run dtype whose float64 reference holds values past that
    dtype's range: elements no stack could match, left out of every check (irlens.numerics.verdicts)."""
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        if r.ran and r.notes.get("beyond_range"):
            found.setdefault((r.workload, r.mode, r.dtype or "?"), {}).update(r.notes["beyond_range"])
    return [f"not judged: beyond {dtype}'s range in the reference ({w}/{m}, "
            f"{', '.join(f'{n}: {count}' for n, count in results.items())})"
            for (w, m, dtype), results in found.items()]


def vacuous_lines(rows: list[Row]) -> list[str]:
    """One line per workload and mode with results exactly zero in the reference and the run (a
    check that cannot fail, irlens.numerics.verdicts): an alarm, with the backends, where a row compared
    nothing (every output or result vacuous); otherwise a note, the rest being compared."""
    found: dict[tuple[str, str], dict[str, None]] = {}
    empty: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        if r.vacuous:
            found.setdefault((r.workload, r.mode), {}).update(dict.fromkeys(r.vacuous))
        if r.compared_nothing:
            empty.setdefault((r.workload, r.mode), []).append(r.label)
    lines = []
    for (w, m), results in found.items():
        where = f"{w}/{m}, {_named(list(results))}"
        if (w, m) in empty:
            lines.append(f"{VACUOUS_MARK} a check that cannot fail ({where}; {', '.join(empty[w, m])}): every output "
                         f"is exactly zero (or NaN or Inf alike, or beyond the run dtype's range) in the reference and in "
                         f"the run, so nothing of the model was compared")
        else:
            lines.append(f"exactly zero (or NaN or Inf alike) in the reference and in the run, checks that cannot fail "
                         f"({where}); the other results are compared")
    return lines


NAMED_PATTERNS = 10  # the patterns a note names before "+K more"


def _named(results: list[str]) -> str:
    """How many results, and which, by pattern (layer numbers as N, with how many)."""
    patterns = Counter(re.sub(r"(?<=\.)\d+(?=\.)", "N", name) for name in results)
    shown = [p if n == 1 else f"{p} (x{n})" for p, n in patterns.items()]
    more = len(shown) - NAMED_PATTERNS
    named = ", ".join(shown[:NAMED_PATTERNS]) + (f", +{more} more" if more > 0 else "")
    return f"{plural(len(results), 'result')}: {named}"


def via_lines(rows: list[Row]) -> list[str]:
    """One line per backend and reason for the rows run through the lowering of another frontend's
    graphs: which graphs, and why its own frontend's path was not taken."""
    why: dict[tuple[str, str, str], list[str]] = {}
    for r in rows:
        if r.via:  # one line for all workloads with the same reason ("workload 'x' has no JAX twin")
            reason = (r.via_reason or "-").splitlines()[0].replace(f" {r.workload!r}", "")
            why.setdefault((r.label, r.via, reason), []).append(f"{r.workload}/{r.mode}")
    return [f"{label} ({_where(cells)}): {via}'s graphs through the common view's lowering: {reason}"
            for (label, via, reason), cells in why.items()]


def _where(cells: list[str]) -> str:
    return cells[0] if len(cells) == 1 else f"{len(cells)} cells"


def unknown_lines(doc: Document) -> list[str]:
    """Rows whose kernels map onto ops the common view has no meaning for: never silent, counted
    as uncovered (`coverage.unknown`), one line per row with the native names."""
    lines = []
    for r in doc.rows:
        unknown = (r.coverage.unknown if r.coverage else None) or []
        if unknown:
            natives = sorted({u[u.index("(") + 1:-1] for u in unknown})
            shown = ", ".join(natives[:6]) + (f", +{len(natives) - 6} more" if len(natives) > 6 else "")
            lines.append(f"{r.label} ({r.workload}/{r.mode}): {plural(len(unknown), 'node')} with no meaning in the common "
                         f"view, counted as uncovered: {shown}")
    return ([""] if lines else []) + lines
