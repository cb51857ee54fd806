"""`irlens report`: HTML and Markdown pages from results documents (irlens.reporting); without
`--from`, from the CPU tiny matrix run now."""
from __future__ import annotations

import sys

from irlens.cli.command import add_modes_option, backends, csv, guarded, output_folder, read_documents

HELP = "HTML + Markdown report contrasting what each backend fused and what it cost"


def add_arguments(r) -> None:
    r.add_argument("--from", dest="from_", nargs="+", action="extend", default=[], metavar="RESULTS_JSON",
                   help="compare/bench/cross result files, merged (`--from a.json b.json` or `--from a.json --from "
                        "b.json`: the shards of a split run); default: run the CPU tiny matrix now")
    r.add_argument("--out", type=output_folder, default="irlens-report", help="output folder (default: irlens-report)")
    r.add_argument("--workloads", type=csv, default=None,
                   help="with --from: draw only these workloads' rows; without: the workloads of the matrix run")
    r.add_argument("--backends", type=backends, default=None,
                   help="without --from: the matrix run's backends (default: all)")
    add_modes_option(r)


@guarded
def run(args) -> int:
    from irlens.matrix import plan_matrix, run_plan
    from irlens.api import report
    from irlens.reporting import only_workloads

    docs = read_documents(args.from_)
    if docs and getattr(args, "workloads", None):
        docs = only_workloads(docs, args.workloads)
    elif not docs:
        print("irlens report: no --from given: running the CPU tiny matrix ...", file=sys.stderr)
        plan = plan_matrix(getattr(args, "workloads", None), getattr(args, "backends", None),
                           getattr(args, "modes", None), device="cpu", preset="tiny")
        docs = [run_plan(plan)]
    paths = report(docs, args.out or "irlens-report", frontends=getattr(args, "frontends", True))
    for kind in ("html", "md", "json"):
        print(f"wrote {paths[kind]}")
    return 0
