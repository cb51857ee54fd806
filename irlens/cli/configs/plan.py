"""`--config NAME` on an irlens command: the configuration's arguments first, then the ones given
beside it (which replace the configuration's), and before it starts, what it runs and for how long."""
from __future__ import annotations

import json
import shlex
import sys

from irlens.errors import UsageError
from irlens.core.registry import UnknownName
from irlens.cli.configs.catalog import CONFIGS
from irlens.cli.configs.kinds import IrlensCommand, RunConfig, command_options


def config_name(args: list[str]) -> tuple[str | None, list[str]]:
    """The NAME of `--config NAME` (or of an abbreviation argparse takes, `--conf NAME`, `--config=NAME`) and
    the other arguments."""
    for i, arg in enumerate(args):
        option, eq, value = arg.partition("=")
        if arg == "--":
            break
        if len(option) >= 5 and "--config".startswith(option):
            if eq:
                return value, args[:i] + args[i + 1:]
            if i + 1 < len(args):
                return args[i + 1], args[:i] + args[i + 2:]
    return None, args


def lookup(command: str, name: str) -> IrlensCommand:
    """The configuration `name` of `irlens command`; UsageError naming the valid ones if there is none."""
    mine = [c.name for c in CONFIGS.values() if getattr(c, "command", None) == command]
    if name not in CONFIGS:
        raise UnknownName(f"{command} configuration", name, mine, " (irlens list --configs)")
    config = CONFIGS[name]
    if name not in mine:
        raise UsageError(f"configuration {name} runs `{shlex.join(config.program)}`, not `irlens {command}`; "
                         f"the {command} configurations: {', '.join(mine)}")
    return config


def expand(parser, args: list[str] | None) -> list[str] | None:
    """`args` of `parser` (irlens COMMAND) with a named configuration's arguments put first, less those
    the other arguments set; the plan printed on stderr. A bad name: one line, exit 2."""
    if args is None:
        return args
    name, rest = config_name(args)
    if name is None:
        return args
    command = parser.prog.split()[-1]
    try:
        config = lookup(command, name)
    except UsageError as e:
        parser.exit(2, f"{parser.prog}: error: {e}\n")
    options = command_options(command)
    given = options.given(rest)
    ours = config.arguments(skip=frozenset(given))
    replaced = [max(options.actions[dest].option_strings, key=len) for dest, _ in config.own_fields() if dest in given]
    print(plan(config, [*config.program, *ours, *rest], replaced), file=sys.stderr)
    return [*ours, *args]


def plan(config: RunConfig, line: list[str], replaced: list[str] = ()) -> str:
    """What a configuration runs (its full command line) and how long it is expected to take: a committed
    run's wall time, and the bound its budget and timeout give."""
    return "\n".join([f"irlens: configuration {config.name}: {config.description}",
                      f"irlens: runs: {shlex.join(line)}",
                      *([f"irlens: as given here, not the configuration's: {', '.join(replaced)}"] if replaced else []),
                      f"irlens: expected wall time: {config.expected()}"])


def listing(as_json: bool) -> str:
    """Every configuration: its name, the command line it runs, its expected time (measured, and the bound its
    options give) and its description."""
    rows = [{"name": c.name, "command": shlex.join(c.command_line()), "description": c.description,
             "expected_s": c.expected_s, "bound_s": c.bound_s(), "expected": c.expected()} for c in CONFIGS.values()]
    if as_json:
        return json.dumps({"configs": rows}, indent=1)
    return "configurations (irlens bench|zoo|compare --config NAME; any of them: python -m irlens.cli.configs NAME):\n" + \
        "\n".join(f"  {r['name']:<30} {r['description']}\n  {'':<30} $ {r['command']}\n"
                  f"  {'':<30} expected: {r['expected']}" for r in rows)
