"""nvFuser's kernel database, shared safely between runs and worker processes.

With `NVFUSER_ENABLE=kernel_db`, nvFuser keeps every kernel it compiles in
`$TMPDIR/nvfuser_kernel_db`: the CUDA source (`kernel_N.cu`), the binary NVRTC made of it
(`kernel_N.cubin`) and a line per kernel in `db.csv` (signature, compile arguments, the two file
names); a later compile of the same source with the same arguments loads the binary instead.
It numbers new files by how many entries the process has seen, so two processes adding to one
database write the same `kernel_N` files, and one kernel's source can end up beside another's
binary. So each worker process gets its own copy (`worker_copy`: the shared entries linked, the
list copied), kept under its run's folder, and after the run `merge` adds what its copies
learned to the shared database, each kernel once, numbered afresh. Runs at once (`irlens bench
--gpus`: one per GPU) keep their copies apart and take turns on the shared database (a file lock).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import uuid
from pathlib import Path

ROOT_ENV = "IRLENS_NVFUSER_KERNEL_DB"  # the folder of the shared database and the runs' copies (irlens.compile_caches)
RUN_ENV = "IRLENS_NVFUSER_RUN"  # the run a worker's copy belongs to (merged at the run's end)
DB = "nvfuser_kernel_db"  # nvFuser's folder under the temporary directory
LIST = "db.csv"
HEADER = "kernel_signature,compile_args,kernel_code_file,cubin_file"
SHARED = "shared"
RUNS = "runs"
_LINE = re.compile(r"^([\w-]+),([\w -=]+),([\w\-/]+\.cu),([\w\-/]+\.cubin)$")  # nvFuser's own reading of a line


def read_entries(db: Path) -> list[tuple[str, str, str, str]]:
    """(signature, compile arguments, source file, binary file) of each well-formed line whose
    files exist; [] for a missing database or one whose header nvFuser would not accept."""
    listing = db / LIST
    if not listing.is_file():
        return []
    lines = listing.read_text().splitlines()
    if not lines or lines[0] != HEADER:
        return []
    found = []
    for line in lines[1:]:
        m = _LINE.match(line)
        if m and (db / m.group(3)).is_file() and (db / m.group(4)).is_file():
            found.append(m.groups())
    return found


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


def worker_copy(root: Path, run: str) -> Path:
    """A fresh temporary directory under run `run`'s folder whose `nvfuser_kernel_db` holds the
    shared database's kernels (linked, not copied: nvFuser never rewrites a kernel's files) and
    its own list; the worker process uses it as TMPDIR."""
    tmp = root / RUNS / run / f"worker-{uuid.uuid4().hex[:12]}"
    db = tmp / DB
    db.mkdir(parents=True)
    with _shared(root, exclusive=False) as shared:
        entries = read_entries(shared)
        for _, _, code, binary in entries:
            for name in (code, binary):
                try:
                    os.link(shared / name, db / name)
                except OSError:
                    shutil.copyfile(shared / name, db / name)
    (db / LIST).write_text("\n".join([HEADER, *(",".join(e) for e in entries)]) + "\n")
    return tmp


def worker_env(env: dict[str, str]) -> dict[str, str]:
    """The variables that give a new worker process its own copy of the database, where `env`
    (the parent's) names one (`ROOT_ENV`, `RUN_ENV`); else none."""
    if not env.get(ROOT_ENV) or not env.get(RUN_ENV):
        return {}
    enable = [o for o in env.get("NVFUSER_ENABLE", "").split(",") if o]
    return {"TMPDIR": str(worker_copy(Path(env[ROOT_ENV]), env[RUN_ENV])),
            "NVFUSER_ENABLE": ",".join(dict.fromkeys([*enable, "kernel_db"]))}


def merge(root: Path, run: str) -> int:
    """Add the kernels run `run`'s worker copies hold and the shared database lacks to the shared
    one, numbered after its own, each source once (nvFuser keys its entries by source: numbering
    stays the count of entries, so a worker's new files never reuse a linked file's name);
    remove the copies. Returns how many were added. Call it once none of the run's workers runs."""
    with _shared(root, exclusive=True) as shared:
        return _merge_into(shared, root / RUNS / run)


def _merge_into(shared: Path, run_dir: Path) -> int:
    entries = read_entries(shared)
    known = {(shared / code).read_text() for _, _, code, _ in entries}
    added = 0
    for copy in sorted(run_dir.glob("worker-*")):
        db = copy / DB
        for signature, args, code, binary in read_entries(db):
            source = (db / code).read_text()
            if source in known:
                continue
            number = len(entries)
            name_code, name_binary = f"kernel_{number}.cu", f"kernel_{number}.cubin"
            shutil.copyfile(db / code, shared / name_code)
            shutil.copyfile(db / binary, shared / name_binary)
            entries.append((signature, args, name_code, name_binary))
            known.add(source)
            added += 1
        shutil.rmtree(copy, ignore_errors=True)
    listing = shared / (LIST + ".new")
    listing.write_text("\n".join([HEADER, *(",".join(e) for e in entries)]) + "\n")
    listing.replace(shared / LIST)
    shutil.rmtree(run_dir, ignore_errors=True)
    return added
