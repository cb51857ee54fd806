"""`irlens report`: results documents as a self-contained HTML page and its Markdown twin.

`write_report(docs, out)` renders Documents (`irlens compare`'s, `bench`'s, `compare --cross`'s, read
back from their `--json` files or just run) into `out/report.html` and `out/report.md` (+
`out/figures/*.svg`), and returns the document of the rows it drew, which its callers (the CLI,
irlens.api: the places a document becomes JSON) write beside them as `out/results.json` (RESULTS).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from irlens.errors import UsageError
from irlens.matrix import Document
from irlens.matrix.join import UNION, join
from irlens.reporting.blocks import Table
from irlens.reporting.build import build_report
from irlens.reporting.cross_grid import cross_sections
from irlens.reporting.html import render_html
from irlens.reporting.markdown import render_markdown
from irlens.reporting.roofline import recompute

RESULTS = "results.json"  # the rows a report drew, beside its pages


def only_workloads(docs: list[Document], workloads: list[str]) -> list[Document]:
    """The documents with only the rows of `workloads` (a page small enough to commit); a name
    no document has is a UsageError listing those it has."""
    present = {r.workload for d in docs for r in d.rows}
    absent = [w for w in workloads if w not in present]
    if absent:
        raise UsageError(f"no rows for workload(s) {', '.join(absent)}; the documents have: {', '.join(sorted(present))}")
    return [dataclasses.replace(d, rows=[r for r in d.rows if r.workload in workloads]) for d in docs]


def report_frontend_table(doc: Document) -> Table | None:
    """The frontend table for the document's workloads (those this process can resolve)."""
    import torch

    from irlens.workloads.builtin import resolve_workload
    from irlens.reporting.frontend_table import frontend_table

    workloads = []
    for name in dict.fromkeys(r.workload for r in doc.rows):
        try:
            workloads.append(resolve_workload(name))
        except Exception:  # noqa: BLE001  (a user workload from elsewhere: left out of the table)
            continue
    if not workloads:
        return None
    mode = "fwdbwd" if any(r.mode == "fwdbwd" for r in doc.rows) else "fwd"
    device = "cuda" if str(doc.device or "").startswith("cuda") and torch.cuda.is_available() else "cpu"
    preset = doc.preset if doc.preset in ("tiny", "bench") else "tiny"
    return frontend_table(workloads, mode, preset if device == "cuda" else "tiny", device)


def write_report(docs: list[Document] | Document, out: str | Path,
                 frontends: bool = True) -> tuple[dict[str, Path], Document]:
    """Render; returns the paths written (html, md) and the document of the rows drawn (the
    cross grids' aside). Cross grids (`compare --cross`) are drawn beside the native pairings of
    the other documents."""
    # a bench document's roofline figures by the current rule (an older one's ceilings were not raised)
    docs = [recompute(d) if d.kind == "bench" else d
            for d in (docs if isinstance(docs, list) else [docs])]
    cross = [d for d in docs if d.kind == "cross"]
    doc = join([d for d in docs if d.kind != "cross"] or [dataclasses.replace(cross[0], rows=[])], UNION)
    report = build_report(doc, report_frontend_table(doc) if frontends else None)
    report.sections += [s for d in cross for s in cross_sections(d)]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / "report.html", "md": out / "report.md"}
    paths["html"].write_text(render_html(report))
    paths["md"].write_text(render_markdown(report, out / "figures"))
    return paths, doc
