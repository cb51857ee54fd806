"""`irlens conformance`: its options, and the run from argv to files and an exit status.

Exit status: 0 when no captured case has a wrong or broken meaning, 1 when one has, 2 on bad
input (an unknown corpus or frontend, a bad number, a -k that matches nothing: a UsageError),
always with a message that says what is valid.
"""
from __future__ import annotations

import gzip
import json
import shlex
import sys
from pathlib import Path

from irlens.cli.command import EXIT_FAIL, EXIT_OK, csv, guarded, output_file, positive_float, positive_int
from irlens.conformance.config import DEFAULT_TIMEOUT_S, RTOL, SweepConfig

HELP = "sweep op corpora (OpInfo, lax, jax.numpy) through the frontends; is each op's common view faithful?"


def add_arguments(parser) -> None:
    parser.add_argument("--corpus", dest="corpora", type=csv, default=None,
                        help="comma-separated: opinfo, lax, lax_harness, jnp (default: all)")
    parser.add_argument("--frontends", type=csv, default=None,
                        help="comma-separated: dynamo, thunder (opinfo), jax (the others); "
                             "default: all the corpora feed")
    parser.add_argument("-k", dest="patterns", action="append", default=[], metavar="REGEX",
                        help="only cases whose id (corpus:op:dtype#sample, e.g. opinfo:div.floor_rounding:float32#0) "
                             "matches; repeat for more")
    parser.add_argument("--limit", type=positive_int, default=None, help="at most this many cases of each corpus")
    parser.add_argument("--samples", type=positive_int, default=1, help="samples per op and dtype")
    parser.add_argument("--jobs", type=positive_int, default=1, help="worker processes")
    parser.add_argument("--timeout", type=positive_float, default=DEFAULT_TIMEOUT_S, help="seconds per case and frontend")
    parser.add_argument("--rtol", type=positive_float, default=RTOL, help="norm-wise relative tolerance for float64 results")
    parser.add_argument("--json", type=output_file, default=None, help="write every record and the summary here (.json or .json.gz)")
    parser.add_argument("--md", type=output_file, default=None, help="write the results page (Markdown) here")
    parser.add_argument("--in-process", action="store_true",
                        help="run the cases in this process: no timeouts, no crash isolation (debugging)")


def config_from(args) -> SweepConfig:
    return SweepConfig(corpora=args.corpora, frontends=args.frontends, patterns=list(args.patterns), limit=args.limit,
                       samples=args.samples, jobs=args.jobs, timeout=args.timeout, rtol=args.rtol,
                       isolate=not args.in_process, progress=True)


def command_line(args) -> str:
    """The command that makes the same sweep (what the results page says it was made by)."""
    words = ["irlens", "conformance"]
    for flag, value in (("--corpus", args.corpora), ("--frontends", args.frontends)):
        if value:
            words += [flag, ",".join(value)]
    for pattern in args.patterns:
        words += ["-k", pattern]
    for flag, value, default in (("--limit", args.limit, None), ("--samples", args.samples, 1),
                                 ("--jobs", args.jobs, 1), ("--timeout", args.timeout, DEFAULT_TIMEOUT_S),
                                 ("--rtol", args.rtol, RTOL), ("--json", args.json, None), ("--md", args.md, None)):
        if value is not None and value != default:
            words += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    if args.in_process:
        words.append("--in-process")
    return shlex.join(words)


@guarded
def run(args) -> int:
    from irlens.conformance.check import BROKEN, WRONG
    from irlens.conformance.runner import run as sweep
    from irlens.conformance.summary import markdown, meaning_problems, table_text

    doc = sweep(config_from(args))  # bad input: BadConfig / UnknownName, UsageErrors (exit 2)
    doc["command"] = command_line(args)
    if args.json:
        write_json(doc, args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    if args.md:
        Path(args.md).parent.mkdir(parents=True, exist_ok=True)
        Path(args.md).write_text(markdown(doc))
        print(f"wrote {args.md}", file=sys.stderr)
    print(table_text(doc))
    return EXIT_FAIL if meaning_problems(doc, WRONG) or meaning_problems(doc, BROKEN) else EXIT_OK


def write_json(doc: dict, path: str) -> None:
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, indent=None if out.suffix == ".gz" else 1)
    if out.suffix == ".gz":
        out.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        out.write_text(text + "\n")
