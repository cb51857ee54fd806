"""What a named configuration is: one command line (an `irlens` command, a pytest subset, the
parallel table script) with its arguments as typed fields, a one-line description, the wall time
a committed run of it took and, where it has a time budget and a per-cell timeout, the upper bound
on its wall time they give (docs/configs.md).

The fields of `Bench`, `Zoo` and `Compare` are named as their command's parser names its
options' values (argparse dests: `modes` for `--mode`, `precision` for `--tf32`), so the command
line is written by that parser's own actions and always parses. A field left None is the
command's default and is not written. Output paths (`json`, `md`, `out`) are relative to the
results folder, $IRLENS_RESULTS (default: results-gpu).
"""
from __future__ import annotations

import argparse
import importlib
import functools
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import ClassVar

from irlens.errors import UsageError
from irlens.parallel.table_rows import Row

RESULTS_ENV = "IRLENS_RESULTS"
OUTPUTS = ("json", "md", "out")
# what a budgeted command takes beside its budget and the timeout of the last cell it started: its
# imports and first workers, and writing its outputs at the end (a guess: no committed run records it)
START_S = 60.0


def results_folder() -> Path:
    return Path(os.environ.get(RESULTS_ENV) or "results-gpu")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    name: str
    description: str
    # the wall time of a committed run of this command line, and where that run is recorded
    expected_s: float | None = None
    expected_from: str = ""

    program: ClassVar[tuple[str, ...]]

    def arguments(self, skip: frozenset[str] = frozenset()) -> list[str]:
        """The command line after `program`, without the options whose dests are in `skip`."""
        raise NotImplementedError

    def command_line(self) -> list[str]:
        return [*self.program, *self.arguments()]

    def bound_s(self) -> float | None:
        """The most its wall time can be about, from its options alone: no cell starts after the
        budget (`--budget-s`), the last one started stops within its `--timeout`, plus START_S;
        None where it sets no budget or no timeout."""
        budget, timeout = getattr(self, "budget_s", None), getattr(self, "timeout", None)
        return None if budget is None or timeout is None else budget + timeout + START_S

    def expected(self) -> str:
        measured = ("unknown (no committed run of this command line)" if self.expected_s is None else
                    f"about {self.expected_s / 60:.1f} min ({self.expected_s:.0f} s on {self.expected_from})")
        bound = self.bound_s()
        if bound is None:
            return measured
        return (f"{measured}; at most about {bound / 60:.1f} min (a bound from its options, not a measurement: "
                f"--budget-s {self.budget_s:g} + --timeout {self.timeout:g} + {START_S:.0f} s to start and write)")

    def own_fields(self):
        """(name, value) of the fields that are the command's arguments, those set only."""
        base = {f.name for f in fields(RunConfig)}
        return [(f.name, getattr(self, f.name)) for f in fields(self)
                if f.name not in base and getattr(self, f.name) not in (None, False, ())]


class CommandOptions(argparse.ArgumentParser):
    """An irlens command's options with no defaults: `given(argv)` says which an argument list
    sets, `actions` maps each dest to its option."""

    def __init__(self, command: str):
        super().__init__(prog=f"irlens {command}", add_help=False)
        self.actions: dict[str, argparse.Action] = {}
        # the subcommand's module by name, as irlens.cli.command_module does (that module imports this one)
        importlib.import_module(f"irlens.cli.{command}").add_arguments(self)

    def add_argument(self, *args, **kwargs):
        action = super().add_argument(*args, **{**kwargs, "default": argparse.SUPPRESS})
        self.actions[action.dest] = action
        return action

    def error(self, message: str):
        raise UsageError(message)

    def given(self, argv: list[str]) -> set[str]:
        """The dests `argv` sets (none where it does not parse: the command's own parse says why)."""
        try:
            return set(vars(self.parse_known_args(argv)[0]))
        except UsageError:
            return set()


@functools.cache
def command_options(command: str) -> CommandOptions:
    return CommandOptions(command)


def option_text(value) -> str:
    if isinstance(value, tuple):
        return ",".join(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True, kw_only=True)
class IrlensCommand(RunConfig):
    command: ClassVar[str]

    @property
    def program(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("irlens", self.command)

    def arguments(self, skip: frozenset[str] = frozenset()) -> list[str]:
        actions = command_options(self.command).actions
        out: list[str] = []
        for dest, value in self.own_fields():
            if dest in skip:
                continue
            action = actions[dest]
            option = max(action.option_strings, key=len)
            if action.nargs == 0:  # a flag: the field holds the value it stores
                if value != action.const:
                    raise ValueError(f"configuration {self.name}: {dest}={value!r} is not what {option} sets")
                out.append(option)
            else:
                out += [option, str(results_folder() / value) if dest in OUTPUTS else option_text(value)]
        return out


@dataclass(frozen=True, kw_only=True)
class Bench(IrlensCommand):
    command = "bench"
    workloads: tuple[str, ...] | None = None
    backends: tuple[str, ...] | None = None
    modes: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    gpus: tuple[str, ...] | None = None
    jobs: int | None = None
    compile_jobs: int | None = None
    timeout: float | None = None
    budget_s: float | None = None
    cache_dir: str | None = None
    json: str | None = None
    md: str | None = None


@dataclass(frozen=True, kw_only=True)
class Zoo(IrlensCommand):
    command = "zoo"
    models: tuple[str, ...] | None = None
    backends: tuple[str, ...] | None = None
    modes: tuple[str, ...] | None = None
    device: str | None = None
    preset: str | None = None
    jobs: int | None = None
    timeout: float | None = None
    budget_s: float | None = None
    fill: str | None = None
    fill_not_run: bool = False
    thunder_capture: str | None = None
    out: str | None = None


@dataclass(frozen=True, kw_only=True)
class Compare(IrlensCommand):
    command = "compare"
    workloads: tuple[str, ...] | None = None
    backends: tuple[str, ...] | None = None
    cross: bool = False
    device: str | None = None
    modes: tuple[str, ...] | None = None
    preset: str | None = None
    dtype: str | None = None
    timeout: float | None = None
    json: str | None = None


@dataclass(frozen=True, kw_only=True)
class GpuTests(RunConfig):
    """GPU-marked tests (`-m gpu`), every result reported (-rA), no cache written into the tree."""

    program = ("python", "-m", "pytest")
    files: tuple[str, ...]
    ignore: tuple[str, ...] = ()
    keyword: str | None = None
    workers: int | None = None  # pytest-xdist processes

    def arguments(self, skip: frozenset[str] = frozenset()) -> list[str]:
        return ["-m", "gpu", "-rA", "-p", "no:cacheprovider", *(["-n", str(self.workers)] if self.workers else []),
                *(["-k", self.keyword] if self.keyword else []), *self.files, *(f"--ignore={f}" for f in self.ignore)]


@dataclass(frozen=True, kw_only=True)
class Table(RunConfig):
    """scripts/parallel_table.py: a preset of its TABLES, or a model and rows; every row profiled."""

    program = ("python", "scripts/parallel_table.py")
    table: str | None = None
    model: str | None = None
    n_layers: int | None = None
    steps: int | None = None
    timeout: float | None = None
    budget_s: float | None = None
    rows: tuple[Row, ...] | None = None  # typed; the command line names them (Row.name)
    out: str

    def arguments(self, skip: frozenset[str] = frozenset()) -> list[str]:
        out = ["--profile"]
        for dest, value in self.own_fields():
            value = tuple(row.name for row in value) if dest == "rows" else value
            text = str(results_folder() / value) if dest in OUTPUTS else option_text(value)
            out += ["--" + dest.replace("_", "-"), text]
        return out
