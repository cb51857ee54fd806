"""Writing a run's document while it runs, off the threads that run its cells.

A long run writes its document after every finished row, so that a run stopped at any point
leaves what finished. Written in the cell's own thread, each write (the whole document: seconds
for a few hundred rows with their kernels) held that thread's worker idle, and the writes, one
at a time under a lock, grew with the rows. `BackgroundSave` writes in a thread of its own: a cell's
thread asks for a write and goes on; asks that come during a write are answered by one more
write of the newest state, never a backlog. A run killed mid-way loses at most the rows that
finished during the last write.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable


class BackgroundSave:
    """Runs `save()` in its own thread whenever `request()` was called since its last run;
    `close()` waits for a write under way, stops, and makes the write still asked for in the
    caller's thread. A failed write is a warning on stderr (once), not the run's end: the next one
    may succeed (a run's final document is written, and fails, where its caller writes it)."""

    def __init__(self, save: Callable[[], None], what: str = "the run's document"):
        self._save, self._what = save, what
        self._wanted = threading.Event()
        self._lock = threading.Lock()
        self._pending = self._closing = self._warned = False
        self._thread = threading.Thread(target=self._loop, name="irlens-save", daemon=True)
        self._thread.start()

    def request(self) -> None:
        with self._lock:
            self._pending = True
        self._wanted.set()

    def _loop(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            if self._closing:
                return
            self._write()

    def _write(self) -> None:
        with self._lock:
            self._pending = False
        try:
            self._save()
        except Exception as e:  # noqa: BLE001  (a full disk: the run goes on)
            if not self._warned:
                self._warned = True
                print(f"irlens: warning: could not write {self._what} while running: {type(e).__name__}: {e}",
                      file=sys.stderr, flush=True)

    def close(self) -> None:
        """No more writes in the background; the last state asked for is written here. Closing again
        does nothing."""
        self._closing = True
        self._wanted.set()
        self._thread.join()
        if self._pending:
            self._write()
