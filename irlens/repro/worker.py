"""The work `irlens repro` does in worker processes (`irlens.runtime.isolation`): everything that runs the
workload or touches a device, so that the command's own process holds no device memory and
survives what a backend does."""
from __future__ import annotations

import os
import sys

from irlens.backends import Backend
from irlens.matrix.spec import CellSpec
from irlens.workloads.workload import Workload
from irlens.wording import plural


def write_cell_file(s: CellSpec, wl: Workload, backend: Backend, out: str, notes: list[str], embed_max: int,
                    timed: bool) -> None:
    """(a worker: irlens.worker.entry's `file`) The standalone file of a cell, written to `out`."""
    from irlens.repro.cell_file import cell_file

    path = backend.repro_path
    print(f"[irlens] repro: writing the file of {s.label(s.dtype or 'its dtype', backend=path.name)}", file=sys.stderr,
          flush=True)
    text = cell_file(s, path, notes, embed_max, timed).render()
    with open(out, "w") as f:
        f.write(text)
    _give_back_memory(s.device)


def _give_back_memory(device: str) -> None:
    """The worker serves the reducer next: what the workload held is returned to the device."""
    import gc

    gc.collect()
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


def dominant_kernel(s: CellSpec, wl: Workload, backend: Backend, directory: str) -> dict:
    """(a worker: irlens.worker.entry's `kernel`) Run the cell natively (timed on the device on a GPU),
    and write the source of the kernel that took the most time into `directory`. Returns {"name",
    "time_us", "share", "kind", "source_file", "kernels"} or {"reason"} when no kernel has a time."""
    from irlens.matrix.backend_run import run_backend
    from irlens.runtime.timing import recording_device_time

    inst = wl.instantiate(s.preset, s.dtype, s.device)
    run = run_backend(backend, inst, s.mode)  # Inductor's and nvFuser's kernels carry their times
    timed = [k for k in run.kernels if k.time_us]
    if not timed and run.kernels and s.device.startswith("cuda"):
        # XLA's kernels carry no time of their own: the device profiler's, matched by name
        with recording_device_time(None) as recorder:
            run = run_backend(backend, inst, s.mode)
        device_us = recorder.timing.kernel_us if recorder.timing is not None else {}
        for k in run.kernels:
            k.time_us = next((us for name, us in device_us.items() if k.name in name), None)
        timed = [k for k in run.kernels if k.time_us]
    _give_back_memory(s.device)
    if not timed:
        return {"reason": f"{s.backend} reported no kernel times for this cell ({plural(len(run.kernels), 'kernel')})",
                "run_us": run.run_us}
    total = sum(k.time_us for k in timed)
    top = max(timed, key=lambda k: k.time_us)
    source_file = ""
    if top.source:
        source_file = os.path.join(directory, f"kernel-{_safe(top.name)}{backend.kernel_source_suffix(top.source)}")
        with open(source_file, "w") as f:
            f.write(top.source)
    return {"name": top.name, "time_us": top.time_us, "share": top.time_us / total, "kind": top.kind,
            "source_file": source_file, "run_us": run.run_us,
            "kernels": sorted(([k.name, k.time_us] for k in timed), key=lambda x: -x[1])[:8]}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:80]
