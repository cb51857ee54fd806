"""A bench run's roofline figures: its ceilings (the sweep's, raised to the best rate its
kernels were timed at: `irlens.core.ceilings.raised_to`), each row's step and each kernel against them.

`apply_roofline` is the one computation: `irlens bench` runs it after each dtype over the rows
so far, and `recompute` runs it again over a stored document (the sweep's figures are kept in
the ceilings' `raised`, so it gives the same figures, and brings older documents to this rule).

A row's % of ceiling is ideal time / device time, ideal = max(bytes / memory bandwidth,
exact flops / matmul rate of its dtype); `bound` says which term is larger. Exact flops are the
matrix products' (irlens.reporting.ceiling.exact_flops): the estimated elementwise flops count in
TFLOP/s, shown as an estimate, but never make a row or a kernel compute-bound, nor raise a
ceiling. A kernel's is the same over its own bytes, flops and launch time
(irlens.reporting.ceiling, which also says why a figure above 100 % is a model error).
"""
from __future__ import annotations

import dataclasses

from irlens.core.ceilings import Ceilings, Seen, raised_to, swept
from irlens.matrix import Document, Row
from irlens.matrix.records import RowRoofline, StepWork
from irlens.reporting.ceiling import ceiling_for, dram_bytes, exact_flops, judge, model_error


def roofline(row: Row, must: StepWork | None, ceilings: Ceilings) -> RowRoofline | None:
    """The row's step against the ceilings: GB/s and TFLOP/s of the work it must do, its % of
    ceiling, which bound, and `model_error` where that % is above 100."""
    timing = row.bench_field("device_timing")
    if must is None or row.status != "ok" or timing is None or not timing.device_us:
        return None
    seconds = timing.device_us * 1e-6
    peak = (ceilings.peak_tflops(row.dtype or "float32") or ceilings.peak_tflops("float32")) * 1e12
    memory_s, compute_s = must.bytes / (ceilings.memory_gbps * 1e9), exact_flops(must.flops, must.matmul_flops) / peak
    pct, bound = 100.0 * max(memory_s, compute_s) / seconds, "memory" if memory_s >= compute_s else "compute"
    return RowRoofline(gbps=must.bytes / seconds / 1e9, tflops=must.flops / seconds / 1e12, pct_of_ceiling=pct,
                       bound=bound, model_error=model_error(pct, bound),
                       matmul_tflops=None if must.matmul_flops is None else must.matmul_flops / seconds / 1e12)


def judge_kernels(row: Row, ceilings: Ceilings | None) -> None:
    """Each kernel record's % of ceiling, bound and model error (from its time, bytes and flops);
    the row's count of flagged kernels."""
    ceiling = ceiling_for(ceilings)
    for k in row.kernels:
        verdict = judge(k, ceiling, row.dtype or "float32")
        k.pct_of_ceiling, k.bound, k.model_error, k.via_l2 = verdict.pct, verdict.bound, verdict.model_error, verdict.via_l2
    if row.bench_field("roofline"):
        row.bench.roofline.kernels_flagged = sum(bool(k.model_error) for k in row.kernels)


def kernel_rates(row: Row, ceilings: Ceilings) -> list[Seen]:
    """The rates the row's timed kernels ran at: GB/s of the bytes they must have moved through
    DRAM (all but the L2's size: an L2-served kernel shows nothing of DRAM), TFLOP/s of their
    exact flops (held to the matmul ceiling of the row's dtype). Only rows that are ok count."""
    if row.status != "ok":
        return []
    seen = []
    for k in row.kernels:
        us = k.time_us
        if not us:
            continue
        by = f"{k.name} in {row.workload} {row.mode} {row.label}"
        if dram_bytes(k.bytes, ceilings.l2_bytes):
            seen.append(Seen("memory", dram_bytes(k.bytes, ceilings.l2_bytes) / us / 1e3, f"{by} ({row.dtype})"))
        if exact_flops(k.flops, k.matmul_flops):
            seen.append(Seen(ceilings.matmul_key(row.dtype or "float32"),
                             exact_flops(k.flops, k.matmul_flops) / us / 1e6, by))
    return seen


def apply_roofline(rows: list[Row], measured: Ceilings) -> Ceilings:
    """The run's ceilings (the sweep's in `measured`, raised by the rows' kernels), and every
    row's roofline and kernel verdicts against them. Rows need their kernels' times and flops
    (irlens.bench.run.annotate_kernels) and their bench record's `must`."""
    sweep = swept(measured)
    ceilings = raised_to(sweep, (s for row in rows for s in kernel_rates(row, sweep)))
    for row in rows:
        if row.bench is not None:
            row.bench.roofline = roofline(row, row.bench.must, ceilings)
        judge_kernels(row, ceilings)
    return ceilings


def recompute(doc: Document) -> Document:
    """A bench document with its roofline figures made again by `apply_roofline`: per set of
    ceilings (one per GPU and rerun of the run), over the rows measured against it."""
    groups: dict[Ceilings | None, list[Row]] = {}
    # copies: the stored document's kernels keep their verdicts (apply_roofline makes each row's roofline anew)
    rows = [dataclasses.replace(r, kernels=[dataclasses.replace(k) for k in r.kernels],
                                bench=r.bench and dataclasses.replace(r.bench)) for r in doc.rows]
    for row in rows:
        groups.setdefault(row.bench_field("ceilings") or doc.ceilings, []).append(row)
    now = {measured: apply_roofline(group, measured) for measured, group in groups.items() if measured is not None}
    for row in rows:
        if row.bench_field("ceilings"):
            row.bench.ceilings = now[row.bench.ceilings]
    parts = None if doc.parts is None else [dataclasses.replace(p, ceilings=now.get(p.ceilings, p.ceilings))
                                            for p in doc.parts]
    return dataclasses.replace(doc, rows=rows, parts=parts, ceilings=now.get(doc.ceilings, doc.ceilings))
