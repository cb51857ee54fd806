"""`python -m irlens.cli.configs NAME [ARGS...]`: any configuration by name, ARGS after its own (an irlens
command's replace the configuration's; pytest and the table script take the last of a repeated option).
An irlens configuration runs as `irlens COMMAND --config NAME ARGS`; the others print their plan first."""
from __future__ import annotations

import os
import sys

from irlens.errors import UsageError
from irlens.cli.configs.catalog import CONFIGS
from irlens.cli.configs.kinds import IrlensCommand
from irlens.cli.configs.plan import plan


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 0 if argv else 2
    try:
        config = CONFIGS[argv[0]]
    except UsageError as e:
        print(f"python -m irlens.cli.configs: error: {e}", file=sys.stderr)
        return 2
    if isinstance(config, IrlensCommand):
        line = ["irlens", config.command, "--config", config.name, *argv[1:]]
    else:
        line = [*config.command_line(), *argv[1:]]
        print(plan(config, line), file=sys.stderr, flush=True)
    # `irlens` and `python` as this interpreter runs them (a venv's, whatever PATH holds)
    program = [sys.executable, "-m", "irlens"] if line[0] == "irlens" else [sys.executable]
    os.execv(sys.executable, [*program, *line[1:]])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
