"""Results documents compressed on disk (`.json.gz`) read back wherever plain ones do."""
import gzip
from types import SimpleNamespace

from irlens.compare import write_document
from irlens.documents import read_json
from irlens.report import load_documents, report_main
from report_fixtures import synthetic_document


def test_gz_document_round_trips_and_is_smaller(tmp_path):
    doc = synthetic_document()
    write_document(doc, str(tmp_path / "r.json"))
    write_document(doc, str(tmp_path / "r.json.gz"))
    assert gzip.open(tmp_path / "r.json.gz").read(1) == b"{"  # really gzip
    assert read_json(tmp_path / "r.json.gz") == read_json(tmp_path / "r.json") == doc
    assert (tmp_path / "r.json.gz").stat().st_size < (tmp_path / "r.json").stat().st_size / 2
    assert load_documents([str(tmp_path / "r.json.gz")]) == [doc]


def test_report_reads_gz_and_selects_workloads(tmp_path, capsys):
    write_document(synthetic_document(), str(tmp_path / "r.json.gz"))
    out = tmp_path / "out"
    args = SimpleNamespace(from_=[str(tmp_path / "r.json.gz")], out=str(out), frontends=False, workloads=["tinyhead"])
    assert report_main(args) == 0
    assert "tinyhead" in (out / "report.md").read_text()
    args.workloads = ["nosuch"]
    assert report_main(args) == 2
    assert "no rows for workload(s) nosuch; the documents have: tinyhead" in capsys.readouterr().err


def test_a_corrupt_gz_document_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "bad.json.gz").write_bytes(b"not gzip at all")
    args = SimpleNamespace(from_=[str(tmp_path / "bad.json.gz")], out=str(tmp_path / "o"), frontends=False)
    assert report_main(args) == 2
    assert "cannot read compare results from" in capsys.readouterr().err
