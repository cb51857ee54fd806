"""A document's rows as irlens objects: launches, the stage a kernel refers to, grouping."""
from __future__ import annotations

from collections import defaultdict

from irlens.core.ir import Graph, Kernel
from irlens.matrix import Row


def launches_of(row: Row) -> int | None:
    """Kernel launches per step: on the GPU (a bench row) the device launches the profiler
    recorded, the same for every backend; else the row's `kernel_count` (the launches the
    generated code makes per step, or eager's ATen ops), or one per kernel record in a row
    without a count."""
    if timing := row.bench_field("device_timing"):
        return timing.kernel_launches
    return row.kernel_count if row.kernel_count is not None else len(row.kernels) if row.kernels else None


def kernel_stage(kernel: Kernel, graphs: dict[str, Graph]) -> str | None:
    """The stage a kernel's node ids refer to; a kernel without one maps onto a row's only graph."""
    if kernel.stage in graphs:
        return kernel.stage
    if not kernel.stage and len(graphs) == 1:
        return next(iter(graphs))
    return None


def group_rows(rows: list[Row]) -> dict[tuple[str, str, str], list[Row]]:
    """Rows by (workload, mode, variant), in the document's order. The variant tells apart rows
    that would otherwise meet in one section: the device (a row carries it only in a report
    merged from several runs) and the dtype where the rows have several (a bench run); else "".
    A row with no dtype (one that never instantiated its workload: unavailable, say) joins the
    sections of its workload and mode rather than making one of its own."""
    several_dtypes = len({row.dtype for row in rows if row.dtype}) > 1

    def variant(row: Row, dtype: str | None) -> str:
        return " ".join(filter(None, (row.device, dtype if several_dtypes else None)))

    groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row.dtype or not several_dtypes:
            groups[(row.workload, row.mode, variant(row, row.dtype))].append(row)
    for row in rows:
        if not row.dtype and several_dtypes:
            homes = [key for key, members in groups.items()
                     if key[:2] == (row.workload, row.mode) and members[0].device == row.device]
            for key in homes or [(row.workload, row.mode, variant(row, None))]:
                groups[key].append(row)
    return dict(groups)


REASON_CHARS = 200


def first_line(text: str | None) -> str:
    """A row's reason in one line of at most REASON_CHARS ("" when there is none); the whole
    text stays in the results file (an out-of-memory message lists every process's memory)."""
    text = (text or "").strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= REASON_CHARS else line[:REASON_CHARS - 1] + "…"
