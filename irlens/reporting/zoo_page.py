"""The zoo's summary: PyTorch's benchmark dashboard across three stacks, from a zoo document.

Per backend and mode: how many models it was asked to run, acquired (it made graphs of the model:
the row ran, or failed after acquiring), ran, and whose numerics are ok; the unknown ops left in
its common views, its graph breaks, its kernel launches and compile times, and on a GPU its
speedup over eager (per model, and the geometric mean over the models both ran). Then a table per
model, and every failure's first line, each marked upstream's (the innermost frame of its
traceback is in torch, thunder, jax, ...) or irlens's, with the reproducer file written for it.
"""
from __future__ import annotations

import math
import os
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from irlens.runtime.isolation import cuda_fault
from irlens.matrix.document import Document
from irlens.matrix.join import with_eager_base
from irlens.matrix.row import Row
from irlens.core.precision import describe_rows as describe_precision
from irlens.matrix.table import (DRAWS_MARK, VACUOUS_MARK, draws_lines, ill_conditioned_lines, module_mode_lines,
                                 vacuous_lines)
from irlens.workloads.workload import MODES
from irlens.wording import plural

# packages whose frames make a failure upstream's (the innermost frame of its traceback)
UPSTREAM = ("torch", "thunder", "jax", "jaxlib", "nvfuser", "nvfuser_direct", "nvfuser_common", "triton", "transformers",
            "timm")
_FRAME = re.compile(r'File "([^"]+)", line \d+')
_SITE = re.compile(r"(?:site|dist)-packages/([A-Za-z_0-9]+)")
_NATIVE_FRAME = re.compile(r"frame #0: .*? \(0x[0-9a-f]+ in ([^)\s]+)\)")


@dataclass
class StackSummary:
    backend: str
    mode: str
    models: int = 0
    acquired: int = 0
    ran: int = 0
    ok: int = 0  # ok, and its check compared something (not Row.compared_nothing)
    vacuous: int = 0  # ok, but every output exactly zero in the reference and the run: nothing compared
    over_draws: int = 0  # of `ok`, those ok over several input draws alone (Row.judged_over_draws)
    unavailable: int = 0
    unknown_ops: Counter = field(default_factory=Counter)  # native name -> nodes, over all models
    graph_breaks: int = 0
    models_with_breaks: int = 0
    launches: list[int] = field(default_factory=list)
    compile_s: list[float] = field(default_factory=list)
    speedups: dict[str, float] = field(default_factory=dict)  # model -> eager's run time / this one's

    @property
    def geomean(self) -> float | None:
        values = [v for v in self.speedups.values() if v > 0]
        return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def acquired(r: Row) -> bool:
    """The backend made graphs of the model: it ran, or failed only after (compiling or running
    them, `notes["acquired_graphs"]`, or comparing its results)."""
    return r.ran or bool(r.graphs) or r.phase == "compare" or bool((r.notes or {}).get("acquired_graphs"))


def timed_out(r: Row) -> bool:
    return "timed out after" in (r.reason or "").split("\n", 1)[0]


def kernel_fault(r: Row) -> bool:
    """A kernel's fault, which CUDA reports at a later call: the frame that raised it is not where it came from."""
    return cuda_fault((r.reason or "").split("\n", 1)[0]) is not None


def upstream_of(r: Row) -> str | None:
    """The package a failure's innermost traceback frame is in, where that is upstream's; None
    for irlens's own, for a failure with no traceback, and for a timeout: a timed-out worker's
    stderr may show a warning's frame or a logged traceback (Inductor's "Failed to pickle cache
    key"), which says nothing of where the time went; nor for a kernel's fault (an illegal memory
    access), raised at whichever call came after it. Frames of code generated at run time (a
    compiler's program: "thunder.backward_fn_12", "<eval_with_key>.3") have no file: the
    innermost frame with one, the code that ran it, decides. Where the kept tail of the worker's
    stderr holds no Python frame at all, a C++ exception's innermost native frame (c10's "frame #0:
    ... (0x... in <library>)", as nvFuser's and torch's asserts print them) decides by its library."""
    if timed_out(r) or kernel_fault(r):
        return None
    detail = r.detail or ""
    start = detail.rfind("Traceback")
    frames = [f for f in _FRAME.findall(detail[max(start, 0):]) if "/" in f or "\\" in f]
    if not frames:
        native = _NATIVE_FRAME.search(f"{r.reason or ''}\n{detail}")
        return _library_package(os.path.normpath(native.group(1))) if native else None
    path = frames[-1]
    if "/irlens/" in path and "site-packages" not in path:
        return None
    return _site_package(path)


def _site_package(path: str) -> str | None:
    """The upstream package whose folder under site-packages holds `path`."""
    m = _SITE.search(path)
    return m.group(1) if m and m.group(1) in UPSTREAM else None


def _library_package(path: str) -> str | None:
    """The upstream package a native library belongs to: the folder under site-packages, else (a
    folder put on the path, as the GPU machine's) the package folder holding it, or its `lib/`."""
    if _SITE.search(path):
        return _site_package(path)
    parts = re.split(r"[/\\]", path)
    holder = parts[-3] if len(parts) >= 3 and parts[-2] == "lib" else parts[-2] if len(parts) >= 2 else ""
    return holder if holder in UPSTREAM else None


def signature(r: Row) -> str:
    """A failure's kind: backend, mode and its first line with numbers masked (shapes and errors
    differ by model, an object's address by process); digits within a name (`fft_c2c`, `out1`,
    `layer3`) are part of it."""
    first = (r.reason or "").splitlines()[0] if r.reason else r.status
    first = re.sub(r"(?<![A-Za-z0-9_])0x[0-9a-fA-F]+", "N", first)  # `<... object at 0x7ff25df4bcd0>`
    first = re.sub(r"(?<![A-Za-z0-9_])[0-9]+(?:x[0-9]+)+", "N", first)  # shapes: 3x128xf32 -> Nxf32
    return f"{r.backend} {r.mode}: {re.sub(r'(?<![A-Za-z0-9_])[0-9]+', 'N', first)[:200]}"


def summarize(doc: Document) -> list[StackSummary]:
    """One StackSummary per backend and mode, in the document's order."""
    by_key: dict[tuple[str, str], StackSummary] = {}
    gpu = str(doc.device or "").startswith("cuda") or any(str(r.device or "").startswith("cuda") for r in doc.rows)
    for r in with_eager_base(doc).rows:
        s = by_key.setdefault((r.backend, r.mode), StackSummary(r.backend, r.mode))
        s.models += 1
        s.unavailable += r.status == "unavailable"
        s.acquired += acquired(r) and r.status != "unavailable"  # the rates' base leaves unavailable rows out
        s.ran += r.ran
        s.ok += r.status == "ok" and not r.compared_nothing
        s.vacuous += r.compared_nothing
        s.over_draws += r.judged_over_draws and not r.compared_nothing  # of the ok count
        for u in (r.coverage.unknown if r.coverage else None) or []:
            s.unknown_ops[u[u.index("(") + 1:-1] if "(" in u else u] += 1
        breaks = r.notes.get("graph_breaks") or 0
        s.graph_breaks += breaks
        s.models_with_breaks += breaks > 0
        if r.ran and r.kernel_count is not None:
            s.launches.append(r.kernel_count)
        if r.ran and r.compile_s is not None:
            s.compile_s.append(r.compile_s)
        if gpu and r.ran and r.eager_us and r.backend != "eager" and r.run_us:
            s.speedups[r.workload] = r.eager_us / r.run_us
    # eager first in each mode (a join may bring its rows later), the modes in the order they came
    modes = list(dict.fromkeys(m for _, m in by_key))
    return sorted(by_key.values(), key=lambda s: (modes.index(s.mode), s.backend != "eager"))


def _pct(n: int, of: int) -> str:
    """`n/of (P %)`, P in tenths rounded down: a rate never reads as a target it misses (37/39 is
    94.8 %, not 95 %)."""
    return f"{n}/{of} ({1000 * n // of / 10:g} %)" if of else "-"


def _median(values: list[float], spec: str) -> str:
    return format(statistics.median(values), spec) if values else "-"


def stack_table(summaries: list[StackSummary], gpu: bool) -> list[str]:
    head = ["stack", "mode", "models", "acquired", "ran", "numerics ok", "unknown ops", "graph breaks (models)",
            "launches (median)", "compile s (median)"] + (["speedup vs eager (geomean)"] if gpu else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summaries:
        asked = s.models - s.unavailable
        cells = [s.backend, s.mode, f"{s.models}" + (f" ({s.unavailable} unavailable)" if s.unavailable else ""),
                 _pct(s.acquired, asked), _pct(s.ran, asked),
                 _pct(s.ok, asked) + (f", {s.over_draws} {DRAWS_MARK}" if s.over_draws else "")
                 + (f" + {s.vacuous} {VACUOUS_MARK}" if s.vacuous else ""),
                 str(sum(s.unknown_ops.values())),
                 f"{s.graph_breaks} ({s.models_with_breaks})", _median(s.launches, ".0f"), _median(s.compile_s, ".1f")]
        if gpu:
            cells.append("-" if s.backend == "eager" or s.geomean is None else f"{s.geomean:.2f}x")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _cell(r: Row | None, gpu: bool) -> str:
    if r is None:
        return ""
    mark = {"ok": "ok", "mismatch": "MISMATCH", "failed": "failed", "unavailable": "n/a"}[r.status]
    if gpu and r.ran and r.backend != "eager" and r.eager_us and r.run_us:
        mark += f" {r.eager_us / r.run_us:.2f}x"
    if r.compared_nothing:
        mark += f" {VACUOUS_MARK}"
    if r.judged_over_draws:
        mark += f" {DRAWS_MARK}"
    if r.ill_conditioned:
        mark += " ‡"
    if r.reference_fallback:
        mark += " †"
    return mark


def model_table(doc: Document, gpu: bool) -> list[str]:
    backends = sorted(dict.fromkeys(r.backend for r in doc.rows), key=lambda b: b != "eager")
    rows = {(r.workload, r.mode, r.backend): r for r in with_eager_base(doc).rows}
    head = ["model", "mode", *backends]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    # a model's modes together, models in the order they first come (a join's documents hold them in any order)
    models = list(dict.fromkeys(r.workload for r in doc.rows))
    cells = dict.fromkeys((r.workload, r.mode) for r in doc.rows)
    for w, m in sorted(cells, key=lambda c: (models.index(c[0]), MODES.index(c[1]) if c[1] in MODES else len(MODES))):
        lines.append("| " + " | ".join([w, m, *(_cell(rows.get((w, m, b)), gpu) for b in backends)]) + " |")
    return lines


def by_kind(rows: list[Row], statuses: tuple[str, ...]) -> dict[str, list[Row]]:
    """The rows of those statuses, by signature (backend, mode, first line with numbers masked)."""
    groups: dict[str, list[Row]] = {}
    for r in rows:
        if r.status in statuses:
            groups.setdefault(signature(r), []).append(r)
    return groups


def failures(doc: Document) -> list[tuple[str, list[Row], str | None]]:
    """(signature, its rows, the upstream package or None) of every failure and mismatch, by kind."""
    return [(sig, rows, upstream_of(rows[0])) for sig, rows in by_kind(doc.rows, ("failed", "mismatch")).items()]


def whose(r: Row, upstream: str | None) -> str:
    """Whose a kind of failure or mismatch is, as far as its first row tells (`failures`)."""
    if upstream:
        return f"upstream ({upstream})"
    if r.status == "mismatch":
        return "a mismatch against the float64 reference"
    if timed_out(r):
        return "a time limit, nothing crashed"
    if kernel_fault(r):
        return "a kernel's fault, reported at a later call: whose kernel, not known"
    return "irlens or unknown"


def row_dtypes(doc: Document) -> str:
    """The dtypes the rows ran in, where the document names none (merged from several)."""
    return ", ".join(sorted({r.dtype for r in doc.rows if r.dtype})) or "each model's own"


def zoo_markdown(doc: Document, repros: dict[str, str] | None = None) -> str:
    """The summary page; `repros`: signature -> the reproducer file written for it."""
    gpu = str(doc.device or "").startswith("cuda")
    versions = ", ".join(f"{k} {v}" for k, v in (doc.versions or {}).items() if v and k not in ("python", "platform"))
    lines = ["# The zoo through every stack", "",
             f"Device: {doc.machine()}; preset {doc.preset}; dtype {doc.dtype or row_dtypes(doc)}; "
             f"{plural(len({r.workload for r in doc.rows}), 'model')}.",
             f"Versions: {versions or 'none recorded (no cell ran)'}.",
             f"Precision: {describe_precision(doc.rows, doc.device)}.", ""]
    if doc.commands:
        lines += ["Made by:", "", *[f"    {c}" for c in doc.commands], ""]
    lines += ["## Per stack", "", *stack_table(summarize(doc), gpu), "",
              "acquired: the stack made graphs of the model; ran: it produced results; numerics ok: within the "
              f"bound against the float64 reference (irlens.numerics), and not vacuous (+ N {VACUOUS_MARK}: ok rows whose every "
              "output is exactly zero in the reference and the run, so nothing was compared: not counted ok; "
              f"N {DRAWS_MARK}: of them, ok judged over several input draws); rates "
              "count the rows that could run here "
              "(not those unavailable: a library not installed, a backend without a path for the model).", "", "## Per model", "",
              f"‡ a check judged against eager (ill-conditioned, see below); † judged against a reference below "
              f"float64; {VACUOUS_MARK} a check that cannot fail (every output exactly zero, see below); {DRAWS_MARK} ok "
              f"judged over several input draws, a half-precision mismatch on the model's own inputs alone (see below).",
              "",
              *model_table(doc, gpu), ""]
    found = failures(doc)
    if found:
        lines += ["## Failures", "", "Each kind once, with the models it hit; upstream: the innermost frame of its "
                  "traceback is in that package.", ""]
        for sig, rows, upstream in found:
            who = whose(rows[0], upstream)
            models = ", ".join(sorted({r.workload for r in rows}))
            repro = (repros or {}).get(sig)
            lines.append(f"- **{sig}** — {who}; {plural(len(rows), 'row')}: {models}" + (f"; reproducer: `{repro}`" if repro else ""))
        lines.append("")
    not_run = by_kind(doc.rows, ("unavailable",))
    if not_run:  # every n/a of the table, and why
        lines += ["## Not run", "", "The n/a cells, each reason once, with the models it hit.", ""]
        lines += [f"- **{sig}** — {plural(len(rows), 'row')}: {', '.join(sorted({r.workload for r in rows}))}"
                  for sig, rows in not_run.items()]
        lines.append("")
    notes = ill_conditioned_lines(doc) + draws_lines(doc.rows) + vacuous_lines(doc.rows)
    fallbacks = sorted({f"{r.workload}/{r.mode}: {r.reference_fallback}" for r in doc.rows if r.reference_fallback})
    modes = module_mode_lines(doc.rows)
    if notes or fallbacks or modes:
        lines += ["## Notes", ""]
        lines += [f"- {n}" for n in notes]
        lines += [f"- † reference below float64, {f}" for f in fallbacks]
        lines += [f"- {m}" for m in modes]
        lines.append("")
    return "\n".join(lines)
