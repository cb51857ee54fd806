"""`irlens report`: the comparison as a self-contained HTML page and its Markdown twin.

`write_report(docs, out)` renders compare documents (`irlens compare --json`, or
`irlens.compare.run_matrix`) into `out/report.html`, `out/report.md` (+ `out/figures/*.svg`)
and `out/results.json` (the rows it drew). `report_main(args)` is the command: it reads
`--from` files, or runs the CPU tiny matrix when none is given.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from irlens.documents import read_json
from irlens.report.blocks import Table
from irlens.report.build import build_report
from irlens.report.html import render_html
from irlens.report.markdown import render_markdown


def merge_documents(docs: list[dict]) -> dict:
    """One document from several (a CPU run and a GPU run): every row keeps its device."""
    if len(docs) == 1:
        return docs[0]
    rows = [{**row, "device": row.get("device", d.get("device")), "device_name": row.get("device_name", d.get("device_name")),
             "ceilings": row.get("ceilings", d.get("ceilings"))}
            for d in docs for row in d.get("rows", [])]
    devices = list(dict.fromkeys(f"{d.get('device')} ({d.get('device_name', '')})" for d in docs))
    presets = list(dict.fromkeys(str(d.get("preset", "?")) for d in docs))
    return {"device": " + ".join(devices), "device_name": docs[0].get("device_name"), "preset": "/".join(presets),
            "versions": docs[0].get("versions", {}), "rows": rows,
            "runs": [{k: v for k, v in d.items() if k != "rows"} for d in docs]}


def report_frontend_table(doc: dict) -> Table | None:
    """The frontend table for the document's workloads (those this process can resolve)."""
    import torch

    from irlens.report.frontend_table import frontend_table
    from irlens.user_workload import resolve_workload

    workloads = []
    for name in dict.fromkeys(r["workload"] for r in doc.get("rows", [])):
        try:
            workloads.append(resolve_workload(name))
        except Exception:  # noqa: BLE001  (a user workload from elsewhere: left out of the table)
            continue
    if not workloads:
        return None
    mode = "fwdbwd" if any(r["mode"] == "fwdbwd" for r in doc["rows"]) else "fwd"
    device = "cuda" if str(doc.get("device", "")).startswith("cuda") and torch.cuda.is_available() else "cpu"
    preset = doc.get("preset") if doc.get("preset") in ("tiny", "bench") else "tiny"
    return frontend_table(workloads, mode, preset if device == "cuda" else "tiny", device)


def write_report(docs: list[dict] | dict, out: str | Path, frontends: bool = True) -> dict[str, Path]:
    """Render; returns the paths written (html, md, json)."""
    from irlens.compare import jsonable
    from irlens.report.cross_grid import cross_sections, is_cross

    docs = docs if isinstance(docs, list) else [docs]
    cross = [d for d in docs if is_cross(d)]  # `compare --cross` grids, drawn beside the native pairings
    doc = merge_documents([d for d in docs if not is_cross(d)] or [{**cross[0], "rows": []}])
    report = build_report(doc, report_frontend_table(doc) if frontends else None)
    report.sections += [s for d in cross for s in cross_sections(d)]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / "report.html", "md": out / "report.md", "json": out / "results.json"}
    paths["html"].write_text(render_html(report))
    paths["md"].write_text(render_markdown(report, out / "figures"))
    paths["json"].write_text(json.dumps(jsonable(doc), indent=1, allow_nan=False))
    return paths


def load_documents(paths: list[str]) -> list[dict]:
    """Read compare documents (plain or `.json.gz`); a missing or malformed file raises ValueError naming it."""
    docs = []
    for path in paths:
        try:
            doc = read_json(path)
        except (OSError, ValueError) as e:
            raise ValueError(f"cannot read compare results from {path}: {e}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
            raise ValueError(f"{path} is not an `irlens compare --json` document (no 'rows' list)")
        docs.append(doc)
    return docs


def only_workloads(docs: list[dict], workloads: list[str]) -> list[dict]:
    """The documents with only the rows of `workloads` (a page small enough to commit); a name
    no document has raises ValueError listing those it has."""
    present = {r["workload"] for d in docs for r in d["rows"]}
    absent = [w for w in workloads if w not in present]
    if absent:
        raise ValueError(f"no rows for workload(s) {', '.join(absent)}; the documents have: {', '.join(sorted(present))}")
    return [{**d, "rows": [r for r in d["rows"] if r["workload"] in workloads]} for d in docs]


def report_main(args) -> int:
    """`irlens report`: args.from_ (list of JSON files; empty: run the CPU tiny matrix), args.out (folder).
    Optional: args.workloads (with --from: only those workloads' rows; else for the matrix run),
    args.backends, args.modes (for the matrix run), args.frontends (False skips the frontend table)."""
    try:
        docs = load_documents(list(args.from_ or []))
    except ValueError as e:
        print(f"irlens report: {e}", file=sys.stderr)
        return 2
    if not docs:
        from irlens.compare import run_matrix
        from irlens.registry import UnknownName

        print("irlens report: no --from given: running the CPU tiny matrix ...", file=sys.stderr)
        try:
            docs = [run_matrix(getattr(args, "workloads", None), getattr(args, "backends", None),
                               getattr(args, "modes", None), device="cpu", preset="tiny")]
        except (UnknownName, ValueError) as e:
            print(f"irlens report: {e}", file=sys.stderr)
            return 2
    elif getattr(args, "workloads", None):
        try:
            docs = only_workloads(docs, args.workloads)
        except ValueError as e:
            print(f"irlens report: {e}", file=sys.stderr)
            return 2
    paths = write_report(docs, args.out or "irlens-report", frontends=getattr(args, "frontends", True))
    for kind in ("html", "md", "json"):
        print(f"wrote {paths[kind]}")
    return 0


from irlens import _callable_submodule  # noqa: E402

_callable_submodule(__name__)  # `irlens.report(results)` stays the API call (irlens.api) once this is imported
