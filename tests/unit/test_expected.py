"""`irlens expected` on small documents and tables made here: a regression exits 1 naming the cell, an
improvement exits 0 asking for the table to be updated, more graph breaks or unknown ops are
regressions, and bad input exits 2 with one line. That the committed tables match their committed
documents is checked in tests/architecture/test_expected_tables.py."""
from __future__ import annotations

import csv

import pytest

from irlens.cli import main
from irlens.matrix import Document, Row, write_document
from irlens.matrix.records import Coverage
from irlens.reporting.expected import COLUMNS


def row(workload="gelu", backend="inductor", status="ok", breaks: int | None = 0, unknown: list[str] | None = None,
        mode="fwd", reason="") -> Row:
    coverage = None if unknown is None else Coverage(compute_nodes=4, uncovered=[], duplicates=[], unknown=unknown)
    notes = {} if breaks is None else {"graph_breaks": breaks}
    return Row(workload, mode, backend, "dynamo", status=status, reason=reason, notes=notes, coverage=coverage,
               dtype="float32")


BASE = [row(backend="eager", breaks=None), row(unknown=[]), row(backend="thunder+torchcompile", status="mismatch",
                                                                unknown=[], reason="out: rel err 1e-01 > 1e-02")]


@pytest.fixture
def suite(tmp_path):
    """Runs `irlens expected ACTION` on a document of `rows` against a table of BASE in tmp_path:
    (exit status, stdout, stderr)."""
    tables = tmp_path / "tables"

    def run(action: str, rows: list[Row], *more: str, name: str = "small"):
        path = tmp_path / f"{name}.json"
        write_document(Document("compare", rows, device="cpu", dtype="float32"), path)
        return main(["expected", action, "--suite", "mini", "--from", str(path), "--tables", str(tables), *more])

    assert run("update", BASE, name="base") == 0
    return run


def test_update_writes_one_line_per_cell(suite, tmp_path, capsys):
    with open(tmp_path / "tables" / "mini.csv", newline="") as f:
        lines = list(csv.reader(f))
    assert tuple(lines[0]) == COLUMNS
    assert lines[1:] == [["gelu", "fwd", "eager", "float32", "ok", "", ""],
                         ["gelu", "fwd", "inductor", "float32", "ok", "0", "0"],
                         ["gelu", "fwd", "thunder+torchcompile", "float32", "mismatch", "0", "0"]]
    assert suite("update", BASE[1:]) == 0  # again: what changed against the table it replaces
    out = capsys.readouterr().out
    assert "wrote 2 cells to" in out and "against the table it replaced: 2 cells compared: 2 as expected" in out \
        and "1 not run" in out


def test_the_same_outcomes_pass(suite, capsys):
    assert suite("check", BASE) == 0
    assert "3 cells compared: 3 as expected, 0 regressions" in capsys.readouterr().out


def test_one_cell_is_counted_in_the_singular(suite, capsys):
    capsys.readouterr()
    assert suite("update", BASE[1:2]) == 0
    out = capsys.readouterr().out
    assert "wrote 1 cell to" in out and "1 cell compared: 1 as expected, 0 regressions, 0 improvements" in out
    assert suite("check", [row(status="mismatch", unknown=[], reason="out: rel err 3e-01 > 1e-02")]) == 1
    assert "1 cell compared: 0 as expected, 1 regression, 0 improvements" in capsys.readouterr().out


def test_a_regression_exits_1_and_names_the_cell(suite, capsys):
    capsys.readouterr()
    now = [BASE[0], row(status="mismatch", unknown=[], reason="out: rel err 3e-01 > 1e-02\nmore"), BASE[2]]
    assert suite("check", now) == 1
    out = capsys.readouterr().out
    assert "REGRESSED (1): a status dropped" in out
    assert "  gelu fwd inductor float32: ok -> mismatch (out: rel err 3e-01 > 1e-02)" in out.splitlines()


def test_a_mismatch_that_now_fails_is_a_regression(suite, capsys):
    assert suite("check", [*BASE[:2], row(backend="thunder+torchcompile", status="failed", breaks=None)]) == 1
    assert "gelu fwd thunder+torchcompile float32: mismatch -> failed" in capsys.readouterr().out


def test_an_improvement_exits_0_and_says_to_update(suite, capsys):
    now = [*BASE[:2], row(backend="thunder+torchcompile", unknown=[])]
    assert suite("check", now) == 0
    out = capsys.readouterr().out
    assert "IMPROVED (1): better than the table: update it (irlens expected update --suite mini --from" in out
    assert "  gelu fwd thunder+torchcompile float32: mismatch -> ok" in out.splitlines()
    assert "REGRESSED" not in out


def test_more_graph_breaks_are_a_regression_and_fewer_an_improvement(suite, capsys):
    assert suite("check", [BASE[0], row(breaks=2, unknown=[]), BASE[2]]) == 1
    assert "gelu fwd inductor float32: graph breaks 0 -> 2" in capsys.readouterr().out
    assert suite("update", [BASE[0], row(breaks=2, unknown=[]), BASE[2]]) == 0
    assert suite("check", BASE) == 0
    out = capsys.readouterr().out
    assert "IMPROVED (1)" in out and "gelu fwd inductor float32: graph breaks 2 -> 0" in out


def test_new_unknown_ops_are_a_regression_naming_the_nodes(suite, capsys):
    unknown = ["aot.forward:7 (aten.foo)", "aot.forward:9 (aten.bar)"]
    assert suite("check", [BASE[0], row(unknown=unknown), BASE[2]]) == 1
    assert "gelu fwd inductor float32: unknown ops 0 -> 2 (aot.forward:7 (aten.foo), aot.forward:9 (aten.bar))" \
        in capsys.readouterr().out


def test_counts_a_row_did_not_reach_are_not_compared(suite, capsys):
    """A cell that failed before acquiring has no graph breaks: its status alone is judged."""
    assert suite("update", [BASE[0], row(status="failed", breaks=None), BASE[2]]) == 0
    assert suite("check", [BASE[0], row(status="failed", breaks=None), BASE[2]]) == 0
    assert "3 as expected" in capsys.readouterr().out


def test_new_and_not_run_cells_are_reported_and_fail_only_when_strict(suite, capsys):
    now = [*BASE[:2], row(workload="attention", unknown=[])]
    assert suite("check", now) == 0
    out = capsys.readouterr().out
    assert "NEW (1): cells the table does not have" in out and "  attention fwd inductor float32: ok" in out
    assert "NOT RUN (1)" in out
    assert "gelu fwd thunder+torchcompile float32: not in the document (expected mismatch)" in out
    assert suite("check", now, "--strict") == 1


def test_an_unavailable_cell_is_not_run_not_a_regression(suite, capsys):
    now = [BASE[0], row(status="unavailable", breaks=None, reason="the run's time budget ran out"), BASE[2]]
    assert suite("check", now) == 0
    out = capsys.readouterr().out
    assert "gelu fwd inductor float32: unavailable (the run's time budget ran out); expected ok" in out
    assert suite("check", now, "--strict") == 1


def test_bad_input_exits_2_with_one_line(suite, tmp_path, capsys):
    capsys.readouterr()
    doc = tmp_path / "small.json"
    write_document(Document("compare", BASE, device="cpu"), doc)
    tables = str(tmp_path / "tables")
    cases = {
        ("check", "--suite", "nope", "--from", str(doc), "--tables", tables): "no expected table for suite 'nope'",
        ("check", "--suite", "../mini", "--from", str(doc), "--tables", tables): "suite name '../mini'",
        ("check", "--suite", "mini", "--from", str(tmp_path / "absent.json"), "--tables", tables): "cannot read",
        ("update", "--suite", "mini", "--from", str(tmp_path / "tables" / "mini.csv"), "--tables", tables):
            "cannot read",
    }
    for args, message in cases.items():
        assert main(["expected", *args]) == 2, args
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert main(["expected", "check", "--suite", "nope", "--from", str(doc), "--tables", tables]) == 2
    assert "there are: mini" in capsys.readouterr().err  # the suites it has


def test_a_document_of_another_suite_or_with_one_cell_twice_exits_2(suite, capsys):
    assert suite("check", [row(workload="attention")]) == 2
    assert "has no cell of the table of suite 'mini'" in capsys.readouterr().err
    assert suite("check", [*BASE, BASE[1]]) == 2
    assert "row 4 is a second row of cell gelu fwd inductor float32" in capsys.readouterr().err


def test_a_malformed_table_exits_2_naming_the_line(suite, tmp_path, capsys):
    table = tmp_path / "tables" / "mini.csv"
    table.write_text(table.read_text().replace("mismatch", "broken"))
    assert suite("check", BASE) == 2
    err = capsys.readouterr().err
    assert f"{table}, line 4: status 'broken' is not one of ok, mismatch, failed, unavailable" in err
    table.write_text(table.read_text().replace(",0,0", ",0,some"))
    assert suite("check", BASE) == 2
    assert "line 3: unknown_ops is 'some', not a count" in capsys.readouterr().err


def test_graphnet_samples_are_named_below_samples_so_another_clone_checks_against_the_table(tmp_path, capsys):
    tables = tmp_path / "tables"

    def run(action: str, clone: str, status: str) -> int:
        rows = [row(workload=f"graphnet:{clone}/samples/timm/resnet18", backend=b, status=status if b != "eager" else "ok")
                for b in ("eager", "inductor")]
        path = tmp_path / f"{action}.json"
        write_document(Document("compare", rows, device="cpu", dtype="float32"), path)
        return main(["expected", action, "--suite", "gn", "--from", str(path), "--tables", str(tables)])

    assert run("update", "/home/a/GraphNet", "ok") == 0
    assert (tables / "gn.csv").read_text().splitlines()[1].startswith("timm/resnet18,fwd,eager,")
    assert run("check", "/tmp/other/GraphNet", "ok") == 0
    assert run("check", "/tmp/other/GraphNet", "failed") == 1
    assert "timm/resnet18 fwd inductor" in capsys.readouterr().out
