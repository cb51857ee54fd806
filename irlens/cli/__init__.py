"""`irlens`: the command line. Thin: parse, call the library, print, pick the exit status.

One module per subcommand (`list`, `dump`, `compare`, `bench`, `report`, `explain`, `repro`,
`conformance`, `train`, `zoo`), each with `HELP`, `add_arguments(parser)` and `run(args) -> int`;
adding a subcommand is one module and one entry in `COMMANDS`. A subcommand's arguments are added when it is parsed, so
`irlens list` does not import what `irlens train` needs; they take their choices from irlens.names (and
irlens.parallel.names), so `--help` and a bad argument answer without importing torch
(tests/integration/test_cli_without_torch.py).

Exit status: 0 success; 1 a run went wrong (a mismatch, a failed backend); 2 bad input
(unknown workload/frontend/stage/backend, a bad option, a malformed results file), always with
a message that says what is valid (`irlens.cli.command.guarded`, the one place errors become
exit statuses). No traceback reaches the user unless IRLENS_DEBUG=1.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable

from irlens.cli.command import HelpFormatter

COMMANDS = ("list", "dump", "compare", "bench", "report", "explain", "repro", "conformance", "train", "zoo", "graphnet",
            "expected")


class Parser(argparse.ArgumentParser):
    """Bad arguments are one line (what is wrong, and where the help is), not the usage first."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


class SubcommandParser(Parser):
    """A subcommand's parser whose arguments are added by `add_arguments(parser)` on first use
    (parsing it, or showing its help)."""

    def __init__(self, *args, add_arguments: Callable[[argparse.ArgumentParser], object] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self._add_arguments = add_arguments

    def _complete(self) -> None:
        if self._add_arguments is not None:
            add, self._add_arguments = self._add_arguments, None
            add(self)

    def parse_known_args(self, args=None, namespace=None):
        self._complete()
        from irlens.cli.configs.plan import expand  # `--config NAME`: a named configuration's arguments first

        return super().parse_known_args(expand(self, args), namespace)

    def format_help(self) -> str:
        self._complete()
        return super().format_help()

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()


def command_module(name: str):
    return importlib.import_module(f"irlens.cli.{name}")


class CommandLine(Parser):
    """`irlens`: an argument its subcommand does not take is that subcommand's error, pointing at
    its own help (argparse makes it the top parser's)."""

    commands: dict[str, argparse.ArgumentParser]

    def parse_args(self, args=None, namespace=None):
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.commands[parsed.command].error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    p = CommandLine(
        prog="irlens", description="One workload through Dynamo, Thunder and JAX: IRs, fusions, numerics and timings.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=SubcommandParser)
    p.commands = sub.choices
    for name in COMMANDS:
        module = command_module(name)
        sub.add_parser(name, help=module.HELP, description=module.HELP, add_arguments=module.add_arguments,
                       formatter_class=HelpFormatter)\
            .set_defaults(command_handler=module.run)  # a name no option's dest takes (repro has --no-run: dest run)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as e:  # argparse already printed the message; keep its status (2 for errors)
        return int(e.code or 0)
    return args.command_handler(args)
