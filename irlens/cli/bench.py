"""`irlens bench`: the matrix on a GPU, each row's device time beside the measured ceilings (irlens.bench.run)."""
from __future__ import annotations

import sys
from pathlib import Path

from irlens.cli.command import (backends, add_config_option, add_modes_option, add_preset_option, add_frontend_settings,
                                  apply_frontend_settings, backend_names, checked_csv, csv, guarded, non_negative_int,
                                  options,
                                  output_file, output_folder, positive_float, positive_int)
from irlens.errors import UsageError
from irlens.core.precision import add_option as add_precision_option
from irlens.wording import plural

HELP = "the matrix on a GPU: device time per row beside measured bandwidth/flop ceilings"


def add_arguments(b) -> None:
    from irlens.caches.upkeep import DEFAULT_MAX_GB, MAX_ENV, default_root
    from irlens.names import COMPUTE_DTYPES

    b.add_argument("--workloads", type=csv, default=None,
                   help="comma-separated built-in names or path/to/file.py:NAME; default: the built-ins outside "
                        "the corpus")
    b.add_argument("--backends", type=backends, default=None,
                   help=f"comma-separated, of: {backend_names()}; default: eager,inductor,nvfuser,xla")
    add_modes_option(b)
    b.add_argument("--dtypes", type=checked_csv(COMPUTE_DTYPES), default=None, metavar="DTYPES",
                   help=f"comma-separated, of: {', '.join(COMPUTE_DTYPES)}; default: bfloat16,float32")
    add_preset_option(b, "bench")
    b.add_argument("--json", type=output_file, default=None, help="write the results document here")
    b.add_argument("--md", type=output_file, default=None, help="write the results page (Markdown + SVG plots) here")
    b.add_argument("--timeout", type=positive_float, default=600.0, help="seconds per cell, and per float64 reference")
    b.add_argument("--jobs", type=positive_int, default=1, help="cells compiled in parallel (device timings never overlap)")
    b.add_argument("--compile-jobs", type=non_negative_int, default=4,
                   help="before the timed runs, every cell compiled ahead in this many worker processes at once, "
                        "filling the compilers' caches (0: no compiling ahead)")
    b.add_argument("--compiles-aside", action="store_true",
                   help="time cells beside other cells' compiles (a compile then holds no turn on the GPU): with "
                        "--compile-jobs 0, cells compile and are timed in one pass, the quickest cold run; each "
                        "row's repeat figure shows what sharing the GPU cost")
    b.add_argument("--cache-dir", type=output_folder, default=str(default_root()),
                   help="the compilers' persistent caches (Inductor/Triton kernels and autotuning, XLA executables, "
                        "nvFuser kernels) and the measured ceilings, reused run after run")
    b.add_argument("--cache-max-gb", type=float, default=None, metavar="GB",
                   help="what the compilers' caches may hold, the entries written longest ago removed first "
                        f"(default: ${MAX_ENV}, else {DEFAULT_MAX_GB:g})")
    b.add_argument("--remeasure", action="store_true",
                   help="measure the ceilings again instead of reading them from the cache (they are kept per GPU, "
                        "driver and torch/triton/jax versions)")
    b.add_argument("--budget-s", type=positive_float, default=None,
                   help="stop starting cells after this many seconds, and stop those still running 30 s "
                        "later; their rows say so")
    b.add_argument("--gpus", type=csv, default=None,
                   help="GPU indices (e.g. 0,1,2,3): the dtype x mode parts of the matrix are shared out over "
                        "them, one child run per GPU measuring its own ceilings; default: the one GPU torch picks")
    b.add_argument("--rerun", default=None, metavar="RESULTS_JSON",
                   help="run again only the rows of this earlier bench document that are not ok (and that the "
                        "other options name), and write it with those rows replaced")
    add_precision_option(b)
    add_frontend_settings(b)
    add_config_option(b)


@guarded
def run(args) -> int:
    import torch

    from irlens.caches.upkeep import MAX_ENV, default_max_gb
    from irlens.bench.run import BenchConfig, restrict_to_rerun, run_configured
    from irlens.reporting.bench_page import format_bench_table, write_results_page
    from irlens.runtime.isolation import CallFailed
    from irlens.matrix import exit_status, read_document, write_document

    if not torch.cuda.is_available():
        raise UsageError("irlens bench needs a CUDA GPU (device timing and ceilings); torch sees none here. "
                         "Use `irlens compare` on the CPU.")
    config = options(BenchConfig, args)
    if (config.cache_max_gb if config.cache_max_gb is not None else default_max_gb()) < 0:
        raise UsageError(f"--cache-max-gb (or ${MAX_ENV}) must be at least 0 GiB (got {config.cache_max_gb})")
    apply_frontend_settings(args)
    command = "irlens " + " ".join(sys.argv[1:])
    previous = None
    if config.rerun:
        previous = read_document(config.rerun)
        if previous.kind != "bench":
            raise UsageError(f"--rerun {config.rerun}: not a bench results document (it is a {previous.kind} document)")
        if not restrict_to_rerun(config, previous):
            print(f"irlens bench: every row of {config.rerun} that these options name is ok: nothing to run again",
                  file=sys.stderr)
            return 0
        print(f"irlens bench: running again {plural(sum(map(len, config.only.values())), 'row')} of {config.rerun} "
              f"not ok", file=sys.stderr)
    save = (lambda doc: write_document(doc, args.json)) if args.json else None
    try:
        doc = run_configured(config, command, previous, save)
    except CallFailed as e:  # measuring the ceilings failed: no roofline without them
        raise UsageError(f"measuring the ceilings: {e}\n{e.detail}") from None
    if args.json:
        write_document(doc, args.json)
    print(format_bench_table(doc.rows))
    if args.md:
        md = Path(args.md)
        md.parent.mkdir(parents=True, exist_ok=True)
        json_name = Path(args.json).name if args.json else ""
        for path in write_results_page(doc, md, json_name, command):
            print(f"wrote {path}", file=sys.stderr)
    return 1 if doc.missing else exit_status(doc)
