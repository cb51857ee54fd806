"""Several results documents as one: `join(docs, policy)`, the one join of every command.

    UNION   a report of separate runs (`irlens report`: a CPU run beside a GPU run): every row,
            each keeping its device and its GPU's ceilings; the header lists each run's (`runs`)
    SHARDS  a split run's documents (`zoo --from`, `graphnet --from`): one row per cell; a cell
            two documents both ran is a UsageError (the shards overlap); a row whose cell did not
            run (NOT_RUN_PHASES: a budget, starved, stopped) gives way to a row that ran
    RERUN   a document and later runs of some of its cells (`bench --rerun`, `zoo --fill` then
            `--from ... --rerun`): as SHARDS, but a later document's row replaces an earlier one's
    PARTS   one bench run's GPUs (`bench --gpus`, each GPU's document made a `part`): every row

A cell's row stands where the cell first came. Joined by cell, bench documents stay the first
run's document (its header; the later runs' parts added, marked as reruns); other documents become
a report of their runs (UNION's header, their commands in order), each row keeping eager's time
in its own run as its speedup's base (`with_eager_base`: step times compare within a run only).
"""
from __future__ import annotations

import dataclasses

from irlens.errors import UsageError
from irlens.matrix.cells import cell_of
from irlens.matrix.document import Document, Run
from irlens.matrix.header import Part
from irlens.matrix.records import bench_with
from irlens.matrix.row import NOT_RUN_PHASES

UNION, SHARDS, RERUN, PARTS = "union", "shards", "rerun", "parts"
POLICIES = (UNION, SHARDS, RERUN, PARTS)


def join(docs: list[Document], policy: str = UNION) -> Document:
    """One document from `docs` (at least one), joined by `policy` (see the module's docstring)."""
    if policy not in POLICIES:
        raise ValueError(f"join policy {policy!r}, not one of {', '.join(POLICIES)}")
    if policy == UNION:
        return _union(docs)
    if policy == PARTS:
        first = docs[0]
        return Document("bench", [r for d in docs for r in d.rows], first.device, first.device_name, first.versions,
                        first.preset, driver=first.driver, parts=[p for d in docs for p in run_parts(d)],
                        wall_s=max(d.wall_s for d in docs))
    bench = all(d.kind == "bench" for d in docs)
    if not bench:
        docs = [with_eager_base(d) for d in docs]
    owner = _owners(docs, overlap_ok=policy == RERUN)
    kept = [[r for r in d.rows if owner[cell_of(r, d.kind)] == i] for i, d in enumerate(docs)]
    first: dict = {}  # cell -> where it first came
    for d in docs:
        for r in d.rows:
            first.setdefault(cell_of(r, d.kind), len(first))
    places = [first[cell_of(r, d.kind)] for d, rows in zip(docs, kept) for r in rows]
    commands = [c for d in docs for c in (d.commands or [])] or None
    if bench:
        head, later = docs[0], docs[1:]
        joined = dataclasses.replace(
            head, rows=[r for rows in kept for r in rows], reruns=(head.reruns or 0) + len(later),
            parts=run_parts(head) + [dataclasses.replace(p, rerun=True) for d in later for p in run_parts(d)],
            wall_s=sum(d.wall_s for d in docs), missing=[m for d in docs for m in (d.missing or [])], commands=commands)
    else:
        joined = _union([dataclasses.replace(d, rows=rows) for d, rows in zip(docs, kept)])
        if len(docs) > 1:
            joined = dataclasses.replace(joined, commands=commands)
    return dataclasses.replace(joined, rows=[r for _, r in sorted(zip(places, joined.rows), key=lambda p: p[0])])


def _owners(docs: list[Document], overlap_ok: bool) -> dict[tuple, int]:
    """Cell -> the document whose rows of it are kept: the last that ran it (two that ran it: a
    UsageError unless `overlap_ok`), else the last that tried (its latest attempt)."""
    ran: dict[tuple, int] = {}
    tried: dict[tuple, int] = {}
    for i, d in enumerate(docs):
        for r in d.rows:
            cell = cell_of(r, d.kind)
            if r.phase in NOT_RUN_PHASES:
                tried[cell] = i
                continue
            if ran.setdefault(cell, i) != i and not overlap_ok:
                raise UsageError(f"two documents hold {r.workload} {r.mode} {r.backend}: shards overlap "
                                 "(--rerun: the last one's row)")
            ran[cell] = i
    return tried | ran


def _union(docs: list[Document]) -> Document:
    """Every row of `docs`, each keeping its device (and its GPU's ceilings); one document is itself."""
    if len(docs) == 1:
        return docs[0]
    rows = [dataclasses.replace(row, device=row.device or d.device, device_name=row.device_name or d.device_name,
                                bench=bench_with(row.bench, ceilings=row.bench_field("ceilings") or d.ceilings))
            for d in docs for row in d.rows]
    # one without rows (a shard with nothing to run: no GPU was asked its name) names none
    devices = list(dict.fromkeys(d.machine() for d in docs if d.rows))
    presets = list(dict.fromkeys(str(d.preset or "?") for d in docs))
    kind = "bench" if any(d.kind == "bench" for d in docs) else "compare"
    dtypes = {d.dtype for d in docs}
    named = [d for d in docs if d.rows] or docs
    return Document(kind, rows, " + ".join(devices) or str(docs[0].device), named[0].device_name, docs[0].versions,
                    "/".join(presets),
                    dtype=dtypes.pop() if len(dtypes) == 1 else None,  # one asked for by all, else each row's own
                    runs=[Run(header=dataclasses.replace(d, rows=[])) for d in docs])


def part(doc: Document, gpu: str | None) -> Document:
    """One GPU's bench document as a part of a run: its rows keep the GPU and its ceilings (their
    roofline was computed against them); its one part says which rows it ran and its wall time."""
    return Document("bench", [dataclasses.replace(r, bench=bench_with(r.bench, gpu=gpu, ceilings=doc.ceilings))
                              for r in doc.rows], doc.device,
                    doc.device_name, doc.versions, doc.preset, driver=doc.driver,
                    parts=[Part(gpu, list(dict.fromkeys(r.dtype for r in doc.rows)),
                                list(dict.fromkeys(r.mode for r in doc.rows)), doc.ceilings, doc.wall_s)],
                    wall_s=doc.wall_s)


def run_parts(doc: Document) -> list[Part]:
    """The document's runs, one per GPU; a single-GPU run is one part."""
    return doc.parts or [Part(None, [], [], doc.ceilings)]


def with_eager_base(doc: Document) -> Document:
    """`doc` with each row's `eager_us` (its speedup's base) set from eager's row of the same model
    and mode in it, where not set already (a join keeps each run's own)."""
    eager = {(r.workload, r.mode): r.run_us for r in doc.rows if r.backend == "eager" and r.ran and r.run_us}
    return dataclasses.replace(doc, rows=[
        r if r.backend == "eager" or r.eager_us is not None or (r.workload, r.mode) not in eager
        else dataclasses.replace(r, eager_us=eager[(r.workload, r.mode)]) for r in doc.rows])
