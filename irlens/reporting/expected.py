"""Expected-status tables: a suite's cells with the status, graph breaks and unknown ops a
committed run gave them, kept as CSV, and a new results document checked against them.

A cell is workload x mode x backend x dtype (the backend as every output shows it: `xla (via
dynamo)`; a cross grid's with its acquiring frontend). Any results document makes a table:
compare, bench, cross, a zoo join. Checking a document against a table sorts each cell:

- regressed: its status dropped (ok > mismatch > failed), or it has more graph breaks or more
  unknown ops than the table says;
- improved: its status rose, or it has fewer graph breaks or unknown ops (the table is stale:
  update it);
- changed: a cell the table has as unavailable (not measured) now measured and not ok;
- new: in the document, not in the table;
- not run: in the table, absent from the document or unavailable there (a budget that ran out,
  a library not installed) — a regression only when asked (`strict`).

Counts are compared only where both sides counted them (a row that failed before acquiring has
no graph breaks to compare; eager maps no kernels, so it has no unknown ops).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from irlens.errors import UsageError
from irlens.matrix.document import Document
from irlens.workloads.graphnet import portable_name
from irlens.matrix.row import STATUSES, BadDocument, Row
from irlens.reporting.records import first_line
from irlens.wording import plural

COLUMNS = ("workload", "mode", "backend", "dtype", "status", "graph_breaks", "unknown_ops")
# how far a cell got; unavailable (not measured) is on no rung: leaving it is not an improvement by itself
RANK = {"failed": 0, "mismatch": 1, "ok": 2}
SHOWN_UNKNOWN = 3  # unknown nodes named in a regression's line


@dataclass(frozen=True)
class Cell:
    """One cell's outcome: a table's line, or a document's row as a table would hold it."""

    workload: str
    mode: str
    backend: str
    dtype: str  # "" where neither the row nor its document names one
    status: str
    graph_breaks: int | None = None  # None: not counted (the stack counts none, or the row stopped before)
    unknown_ops: int | None = None  # unknown nodes in the graphs its kernels map onto; None: no coverage
    row: Row | None = field(default=None, compare=False, repr=False)  # the document's row, for its reason

    @property
    def key(self) -> tuple[str, str, str, str]:
        return self.workload, self.mode, self.backend, self.dtype

    @property
    def name(self) -> str:
        return " ".join(part for part in self.key if part)

    def line(self) -> list[str]:
        return [*self.key, self.status, _count(self.graph_breaks), _count(self.unknown_ops)]


def _count(n: int | None) -> str:
    return "" if n is None else str(n)


def backend_of(row: Row, doc: Document) -> str:
    """The backend column: the label every output shows, and in a cross grid the frontend whose
    graphs it ran (the same backend appears once per acquiring frontend there)."""
    return f"{row.backend} (acquired by {row.frontend})" if doc.kind == "cross" else row.label


def document_cells(doc: Document, where: str) -> list[Cell]:
    """The document's rows as cells, sorted; two rows of one cell (documents of different devices
    merged) are a BadDocument: a table keeps one outcome per cell."""
    cells: dict[tuple, Cell] = {}
    for i, r in enumerate(doc.rows, start=1):
        unknown = r.coverage.unknown if r.coverage else None
        breaks = r.notes.get("graph_breaks")
        cell = Cell(portable_name(r.workload), r.mode, backend_of(r, doc), r.dtype or doc.dtype or "", r.status,
                    breaks if isinstance(breaks, int) else None, None if unknown is None else len(unknown), r)
        if cell.key in cells:
            raise BadDocument(f"{where}: row {i} is a second row of cell {cell.name}; a table keeps one per cell "
                              "(check one device's document at a time)")
        cells[cell.key] = cell
    return sorted(cells.values(), key=lambda c: c.key)


def write_table(cells: list[Cell], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        out = csv.writer(f, lineterminator="\n")
        out.writerow(COLUMNS)
        out.writerows(c.line() for c in cells)


def read_table(path: Path) -> list[Cell]:
    """A table as `write_table` wrote it; BadDocument names the file, the line and the field."""
    try:
        with open(path, newline="") as f:
            lines = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise BadDocument(f"cannot read the expected table {path}: {e}") from None
    if not lines or tuple(lines[0]) != COLUMNS:
        raise BadDocument(f"{path}: the first line is not the header {','.join(COLUMNS)}")
    cells: dict[tuple, Cell] = {}
    for n, values in enumerate(lines[1:], start=2):
        where = f"{path}, line {n}"
        if len(values) != len(COLUMNS):
            raise BadDocument(f"{where}: {plural(len(values), 'field')}, not {len(COLUMNS)}")
        workload, mode, backend, dtype, status, breaks, unknown = values
        if status not in STATUSES:
            raise BadDocument(f"{where}: status {status!r} is not one of {', '.join(STATUSES)}")
        if not (workload and mode and backend):
            raise BadDocument(f"{where}: workload, mode and backend must be given")
        cell = Cell(workload, mode, backend, dtype, status, _read_count(breaks, where, "graph_breaks"),
                    _read_count(unknown, where, "unknown_ops"))
        if cell.key in cells:
            raise BadDocument(f"{where}: cell {cell.name} is already on an earlier line")
        cells[cell.key] = cell
    if not cells:
        raise BadDocument(f"{path} holds no cells")
    return list(cells.values())


def _read_count(text: str, where: str, column: str) -> int | None:
    if text == "":
        return None
    if not text.isdigit():
        raise BadDocument(f"{where}: {column} is {text!r}, not a count (or empty: not counted)")
    return int(text)


@dataclass
class Findings:
    regressed: list[str] = field(default_factory=list)
    improved: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    not_run: list[str] = field(default_factory=list)
    compared: int = 0  # cells in both the table and the document, measured in the document
    as_expected: int = 0  # of those, the cells nothing above names

    def exit_status(self, strict: bool = False) -> int:
        """1 on a regression (with `strict`, a cell not run too), else 0."""
        return 1 if self.regressed or (strict and self.not_run) else 0


def check(table: list[Cell], got: list[Cell]) -> Findings:
    """The document's cells `got` against the table's."""
    found = Findings()
    expected = {c.key: c for c in table}
    measured = {c.key: c for c in got}
    for cell in got:
        if cell.key not in expected:
            found.new.append(f"{cell.name}: {_outcome(cell)}")
    for exp in table:
        cell = measured.get(exp.key)
        if cell is None:
            found.not_run.append(f"{exp.name}: not in the document (expected {exp.status})")
        elif cell.status == "unavailable" and exp.status != "unavailable":
            found.not_run.append(f"{exp.name}: unavailable ({first_line(cell.row.reason if cell.row else '')}); "
                                 f"expected {exp.status}")
        else:
            found.compared += 1
            lines = (found.regressed, found.improved, found.changed)
            before = sum(map(len, lines))
            _compare(exp, cell, found)
            found.as_expected += sum(map(len, lines)) == before
    return found


def _compare(exp: Cell, cell: Cell, found: Findings) -> None:
    if cell.status != exp.status:
        line = f"{cell.name}: {exp.status} -> {_outcome(cell)}"
        if exp.status not in RANK:  # measured now, not before
            (found.improved if cell.status == "ok" else found.changed).append(line)
        else:
            (found.regressed if RANK[cell.status] < RANK[exp.status] else found.improved).append(line)
    for what, was, now in (("graph breaks", exp.graph_breaks, cell.graph_breaks),
                           ("unknown ops", exp.unknown_ops, cell.unknown_ops)):
        if was is None or now is None or was == now:
            continue
        line = f"{cell.name}: {what} {was} -> {now}"
        if now > was and what == "unknown ops" and cell.row and cell.row.coverage:
            nodes = cell.row.coverage.unknown or []
            line += f" ({', '.join(nodes[:SHOWN_UNKNOWN])}{', ...' if len(nodes) > SHOWN_UNKNOWN else ''})"
        (found.regressed if now > was else found.improved).append(line)


def _outcome(cell: Cell) -> str:
    """The status, with the first line of why where it is not ok."""
    reason = first_line(cell.row.reason) if cell.row and cell.status != "ok" else ""
    return f"{cell.status} ({reason})" if reason else cell.status


def findings_lines(found: Findings, update: str, strict: bool = False) -> list[str]:
    """What `irlens expected check` prints; `update` is the command that rewrites the table."""
    lines = [f"{plural(found.compared, 'cell')} compared: {found.as_expected} as expected, "
             f"{plural(len(found.regressed), 'regression')}, {plural(len(found.improved), 'improvement')}, "
             f"{len(found.changed)} changed; {len(found.new)} new, "
             f"{len(found.not_run)} not run"]
    sections = [
        ("REGRESSED", found.regressed, "a status dropped (ok > mismatch > failed), or more graph breaks or "
                                       "unknown ops"),
        ("IMPROVED", found.improved, f"better than the table: update it ({update})"),
        ("CHANGED", found.changed, f"not measured before, measured now and not ok: update the table ({update})"),
        ("NEW", found.new, "cells the table does not have"),
        ("NOT RUN", found.not_run, "cells of the table the document has no measurement of"
                                   + ("" if strict else " (not a regression without --strict)")),
    ]
    for title, items, what in sections:
        if items:
            lines += ["", f"{title} ({len(items)}): {what}", *(f"  {item}" for item in items)]
    return lines


def suite_table(tables: Path, suite: str, existing: bool) -> Path:
    """The CSV of `suite` in the folder `tables`; UsageError for a name that is not a plain file
    stem, and (`existing`) for a suite with no table there, listing those there are."""
    if not suite or not all(ch.isalnum() or ch in "-_." for ch in suite) or suite.startswith("."):
        raise UsageError(f"suite name {suite!r}: letters, digits, '-', '_' and '.' only")
    path = tables / f"{suite}.csv"
    if existing and not path.is_file():
        there = sorted(p.stem for p in tables.glob("*.csv")) if tables.is_dir() else []
        raise UsageError(f"no expected table for suite {suite!r} in {tables}; "
                         + (f"there are: {', '.join(there)}" if there else "it holds none (pass --tables DIR)"))
    return path
