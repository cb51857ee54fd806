"""`irlens explain WORKLOAD --backend B`: one kernel of one backend's run, in terms of the common
view (irlens.explain): the list of kernels, then the one asked for or the one that fuses the most."""
from __future__ import annotations

import sys

from irlens.cli.command import guarded
from irlens.errors import UsageError

HELP = "annotate one kernel: ops fused, reads/writes, reductions, source"


def add_arguments(e) -> None:
    e.add_argument("workload", help="a built-in workload or path/to/file.py:NAME")
    e.add_argument("--backend", required=True)
    e.add_argument("--mode", default="fwd", choices=["fwd", "fwdbwd"])
    e.add_argument("--kernel", default=None, help="kernel name or index (default: list them, explain the largest)")
    e.add_argument("--preset", default="tiny")
    e.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    e.add_argument("--dtype", default=None)


@guarded
def run(args) -> int:
    from irlens.backends import get_backend
    from irlens.explain import explain_run
    from irlens.frontends.base import Unavailable
    from irlens.models import resolve_workload
    from irlens.workload import MODES

    mode, device, preset = args.mode or "fwd", args.device or "cpu", args.preset or "tiny"
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose from: {', '.join(MODES)}")
    wl = resolve_workload(args.workload)
    backend = get_backend(args.backend)
    available = backend.availability(device)
    if not available:
        raise Unavailable(f"backend {backend.name} is unavailable on {device}: {available.reason}")
    inst = wl.instantiate(preset, args.dtype, device)
    print(f"irlens explain: running {wl.name} ({preset}, {inst.dtype}, {mode}) through {backend.name} on {device} ...",
          file=sys.stderr)
    run = backend.run(inst, mode)  # a backend's own failure is no usage error: exit 1
    print(explain_run(run, backend.name, args.kernel, f"{wl.name} {mode} ({preset}, {inst.dtype}, {device})"))
    return 0
