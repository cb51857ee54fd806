"""Taking turns on the device between worker processes: a GPU, or on the CPU the cores.

Cells in several worker processes share the device while they compute references, instantiate, run
and check numerics; a timing has it alone, or other cells' kernels would slow its kernels down (on a
GPU), or their threads take its cores (on the CPU: the float64 references beside a timed step once
read 31,986 µs for a 52 µs step). On a GPU a compile steps aside (`stepped_aside`): it is host work,
on its worker's own cores, beside which a timing may run; were it shared, every timing would wait
for the longest compile under way (a minute or two for Thunder on real models), and a run of many
cells would compile little more than one at a time. A bench, whose device timings are its point and
whose cells compile ahead, keeps its compiles shared (unless `--compiles-aside`). A readers-writer
lock over files: sharers hold `path` with LOCK_SH, a timing with LOCK_EX. A timing that waits holds `path.turnstile`, which every
new sharer passes through, so that sharers arriving later wait behind it (a waiting timing is never
starved). Locks die with their process. Without a path (one process does everything) every block
runs at once. The names say GPU; on a CPU run the same turns are the CPU's. A worker's waits for a
turn are told to its parent (irlens.runtime.call_progress), whose timeout leaves them out. Beside
the turns, float64 references on a GPU take one of REFERENCE_PLACES places first (`reference_place`),
which bounds the memory they take at once.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from typing import Any

from irlens.runtime.call_progress import waiting

_GPU_TURN: tuple[str, Any] | None = None  # this process's hold: ("shared", file) or ("alone", None)


def current_turn() -> str | None:
    """This process's hold on the GPU: "shared", "alone", or None."""
    return _GPU_TURN[0] if _GPU_TURN else None


COMPILES_SHARE_ENV = "IRLENS_COMPILES_SHARE"  # set: a compile keeps its share (`stepped_aside` does nothing)

SHARE = "its turn to share the device"
ALONE = "the device to itself"
PLACE = "a place to compute its float64 reference"

# float64 references computed at once on a GPU: float64 takes four times bfloat16's memory, and six bench
# cells computing theirs at once ran an H100 out of memory, even with the device alone afterwards (the
# other cells' own memory stayed), so that ten references fell back to the CPU at 10 to 134 s each
REFERENCE_PLACES = 2
PLACE_POLL_S = 0.05


def _share(path: str, lock) -> None:
    """Pass the turnstile (behind a waiting timing), then share `lock`."""
    with open(path + ".turnstile", "a") as turn, waiting(SHARE):
        fcntl.flock(turn, fcntl.LOCK_EX)
        fcntl.flock(turn, fcntl.LOCK_UN)
        fcntl.flock(lock, fcntl.LOCK_SH)


@contextlib.contextmanager
def sharing_gpu(path: str | None):
    """Use the GPU beside other sharers for the block; timings wait until it ends."""
    global _GPU_TURN

    if not path or _GPU_TURN is not None:
        yield
        return
    with open(path, "a") as lock:
        _share(path, lock)
        _GPU_TURN = ("shared", lock)
        try:
            yield
        finally:
            _GPU_TURN = None
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def stepped_aside():
    """Hold no turn for the block: a compile's work on the host (tracing, code generation, and the
    first call's kernels, a moment), which a timing elsewhere may run beside; then share again
    (behind a waiting timing). For a GPU's turns only: on the CPU a compile takes a timing's cores.
    A worker whose environment sets COMPILES_SHARE_ENV keeps sharing (a bench's device timings)."""
    global _GPU_TURN

    if _GPU_TURN is None or _GPU_TURN[0] != "shared" or os.environ.get(COMPILES_SHARE_ENV):
        yield
        return
    held = _GPU_TURN
    fcntl.flock(held[1], fcntl.LOCK_UN)
    _GPU_TURN = None
    try:
        yield
    finally:
        _GPU_TURN = held
        _share(held[1].name, held[1])


@contextlib.contextmanager
def timing_turn():
    """Have the device alone for a timing where this process shares it with other workers
    (inside `sharing_gpu(path)`); anywhere else, nothing to wait for."""
    if _GPU_TURN is None or _GPU_TURN[0] == "alone":
        yield
        return
    with gpu_alone(_GPU_TURN[1].name):
        yield


@contextlib.contextmanager
def gpu_alone(path: str | None):
    """Have the GPU alone for the block: step out of this process's share, keep new sharers out,
    wait for the others to finish theirs; then share again."""
    global _GPU_TURN

    if not path or (_GPU_TURN is not None and _GPU_TURN[0] == "alone"):
        yield
        return
    held = _GPU_TURN
    with open(path, "a") as lock, open(path + ".turnstile", "a") as turn:
        if held is not None:
            fcntl.flock(held[1], fcntl.LOCK_UN)
        with waiting(ALONE):
            fcntl.flock(turn, fcntl.LOCK_EX)
            fcntl.flock(lock, fcntl.LOCK_EX)
        fcntl.flock(turn, fcntl.LOCK_UN)
        _GPU_TURN = ("alone", None)
        try:
            yield
        finally:
            _GPU_TURN = held
            fcntl.flock(lock, fcntl.LOCK_UN)
            if held is not None:
                _share(path, held[1])


@contextlib.contextmanager
def reference_place(path: str | None, places: int = REFERENCE_PLACES):
    """Hold one of `places` places to compute a float64 reference on the device of the turns at
    `path` (a lock file each, `path.reference<i>`), waiting for one to free; take it before the
    turn, so that a reference waiting for a place holds no turn. Without a path, nothing to wait for."""
    if not path:
        yield
        return
    files = [open(f"{path}.reference{i}", "a") for i in range(places)]
    try:
        held = _free_place(files)
        if held is None:
            with waiting(PLACE):
                while (held := _free_place(files)) is None:
                    time.sleep(PLACE_POLL_S)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
    finally:
        for f in files:
            f.close()


def _free_place(files: list) -> Any:
    """The first of `files` this call could lock, or None."""
    for f in files:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        return f
    return None
