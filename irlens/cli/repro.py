"""`irlens repro WORKLOAD --backend B`: one cell as a standalone file (irlens.repro); `--reduce`:
the smallest graph that still fails the same way; `--slow`: timed, with its dominant kernel.

Exit status: 0 the file(s) were written (and, where run, the reduced file fails as the cell's
graph did); 1 the cell's file could not be written (its model cannot be one standalone function:
graph breaks, say), or a reduction was asked for and no reduced file reproduces the failure (the
notes say why); 2 bad input (an unknown workload, backend, mode, dtype, device or preset, or a backend
that is unavailable here), with a message.
"""
from __future__ import annotations

import json
import os

from irlens.cli.command import (backend, EXIT_FAIL, EXIT_OK, add_device_option, add_dtype_option, add_preset_option,
                                 backend_names, error, guarded, non_negative_int, output_file, output_folder,
                                 positive_float)
from irlens.wording import plural

HELP = ("a standalone reproducer of one cell; --reduce: the smallest graph that still fails; --slow: timed, with its "
        "dominant kernel")


def add_arguments(p) -> None:
    from irlens.repro.tensors import EMBED_MAX
    from irlens.names import MODES

    p.add_argument("workload", help="a built-in workload (see `irlens list`) or path/to/file.py:NAME")
    p.add_argument("--backend", required=True, type=backend,
                   help=f"{backend_names()}, or path/to/file.py:NAME (a Backend with a `repro_path`)")
    p.add_argument("--mode", default="fwd", choices=MODES, help="fwd: the forward; fwdbwd: also the loss and gradients")
    add_dtype_option(p)
    add_device_option(p)
    add_preset_option(p)
    p.add_argument("--out", type=output_folder, default="irlens-repro", help="folder for the files")
    p.add_argument("--reduce", action="store_true",
                   help="also shrink a failing cell's graph to the smallest that fails the same way, and write its file")
    p.add_argument("--slow", action="store_true",
                   help="a timed file, with the kernel that dominates the cell's time and its source beside it")
    p.add_argument("--budget-s", type=positive_float, default=600.0,
                   help="seconds the reducer may spend trying smaller graphs; then the smallest that failed the same "
                        "way is the result")
    p.add_argument("--timeout", type=positive_float, default=600.0, help="seconds per run of a file or a candidate")
    p.add_argument("--embed-max", type=non_negative_int, default=EMBED_MAX,
                   help="tensors of at most this many elements are embedded exactly, larger ones regenerated from "
                        "a seed")
    p.add_argument("--no-run", dest="run", action="store_false",
                   help="write the cell's file without running it (a reduction still runs its candidates and the "
                        "files it writes)")
    p.add_argument("--json", type=output_file, default=None, help="write what happened (outcomes, the reduction's tries) to this file")


@guarded
def run(args) -> int:
    from irlens.matrix.spec import CellSpec, check_device_present
    from irlens.repro.pipeline import ReproFailed, repro

    check_device_present(args.device)
    spec = CellSpec(args.workload, args.backend, args.mode, args.dtype, args.device, args.preset)
    try:
        result = repro(spec, args.out, reduce=args.reduce, slow=args.slow, budget_s=args.budget_s,
                       timeout=args.timeout, embed_max=args.embed_max, run=args.run)
    except ReproFailed as e:  # the cell cannot be one file: a failed run, not bad input
        error(str(e), "repro")
        return EXIT_FAIL
    print(summary(result))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result.to_json(), f, indent=1)
    if args.reduce and not _reproduces(result):
        return EXIT_FAIL
    return EXIT_OK


def _reproduces(result) -> bool:
    if result.reduced_file is None:  # an ok cell (its file's run, or the recorded one): nothing to reduce
        ran = result.cell_outcome or result.recorded_outcome
        return ran is not None and not ran.failed
    target = result.reduction["target"]["status"] if result.reduction else \
        (result.cell_outcome or result.recorded_outcome).status
    return result.reduced_outcome is not None and result.reduced_outcome.status == target


def summary(result) -> str:
    lines = [f"cell:         {result.spec.label(result.dtype, result.name, result.backend)}",
             f"file:         {result.cell_file}" + (f"  ->  {result.cell_outcome}" if result.cell_outcome else "")]
    if result.reduction:
        r = result.reduction
        lines.append(f"reduced:      {r['stage']}: {r['before']}  ->  {r['after']} ({', '.join(r['ops_after'][:12])}"
                     f"{' ...' if len(r['ops_after']) > 12 else ''}); {plural(len(r['attempts']), 'try', 'tries')}"
                     + (f"; {r['stopped']}" if r["stopped"] else ""))
    if result.region_file:
        lines.append(f"region file:  {result.region_file}"
                     + (f"  ->  {result.region_outcome}" if result.region_outcome else ""))
    if result.reduced_file:
        lines.append(f"reduced file: {result.reduced_file}"
                     + (f"  ->  {result.reduced_outcome}" if result.reduced_outcome else ""))
    if result.kernel:
        k = result.kernel
        lines.append(f"kernel:       {k['name']} {k['time_us']:.1f} us ({k['share']:.0%} of kernel time)"
                     + (f", source {k['source_file']}" if k.get("source_file") else "") if "name" in k
                     else f"kernel:       none singled out: {k['reason']}")
    lines += [f"note:         {n}" for n in result.notes]
    return "\n".join(lines)
