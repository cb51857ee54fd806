"""Every `irlens ...` command the README and the docs pages show still parses, and names
workloads and backends that exist: the command line of a `console` block (after `$ `) and every
line of a `bash` or `sh` block, parsed by the CLI's own parser, never run. (`text` blocks hold
synopses and output: not checked.)"""
from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import pytest

from irlens.cli import build_parser
from irlens.cli.command import csv

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SEPARATORS = {"&&", "||", "|", ";"}


def shown_commands(text: str) -> list[str]:
    """The command lines of a page's console, bash and sh blocks (continuation lines joined)."""
    found = []
    for lang, body in FENCE.findall(text):
        if lang not in ("console", "bash", "sh"):
            continue
        body = body.replace("\\\n", " ")
        for line in body.splitlines():
            if lang == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if line.strip():
                found.append(line)
    return found


def irlens_invocations(line: str) -> list[list[str]]:
    """The argument lists of each `irlens` (or `.venv/bin/irlens`) command on a shell line."""
    words = shlex.split(line, comments=True)
    commands, current = [], []
    for word in words:
        if word in SEPARATORS:
            commands.append(current)
            current = []
        else:
            current.append(word)
    commands.append(current)
    return [c[1:] for c in commands if c and (c[0] == "irlens" or c[0].endswith("/irlens"))]


def page_commands(page: str) -> list[list[str]]:
    return [args for line in shown_commands((ROOT / page).read_text()) for args in irlens_invocations(line)]


def test_the_pages_show_commands():
    """The extraction finds what the README's tour shows (a test that finds nothing checks nothing)."""
    readme = page_commands("README.md")
    assert ["list"] in readme and any(a[:1] == ["compare"] for a in readme) and len(readme) >= 8
    assert sum(len(page_commands(page)) for page in PAGES) >= 30


def check_reference(ref: str) -> None:
    """A `path/to/file.py:NAME` reference: the file exists (from the repository root) and defines NAME."""
    path, _, name = ref.rpartition(":")
    source = ROOT / path
    assert source.is_file(), f"{ref}: no file {path}"
    defined = {target.id for node in ast.walk(ast.parse(source.read_text())) if isinstance(node, ast.Assign)
               for target in ast.walk(node) if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)}
    assert name in defined, f"{ref}: {path} defines no {name}"


def check_names(args) -> None:
    from irlens.backends import BACKENDS
    from irlens.workloads.builtin import WORKLOADS

    if getattr(args, "frontend", None) == "joint":
        return  # the parallel path's models (llama3, deepseek_v3), not workloads
    workloads = ([args.workload] if getattr(args, "workload", None) else []) + (getattr(args, "workloads", None) or [])
    backends = ([args.backend] if getattr(args, "backend", None) else []) + (getattr(args, "backends", None) or [])
    for name in workloads:
        check_reference(name) if ":" in name else None
        assert ":" in name or name in WORKLOADS, f"no workload {name!r}"
    for name in backends:
        check_reference(name) if ":" in name else None
        assert ":" in name or name in BACKENDS, f"no backend {name!r}"


@pytest.mark.parametrize("page", PAGES)
def test_every_command_shown_parses(page):
    for words in page_commands(page):
        try:
            args = build_parser().parse_args(words)
        except SystemExit as e:
            pytest.fail(f"{page}: `irlens {shlex.join(words)}` does not parse (exit {e.code})")
        check_names(args)


def test_a_stale_command_is_caught():
    bad = shown_commands("```console\n$ irlens compare --mode both\n```\n```bash\nirlens explain gelu --backend \\\n"
                         "  inductor --kernel 0  # a comment\n```\n")
    assert bad == ["irlens compare --mode both", "irlens explain gelu --backend    inductor --kernel 0  # a comment"]
    with pytest.raises(SystemExit):
        build_parser().parse_args(irlens_invocations(bad[0])[0])
    assert irlens_invocations(bad[1]) == [["explain", "gelu", "--backend", "inductor", "--kernel", "0"]]
    assert irlens_invocations("python x.py && .venv/bin/irlens list | head") == [["list"]]
    with pytest.raises(AssertionError, match="defines no NOPE"):
        check_reference("examples/rmsnorm.py:NOPE")
    assert csv("gelu, tinyhead") == ["gelu", "tinyhead"]
