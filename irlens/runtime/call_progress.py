"""Where a worker's call is, told to the process waiting for it: the stage it is in, and how long
it has waited for a turn on the device.

A worker (irlens.runtime.isolation) writes a small file whenever its stage changes or it starts or stops
waiting for a turn (irlens.runtime.gpu_turns); the parent reads it when the call's deadline comes. Time
spent waiting for a turn does not count against the call's timeout: a waiting call is not hung
(its turn comes once the holders are done, each within its own timeout), while on a device shared
by cells that compile for minutes, a quick cell's timing may wait behind them longer than its
whole timeout. A call that does time out says which stage it was in, and since when.

Times are `time.monotonic()`: one clock for every process on the machine (CLOCK_MONOTONIC).
Without a progress file (one process does everything) nothing is written.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass

PROGRESS_ENV = "IRLENS_PROGRESS"  # the file a worker writes its progress to


@dataclass
class Progress:
    stage: str
    stage_since: float
    waited_s: float = 0.0  # the call's waits for a turn that have ended
    waiting_since: float | None = None  # the wait going on now, if any: since when
    waiting_for: str = ""  # what it waits for ("the device to itself")

    def waited(self, now: float) -> float:
        """Seconds the call has waited for turns so far, the wait going on included."""
        return self.waited_s + (now - self.waiting_since if self.waiting_since is not None else 0.0)

    def where(self, now: float) -> str:
        """"compiling, its last 430 s"; while it waits, what for and since when."""
        if self.waiting_since is not None:
            return f"{self.stage}: waiting for {self.waiting_for}, its last {now - self.waiting_since:.0f} s"
        return f"{self.stage}, its last {now - self.stage_since:.0f} s"


def read(path: str) -> Progress | None:
    """The progress a worker last wrote to `path`; None where it wrote none for this call."""
    try:
        with open(path) as f:
            return Progress(**json.load(f))
    except (OSError, ValueError, TypeError):
        return None


# ---- the worker's side

_now: Progress | None = None
_began: float | None = None  # when the call began (time.monotonic())
_spent: dict[str, float] = {}  # the call's seconds per stage so far, its waits for turns left out
_waited_before: float = 0.0  # the call's waits for turns when the stage going on began


def _write() -> None:
    path = os.environ.get(PROGRESS_ENV)
    if not path or _now is None:
        return
    partial = path + ".partial"  # replaced whole: the parent never reads half a file
    try:
        with open(partial, "w") as f:
            json.dump(asdict(_now), f)
        os.replace(partial, path)
    except OSError:  # the run's folder went (its parent stopped): telling nobody must not fail the call
        pass


def begin(stage_name: str) -> None:
    """A new call (or the worker's start): its first stage, nothing waited yet."""
    global _now, _began, _spent, _waited_before
    _now = Progress(stage_name, time.monotonic())
    _began = _now.stage_since
    _spent, _waited_before = {}, 0.0
    _write()


def counted_s() -> float | None:
    """Seconds of this call that count against its timeout (since it began, its waits for turns
    left out); None where no call began here (one process does everything: no timeout)."""
    if _now is None or _began is None:
        return None
    now = time.monotonic()
    return now - _began - _now.waited(now)


def stage(name: str) -> None:
    """The call enters stage `name` ("instantiating", "compiling", "timing", ...)."""
    if _now is None:
        return
    now = time.monotonic()
    _close_stage(now)
    _now.stage, _now.stage_since = name, now
    _write()


def _close_stage(now: float) -> None:
    """Add the stage going on to `_spent` up to `now` (its waits for turns left out); it goes on from `now`."""
    global _waited_before
    waited = _now.waited(now)
    _spent[_now.stage] = _spent.get(_now.stage, 0.0) + max(now - _now.stage_since - (waited - _waited_before), 0.0)
    _now.stage_since, _waited_before = now, waited


def spent() -> dict[str, float]:
    """Where this call's time went so far: seconds per stage, and the waits for turns on the device
    as "waiting for a turn" (nothing where no call began here)."""
    if _now is None:
        return {}
    now = time.monotonic()
    _close_stage(now)
    waited = _now.waited(now)
    return {**_spent, **({"waiting for a turn": waited} if waited else {})}


@contextlib.contextmanager
def waiting(what: str):
    """The block waits for a turn on the device (`what` it waits for); the time does not count
    against the call's timeout."""
    if _now is None or _now.waiting_since is not None:
        yield
        return
    _now.waiting_since, _now.waiting_for = time.monotonic(), what
    _write()
    try:
        yield
    finally:
        _now.waited_s += time.monotonic() - _now.waiting_since
        _now.waiting_since, _now.waiting_for = None, ""
        _write()
