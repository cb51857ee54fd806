"""The cells of a results document: which cell a row is of, and the cells an earlier document
did not get right (the one planner of `irlens bench --rerun` and `irlens zoo --fill`)."""
from __future__ import annotations

from typing import Iterable

from irlens.matrix.document import Document
from irlens.matrix.row import Row

Cell = tuple  # (workload, mode, backend), and in a bench document the dtype


def cell_of(row: Row, kind: str) -> Cell:
    """The cell `row` is of in a document of `kind`: a bench document holds several dtypes, so its
    cells name theirs; a compare document runs one (or each model its own, which a row that failed
    early does not know): its cells do not."""
    return (row.workload, row.mode, row.backend, row.dtype) if kind == "bench" else (row.workload, row.mode, row.backend)


def cells_not_ok(previous: Document, asked: Iterable[Cell] | None = None, not_run: bool = False) -> frozenset[Cell]:
    """The cells of `asked` (default: every cell `previous` has a row for) that `previous` holds no ok
    row for: failed, mismatched, timed out, left by a budget, starved, stopped, or absent. With
    `not_run`, only those it holds no row that ran for (never run, or unavailable), not its
    failures and mismatches."""
    done = {cell_of(r, previous.kind) for r in previous.rows
            if r.status == "ok" or (not_run and r.status != "unavailable")}
    asked = (cell_of(r, previous.kind) for r in previous.rows) if asked is None else asked
    return frozenset(c for c in asked if c not in done)
