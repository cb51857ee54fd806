"""`irlens explain WORKLOAD --backend B`: one kernel of one backend's run, in terms of the common
view (irlens.explain): the list of kernels, then the one asked for or the one that fuses the most."""
from __future__ import annotations

import sys

from irlens.cli.command import (backend, add_device_option, add_dtype_option, add_preset_option, backend_names, guarded,
                                 positive_float)
from irlens.wording import plural

HELP = "annotate one kernel: ops fused, reads/writes, reductions, source"


def add_arguments(e) -> None:
    from irlens.names import MODES

    e.add_argument("workload", help="a built-in workload (see `irlens list`) or path/to/file.py:NAME")
    e.add_argument("--backend", required=True, type=backend,
                   help=f"{backend_names()} (eager has no kernels), or path/to/file.py:NAME")
    e.add_argument("--mode", default="fwd", choices=MODES, help="fwd: the forward; fwdbwd: also the loss and gradients")
    e.add_argument("--kernel", default=None, help="kernel name or index (default: list them, explain the largest)")
    add_preset_option(e)
    add_device_option(e)
    add_dtype_option(e)
    e.add_argument("--timeout", type=positive_float, default=300.0, help="seconds for the run (in a worker process, as a compare cell)")


@guarded
def run(args) -> int:
    from irlens.backends import get_backend
    from irlens.explain.run import run_as_compare_does
    from irlens.explain.text import explain_run
    from irlens.frontends.base import Unavailable
    from irlens.matrix.spec import CellSpec, check_device_present
    from irlens.workloads.builtin import resolve_workload
    from irlens.workloads.user_code import absolute_reference

    check_device_present(args.device)
    wl = resolve_workload(args.workload)
    backend = get_backend(args.backend)
    available = backend.availability(args.device)
    if not available:
        raise Unavailable(f"backend {backend.name} is unavailable on {args.device}: {available.reason}")
    inst = wl.instantiate(args.preset, args.dtype, args.device)  # bad preset or dtype: a usage error, here
    print(f"irlens explain: running {wl.name} ({args.preset}, {inst.dtype}, {args.mode}) through {backend.name} on "
          f"{args.device} in a worker, as irlens compare runs a cell ...", file=sys.stderr)
    # a backend's own failure is no usage error: exit 1
    run = run_as_compare_does(CellSpec(absolute_reference(args.workload), absolute_reference(args.backend), args.mode,
                                       args.dtype, args.device, args.preset, timeout_s=args.timeout))
    context = f"{wl.name} {args.mode} ({args.preset}, {inst.dtype}, {args.device}, {plural(run.threads, 'thread')})"
    print(explain_run(run, backend.name, args.kernel, context))
    return 0
