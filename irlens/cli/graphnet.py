"""`irlens graphnet`: GraphNet's samples (a clone of PaddlePaddle/GraphNet) through every stack,
fwd and fwd+bwd, as `irlens zoo` runs the zoo; the page (Markdown on stdout and in OUT/graphnet.md)
adds pass rates per source and GraphNet's S(t) and ES(t) per stack beside irlens's verdict, the
document goes to OUT/graphnet.json, the HTML report to OUT/report.html; `--shard K/N` runs a share,
`--from` rebuilds the page from documents (a split run's shards); `--repro` writes a reproducer per
kind of a stack's own failure or mismatch (OUT/repro/). Exit 1 when a row mismatches or fails; 2 on
bad input (a root with no sample, an unknown source, a bad option)."""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from irlens.cli.command import (JOBS_HELP, backends, add_device_option, add_modes_option, csv, guarded, output_file,
                                output_folder, positive_float, positive_int, read_documents, write_page)
from irlens.cli.call_plans import add_options as add_call_plan_options
from irlens.core.precision import add_option as add_precision_option

HELP = "GraphNet's samples through every stack: pass rates per source, GraphNet's S(t)/ES(t) beside irlens's verdict"


def add_arguments(p) -> None:
    p.add_argument("--root", default=None, help="a GraphNet clone (or its samples/ folder, or one source's folder) to run; default: none, "
                        "then --from rebuilds a page")
    p.add_argument("--sources", type=csv, default=None,
                   help="comma-separated sources, the folders under samples/ (default: all)")
    p.add_argument("--max-elements", type=positive_int, default=None,
                   help="only samples whose inputs and weights hold at most this many elements, from their meta "
                        "(default: any)")
    p.add_argument("--max-bytes", type=positive_int, default=None,
                   help="only samples whose inputs and weights take at most this many bytes (default: any)")
    p.add_argument("--sample", type=positive_int, default=None, metavar="N",
                   help="a random draw of N of the selected samples (default: all of them)")
    p.add_argument("--seed", type=int, default=0, help="the draw's seed (default: 0)")
    p.add_argument("--shard", default=None, metavar="K/N",
                   help="run shard K of N (0 <= K < N) of the selection: every N-th sample from the K-th "
                        "(default: all of them)")
    p.add_argument("--backends", type=backends, default=None,
                   help="comma-separated (default: every backend available on the device)")
    add_modes_option(p)
    add_device_option(p)
    from irlens.names import COMPUTE_DTYPES

    p.add_argument("--dtype", choices=COMPUTE_DTYPES, default=None,
                   help="compute dtype (default: each sample's own, the one most of its elements have)")
    p.add_argument("--jobs", type=positive_int, default=1, help=JOBS_HELP)
    p.add_argument("--timeout", type=positive_float, default=300.0,
                   help="seconds per cell and per float64 reference (default: 300)")
    p.add_argument("--budget-s", type=positive_float, default=None,
                   help="cells not started within this many seconds are `unavailable` rows saying so (default: none)")
    p.add_argument("--out", type=output_folder, default="irlens-graphnet",
                   help="folder for graphnet.md, graphnet.json, report.html (default: irlens-graphnet)")
    p.add_argument("--json", type=output_file, default=None, help="also write the document here (.json or .json.gz; default: only OUT/graphnet.json)")
    p.add_argument("--from", dest="from_", nargs="+", action="extend", default=[], metavar="RESULTS_JSON",
                   help="rebuild the page from these documents (merged: a split run's shards) instead of running "
                        "(default: run)")
    p.add_argument("--rerun", action="store_true",
                   help="with --from: a cell several documents hold takes the last one's row (default: an error)")
    p.add_argument("--repro", action="store_true",
                   help="write an `irlens repro` file (the sample's own model.py and the stack's path) for each kind "
                        "of failure that is upstream's and each kind of mismatch (OUT/repro/; default: none)")
    add_call_plan_options(p, "graphnet")
    add_precision_option(p)


@guarded
def run(args) -> int:
    from irlens.cli.call_plans import read_cells
    from irlens.errors import UsageError
    from irlens.graphnet.corpus import GraphNetConfig, run_corpus
    from irlens.graphnet.page import graphnet_markdown
    from irlens.matrix import exit_status, write_document
    from irlens.matrix.join import RERUN, SHARDS, join
    from irlens.matrix.spec import check_device_present
    from irlens.zoo.run import parse_shard

    if args.rerun and (not args.from_ or args.plan_calls):
        raise UsageError("--rerun joins documents given with --from, without --plan-calls")
    if (args.plan_calls or args.cells) and not args.root:
        raise UsageError("--plan-calls and --cells take the samples under --root (a GraphNet clone): give it")
    if not args.plan_calls and bool(args.from_) == bool(args.root):
        raise UsageError("give --root (a GraphNet clone) to run samples, or --from documents to rebuild the page")
    if not (args.from_ or args.plan_calls):  # --from runs nothing; a plan is made for another machine
        check_device_present(args.device)
    out = Path(args.out)
    cfg = None if args.root is None else GraphNetConfig(
        Path(args.root), args.sources, args.max_elements, args.max_bytes, args.sample, args.seed,
        parse_shard(args.shard) if args.shard else None, args.backends, args.modes, args.device, args.dtype, args.jobs,
        args.timeout, args.budget_s, args.precision, read_cells(args.cells) if args.cells else None)
    if args.plan_calls:
        return plan_graphnet_calls(args, cfg, out)
    if args.from_:
        doc = join(read_documents(args.from_), RERUN if args.rerun else SHARDS)
    else:
        command = shlex.join(["irlens", "graphnet", *sys.argv[2:]]) if sys.argv[1:2] == ["graphnet"] else None
        out.mkdir(parents=True, exist_ok=True)
        doc = run_corpus(cfg, command=command,  # written after every row: a stopped run keeps what finished
                         checkpoint=lambda doc: [write_document(doc, p) for p in (out / "graphnet.json", args.json) if p])
    repros = _write_repros(args, doc, out) if args.repro else {}
    # files by their path from the page (OUT/graphnet.md); a kind with none says why
    page = graphnet_markdown(doc, {sig: path if path.startswith("not written") else os.path.relpath(path, out)
                                   for sig, path in repros.items()})
    write_page(doc, page, out, "graphnet", args.json)
    return exit_status(doc)


def _write_repros(args, doc, out: Path) -> dict[str, str]:
    """A reproducer per kind of a stack's own failure and per kind of mismatch (irlens.zoo.repro), on
    the run's device (with --from, the documents'); a backend named by reference gets its file too."""
    from irlens.zoo.repro import by_reference, write_repros

    return write_repros(doc, out / "repro", args.device if not args.from_ else None, mismatches=True,
                        backends=by_reference(args.backends))


def plan_graphnet_calls(args, cfg, out: Path) -> int:
    """`--plan-calls`: the selected samples' cells (every backend that runs on the device's type by
    default, available here or not: the plan is made for another machine) packed into calls; nothing
    runs. A sample is named by its path below samples/, the same under another clone's root."""
    from irlens.backends import get_backend
    from irlens.cli.call_plans import check_documents, plan_calls
    from irlens.graphnet.corpus import cell_name, corpus_cells, find_samples, select
    from irlens.workloads.workload import MODES
    from irlens.zoo.run import device_backends

    docs = read_documents(args.from_)
    check_documents(docs, cfg.device, "tiny")
    chosen = select(find_samples(cfg.root), cfg)
    backends = [get_backend(b).name for b in cfg.backends] if cfg.backends else device_backends(cfg.device)
    cells = corpus_cells(chosen, backends, cfg.modes or list(MODES), cfg.cells)
    options = ["--root", str(cfg.root), "--device", cfg.device, *(["--dtype", cfg.dtype] if cfg.dtype else []),
               "--jobs", str(cfg.jobs), "--timeout", f"{cfg.timeout:g}",
               *(["--budget-s", f"{cfg.budget_s:g}"] if cfg.budget_s else []),
               *(["--tf32"] if cfg.precision == "tf32" else [])]
    plan_calls("graphnet", cells, docs, args.plan_calls, cfg.jobs, cfg.timeout, out, options, key=cell_name)
    return 0
