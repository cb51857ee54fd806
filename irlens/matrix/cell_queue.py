"""Which cell a run's thread takes next.

A cell waits for its float64 reference, and the references are computed one after another in the
background. Handed out in a fixed order, a thread could wait for a later reference while cells whose
reference is there stand queued behind it: on a GPU at the bench size, where a reference takes
seconds, a run's threads waited minutes on the references of every model's eager cells before any
compile started (docs/results/zoo-h200-bench). So a thread takes the first cell, in the
run's order, whose reference is ready, one of its own worker's kind where there is one (no new
worker process); where none is ready, the cell whose reference comes first, so that every waiting
thread waits for the same, next reference.
"""
from __future__ import annotations

import threading
from typing import Callable, Hashable

from irlens.matrix.spec import CellSpec


class CellQueue:
    def __init__(self, cells: list[CellSpec], worker_key: Callable[[CellSpec], Hashable],
                 ready: Callable[[CellSpec], bool], rank: Callable[[CellSpec], int]):
        """`cells` in the run's order; `worker_key`: the worker a cell runs in (cells of one key share
        one); `ready`: whether its reference is there; `rank`: where its reference comes in the order
        they are computed."""
        self._left = list(cells)
        self._worker_key, self._ready, self._rank = worker_key, ready, rank
        self._lock = threading.Lock()

    def take(self, previous: CellSpec | None = None) -> CellSpec | None:
        """The next cell for a thread whose last cell was `previous`; None when none is left."""
        with self._lock:
            if not self._left:
                return None
            ready = [c for c in self._left if self._ready(c)]
            same = [c for c in ready if previous is not None and self._worker_key(c) == self._worker_key(previous)]
            if same or ready:
                cell = (same or ready)[0]
            else:  # wait for the next reference, in a cell of this worker's kind where one is
                cell = min(self._left, key=lambda c: (self._rank(c), previous is None
                                                      or self._worker_key(c) != self._worker_key(previous)))
            self._left.remove(cell)
            return cell

    def close(self) -> None:
        """Hand out no more cells (the run stops: an exception, Ctrl-C)."""
        with self._lock:
            self._left.clear()
