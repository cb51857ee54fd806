"""A fresh run of a slice of the zoo-cpu-tiny suite, checked against its committed table
(benchmarks/expected/zoo-cpu-tiny.csv, `irlens expected check`): a change to irlens that moves one
of the slice's cells on the CPU (a status, graph breaks, unknown ops) fails here, where
tests/architecture/test_expected_tables.py only compares committed documents with their tables.

The slice is the cheapest model of the suite, forward, through eager and irlens's own lowering of
Dynamo's graph to XLA: 20 to 30 s on a shared 2-core machine (Inductor's cold compile of the same
model would double it). The table's other cells are `not run`, which fails only with --strict."""
from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from irlens.cli import main
from irlens.matrix import read_document, write_document
from irlens.reporting.expected import read_table

ROOT = Path(__file__).resolve().parents[2]
SUITE = "zoo-cpu-tiny"
COMMITTED = ROOT / "tests" / "data" / "zoo-cpu-tiny.json.gz"  # the document the table was written from
MODEL, MODE, BACKENDS = "hf_albert", "fwd", ("eager", "xla")
SLICE_CELLS = len(BACKENDS)  # one model, one mode

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("transformers", "jax")),
    reason="the slice needs the zoo's transformers and JAX (pip install 'irlens[all]')")


def summary(as_expected: int, regressions: str) -> str:
    """The check's first line for the slice: its cells compared, the table's others not run."""
    not_run = len(read_table(ROOT / "benchmarks" / "expected" / f"{SUITE}.csv")) - SLICE_CELLS
    return (f"{SLICE_CELLS} cells compared: {as_expected} as expected, {regressions}, 0 improvements, 0 changed; "
            f"0 new, {not_run} not run")


def check(document: Path, capsys) -> tuple[int, list[str]]:
    capsys.readouterr()
    status = main(["expected", "check", "--suite", SUITE, "--from", str(document)])
    return status, capsys.readouterr().out.splitlines()


def test_a_fresh_run_of_a_slice_of_the_suite_matches_its_table(tmp_path, capsys):
    out = tmp_path / "zoo"
    # as the suite was run (docs/results/zoo-cpu-tiny); 1 is a mismatch or failure, which the table judges
    assert main(["zoo", "--models", MODEL, "--backends", ",".join(BACKENDS), "--mode", MODE,
                 "--jobs", "1", "--timeout", "300", "--out", str(out)]) in (0, 1)
    status, lines = check(out / "zoo.json", capsys)
    # on failure, what moved: the sections above the long list of the table's cells not run
    findings = lines[:next((i for i, line in enumerate(lines) if line.startswith("NOT RUN")), len(lines))]
    assert status == 0 and lines[1] == summary(SLICE_CELLS, "0 regressions"), "\n".join(findings)


def test_a_slice_with_a_cell_that_regressed_fails_the_check(tmp_path, capsys):
    """The committed rows of the slice pass; the same rows with XLA's ok turned failed exit 1."""
    committed = read_document(COMMITTED)
    rows = [r for r in committed.rows if r.workload == MODEL and r.mode == MODE and r.backend in BACKENDS]
    assert len(rows) == SLICE_CELLS
    path = tmp_path / "slice.json"
    write_document(dataclasses.replace(committed, rows=rows), path)
    status, lines = check(path, capsys)
    assert status == 0 and lines[1] == summary(SLICE_CELLS, "0 regressions")
    doctored = [dataclasses.replace(r, status="failed", reason="RuntimeError: lowering broke") if r.backend == "xla"
                else r for r in rows]
    write_document(dataclasses.replace(committed, rows=doctored), path)
    status, lines = check(path, capsys)
    assert status == 1 and lines[1] == summary(SLICE_CELLS - 1, "1 regression")
    assert "REGRESSED (1): a status dropped (ok > mismatch > failed), or more graph breaks or unknown ops" in lines
    assert f"  {MODEL} {MODE} xla (via dynamo) float32: ok -> failed (RuntimeError: lowering broke)" in lines
