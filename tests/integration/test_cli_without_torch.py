"""`irlens COMMAND --help` and a bad argument answer without importing torch (a fresh interpreter
each, as a user runs them): the parser's choices come from irlens.names, irlens.parallel.names and
the frontends' sources."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from irlens import names
from irlens.cli import COMMANDS

# the CLI's exit status and whether torch was imported, as the last line of stdout
PROBE = ("import json, sys\nfrom irlens.cli import main\nrc = main(sys.argv[1:])\n"
         "print(json.dumps({'rc': rc, 'torch': 'torch' in sys.modules}))")
# one bad argument per command: an unknown option, or a value its type or choices refuse
BAD = {
    "list": ["--format", "yaml"],
    "dump": ["gelu", "--frontend", "joint", "--tp", "0"],
    "compare": ["--backends", "eager,nope"],
    "bench": ["--dtypes", "float8"],
    "report": ["--mode", "both"],
    "explain": ["gelu", "--backend", "nope"],
    "train": ["--reduce-dtype", "float16"],
    "repro": ["gelu", "--backend", "eager", "--timeout", "-1"],
    "conformance": ["--limit", "0"],
    "zoo": ["--family", "keras"],
    "graphnet": ["--jobs", "zero"],
    "expected": ["check", "--suite", "s", "--from", "f.json", "--no-such-option"],
}


def run(args: list[str]) -> tuple[dict, subprocess.CompletedProcess]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=120)
    return json.loads(done.stdout.strip().splitlines()[-1]), done


def test_every_command_has_a_bad_argument_case():
    assert sorted(BAD) == sorted(COMMANDS)


def test_top_level_help_imports_no_torch():
    probe, done = run(["--help"])
    assert probe == {"rc": 0, "torch": False}, done.stderr
    assert all(command in done.stdout for command in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_imports_no_torch(command):
    probe, done = run([command, "--help"])
    assert probe == {"rc": 0, "torch": False}, done.stderr
    assert f"usage: irlens {command}" in done.stdout


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_argument_is_one_line_and_exit_2_without_torch(command):
    probe, done = run([command, *BAD[command]])
    assert probe == {"rc": 2, "torch": False}, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"irlens {command}: error:"), done.stderr
    assert lines[0].endswith(f"(see `irlens {command} --help`)"), done.stderr


def test_an_unknown_frontend_is_refused_without_torch():
    probe, done = run(["dump", "gelu", "--frontend", "nope"])
    assert probe == {"rc": 2, "torch": False}, done.stderr
    assert done.stderr == f"irlens dump: error: unknown frontend 'nope'; choose from: {', '.join(names.FRONTENDS)}, joint\n"


def test_an_unknown_backend_names_the_choices():
    _, done = run(["compare", "--backends", "eager,nope"])
    assert f"unknown backend 'nope'; choose from: {', '.join(names.BACKENDS)}" in done.stderr
