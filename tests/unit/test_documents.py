"""Results documents compressed on disk (`.json.gz`) read back wherever plain ones do."""
import gzip

from irlens.cli import main
from irlens.matrix import Document, read_document, write_document
from tests.support.report_fixtures import synthetic_document


def test_gz_document_round_trips_and_is_smaller(tmp_path):
    doc = Document.from_json(synthetic_document())
    write_document(doc, tmp_path / "r.json")
    write_document(doc, tmp_path / "r.json.gz")
    assert gzip.open(tmp_path / "r.json.gz").read(1) == b"{"  # really gzip
    assert read_document(tmp_path / "r.json.gz").to_json() == read_document(tmp_path / "r.json").to_json() == doc.to_json()
    assert (tmp_path / "r.json.gz").stat().st_size < (tmp_path / "r.json").stat().st_size / 2


def test_report_reads_gz_and_selects_workloads(tmp_path, capsys):
    write_document(Document.from_json(synthetic_document()), tmp_path / "r.json.gz")
    out = tmp_path / "out"
    assert main(["report", "--from", str(tmp_path / "r.json.gz"), "--workloads", "tinyhead", "--out", str(out)]) == 0
    assert "tinyhead" in (out / "report.md").read_text()
    assert main(["report", "--from", str(tmp_path / "r.json.gz"), "--workloads", "nosuch", "--out", str(out)]) == 2
    assert "no rows for workload(s) nosuch; the documents have: tinyhead" in capsys.readouterr().err


def test_a_corrupt_gz_document_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip at all")
    assert main(["report", "--from", str(tmp_path / "bad.json.gz"), "--out", str(tmp_path / "o")]) == 2
    assert "cannot read compare results from" in capsys.readouterr().err
