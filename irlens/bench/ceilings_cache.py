"""Measured ceilings, kept per device and software, so a bench does not sweep them every run.

The sweep (irlens.bench.sweep) takes a minute or two: bandwidth kernels over buffers up to 2 GiB,
three layouts of each matrix product in two dtypes. Its figures depend on the GPU, its driver,
and the libraries that pick the kernels (torch and its CUDA, cuBLAS through torch, Triton's
`do_bench`), so they are kept in `<cache>/ceilings/<key>.json`, the key naming all of them
(and jax's version, whose XLA the run's kernels come from, and whether float32 products used
TF32). A later run with the same key reuses every figure and times only the GEMM shapes its
workloads bring that were not timed yet; `--remeasure` sweeps everything again. The run's
ceilings are then the best of every shape timed on that key, a property of the device.
"""
from __future__ import annotations

import json
import re
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Callable

from irlens.bench.sweep import Sweep, measure_sweep
from irlens.core.cost import Gemm

SOFTWARE = ("torch", "triton", "jax", "jaxlib")


def driver_version() -> str | None:
    """The NVIDIA driver's version (nvidia-smi), or None where it cannot be asked."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 else None
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return None


def installed(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "none"


def cache_key(device: str, driver: str | None, versions: dict[str, str], cuda: str | None, tf32: bool) -> str:
    """A file name naming everything the figures depend on."""
    parts = [device, f"driver {driver or 'unknown'}", f"cuda {cuda or 'unknown'}",
             *(f"{name} {versions.get(name, 'none')}" for name in SOFTWARE), "tf32" if tf32 else "no tf32"]
    return re.sub(r"[^\w.+-]+", "_", " ".join(parts)).strip("_")


def load(path: Path) -> Sweep | None:
    """The sweep kept at `path`; None where there is none or it cannot be read (measured again)."""
    try:
        return Sweep.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def save(path: Path, sweep: Sweep) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".json.new")
    partial.write_text(json.dumps(sweep.to_json(), indent=1, sort_keys=True))
    partial.replace(path)  # whole or not at all: another bench may read it meanwhile


def cached_sweep(gemms: list[Gemm], path: Path | None, remeasure: bool,
                 measure: Callable[[list[Gemm], Sweep | None], Sweep]) -> tuple[Sweep, str]:
    """The sweep for `gemms`: the one kept at `path` completed by `measure(gemms, known)` (which
    times only what `known` lacks), kept again; without `path`, or with `remeasure`, all of it
    measured now. Returns it and a line saying where it came from."""
    known = None if path is None or remeasure else load(path)
    sweep = measure(gemms, known)
    if path is None:
        return sweep, "measured in this run (no cache)"
    try:
        save(path, sweep)
    except OSError as e:  # a cache that cannot be written (a full disk) costs the next run a sweep, not this one
        return sweep, f"measured in this run, not kept ({type(e).__name__}: {e})"
    if known is None:
        return sweep, f"measured in this run{' (--remeasure)' if remeasure else ''}, kept in {path}"
    new = sum(len(t) for t in sweep.timed.values()) - sum(len(t) for t in known.timed.values())
    return sweep, f"from {path}" + (f", with {new} new matrix product shapes timed in this run" if new else "")


def measure_in_worker(gemms: list[list[int]], cache_dir: str | None = None, remeasure: bool = False) -> dict:
    """The worker's entry point (irlens.runtime.isolation calls it by name): {"ceilings": the run's
    ceilings as JSON, "source": where they came from} on the current CUDA device."""
    import torch

    key = cache_key(torch.cuda.get_device_name(), driver_version(), {n: installed(n) for n in SOFTWARE},
                    torch.version.cuda, bool(torch.backends.cuda.matmul.allow_tf32))
    path = Path(cache_dir) / "ceilings" / f"{key}.json" if cache_dir else None
    sweep, source = cached_sweep([Gemm(*g) for g in gemms], path, remeasure,
                                 lambda shapes, known: measure_sweep(shapes, known=known))
    return {"ceilings": sweep.ceilings().to_json(), "source": source}
