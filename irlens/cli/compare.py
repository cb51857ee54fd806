"""`irlens compare`: the workload x backend x mode matrix (irlens.matrix); with `--cross`, the
frontend x backend grid (irlens.matrix.cross). A table on stdout, progress on stderr, the document
with `--json`; exit 1 when a row mismatches or fails."""
from __future__ import annotations

from dataclasses import dataclass

from irlens.cli.command import (backends, add_config_option, add_device_option, add_dtype_option, add_modes_option,
                                 add_preset_option,
                                 add_frontend_settings, apply_frontend_settings, backend_names, csv, guarded, options,
                                 output_file, positive_float, positive_int)
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION, add_option as add_precision_option

HELP = "run workloads through every backend; check numerics; list kernels"


def add_arguments(c) -> None:
    c.add_argument("--workloads", type=csv, default=None,
                   help="comma-separated built-in names (see `irlens list`) or path/to/file.py:NAME; default: the "
                        "built-ins outside the corpus")
    c.add_argument("--backends", type=backends, default=None, help=f"comma-separated, of: {backend_names()} (or "
                   "path/to/file.py:NAME); default: all (with --cross: every one with a lowering)")
    add_device_option(c)
    add_modes_option(c)
    add_preset_option(c)
    add_dtype_option(c)
    c.add_argument("--json", type=output_file, default=None, help="write the full results to this file (.json, or .json.gz compressed)")
    c.add_argument("--timeout", type=positive_float, default=300.0,
                   help="seconds per cell, and per float64 reference, before it counts as failed")
    c.add_argument("--jobs", type=positive_int, default=1, help="cells run in parallel")
    c.add_argument("--cross", action="store_true",
                   help="the frontend x backend grid: graphs acquired by dynamo/thunder/jax, executed by inductor/nvfuser/xla")
    add_precision_option(c)
    add_frontend_settings(c)
    add_config_option(c)


@dataclass
class CompareOptions:
    workloads: list[str] | None = None
    backends: list[str] | None = None  # with --cross: the backends that execute (default: every one with a lowering)
    device: str = "cpu"
    modes: list[str] | None = None
    preset: str = "tiny"
    dtype: str | None = None
    json: str | None = None
    timeout: float = 300.0
    jobs: int = 1
    cross: bool = False
    precision: str = DEFAULT_PRECISION  # --tf32: "tf32" (irlens.core.precision)


@guarded
def run(args) -> int:
    from irlens.matrix.cross import format_grid, run_grid
    from irlens.matrix import exit_status, format_table, plan_matrix, run_plan, write_document

    o = options(CompareOptions, args)
    apply_frontend_settings(args)
    if o.cross:
        doc = run_grid(o.workloads, o.modes, o.device, o.preset, o.dtype, o.timeout, executed_by=o.backends,
                       precision=o.precision)
        print(format_grid(doc))
    else:
        plan = plan_matrix(o.workloads, o.backends, o.modes, o.device, o.preset, o.dtype, precision=o.precision)
        doc = run_plan(plan, o.timeout, progress=True, jobs=o.jobs)
        print(format_table(doc))
    if o.json:
        write_document(doc, o.json)
    return exit_status(doc)
