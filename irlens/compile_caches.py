"""The compilers' persistent caches, in one folder that `irlens bench` reuses from run to run.

What each compiler keeps there (each reads its own environment variable, so a worker process
started inside `compile_caches(root)` uses them):
- Inductor: its cache folder (`TORCHINDUCTOR_CACHE_DIR`): compiled Triton kernels and their
  autotuning results (`autotune_local_cache`, on by default), and its FX-graph cache (forced on).
  The Inductor cells themselves bypass the FX-graph cache (irlens.backends.inductor.InductorCapture:
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
"""
from __future__ import annotations

import contextlib
import os
import uuid
from pathlib import Path

from irlens.backends.thunder.kernel_db import ROOT_ENV as NVFUSER_DB_ENV, RUN_ENV as NVFUSER_RUN_ENV, merge

ROOT_ENV = "IRLENS_CACHE_DIR"


def default_root() -> Path:
    """$IRLENS_CACHE_DIR, else $XDG_CACHE_HOME/irlens, else ~/.cache/irlens."""
    if os.environ.get(ROOT_ENV):
        return Path(os.environ[ROOT_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "irlens"


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

    def __init__(self, root: Path | None):
        self.root = None if root is None else Path(root)
        self.run = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"

    def merge_kernels(self) -> int:
        """nvFuser kernels this run's workers compiled, added to the shared database (call it
        when none of them runs); how many."""
        return 0 if self.root is None else merge(self.root / "nvfuser", self.run)


@contextlib.contextmanager
def compile_caches(root: Path | None):
    """Within the block, worker processes started from here use the persistent caches under
    `root` (created where missing); None: each compiler's own default. Yields the run's
    `Caches`; its nvFuser kernels are merged and the environment restored after."""
    caches = Caches(root)
    if caches.root is None:
        yield caches
        return
    env = {**cache_env(caches.root), NVFUSER_RUN_ENV: caches.run}
    for key in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "JAX_COMPILATION_CACHE_DIR", NVFUSER_DB_ENV):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    before = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield caches
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        caches.merge_kernels()


def describe(root: Path | None) -> str:
    if root is None:
        return "the compilers' own cache folders"
    return f"{root} (Inductor and Triton kernels and autotuning, XLA executables, nvFuser kernels)"
