"""Results documents: compressed on disk (`.json.gz`) read back wherever plain ones do; the header's records
(ceilings, parts, time spent, runs) read as their types and written as they were read."""
import dataclasses
import gzip
import re
from pathlib import Path

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
    assert len({r.bench.ceilings for r in four.rows}) > 1  # the GPUs measured apart
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


def _header_damages():
    """(damage to a document's JSON, what the error says): one per record of the header."""
    def ceilings(d):
        d["ceilings"]["memory_gbps"] = "fast"

    def part(d):
        d["parts"] = [{"gpu": "0", "dtypes": ["float32"], "modes": ["fwd"]}]

    def spans(d):
        d["time_spent"] = {"spans": [{"name": "timed", "start_s": 0.0}]}

    def zoo(d):
        d["runs"] = [{"zoo": {"shard": None, "models": "hf_gpt2", "backends_not_run": {}}}]

    def joined(d):
        d["runs"] = [{"device": "cpu", "device_name": None, "versions": {"torch": 2}, "preset": "tiny", "dtype": None}]

    return [(ceilings, "field 'ceilings': field 'memory_gbps' is 'fast', not a number"),
            (part, "field 'parts' item 1: missing field 'ceilings'"),
            (spans, "field 'time_spent': field 'spans' item 1: missing field 'end_s'"),
            (zoo, "field 'runs' item 1: field 'zoo': field 'models' is 'hf_gpt2', not a list"),
            (joined, "field 'runs' item 1: field 'versions'['torch'] is 2, not a string")]


def test_a_bad_field_of_the_header_is_named():
    """The header's records (ceilings, parts, time spent, runs) are read as their types: a bad
    field is a BadDocument naming it, not a KeyError in a report later."""
    import pytest

    from irlens.core.json_values import BadDocument

    data = Path(__file__).resolve().parents[1] / "data"
    for damage, message in _header_damages():
        d = read_document(data / "h100-single1.json.gz").to_json()
        damage(d)
        with pytest.raises(BadDocument, match=re.escape(f"the document: {message}")):
            Document.from_json(d)


def test_the_header_reads_as_records_and_writes_as_it_was_read():
    """A bench document's ceilings and parts, a joined document's runs (each one's header) and a
    corpus run's choice read as records and are written the same; equal ceilings are one key."""
    from irlens.core.ceilings import Ceilings
    from irlens.matrix.document import Run
    from irlens.matrix.header import Part, ZooRun
    from irlens.matrix.join import RERUN, UNION, join, part

    data = Path(__file__).resolve().parents[1] / "data"
    one, cpu = read_document(data / "h100-single1.json.gz"), read_document(data / "zoo-cpu-tiny.json.gz")
    assert isinstance(one.ceilings, Ceilings) and one.ceilings.spec.name == "H100 SXM5 80 GB"
    assert Ceilings.from_json(one.ceilings.to_json()) == one.ceilings
    assert len({one.ceilings, Ceilings.from_json(one.ceilings.to_json())}) == 1
    assert all(isinstance(r, Run) and r.header is not None and not r.header.rows for r in cpu.runs)
    assert cpu.runs[0].header.runs[0].header.commands  # a joined document's runs keep theirs
    rerun = join([part(one, "0"), part(one, "1")], RERUN)
    assert [(p.gpu, p.rerun, p.ceilings == one.ceilings) for p in rerun.parts] == [("0", None, True), ("1", True, True)]
    assert all(isinstance(p, Part) for p in rerun.parts)
    assert rerun.to_json()["parts"][1] == {"gpu": "1", "dtypes": ["bfloat16"], "modes": ["fwd", "fwdbwd"],
                                           "ceilings": one.ceilings.to_json(), "wall_s": one.wall_s, "rerun": True}
    corpus = Document("compare", [], "cpu", runs=[Run(zoo=ZooRun(None, ["hf_gpt2"], {"xla": "no JAX"}))])
    assert corpus.to_json()["runs"] == [{"zoo": {"shard": None, "models": ["hf_gpt2"], "backends_not_run": {"xla": "no JAX"}}}]
    for doc in (one, cpu, rerun, corpus, join([one, corpus], UNION)):
        assert Document.from_json(doc.to_json()).to_json() == doc.to_json()


def test_a_bench_document_is_one_before_its_ceilings_were_measured():
    """A bench run stopped before its ceilings (irlens.bench.checkpoint) names no ceilings and no
    parts: its driver says it is a bench document."""
    doc = Document("bench", [], "cuda", "NVIDIA H100 80GB HBM3", {}, "tiny", driver="550.1", wall_s=3.0)
    assert Document.from_json(doc.to_json()).kind == "bench"
