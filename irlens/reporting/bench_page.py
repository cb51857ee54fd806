"""`irlens bench --md`: the results page of a bench document, and the table `irlens bench`
prints after each dtype: per row its device time, rates and % of ceiling (irlens.reporting.roofline),
per dtype x mode the charts, and where the run's wall time went (time_spent.py).
"""
from __future__ import annotations

import re
from pathlib import Path

from irlens.reporting.time_spent import stage_lines, time_lines
from irlens.core.ceilings import describe
from irlens.matrix import Document, Row
from irlens.matrix.header import Part
from irlens.matrix.join import run_parts
from irlens.matrix.row import STAGES_NOTE
from irlens.matrix.table import via_lines
from irlens.core.precision import describe_rows as describe_precision
from irlens.reporting.records import launches_of
from irlens.wording import plural

ESTIMATE_NOTE = (
    "a matrix product's flops (2·m·n·k) are exact; `+ x est.` is the rest, an estimate: it counts one flop per "
    "op and element of the common view (an elementwise op's output, a reduction's input), not the instructions "
    "the kernels run (Nsight Compute's counts differ by -95 % to +601 % on fused elementwise kernels). Only "
    "the exact flops count toward % of ceiling: the estimate never makes a row or a kernel compute-bound.")


def _f(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _tflops(rf) -> str:
    """A row's TFLOP/s: the exact matmul part, and the estimated rest marked `est.` (all of it
    where a document did not count them apart)."""
    if rf is None:
        return "-"
    if rf.matmul_tflops is None:
        return f"{rf.tflops:.1f} est."
    rest = rf.tflops - rf.matmul_tflops
    return f"{rf.matmul_tflops:.1f}" + (f" + {rest:.1f} est." if rest > 0 else "")


def format_bench_table(rows: list[Row]) -> str:
    head = ("| workload | mode | dtype | backend | status | device µs | repeat Δ | GB/s | TFLOP/s | % of ceiling "
            "| kernels > 100 % | launches | distinct kernels |")
    lines = [head, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        t, rf = (r.bench.device_timing, r.bench.roofline) if r.bench else (None, None)
        if rf and rf.model_error:
            pct = f"**{rf.pct_of_ceiling:.0f} ✗ model error**"
        else:
            pct = f"{rf.pct_of_ceiling:.0f} ({rf.bound})" if rf else "-"
        spread = f"{100 * t.repeat_spread:.1f}%" if t else "-"
        status = r.status if r.status == "ok" else f"{r.status}: {r.reason.splitlines()[0][:90] if r.reason else ''}"
        flagged = rf.kernels_flagged if rf else None
        lines.append(f"| {r.workload} | {r.mode} | {r.dtype} | {r.label} | {status} | "
                     f"{_f(t and t.device_us, '.1f')} | {spread} | {_f(rf and rf.gbps, '.0f')} | "
                     f"{_tflops(rf)} | {pct} | {f'**{flagged} ✗**' if flagged else _f(flagged, 'd')} | "
                     f"{_f(launches_of(r), 'd')} | {_f(t and t.kernel_names, 'd')} |")
    return "\n".join(lines)


def write_results_page(doc: Document, md_path: Path, json_name: str, command: str) -> list[Path]:
    """The Markdown page, and one SVG per dtype x mode x measure beside it."""
    from irlens.reporting.plots import bar_chart

    v = doc.versions
    spreads = [r.bench.device_timing.repeat_spread for r in doc.rows if r.bench_field("device_timing")]
    ok = sum(r.status == "ok" for r in doc.rows)
    parts = [
        f"# GPU comparison: {doc.device_name}",
        "",
        *_produced_by(doc, command, json_name),
        "",
        f"- device: {doc.device_name}, driver {doc.driver}; torch {v.get('torch')}, triton {v.get('triton')}, "
        f"jax {v.get('jax')}/{v.get('jaxlib')}, thunder {v.get('thunder')}, python {v.get('python')}",
        *(_ceilings_line(part, doc.reruns or 0) for part in run_parts(doc)),
        "- ceilings: memory bandwidth is the best of a copy, a read-only and a write-only kernel over buffers of "
        "256 MiB to 2 GiB; a matmul rate is the best of a sweep of square sizes and the workloads' own GEMM shapes; "
        "each is raised to the best rate any kernel of the run was timed at (GB/s; TFLOP/s per dtype) where that "
        "stays within the vendor's dense figure for the device, which stands beside each (no raise where it is "
        "unknown)",
        f"- {plural(len(doc.rows), 'row')}, {ok} ok; preset `{doc.preset}`; wall time {doc.wall_s / 60:.1f} min",
        f"- precision: {describe_precision(doc.rows, doc.device)}",
        f"- repeatability: each row's device time is the median of 15 profiled steps (cold L2), measured twice; "
        f"the two medians differ by at most {100 * max(spreads, default=0):.2f}% "
        f"(median {100 * sorted(spreads)[len(spreads) // 2] if spreads else 0:.2f}%)",
        "- device µs: sum of the step's kernel durations (CUPTI via torch.profiler, the same for every backend); "
        "GB/s and TFLOP/s: the bytes the step must move and flops it must do (irlens.core.cost, from the common view) "
        "over that time; % of ceiling: max(bytes/memory bandwidth, matmul flops/matmul rate) over the time, and which "
        "bound.",
        f"- TFLOP/s: {ESTIMATE_NOTE}",
        "- a figure above 100 % of ceiling is not a speed: it is marked **✗ model error** and left out of the charts. "
        "`kernels > 100 %` counts the row's kernels whose own figure (what each touches of the buffers it reads and "
        "writes, the flops of the nodes it computes, its own launch's time) is above 100 %, even counting only the "
        "bytes beyond the L2's size for a kernel faster than DRAM (`via_l2` in the JSON); the JSON gives each "
        "one's reason.",
        "- launches: the device launches (kernels, memsets, memcpys) the profiler records in one step, the same "
        "count for every backend, eager included (one kernel launched twice counts twice); distinct kernels: "
        "how many different names among them.",
        "",
    ]
    if doc.time_spent and not doc.parts:  # one GPU's run (several GPUs' and reruns' times are not added up)
        parts += time_lines(doc.time_spent, doc.wall_s)
    parts += stage_lines(doc.rows, STAGES_NOTE)
    figures = []
    for dtype in sorted({r.dtype for r in doc.rows}):
        for mode in ("fwd", "fwdbwd"):
            rows = [r for r in doc.rows if r.dtype == dtype and r.mode == mode]
            if not rows:
                continue
            parts.append(f"## {dtype}, {mode}\n")
            for measure, key, unit in (("GB/s", "gbps", ""), ("% of ceiling", "pct_of_ceiling", " %")):
                name = f"{md_path.stem}-{dtype}-{mode}-{key}.svg"
                charts = []
                for wl in dict.fromkeys(r.workload for r in rows):
                    items = [(r.label, _charted(r, key)) for r in rows if r.workload == wl]
                    charts.append(bar_chart(f"{wl}: {measure}", items, "{:.0f}", unit, missing="no timing"))
                path = md_path.parent / name
                path.write_text(_stack_svgs(charts))
                figures.append(path)
                parts.append(f"![{measure}, {dtype}, {mode}]({name})\n")
            parts.append(format_bench_table(rows))
            parts.append("")
            parts += [f"- {line}" for line in via_lines(rows)] + ([""] if any(r.via for r in rows) else [])
    md_path.write_text("\n".join(parts) + "\n")
    return [md_path, *figures]


def _charted(row: Row, key: str) -> float | str | None:
    """A row's figure for a chart: its value, "model error" where its % of ceiling is above 100
    (neither its GB/s nor its % is then a speed), None without one."""
    roofline = row.bench_field("roofline")
    if roofline is None:
        return None
    return "model error (above 100 % of ceiling)" if roofline.model_error else getattr(roofline, key)


def _produced_by(doc: Document, command: str, json_name: str) -> list[str]:
    results = f"(results: [`{json_name}`]({json_name}))"
    earlier = (doc.commands or [])[:-1]
    if not earlier and not doc.reruns:
        return [f"Produced by `{command}` {results}."]
    lines = [f"`{c}`, then" for c in earlier] or ["an earlier run (its command was not recorded in its document), then"]
    lines[0] = "Produced by " + lines[0]
    count = doc.reruns or 1
    reruns = "the last one" if count == 1 else f"the last {count}"
    return lines + [f"`{command}` {results}; {reruns} ran again the rows that were not ok and replaced them "
                    f"(with the GPU and ceilings of the rerun that measured them)."]


def _ceilings_line(part: Part, doc_reruns: int = 0) -> str:
    run = "a rerun" if part.rerun else "the first run" if doc_reruns else "this run"
    where = run if part.gpu is None else \
        f"{run} on GPU {part.gpu} (its rows: {' and '.join(part.dtypes)}, {' and '.join(part.modes)})"
    if part.ceilings is None:  # it stopped before measuring them (irlens.bench.checkpoint)
        return f"- ceilings: not measured in {where}"
    return f"- ceilings measured in {where}: {describe(part.ceilings)}"


def _stack_svgs(svgs: list[str]) -> str:
    """Several small charts under one another, as one SVG file."""
    y, body, width = 0, [], 0
    for svg in svgs:
        w, h = (float(x) for x in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
        inner = svg[svg.index(">") + 1: svg.rindex("</svg>")]
        body.append(f'<g transform="translate(0,{y})">{inner}</g>')
        y, width = y + h + 8, max(width, w)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{y:.0f}" '
            f'font-family="Helvetica, Arial, sans-serif" font-size="11">' + "".join(body) + "</svg>")
