"""A results document as report blocks: per workload x mode a fusion map, kernel tables,
charts and numerics; once per report the run, a summary and the frontend table."""
from __future__ import annotations

import math
import re
from collections import Counter

from irlens.core.ceilings import describe
from irlens.core.ir import Graph, Kernel
from irlens.matrix import Document, Row
from irlens.matrix.header import Part
from irlens.core.precision import describe_rows as describe_precision
from irlens.matrix.table import (DRAWS_MARK, FALLBACK_MARK, UNSTEADY_MARK, VACUOUS_MARK, error_figures, run_figure,
                                 status_text, vacuous_lines, via_lines)
from irlens.reporting.blocks import Figure, Gallery, Report, Section, Table, Text
from irlens.reporting.ceiling import backend_pct, ceiling_for, flops_estimated, judge
from irlens.reporting.fusion_map import build_fusion_map, kernel_color, render_svg
from irlens.reporting.plots import bar_chart
from irlens.reporting.records import first_line, group_rows, kernel_stage, launches_of
from irlens.reporting.splits import split_sections
from irlens.runtime.timing import unsteady
from irlens.wording import plural

def build_report(doc: Document, frontend_table: Table | None = None) -> Report:
    rows = doc.rows
    sections = [_run_section(doc), _summary_section(rows)]
    if frontend_table is not None:
        sections.append(Section("Frontends", "frontends", [
            Text(["What each frontend captures, computed from its acquisitions of the workloads below "
                  "(op counts: nodes of the forward common view at the composite / primitive level)."]),
            frontend_table]))
    for (workload, mode, variant), group in group_rows(rows).items():
        ceiling = ceiling_for(group[0].bench_field("ceilings") or doc.ceilings)
        sections.append(_workload_section(workload, mode, variant, group, ceiling, doc))
    subtitle = f"{doc.machine()} · preset {doc.preset or '?'}"
    return Report("irlens report", subtitle, sections)


def anchor(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


def fmt(value, spec: str, none: str = "-") -> str:
    return none if value is None else format(value, spec)


def op_summary(kernel: Kernel, graph: Graph | None) -> str:
    """The canonical ops a kernel covers, in graph order, repeated ops counted: `amax, sub, exp, sum, div`."""
    if graph is None:
        return "-"
    wanted = set(kernel.node_ids)
    counts = Counter(n.op for n in graph.nodes if n.id in wanted)
    return ", ".join(op if c == 1 else f"{op}×{c}" for op, c in counts.items()) or "-"


# --- once per report -------------------------------------------------------------------------

def _run_section(doc: Document) -> Section:
    facts = [["device", doc.machine()], ["preset", str(doc.preset or "?")]]
    facts.append(["precision", describe_precision(doc.rows, doc.device)])
    if doc.threads is not None:
        facts.append(["threads per worker", f"{doc.threads} (timed steps have the device alone; docs/timing.md)"])
    facts += [[name, str(v) if v is not None else "not installed"] for name, v in doc.versions.items()]
    parts = doc.parts or ([Part(None, [], [], doc.ceilings)] if doc.ceilings else [])
    for part in parts:  # what % of ceiling is against: measured here, beside the datasheet
        where = "" if part.gpu is None else f" (GPU {part.gpu}{', a rerun' if part.rerun else ''})"
        facts.append([f"ceilings{where}", describe(part.ceilings).replace("**", "") if part.ceilings else
                      "not measured (the run stopped before)"])
    return Section("Run", "run", [Table(["", ""], facts)])


def _summary_section(rows: list[Row]) -> Section:
    # a dtype column where the rows have several dtypes (a bench run), as in the section names
    dtyped = len({r.dtype for r in rows}) > 1
    lead = ["workload", "mode", *(["dtype"] if dtyped else []), "backend", "status"]
    header = [*lead, "rel err", "eager err", "allowed", "launches", "compile s", "run µs", "reason"]
    table = Table(header, [], numeric=set(range(len(lead), len(lead) + 6)))
    run_column = len(lead) + 5
    for i, r in enumerate(rows):
        table.rows.append([r.workload, r.mode, *([r.dtype or "-"] if dtyped else []), r.label,
                           status_text(r), *error_figures(r), fmt(launches_of(r), "d") if r.ran else "-",
                           fmt(r.compile_s, ".2f"), run_figure(r),
                           "; ".join(filter(None, (first_line(r.reason), first_line(r.unmapped_note))))])
        status = (i, len(lead) - 1)
        verdict = "vacuous" if r.compared_nothing else r.status  # an ok that compared nothing is no good news
        {"ok": table.good, "mismatch": table.flagged, "failed": table.flagged}.get(verdict, table.muted).add(status)
        if table.rows[-1][run_column].endswith(UNSTEADY_MARK):
            table.flagged.add((i, run_column))
    legend = ["rel err: the error of the row's decisive result (the one nearest the error it is allowed) against "
              "the reference; eager err: eager's own error on it in the same dtype; allowed: k × eager's error + "
              "a floor (docs/numerics.md). "
              f"{FALLBACK_MARK}: judged against a reference below float64 (it could not run). "
              f"{VACUOUS_MARK}: a check that cannot fail (every output exactly zero in the reference and the run). "
              f"{DRAWS_MARK}: ok judged over several input draws, its figures their medians (a half-precision "
              "mismatch on the workload's own inputs alone; docs/numerics.md). "
              f"{UNSTEADY_MARK}: an unsteady timing (the timed steps spread widely)."]
    return Section("Summary", "summary", [table, Text(legend)])


# --- per workload x mode -------------------------------------------------------------------------

def _workload_section(workload: str, mode: str, variant: str, rows: list[Row], ceiling, doc: Document) -> Section:
    key = anchor(workload, mode, variant)
    section = Section(" · ".join(filter(None, (workload, mode, variant))), key)
    not_run = [f"{r.label}: {r.status}: {first_line(r.reason) or 'no reason given'}" for r in rows if not r.ran]
    if not_run:
        section.blocks.append(Text(not_run, style="note"))
    mismatched = [f"{r.label}: mismatch: {first_line(r.reason)}" for r in rows if r.status == "mismatch"]
    unmapped = [f"{r.label}: {r.status}, {first_line(r.unmapped_note)}" for r in rows if r.ran and r.unmapped_note]
    if mismatched or unmapped:
        section.blocks.append(Text(mismatched + unmapped, style="note"))
    if any(r.via for r in rows):
        section.blocks.append(Text(via_lines(rows), style="note"))
    fallbacks = sorted({f"{FALLBACK_MARK} judged against eager {r.reference_dtype}, not float64: {r.reference_fallback}"
                        for r in rows if r.ran and r.reference_fallback})
    shaky = [f"{r.label}: {UNSTEADY_MARK} unsteady timing: the timed steps' interquartile range is "
             f"{r.run_spread:.0%} of their median" for r in rows if r.ran and unsteady(r.run_spread)]
    vacuous = vacuous_lines(rows)
    if fallbacks or shaky or vacuous:
        section.blocks.append(Text(fallbacks + shaky + vacuous, style="note"))
    ran = [r for r in rows if r.ran]
    section.subsections += split_sections(key, ran)

    fmap = build_fusion_map(workload, mode, ran)
    if fmap.columns:
        section.subsections.append(Section("Fusion map", anchor(key, "fusion"), [
            Text(["One column per backend, drawn on the common-view graph its kernels map to. Rows are "
                  "depth in compute ops (data movement sits in a thin lane above the row it feeds), so the same "
                  "computation sits on the same row in every column. "
                  "A node's colour and tag name the kernel that covers it; a white dashed node runs outside "
                  "every kernel; a small swatch on the right marks a second kernel claiming or recomputing "
                  "it. Data movement outside every kernel, and graphs no kernel maps onto, are not drawn. "
                  "Hover a node for its values and shapes."]),
            Figure(f"fusion-{key}", render_svg(fmap), f"Fusion map: {workload} · {mode}",
                   _fusion_text(ran)),
            *([Text([f"{c.backend}: {n}" for c in fmap.columns for n in c.notes] + fmap.notes, style="note")]
              if any(c.notes for c in fmap.columns) or fmap.notes else []),
        ]))
    if ran:
        dtype = _dtype(ran[0], doc)
        section.subsections.append(Section("Charts", anchor(key, "charts"), [_charts(key, ran, ceiling, dtype)]))
        kernels = Section("Kernels", anchor(key, "kernels"), [Text([
            "Bytes: what each kernel itself touches of the buffers it reads and writes (its arguments, operands "
            "and results), each counted once. Flops: those of the common-view nodes it computes or recomputes; 0 "
            "for a kernel that computes none (a copy), '-' where its nodes are not known; a matrix product's are "
            "exact, 'est.' marks a count that holds others (one flop per op and element, not instructions). % of "
            "ceiling: ideal time (the larger of bytes / memory bandwidth and exact flops / matmul rate) over its "
            "measured time; (L2): faster "
            "than DRAM for all its bytes, so the figure counts those beyond the L2's size; a figure above 100 % "
            "even so is not a speed and is marked as a model error, with the reason under the table."])])
        for r in ran:
            kernels.subsections.append(Section(r.label, anchor(key, r.backend),
                                               _kernel_table(r, ceiling, dtype)))
        section.subsections.append(kernels)
        section.subsections.append(Section("Numerics", anchor(key, "numerics"), _numerics_table(ran)))
    return section


def _dtype(row: Row, doc: Document) -> str:
    return row.dtype or doc.dtype or "float32"


def _fusion_text(rows: list[Row]) -> list[str]:
    lines = []
    for r in rows:
        graphs = r.graphs
        for i, k in enumerate(r.kernels):
            stage = kernel_stage(k, graphs)
            lines.append(f"{r.label} k{i} `{k.name}` ({k.kind}): {op_summary(k, graphs.get(stage) if stage else None)}")
        if not r.kernels:
            lines.append(f"{r.label}: {first_line(r.unmapped_note) or 'no kernel records'}")
    return lines


def _charts(stem: str, rows: list[Row], ceiling, dtype: str) -> Gallery:
    counts = [(r.label, None if launches_of(r) is None else float(launches_of(r))) for r in rows]
    times = [(r.label, r.run_us) for r in rows]
    figures = [(r.label, backend_pct(r.kernels, ceiling, dtype)) for r in rows]
    pcts = [(b, f.pct) for b, f in figures]
    why = "no ceilings measured (irlens bench measures them)" if ceiling is None else "no timed kernels"
    left_out = [f"{b}: {plural(f.flagged, 'kernel')} above 100 % left out (model errors, see its kernel table)"
                for b, f in figures if f.flagged]
    return Gallery([
        Figure(f"kernels-{stem}", bar_chart("kernel launches per step", counts, "{:.0f}", missing="not counted"),
               "kernel launches", [f"{b}: {fmt(v, '.0f', 'not counted')}" for b, v in counts]),
        Figure(f"time-{stem}", bar_chart("run time (host wall, median)", times, "{:.1f}", " µs", missing="not measured"), "run time",
               [f"{b}: {fmt(v, '.1f', 'not measured')}" + (" µs" if v is not None else "") for b, v in times]),
        Figure(f"ceiling-{stem}", bar_chart("% of ceiling (timed kernels, model errors left out)", pcts, "{:.1f}", " %",
                                            missing=why),
               "% of ceiling", [f"{b}: {fmt(v, '.1f', why)}" + (" %" if v is not None else "") for b, v in pcts]
               + left_out),
    ])


def _kernel_table(row: Row, ceiling, dtype: str) -> list[Table | Text]:
    """The row's kernels, and under them why each figure above 100 % of ceiling is no speed, and
    which figures count only the bytes beyond the L2 (kernels faster than DRAM for all of theirs)."""
    kernels = row.kernels
    if not kernels:
        return [Text([f"{row.backend} has no kernel records (it runs op by op)."
                      if row.backend == "eager" else f"{row.label} reported no kernels."])]
    graphs = row.graphs
    header = ["#", "name", "kind", "nodes", "ops", "recompute", "time µs", "bytes", "flops", "% of ceiling"]
    table = Table(header, [], swatches=[], numeric={0, 3, 5, 6, 7, 8, 9})
    errors = []
    for i, k in enumerate(kernels):
        stage = kernel_stage(k, graphs)
        verdict, estimated = judge(k, ceiling, dtype), flops_estimated(k.flops, k.matmul_flops)
        pct = fmt(verdict.pct, ".1f") + (" model error" if verdict.model_error else " (L2)" if verdict.via_l2 else "")
        table.rows.append([f"k{i}", k.name, k.kind, str(len(k.node_ids)), op_summary(k, graphs.get(stage) if stage else None),
                           str(len(k.recompute)) if k.recompute else "", fmt(k.time_us, ".2f"),
                           fmt(k.bytes, ",d"), fmt(k.flops, ",d") + (" est." if estimated else ""), pct])
        table.swatches.append(kernel_color(i) if graphs else None)
        if verdict.model_error:
            table.flagged.add((i, len(header) - 1))
            errors.append(f"k{i} {k.name}: {verdict.model_error}")
        elif verdict.via_l2:
            errors.append(f"k{i} {k.name}: {verdict.via_l2}")
    if not graphs:  # a corpus document keeps none (irlens.zoo.run.CorpusRows)
        errors.append(f"ops not shown: the document keeps no graphs of {row.label} (zoo and GraphNet runs leave "
                      f"them out); `irlens compare` of this workload and backend shows them")
    return [table] + ([Text(errors, style="note")] if errors else [])


def _numerics_table(rows: list[Row]) -> list[Table | Text]:
    """Per result and backend: its error against the reference, and the error it may have; eager's
    own error beside them (the same for every row of a workload x mode: the reference's)."""
    names = list(dict.fromkeys(n for r in rows for n, c in r.results.items() if c.err is not None))
    eager = next(({n: c.eager_err for n, c in r.results.items()} for r in rows
                  if any(c.eager_err is not None for c in r.results.values())), None)
    bounded = [any(c.allowed is not None for c in r.results.values()) for r in rows]  # judged against eager too
    lead = ["result", *([f"eager's own error ({_row_dtype(rows)})"] if eager is not None else [])]
    table = Table([*lead, *(r.label for r in rows)], [], numeric=set(range(1, len(lead) + len(rows))))
    for i, name in enumerate(names):
        cells = [name, *([_error(eager.get(name))] if eager is not None else [])]
        for j, r in enumerate(rows):
            check = r.results.get(name)
            if check is None or check.err is None:
                cells.append("absent")
                continue
            bound = r.tol if check.allowed is None else check.allowed
            cells.append(_error(check.err) + (f" / {fmt(bound, '.1e')}" if bounded[j] else ""))
            if check.failed or (bound is not None and check.err > bound):
                table.flagged.add((i, len(lead) + j))
        table.rows.append(cells)
    table.rows.append(["flat tolerance", *([""] if eager is not None else []), *(fmt(r.tol, ".0e") for r in rows)])
    if not any(bounded):
        return [table]
    return [table, Text(["Each cell: the result's error against the reference / the error it may have (k × eager's own "
                         "error + a floor, in float32 no more than the flat tolerance; docs/numerics.md)."])]


def _error(err: float | None) -> str:
    return fmt(err, ".1e") if err is None or math.isfinite(err) else "NaN/Inf"


def _row_dtype(rows: list[Row]) -> str:
    return next((r.dtype for r in rows if r.dtype), "the run's dtype")
