"""nvFuser's kernel database, shared safely between runs and worker processes.

With `NVFUSER_ENABLE=kernel_db`, nvFuser keeps every kernel it compiles in
`$TMPDIR/nvfuser_kernel_db`: the CUDA source (`kernel_N.cu`), the binary NVRTC made of it
(`kernel_N.cubin`) and a line per kernel in `db.csv` (signature, compile arguments, the two file
names); a later compile of the same source with the same arguments loads the binary instead.
It numbers new files by how many entries the process has seen, so two processes adding to one
database write the same `kernel_N` files, and one kernel's source can end up beside another's
binary; and a new file whose name a linked one has would be written through the link into the
shared database. So each worker process gets its own copy (`worker_copy`: the shared entries
linked, renumbered from 0 so that nvFuser's next number is free, the list written afresh), kept
under its run's folder, and `merge` adds what its copies learned to the shared database, each
kernel once, under names no file has, linked rather than copied, and removes the copies. Runs at
once (`irlens bench --gpus`: one per GPU) keep their copies apart and take turns on the shared
database (a file lock). A run holds a lock on its folder while it lives (`claimed`): the folder
of a run that died before merging (killed, out of disk) is merged and removed by the next run
(`merge_dead_runs`). An entry whose files are missing or empty (a write cut short by a full disk)
or a list nvFuser would not read is skipped; the shared folder's files no line names are removed.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import uuid
from pathlib import Path

from irlens.caches.upkeep import warn_once

ROOT_ENV = "IRLENS_NVFUSER_KERNEL_DB"  # the folder of the shared database and the runs' copies (irlens.bench.compile_caches)
CACHE_NAME = "nvFuser's kernel database"
RUN_ENV = "IRLENS_NVFUSER_RUN"  # the run a worker's copy belongs to (merged at the run's end)
DB = "nvfuser_kernel_db"  # nvFuser's folder under the temporary directory
LIST = "db.csv"
HEADER = "kernel_signature,compile_args,kernel_code_file,cubin_file"
SHARED = "shared"
RUNS = "runs"
_LINE = re.compile(r"^([\w-]+),([\w -=]+),([\w\-/]+\.cu),([\w\-/]+\.cubin)$")  # nvFuser's own reading of a line


def read_entries(db: Path) -> list[tuple[str, str, str, str]]:
    """(signature, compile arguments, source file, binary file) of each well-formed line whose
    files exist and are not empty; [] for a missing or unreadable database or one whose header
    nvFuser would not accept."""
    try:
        lines = (db / LIST).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    if not lines or lines[0] != HEADER:
        return []
    found = []
    for line in lines[1:]:
        m = _LINE.match(line)
        if m and all(_size(db / name) for name in m.group(3, 4)):
            found.append(m.groups())
    return found


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@contextlib.contextmanager
def _shared(root: Path, exclusive: bool):
    """The shared database, held against another run's merge (LOCK_EX to change it)."""
    shared = root / SHARED / DB
    shared.mkdir(parents=True, exist_ok=True)
    with open(root / SHARED / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield shared
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextlib.contextmanager
def claimed(root: Path, run: str):
    """Run `run`'s folder, locked while the block runs: no other run takes it for a dead one's."""
    runs = root / RUNS
    runs.mkdir(parents=True, exist_ok=True)
    with open(runs / f"{run}.lock", "a") as lock:  # before the folder: a folder without a free lock is alive
        fcntl.flock(lock, fcntl.LOCK_EX)
        (runs / run).mkdir(exist_ok=True)
        try:
            yield runs / run
        finally:
            with contextlib.suppress(OSError):
                os.remove(runs / f"{run}.lock")


def merge_dead_runs(root: Path) -> int:
    """Merge, then remove, the folders of runs that ended without merging (their lock is free;
    a folder without a lock is an older irlens's); kernels added."""
    runs, added = root / RUNS, 0
    for folder in sorted(runs.glob("*")) if runs.is_dir() else []:
        if folder.suffix == ".lock" and not folder.with_suffix("").exists():
            folder = folder.with_suffix("")  # a run that died after its last merge: only its lock is left
        elif not folder.is_dir():
            continue
        try:
            fd = os.open(runs / f"{folder.name}.lock", os.O_RDWR)
        except FileNotFoundError:
            fd = None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if folder.is_dir():
                added += merge(root, folder.name)
            with contextlib.suppress(OSError):
                os.remove(runs / f"{folder.name}.lock")
        except BlockingIOError:
            continue  # alive
        finally:
            if fd is not None:
                os.close(fd)
    return added


def worker_copy(root: Path, run: str) -> Path:
    """A fresh temporary directory under run `run`'s folder whose `nvfuser_kernel_db` holds the
    shared database's kernels (linked, not copied: nvFuser never rewrites a kernel's files),
    numbered 0, 1, ... as nvFuser numbers its own, and its own list; the worker process uses it
    as TMPDIR."""
    tmp = root / RUNS / run / f"worker-{uuid.uuid4().hex[:12]}"
    db = tmp / DB
    db.mkdir(parents=True)
    listed = []
    with _shared(root, exclusive=False) as shared:
        for number, (signature, args, code, binary) in enumerate(read_entries(shared)):
            names = (f"kernel_{number}.cu", f"kernel_{number}.cubin")
            for name, theirs in zip(names, (code, binary)):
                _publish(shared / theirs, db / name)
            listed.append((signature, args, *names))
    (db / LIST).write_text("\n".join([HEADER, *(",".join(e) for e in listed)]) + "\n")
    return tmp


def _publish(source: Path, target: Path) -> None:
    """`target` as `source`'s complete file: linked, else copied beside and renamed in place."""
    try:
        os.link(source, target)
    except OSError:
        partial = target.with_name(target.name + ".partial")
        shutil.copyfile(source, partial)
        partial.replace(target)


def worker_env(env: dict[str, str]) -> dict[str, str]:
    """The variables that give a new worker process its own copy of the database, where `env`
    (the parent's) names one (`ROOT_ENV`, `RUN_ENV`); else none. A copy that cannot be made (a
    full disk, a folder it may not write) is a warning, once: the worker runs without one."""
    if not env.get(ROOT_ENV) or not env.get(RUN_ENV):
        return {}
    try:
        copy = worker_copy(Path(env[ROOT_ENV]), env[RUN_ENV])
    except OSError as e:
        warn_once(CACHE_NAME, e)
        return {}
    enable = [o for o in env.get("NVFUSER_ENABLE", "").split(",") if o]
    return {"TMPDIR": str(copy), "NVFUSER_ENABLE": ",".join(dict.fromkeys([*enable, "kernel_db"]))}


def merge(root: Path, run: str) -> int:
    """Add the kernels run `run`'s worker copies hold and the shared database lacks to the shared
    one, each source once, under names no file in it has (a worker's new files never reuse a
    linked file's name: see `worker_copy`); remove the copies, and the shared files no line names.
    Returns how many were added. Call it once none of the run's workers runs. Raises OSError where
    the disk or the folder refuses (the run's folder is removed all the same)."""
    try:
        with _shared(root, exclusive=True) as shared:
            return _merge_into(shared, root / RUNS / run)
    finally:
        shutil.rmtree(root / RUNS / run, ignore_errors=True)


_NUMBERED = re.compile(r"^kernel_(\d+)\.")


def _merge_into(shared: Path, run_dir: Path) -> int:
    entries = read_entries(shared)
    known = {(shared / code).read_text(errors="replace") for _, _, code, _ in entries}
    number = 1 + max((int(m.group(1)) for p in shared.iterdir() if (m := _NUMBERED.match(p.name))), default=-1)
    added = 0
    try:
        for copy in sorted(run_dir.glob("worker-*")):
            db = copy / DB
            for signature, args, code, binary in read_entries(db):
                source = (db / code).read_text(errors="replace")
                if source in known:
                    continue
                names = (f"kernel_{number}.cu", f"kernel_{number}.cubin")
                _publish(db / code, shared / names[0])
                _publish(db / binary, shared / names[1])
                entries.append((signature, args, *names))
                known.add(source)
                number, added = number + 1, added + 1
    finally:  # what was published so far is listed, whatever stopped the rest
        listing = shared / (LIST + ".new")
        listing.write_text("\n".join([HEADER, *(",".join(e) for e in entries)]) + "\n")
        listing.replace(shared / LIST)
        listed = {LIST, *(name for e in entries for name in e[2:])}
        for path in shared.iterdir():
            if path.name not in listed:
                path.unlink(missing_ok=True)
    return added
