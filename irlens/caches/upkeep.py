"""Keeping the compilers' persistent caches from costing a run: their size, the disk, what a killed compile left.

- `default_root`, `default_max_gb`: where the caches are and what they may hold, from the environment
  (light, so that `irlens bench --help` shows them without importing torch).
- `warn_once`: an error of a cache (a full disk, a folder it may not write, an entry it cannot
  read) is one warning per cache and run, never the run's end.
- `evict`: the caches kept under a cap, the entries written longest ago removed first. An entry
  is a folder holding only files (a Triton kernel, an Inductor key's folder or bucket), or a file
  beside folders or at a cache's top (a JAX executable); Inductor's `locks` are never one.
- `disk_free`: what the disk has left, for the checks that turn caching off on a nearly full disk.
- `drop_unfinished`: Inductor takes a C++ library or object file as built once the file exists
  (torch._inductor.codecache `_worker_compile_cpp`), so a compiler killed while writing it (a cell's
  timeout kills its worker's process group) leaves a file every later compile of that code loads
  ("file too short"). Such a file (not a complete ELF file: too short for its own section headers,
  zero bytes included) is removed, under Inductor's own lock for its key so that a build running
  in another process is never touched.
"""
from __future__ import annotations

import contextlib
import fcntl
import getpass
import os
import re
import shutil
import struct
import sys
import tempfile
from pathlib import Path

from irlens.errors import UsageError

GiB = 1 << 30
MIN_FREE_BYTES = 2 * GiB  # less free on the cache's disk: caching turns off for the run
ROOT_ENV = "IRLENS_CACHE_DIR"
MAX_ENV = "IRLENS_CACHE_MAX_GB"
DEFAULT_MAX_GB = 5.0
_warned: set[str] = set()


def default_root() -> Path:
    """$IRLENS_CACHE_DIR, else $XDG_CACHE_HOME/irlens, else ~/.cache/irlens."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "irlens"


def default_max_gb() -> float:
    """$IRLENS_CACHE_MAX_GB, else DEFAULT_MAX_GB."""
    try:
        return float(os.environ.get(MAX_ENV) or DEFAULT_MAX_GB)
    except ValueError:
        raise UsageError(f"${MAX_ENV} must be a number of GiB, not {os.environ[MAX_ENV]!r}") from None


def new_run() -> None:
    """Each cache warns again in a new run."""
    _warned.clear()


def warn_once(cache: str, error: BaseException | str) -> None:
    """'irlens: warning: not using <cache> for the rest of this run: <error>', once per cache and run."""
    if cache in _warned:
        return
    _warned.add(cache)
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
    print(f"irlens: warning: not using {cache} for the rest of this run: {text}", file=sys.stderr, flush=True)


def disk_free(path: Path) -> int:
    """Bytes free on the disk of `path` (its nearest existing folder)."""
    path = Path(path).absolute()
    while not path.exists():
        path = path.parent
    return shutil.disk_usage(path).free


def tree_bytes(path: Path) -> int:
    """Bytes the files under `path` take, a file linked twice counted once."""
    seen, total = set(), 0
    for folder, _, files in os.walk(path):
        for name in files:
            st = _stat(os.path.join(folder, name))
            if st is not None and (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def entries(cache: Path) -> list[tuple[float, int, Path]]:
    """(when last written, bytes, path) of each entry of one cache folder (see the module's note)."""
    found = []
    for folder, subfolders, files in os.walk(cache):
        subfolders[:] = [s for s in subfolders if s != "locks"]
        if not subfolders and files and Path(folder) != Path(cache):
            stats = [st for st in (_stat(os.path.join(folder, f)) for f in files) if st is not None]
            if stats:  # none: another process removed them while this one walked
                found.append((max(st.st_mtime for st in stats), sum(st.st_size for st in stats), Path(folder)))
            continue
        for name in files:
            st = _stat(os.path.join(folder, name))
            if st is not None:
                found.append((st.st_mtime, st.st_size, Path(folder) / name))
    return found


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def evict(caches: list[Path], max_bytes: int) -> int:
    """Remove the oldest entries of `caches` until they hold at most `max_bytes` together; bytes removed."""
    every = sorted(e for cache in caches if cache.is_dir() for e in entries(cache))
    total, removed = sum(size for _, size, _ in every), 0
    for _, size, path in every:
        if total - removed <= max_bytes:
            break
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        removed += size
    return removed


def inductor_folders(env: dict[str, str]) -> list[Path]:
    """Where a process with environment `env` keeps Inductor's builds: its cache folder, and the
    default one under the temporary folder (precompiled headers go there whatever the setting)."""
    user = re.sub(r'[\\/:*?"<>|]', "_", _user())
    default = Path(env.get("TMPDIR") or tempfile.gettempdir()) / f"torchinductor_{user}"
    return list(dict.fromkeys([Path(env.get("TORCHINDUCTOR_CACHE_DIR") or default), default]))


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid_{os.getuid()}"


BUILT = (".so", ".o")  # what Inductor's C++ builds leave, each file an ELF file once complete


def drop_unfinished(folders: list[Path], since: float = 0.0) -> list[Path]:
    """Remove the C++ build outputs under `folders` (Inductor cache folders) written at or after
    `since` (a time.time()) that are not complete ELF files and whose build no process runs now;
    the paths removed."""
    removed = []
    for root in folders:
        for folder, _, files in os.walk(root):
            for name in files:
                path = Path(folder) / name
                if not name.endswith(BUILT + (".gch",)):
                    continue
                st = _stat(str(path))
                if st is None or st.st_mtime < since or _finished(path, st.st_size):
                    continue
                with _build_lock(root, path) as free:
                    if free:
                        with contextlib.suppress(FileNotFoundError):
                            path.unlink()
                            removed.append(path)
    return removed


def _finished(path: Path, size: int) -> bool:
    """A precompiled header: not empty; an object or library: an ELF file long enough for its section headers."""
    if path.suffix == ".gch":
        return size > 0
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return True  # not ours to judge
    if len(head) < 52 or head[:4] != b"\x7fELF":
        return False
    order = "<" if head[5] == 1 else ">"
    if head[4] == 2:  # 64-bit
        (shoff,), (shentsize, shnum) = struct.unpack_from(order + "Q", head, 0x28), struct.unpack_from(order + "HH", head, 0x3A)
    else:
        (shoff,), (shentsize, shnum) = struct.unpack_from(order + "I", head, 0x20), struct.unpack_from(order + "HH", head, 0x2E)
    return size >= shoff + shentsize * shnum


@contextlib.contextmanager
def _build_lock(root: Path, path: Path):
    """Inductor's lock for the build of `path` (`<cache>/locks/<key>.lock`, a precompiled header's
    beside it), held: yields whether no other process holds it."""
    key = path.name.split(".")[0]
    held, free = [], True
    try:
        for lock in dict.fromkeys((root / "locks" / f"{key}.lock", path.parent / "locks" / f"{key}.lock")):
            try:
                fd = os.open(lock, os.O_RDWR)
            except OSError:
                continue  # no lock file: no build of that key ever started under a lock
            held.append(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                free = False
                break
        yield free
    finally:
        for fd in held:
            os.close(fd)
