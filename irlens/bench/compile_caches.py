"""The compilers' persistent caches, in one folder that `irlens bench` reuses from run to run.

What each compiler keeps there (each reads its own environment variable, so a worker process
started inside `compile_caches(root)` uses them):
- Inductor: its cache folder (`TORCHINDUCTOR_CACHE_DIR`): compiled Triton kernels and their
  autotuning results (`autotune_local_cache`, on by default), and its FX-graph cache (forced on).
  The Inductor cells themselves bypass the FX-graph cache (irlens.backends.inductor.backend.InductorCapture:
  a hit would skip the code generation whose provenance records map the kernels); their Triton
  kernels and autotuning are what they reuse.
- Triton: its kernel cache (`TRITON_CACHE_DIR`).
- XLA: JAX's compilation cache (`JAX_COMPILATION_CACHE_DIR`, every executable however fast it
  compiled), which also keeps XLA's per-fusion autotuning results (jax's default
  `jax_persistent_cache_enable_xla_caches`).
- nvFuser: its kernel database (`NVFUSER_ENABLE=kernel_db`: each kernel's CUDA source and the
  binary NVRTC made of it, in `$TMPDIR/nvfuser_kernel_db`), a copy per worker process of the
  nvfuser backend (`Backend.worker_env`) merged after the run (irlens.backends.thunder.kernel_db:
  the database numbers its files per process, so two processes writing one would pair one
  kernel's code with another's binary). Thunder's traces and nvFuser's segmentation and
  scheduling have no persistent cache: they are redone.

A cache never costs a run its results (irlens.caches.upkeep): a folder that cannot be written, a
disk with less than `MIN_FREE_BYTES` free (at the start, and after each cell), an nvFuser merge
that fails, each is a warning printed once, and the run goes on without that cache (a full disk:
new workers keep no XLA executables and no nvFuser kernels; Inductor and Triton still need a
folder to build in). A run removes what it leaves (its nvFuser copies, also those of a run that
died before merging them), removes the unfinished C++ builds a killed compile left, and keeps the
caches within a cap (`--cache-max-gb`, `IRLENS_CACHE_MAX_GB`, default `DEFAULT_MAX_GB`), the entries written
longest ago removed first, when no other run uses the folder. At its end it prints what each holds.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import uuid
from pathlib import Path

from irlens.caches import upkeep
from irlens.backends.thunder import kernel_db
from irlens.backends.thunder.kernel_db import ROOT_ENV as NVFUSER_DB_ENV, RUN_ENV as NVFUSER_RUN_ENV
from irlens.caches.upkeep import GiB, MIN_FREE_BYTES, default_max_gb, warn_once

# each cache's name in what irlens prints, and its folder under the root. A cache is a compiler's, not a
# backend's: Inductor's and Triton's serve every torch.compile of a run (the inductor backend and its
# lowering, thunder+torchcompile's fusion regions, the regions ThunderFX leaves to Inductor under either
# Thunder backend), JAX's every jax.jit (the xla backend's and its lowering's), so the run's environment
# points each compiler at its folder once, for every worker whatever backend it runs. The one cache a
# backend owns, nvFuser's kernel database, is that backend's module (irlens.backends.thunder.kernel_db),
# and its per-worker copy comes through the backend's `worker_env`.
FOLDERS = {"Inductor": "inductor", "Triton": "triton", "XLA": "jax", "nvFuser": "nvfuser"}
ALL = "the compilers' persistent caches"
# what a nearly full disk turns off for the workers started after: the caches that are optional
OPTIONAL = {"JAX_COMPILATION_CACHE_DIR": "XLA's executables cache", NVFUSER_RUN_ENV: kernel_db.CACHE_NAME}


def cache_env(root: Path) -> dict[str, str]:
    """The environment variables that point each compiler's persistent cache under `root`."""
    return {
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TRITON_CACHE_DIR": str(root / "triton"),
        "JAX_COMPILATION_CACHE_DIR": str(root / "jax"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
        NVFUSER_DB_ENV: str(root / "nvfuser"),
    }


class Caches:
    """The caches of one run (None: the compilers' own defaults)."""

    def __init__(self, root: Path | None, max_gb: float | None = None):
        self.root = None if root is None else Path(root)
        self.max_bytes = int((default_max_gb() if max_gb is None else max_gb) * GiB)
        self.run = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.removed = 0  # bytes of old entries removed to keep the cap

    def merge_kernels(self) -> int:
        """nvFuser kernels this run's workers compiled, added to the shared database (call it
        when none of them runs); how many. A merge that fails is a warning, and the database is
        off for the rest of the run; the workers' copies are removed either way."""
        if self.root is None:
            return 0
        if not os.environ.get(NVFUSER_RUN_ENV):  # turned off during the run: its copies are not kept
            shutil.rmtree(self.root / "nvfuser" / kernel_db.RUNS / self.run, ignore_errors=True)
            return 0
        try:
            return kernel_db.merge(self.root / "nvfuser", self.run)
        except Exception as e:  # noqa: BLE001  (a cache: whatever went wrong, the run goes on)
            warn_once(kernel_db.CACHE_NAME, e)
            os.environ.pop(NVFUSER_RUN_ENV, None)
            return 0

    def check_disk(self) -> None:
        """On a nearly full disk, the optional caches off for the workers started from now on."""
        if self.root is None or not any(os.environ.get(key) for key in OPTIONAL):
            return
        free = upkeep.disk_free(self.root)
        if free < MIN_FREE_BYTES:
            for key, name in OPTIONAL.items():
                if os.environ.pop(key, None):
                    warn_once(name, f"{size_text(free)} free on the disk of {self.root}")

    def sizes(self) -> dict[str, int]:
        """Bytes each cache holds (nvFuser: its shared database)."""
        folders = self.folders()
        return {name: upkeep.tree_bytes(folder) for name, folder in folders.items()}

    def folders(self) -> dict[str, Path]:
        """Each cache's folder, as eviction and sizes see it (nvFuser's runs' copies are not entries)."""
        return {name: self.root / folder / (kernel_db.SHARED if name == "nvFuser" else "")
                for name, folder in FOLDERS.items()}

    def summary(self) -> str:
        sizes = self.sizes()
        held = ", ".join(f"{name} {size_text(size)}" for name, size in sizes.items())
        removed = f"; {size_text(self.removed)} of older entries removed" if self.removed else ""
        return (f"irlens: compiler caches in {self.root}: {held}: {size_text(sum(sizes.values()))} of its "
                f"{size_text(self.max_bytes)} cap{removed}")


def size_text(size: int) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


@contextlib.contextmanager
def compile_caches(root: Path | None, max_gb: float | None = None):
    """Within the block, worker processes started from here use the persistent caches under
    `root` (created where missing), kept within `max_gb` GiB (None: `default_max_gb()`); None:
    each compiler's own default. Yields the run's `Caches`; its nvFuser kernels are merged, the
    environment restored and each cache's size printed after. A root that cannot be used is a
    warning: the run goes on with the compilers' own defaults."""
    upkeep.new_run()
    caches = Caches(root, max_gb)
    problem = None if caches.root is None else _unusable(caches.root)
    if problem:
        warn_once(ALL, problem)
        caches.root = None
    if caches.root is None:
        yield caches
        return
    env = {**cache_env(caches.root), NVFUSER_RUN_ENV: caches.run}
    with contextlib.ExitStack() as held:
        try:
            in_use = held.enter_context(open(caches.root / "in-use", "a"))
            fcntl.flock(in_use, fcntl.LOCK_SH)  # eviction waits for a moment no other run uses the folder
            held.enter_context(kernel_db.claimed(caches.root / "nvfuser", caches.run))
        except OSError as e:
            warn_once(ALL, e)
            caches.root = None
        if caches.root is None:
            yield caches
            return
        _tidy(caches, in_use)
        before = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        try:
            yield caches
        finally:
            caches.merge_kernels()
            for key, value in before.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
            _tidy(caches, in_use)
            print(caches.summary(), file=sys.stderr, flush=True)


def _unusable(root: Path) -> str | None:
    """Why the caches cannot live under `root` (it cannot be written, its disk is nearly full); None: they can."""
    try:
        for folder in FOLDERS.values():
            (root / folder).mkdir(parents=True, exist_ok=True)
        probe = root / f".probe-{os.getpid()}"
        probe.write_bytes(b"irlens")
        probe.unlink()
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    free = upkeep.disk_free(root)
    if free < MIN_FREE_BYTES:
        return f"{size_text(free)} free on the disk of {root}"
    return None


def _tidy(caches: Caches, in_use) -> None:
    """What runs before and after a run: the kernels of runs that died before merging them kept,
    their copies and the unfinished C++ builds of killed compiles removed, the caches trimmed to
    their cap where no other run uses them. Whatever fails is a warning."""
    root = caches.root
    try:
        kernel_db.merge_dead_runs(root / "nvfuser")
    except Exception as e:  # noqa: BLE001
        warn_once(kernel_db.CACHE_NAME, e)
    try:
        upkeep.drop_unfinished([root / "inductor"])
    except OSError as e:
        warn_once("Inductor's cache upkeep", e)
    try:
        fcntl.flock(in_use, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return  # another run uses the caches: their entries stay until a run finds them alone
    try:
        caches.removed += upkeep.evict(list(caches.folders().values()), caches.max_bytes)
    except OSError as e:
        warn_once("the caches' size cap", e)
    finally:
        fcntl.flock(in_use, fcntl.LOCK_SH)

