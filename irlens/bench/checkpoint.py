"""A bench's document, written after every row, so that no way of stopping loses what finished.

From the ceilings on, every finished timed row is added and the whole document written again,
off the cells' threads (irlens.matrix.saving; `save`: irlens.matrix.write_document, which replaces
the file only once the new one is complete): a run killed at any point (SIGKILL, a crash) leaves
the rows that finished (but those of the write under way), and one
row per cell that had not (`unavailable`, phase STOPPED_PHASE, saying so), which `irlens bench
--rerun` runs and puts in place. A run stopped by an exception writes the same document, its
not-run rows naming the error, before the error goes on to the command line.
"""
from __future__ import annotations

import threading
import time

from irlens.core.ceilings import Ceilings
from irlens.bench.ceilings_cache import driver_version
from irlens.matrix import Document, Plan, Row
from irlens.matrix.document import device_name, versions
from irlens.matrix.execution import cell_row
from irlens.matrix.row import STOPPED_PHASE
from irlens.matrix.saving import BackgroundSave
from irlens.matrix.spec import CellSpec
from irlens.reporting.roofline import apply_roofline

NOT_REACHED = "not run: the run had not reached it when this document was written"


class Checkpoint:
    """The rows of `plans` (one per dtype) finished so far; `save(document)` after each, in the
    background, until `close()`."""

    def __init__(self, plans: list[Plan], save, started: float):
        self.plans, self.save, self.started = plans, save, started
        self.finished: dict[tuple[str, CellSpec], Row] = {}
        self.measured: Ceilings | None = None
        self._header: tuple | None = None
        self._lock = threading.RLock()  # a document is made under it
        # the only writer beside the caller's thread, which writes before the first row and after close()
        self._saver = None if save is None else BackgroundSave(self.write, "the bench's document")

    def begin(self, measured: Ceilings) -> None:
        """The timed cells start, against `measured`: the first document, every row not run yet."""
        self.measured = measured
        self.write()

    def add(self, plan: Plan, cell: CellSpec, row: Row) -> None:
        """A finished row (annotated: its dtype, its work, its kernels' times), then the document."""
        with self._lock:
            self.finished[(plan.dtype, cell)] = row
        if self._saver is not None:
            self._saver.request()

    def document(self, not_run: str = NOT_REACHED) -> Document:
        """Every planned cell in plan order: its finished row, else an `unavailable` row saying `not_run`;
        the finished rows' rooflines against the ceilings so far (none before they are measured)."""
        with self._lock:
            rows = [self.finished.get((plan.dtype, cell)) or _not_run(plan, cell, not_run)
                    for plan in self.plans for cell in plan.cells()]
            done = [r for r in rows if r.phase != STOPPED_PHASE]
            ceilings = None if self.measured is None else apply_roofline(done, self.measured)
            if self._header is None:
                device = self.plans[0].device
                self._header = (device, device_name(device), versions(), self.plans[0].preset, driver_version())
            device, name, found, preset, driver = self._header
            return Document("bench", rows, device, name, found, preset, driver=driver, ceilings=ceilings,
                            wall_s=time.time() - self.started)

    def write(self, not_run: str = NOT_REACHED) -> None:
        if self.save is not None:
            self.save(self.document(not_run))

    def close(self) -> None:
        """No more writes in the background (a later `write` is the caller's)."""
        if self._saver is not None:
            self._saver.close()

    def stopped(self, error: BaseException) -> str:
        """The document written for a run that `error` stopped; a line saying so."""
        reason = f"not run: the run stopped at {type(error).__name__}: {error}"
        self.close()
        self.write(reason)
        done = len(self.finished)
        cells = sum(len(plan.cells()) for plan in self.plans)
        kept = "written with" if self.save is not None else "(no --json to write it to) had"
        return (f"irlens bench: the run stopped at {type(error).__name__}: {error}; its document {kept} the {done} "
                f"rows that finished and {cells - done} not run (`irlens bench --rerun` on it runs them)")


def _not_run(plan: Plan, cell: CellSpec, reason: str) -> Row:
    row = cell_row(plan, cell).unavailable(STOPPED_PHASE, reason)
    row.dtype, row.preset = plan.dtype, plan.preset
    return row
