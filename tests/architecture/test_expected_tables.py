"""The committed expected tables (benchmarks/expected, `irlens expected`) hold exactly what the
committed documents they were written from say: a document refreshed without its table, or a table
edited by hand, fails here. A check of the committed results, not a test fixture's use: each
document is where its results are committed (a result page's data or a test fixture), and the
command's own behaviour is tested on small documents made in tests/unit/test_expected.py."""
from __future__ import annotations

from pathlib import Path

import pytest

from irlens.cli import main
from irlens.matrix import read_document

ROOT = Path(__file__).resolve().parents[2]
TABLES = ROOT / "benchmarks" / "expected"
# each committed table and the committed document it was written from (docs/expected.md lists them)
WRITTEN_FROM = {
    "zoo-cpu-tiny": "tests/data/zoo-cpu-tiny.json.gz",
    "zoo-h200-bench": "docs/results/zoo-h200-bench/zoo.json.gz",
    "bench-h100": "tests/data/h100-checks.json.gz",
    "graphnet-cpu-draw": "docs/results/graphnet-cpu-draw/graphnet.json.gz",
}


def test_every_committed_expected_table_names_the_document_it_was_written_from():
    assert sorted(p.stem for p in TABLES.glob("*.csv")) == sorted(WRITTEN_FROM)


@pytest.mark.parametrize("suite", WRITTEN_FROM)
def test_a_committed_expected_table_matches_its_committed_document(suite, capsys):
    document = ROOT / WRITTEN_FROM[suite]
    assert main(["expected", "check", "--suite", suite, "--from", str(document), "--strict"]) == 0
    out = capsys.readouterr().out
    cells = len(read_document(document).rows)
    assert f"{cells} cells compared: {cells} as expected, 0 regressions, 0 improvements, 0 changed; " \
           "0 new, 0 not run" in out
