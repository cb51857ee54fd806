"""`irlens zoo`: the zoo of real models (transformers, timm) through every stack, fwd and fwd+bwd;
a summary per stack and per model (Markdown on stdout and in OUT/zoo.md), the document
(OUT/zoo.json), the HTML report (OUT/report.html); `--shard K/N` runs a share, `--from` rebuilds
the summary from documents (a split run's shards), `--fill` runs only what an earlier document did
not get right. Exit 1 when a row mismatches or fails."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from irlens.cli.command import (JOBS_HELP, backends, add_config_option, add_device_option, add_modes_option,
                                 add_preset_option, add_frontend_settings,
                                 apply_frontend_settings, csv, guarded, output_file, output_folder,
                                 positive_float, positive_int, read_documents, write_page)
from irlens.cli.call_plans import add_options as add_call_plan_options
from irlens.core.precision import add_option as add_precision_option

HELP = "the model zoo (transformers, timm) through every stack: pass rates, unknown ops, breaks, kernels, speedups"


def add_arguments(p) -> None:
    p.add_argument("--models", type=csv, default=None, help="comma-separated zoo models (default: all; see irlens list)")
    p.add_argument("--family", choices=["hf", "timm"], default=None,
                   help="only transformers (hf) or timm models (default: both)")
    p.add_argument("--backends", type=backends, default=None,
                   help="comma-separated (default: every backend available on the device)")
    add_modes_option(p)
    add_device_option(p)
    add_preset_option(p)
    from irlens.names import COMPUTE_DTYPES

    p.add_argument("--dtype", choices=COMPUTE_DTYPES, default=None,
                   help="compute dtype; default: bfloat16 at --preset bench, float32 at tiny")
    p.add_argument("--shard", default=None, metavar="K/N",
                   help="run shard K of N (0 <= K < N): every N-th model of the sorted names from the K-th "
                        "(default: all of them)")
    p.add_argument("--jobs", type=positive_int, default=1, help=JOBS_HELP)
    p.add_argument("--timeout", type=positive_float, default=300.0, help="seconds per cell and per float64 reference (default: 300)")
    p.add_argument("--budget-s", type=positive_float, default=None,
                   help="cells not started within this many seconds are `unavailable` rows saying so (a call with a "
                        "time limit still ends with a whole document); default: no budget")
    p.add_argument("--out", type=output_folder, default="irlens-zoo", help="folder for zoo.md, zoo.json, report.html (default: irlens-zoo)")
    p.add_argument("--json", type=output_file, default=None, help="also write the document here (.json or .json.gz; default: only OUT/zoo.json)")
    p.add_argument("--from", dest="from_", nargs="+", action="extend", default=[], metavar="RESULTS_JSON",
                   help="rebuild the summary from these documents (merged: a split run's shards) instead of running (default: run)")
    p.add_argument("--rerun", action="store_true",
                   help="with --from: a cell several documents hold takes the last one's row (documents after the "
                        "first rerun some of its cells); default: such a cell is an error (overlapping shards)")
    p.add_argument("--fill", default=None, metavar="RESULTS_JSON",
                   help="run only the cells this earlier zoo document (same device, preset, dtype) has no ok row "
                        "for (failed, mismatched, timed out, left by a budget, never run) among the models, backends "
                        "and modes asked for, and eager's beside them where --backends has eager (the speedups' base); "
                        "join with --from RESULTS_JSON OUT/zoo.json --rerun. None to run: a document without rows, "
                        "exit 0 (default: run every cell)")
    p.add_argument("--fill-not-run", action="store_true",
                   help="with --fill: only the cells that document holds no row that ran for (never run, left by "
                        "a budget, starved of the device, unavailable), not its failures and mismatches (default: "
                        "every cell without an ok row)")
    p.add_argument("--repro", action="store_true",
                   help="write an `irlens repro` file for each kind of failure that is upstream's (OUT/repro/)")
    add_call_plan_options(p, "zoo")
    add_precision_option(p)
    add_frontend_settings(p)
    add_config_option(p)


@guarded
def run(args) -> int:
    from irlens.errors import UsageError
    from irlens.matrix import exit_status, read_document, write_document
    from irlens.matrix.spec import check_device_present
    from irlens.matrix.join import RERUN, SHARDS, join
    from irlens.reporting import only_workloads
    from irlens.reporting.zoo_page import zoo_markdown
    from irlens.cli.call_plans import read_cells
    from irlens.zoo.repro import by_reference, write_repros
    from irlens.zoo.run import ZooConfig, parse_shard, run_zoo

    apply_frontend_settings(args)
    if args.rerun and (not args.from_ or args.plan_calls):
        raise UsageError("--rerun joins documents given with --from, without --plan-calls")
    if args.fill and args.from_ and not args.plan_calls:
        raise UsageError("--fill runs cells; --from rebuilds a page without running: give one of them")
    if args.fill_not_run and not args.fill:
        raise UsageError("--fill-not-run narrows --fill: give the document with --fill")
    if args.cells and args.from_ and not args.plan_calls:
        raise UsageError("--cells selects cells to run; --from rebuilds a page without running: give one of them")
    if not (args.from_ or args.plan_calls):  # --from runs nothing; a plan is made for another machine
        check_device_present(args.device)
    out = Path(args.out)
    cfg = ZooConfig(args.models, args.family, args.backends, args.modes, args.device, args.preset, args.dtype,
                    parse_shard(args.shard) if args.shard else None, args.jobs, args.timeout, args.budget_s,
                    read_document(args.fill) if args.fill else None, args.fill_not_run, args.precision,
                    read_cells(args.cells) if args.cells else None)
    if args.plan_calls:
        return plan_zoo_calls(args, cfg, out)
    if args.from_:
        doc = join(read_documents(args.from_), RERUN if args.rerun else SHARDS)
        if args.models:  # the page of these models alone (a name the documents lack: UsageError)
            doc = only_workloads([doc], args.models)[0]
    else:
        doc = run_zoo(cfg, command=shlex.join(["irlens", "zoo", *sys.argv[2:]]) if sys.argv[1:2] == ["zoo"] else None,
                      checkpoint=lambda doc: [write_document(doc, p) for p in (out / "zoo.json", args.json) if p])
        if cfg.fill is not None and not doc.rows:
            skipped = doc.runs[0].zoo.backends_not_run
            print(f"irlens zoo: {args.fill} has an ok row for every cell these options name: nothing to run "
                  f"(a document without rows is written, for the join)" +
                  "".join(f"; {b} not run here: {why}" for b, why in skipped.items()), file=sys.stderr)
    repros = write_repros(doc, out / "repro", args.device if not args.from_ else None,
                          backends=by_reference(args.backends)) if args.repro else {}
    # files by their path from the page (OUT/zoo.md); a kind with none says why
    page = zoo_markdown(doc, {sig: path if path.startswith("not written") else os.path.relpath(path, out)
                              for sig, path in repros.items()})
    write_page(doc, page, out, "zoo", args.json)
    return exit_status(doc)


def plan_zoo_calls(args, cfg, out: Path) -> int:
    """`--plan-calls`: the selection's cells (every backend that runs on the device's type by default,
    available here or not: the plan is made for another machine) packed into calls; nothing runs."""
    from irlens.backends import get_backend
    from irlens.cli.call_plans import check_documents, plan_calls
    from irlens.cli.command import frontend_settings
    from irlens.workloads.workload import MODES
    from irlens.zoo.run import device_backends, shard_of, zoo_cells, zoo_models

    docs = read_documents(args.from_)
    check_documents(docs, cfg.device, cfg.preset)
    names = zoo_models(cfg.models, cfg.family)
    names = shard_of(names, *cfg.shard) if cfg.shard else names
    backends = [get_backend(b).name for b in cfg.backends] if cfg.backends else device_backends(cfg.device)
    cells = zoo_cells(cfg, names, backends, cfg.modes or list(MODES))
    options = ["--device", cfg.device, "--preset", cfg.preset, *(["--dtype", cfg.dtype] if cfg.dtype else []),
               "--jobs", str(cfg.jobs), "--timeout", f"{cfg.timeout:g}",
               *(["--budget-s", f"{cfg.budget_s:g}"] if cfg.budget_s else []),
               *(["--tf32"] if cfg.precision == "tf32" else []),
               *[w for option, dest, _ in frontend_settings() if getattr(args, dest, None) is not None
                 for w in (option, getattr(args, dest))]]
    plan_calls("zoo", cells, docs, args.plan_calls, cfg.jobs, cfg.timeout, out, options)
    return 0
