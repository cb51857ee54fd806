"""Results documents compressed on disk (`.json.gz`) read back wherever plain ones do."""
import dataclasses
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


def test_a_report_of_runs_keeps_each_bench_rows_ceilings_and_only_its_callers_write_the_rows(tmp_path):
    """A report of a one-GPU bench (its ceilings in its header), a four-GPU one (each row its GPU's)
    and a CPU compare run: each bench row keeps the ceilings it was measured against in its bench
    record, a compare row has none. `write_report` draws them and returns that document (its
    bench figures made again by today's rule); the command writes it as results.json beside the
    pages, the renderer does not."""
    from pathlib import Path

    from irlens.matrix.join import UNION, join
    from irlens.reporting import write_report
    from irlens.reporting.roofline import recompute

    data = Path(__file__).resolve().parents[1] / "data"
    one, four, cpu = (read_document(data / name) for name in ("h100-single1.json.gz", "h200-bench.json.gz",
                                                              "zoo-cpu-tiny.json.gz"))
    joined = join([one, four, cpu], UNION)
    assert len(joined.rows) == len(one.rows) + len(four.rows) + len(cpu.rows)
    assert [r.bench.ceilings for r in joined.rows[:len(one.rows)]] == [one.ceilings] * len(one.rows)
    assert [r.bench for r in joined.rows[len(one.rows):len(one.rows) + len(four.rows)]] == [r.bench for r in four.rows]
    assert len({str(r.bench.ceilings) for r in four.rows}) > 1  # the GPUs measured apart
    assert all(r.bench is None for r in joined.rows[len(one.rows) + len(four.rows):])
    assert all(r.bench.ceilings is None for r in one.rows)  # the documents read are left as they were

    small = [dataclasses.replace(d, rows=[r for r in d.rows if r.workload == "gelu"]) for d in (one, cpu)]
    paths, drawn = write_report(small, tmp_path / "pages", frontends=False)
    assert sorted(p.name for p in paths.values()) == ["report.html", "report.md"]
    assert not (tmp_path / "pages" / "results.json").exists()
    assert drawn.to_json() == join([recompute(small[0]), small[1]], UNION).to_json()  # the bench's by today's rule
    out = tmp_path / "out"
    assert main(["report", "--from", *(str(data / n) for n in ("h100-single1.json.gz", "zoo-cpu-tiny.json.gz")),
                 "--workloads", "gelu", "--out", str(out)]) == 0
    assert read_document(out / "results.json").to_json()["rows"] == drawn.to_json()["rows"]


def test_a_document_names_its_machine_once_and_none_it_was_not_told():
    assert Document("compare", [], "cpu", "AMD EPYC").machine() == "cpu (AMD EPYC)"
    assert Document("compare", [], "cpu").machine() == "cpu"  # an empty shard: no cell asked the name
    joined = "cuda (NVIDIA H200) + cuda (NVIDIA H100)"
    assert Document("compare", [], joined, "NVIDIA H200").machine() == joined
