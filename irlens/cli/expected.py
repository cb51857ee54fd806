"""`irlens expected`: a suite's expected-status table (irlens.reporting.expected). `update` writes
it from a results document; `check` compares a document against it and says what regressed,
what improved, what is new and what did not run: exit 1 on a regression, 0 otherwise, 2 on bad
input."""
from __future__ import annotations

import shlex
from pathlib import Path

from irlens.cli.command import guarded
from irlens.wording import plural

HELP = "expected-status tables: write a suite's from a results document, or check a document against it"
ACTIONS = ("update", "check")
# the repository's tables (a checkout, or an editable install); --tables names another folder
TABLES = Path(__file__).resolve().parents[2] / "benchmarks" / "expected"


def add_arguments(p) -> None:
    p.add_argument("action", choices=ACTIONS,
                   help="update: write the suite's table from the document; check: compare the document against "
                        "the table (exit 1 on a regression)")
    p.add_argument("--suite", required=True, help="the table's name: its file is <tables>/<suite>.csv")
    p.add_argument("--from", dest="from_", required=True, metavar="RESULTS_JSON",
                   help="a results document (.json or .json.gz) of compare, bench, compare --cross or zoo")
    p.add_argument("--tables", default=str(TABLES), help="the folder of the tables")
    p.add_argument("--strict", action="store_true",
                   help="check: a cell of the table that the document did not measure is a regression too")


@guarded
def run(args) -> int:
    from irlens.errors import UsageError
    from irlens.matrix import read_document
    from irlens.reporting.expected import check, document_cells, findings_lines, read_table, suite_table, write_table

    cells = document_cells(read_document(args.from_), args.from_)
    if not cells:
        raise UsageError(f"{args.from_} has no rows")
    tables = Path(args.tables)
    path = suite_table(tables, args.suite, existing=args.action == "check")
    update = shlex.join(["irlens", "expected", "update", "--suite", args.suite, "--from", args.from_]
                        + ([] if tables == TABLES else ["--tables", args.tables]))
    if args.action == "update":
        previous = read_table(path) if path.is_file() else None
        write_table(cells, path)
        print(f"wrote {plural(len(cells), 'cell')} to {path}")
        if previous is not None:
            print("against the table it replaced: " + findings_lines(check(previous, cells), update)[0])
        return 0
    table = read_table(path)
    if not {c.key for c in cells} & {c.key for c in table}:
        raise UsageError(f"{args.from_} has no cell of the table of suite {args.suite!r} ({path}): "
                         "is it a document of that suite?")
    found = check(table, cells)
    print(f"irlens expected check: {args.from_} against {path}")
    print("\n".join(findings_lines(found, update, args.strict)))
    return found.exit_status(args.strict)
