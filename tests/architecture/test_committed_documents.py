"""Every JSON file committed as a result (the result sets under docs/results, the test fixtures
under tests/data) is either a results document that the typed reader reads (rows of typed records,
written and read again the same), or a file of another kind named here. A new results file that no
longer reads fails, and so does a file of a new kind until it is named."""
import gzip
import json
from fnmatch import fnmatch
from pathlib import Path

import pytest

from irlens.core.ir import Graph
from irlens.matrix import BadDocument, Document, read_document
from irlens.matrix.records import BenchRecord, Coverage, CrossRecord, KernelRecord, LoweredGraph, ResultCheck, StepWork
from irlens.matrix.schema import FIELD, SCHEMA, migrate

ROOT = Path(__file__).resolve().parents[2]
PLACES = [ROOT / "docs" / "results", ROOT / "tests" / "data"]

# files of other kinds (paths from the repository root), each with what writes it
OTHER_KINDS = {
    "docs/results/conformance-*/*.json.gz": "irlens conformance --json",
    "docs/results/parallel-*/*.json": "scripts/parallel_table.py",
    "docs/results/*/repro.json": "irlens repro --json",  # fnmatch's * crosses folders: any depth
    "docs/results/nvfuser-minigpt-probe/*.json": "scripts/nvfuser_minigpt_probe.py",
}
FILES = sorted(p.relative_to(ROOT).as_posix() for place in PLACES for p in place.rglob("*.json*"))
DOCUMENTS = [f for f in FILES if not any(fnmatch(f, pattern) for pattern in OTHER_KINDS)]


def test_the_committed_files_are_results_documents_or_of_a_named_kind():
    assert len(DOCUMENTS) >= 10  # the GPU runs, the zoo, the reproducer's cells
    assert any(f.startswith("docs/results/") for f in DOCUMENTS) and any(f.startswith("tests/data/") for f in DOCUMENTS)
    for pattern in OTHER_KINDS:  # each named kind still has a file
        assert any(fnmatch(f, pattern) for f in FILES), pattern


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_committed_document_reads_as_typed_records(name):
    doc = read_document(ROOT / name)
    data = json.loads(gzip.open(ROOT / name).read() if name.endswith(".gz") else (ROOT / name).read_text())
    assert len(doc.rows) == len(data["rows"]) > 0
    for row in doc.rows:
        assert all(isinstance(k, KernelRecord) for k in row.kernels)
        assert all(isinstance(c, ResultCheck) for c in row.results.values())
        assert all(isinstance(g, Graph) for g in row.graphs.values())
        assert row.coverage is None or isinstance(row.coverage, Coverage)
        # a row's own records: a bench row's (its work counted, where it could be) and a cross row's
        assert row.bench is None or isinstance(row.bench, BenchRecord)
        assert isinstance(row.cross, CrossRecord) if doc.kind == "cross" else row.cross is None
        assert row.bench is None or row.bench.must is None or isinstance(row.bench.must, StepWork)
        assert row.cross is None or all(isinstance(g, LoweredGraph) for g in row.cross.lowered)
    if doc.kind == "bench":
        assert any(row.bench and row.bench.must for row in doc.rows)
    else:
        assert all(row.bench is None for row in doc.rows)
    for row, raw in zip(doc.rows, data["rows"]):  # each result's error where the document has one
        assert {n: c.err for n, c in row.results.items() if c.err is not None and c.err != float("inf")} == {
            n: e for n, e in raw.get("per_result", {}).items() if e is not None}
    assert Document.from_json(doc.to_json()).rows == doc.rows


@pytest.mark.parametrize("name", DOCUMENTS)
def test_a_committed_document_migrates_to_what_the_writer_writes(name):
    """A committed document of before versions (schema 0) migrates to the current form: exactly
    what the writer writes of the rows read from it, and a fixed point of migrating; one written
    with the current version is that form already."""
    data = json.loads(gzip.open(ROOT / name).read() if name.endswith(".gz") else (ROOT / name).read_text())
    old = FIELD not in data
    migrated = migrate(data, name)
    assert migrated[FIELD] == SCHEMA and (FIELD not in data) == old  # the input is left as it was
    assert migrated == read_document(ROOT / name).to_json()
    assert migrate(migrated) == migrated


@pytest.mark.parametrize("version", [SCHEMA + 1, -1, "1", None])
def test_a_document_of_a_version_this_irlens_does_not_know_is_a_clear_error(tmp_path, capsys, version):
    from irlens.cli import main

    path = tmp_path / "r.json"
    path.write_text(json.dumps({**Document("compare", []).to_json(), FIELD: version}))
    with pytest.raises(BadDocument, match=f"field 'schema' is {version!r}: this irlens reads versions 0 to {SCHEMA}"):
        read_document(path)
    assert main(["report", "--from", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "field 'schema'" in capsys.readouterr().err


def test_result_checks_cross_from_a_worker_and_into_a_document_the_same():
    """A worker's row (irlens.matrix.cell.cell_record) and a document's are one form, NaN/Inf
    written as null: each reads back as inf, not as a result that was not compared."""
    from irlens.core.ir import jsonable
    from irlens.matrix.row import Row

    inf = float("inf")
    results = {"out0": ResultCheck(inf, 1e-4, 2e-7), "loss": ResultCheck(3e-5, 1e-4, inf, "vanishes"),
               "grad:w": ResultCheck(None, None, 1e-6)}  # missing from the backend's results
    row = Row("w", "fwdbwd", "inductor", "dynamo", "mismatch", results=results)
    written = Document("compare", [row]).to_json()["rows"][0]
    assert jsonable(row.to_json(), finite=True) == written
    assert written["per_result"] == {"out0": None, "loss": 3e-5}
    assert written["per_result_eager"] == {"out0": 2e-7, "loss": None, "grad:w": 1e-6}
    assert written["ill_conditioned"] == {"loss": "vanishes"}
    assert Row.from_json(written).results == results
    assert row.decisive_result == "out0"
