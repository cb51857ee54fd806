"""The command line checks what it is given before any work starts: bad input is exit 2 and one
line on stderr, never hours of work on an empty list or a result lost to an unwritable path."""
from __future__ import annotations

import json
import os
import threading

import pytest

from irlens.cli import main


def one_line_error(capsys, argv: list[str]) -> str:
    """irlens `argv`'s message; it must exit 2 with exactly one line on stderr and nothing on stdout."""
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert not out and err.endswith("\n") and err.count("\n") == 1, err
    return err


@pytest.mark.parametrize("argv", [
    ["zoo", "--models", ""], ["zoo", "--backends", " , "], ["compare", "--workloads", ""],
    ["compare", "--backends", ""], ["report", "--workloads", ""], ["bench", "--gpus", ""],
    ["conformance", "--corpus", ""], ["conformance", "--frontends", ","],
])
def test_an_empty_comma_list_is_an_error_not_everything_or_nothing(capsys, argv):
    err = one_line_error(capsys, argv)
    assert f"argument {argv[1]}:" in err and "names nothing" in err


@pytest.mark.parametrize("argv", [
    ["compare", "--timeout", "-5"], ["compare", "--jobs", "0"], ["compare", "--jobs", "-2"],
    ["zoo", "--jobs", "0"], ["zoo", "--budget-s", "-5"], ["zoo", "--timeout", "nan"],
    ["explain", "gelu", "--backend", "eager", "--timeout", "-5"],
    ["repro", "gelu", "--backend", "eager", "--budget-s", "-5"], ["repro", "gelu", "--backend", "eager", "--timeout", "0"],
    ["bench", "--compile-jobs", "-1"], ["bench", "--jobs", "1.5"], ["conformance", "--samples", "0"],
    ["train", "--steps", "0"],
])
def test_counts_and_seconds_must_be_positive(capsys, argv):
    err = one_line_error(capsys, argv)
    assert f"argument {argv[-2]}: {argv[-1]!r} is not a " in err


def test_zero_is_accepted_where_it_means_none():
    from irlens.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["bench", "--compile-jobs", "0"]).compile_jobs == 0
    assert parser.parse_args(["compare", "--timeout", "2.5", "--jobs", "3"]).jobs == 3


def test_output_paths_are_checked_before_the_run(capsys, tmp_path):
    a_file = tmp_path / "afile"
    a_file.write_text("")
    cases = [(["zoo", "--out", str(a_file)], "is a file, not a folder"),
             (["report", "--out", str(a_file)], "is a file, not a folder"),
             (["compare", "--json", str(a_file / "out.json")], "is a file, not a folder"),
             (["conformance", "--json", str(tmp_path)], "is a folder"),
             (["repro", "gelu", "--backend", "eager", "--out", str(a_file)], "is a file, not a folder"),
             (["bench", "--md", str(a_file / "sub" / "page.md")], "is a file, not a folder")]
    if os.path.isdir("/proc"):  # nothing can be made there, whoever runs this
        cases += [(["compare", "--json", "/proc/nope/out.json"], "cannot write /proc/nope/out.json: "),
                  (["report", "--out", "/proc/nope/r.html"], "cannot write /proc/nope/r.html: ")]
    for argv, message in cases:
        assert message in one_line_error(capsys, argv), argv


no_cuda = pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA")


@no_cuda
@pytest.mark.parametrize("argv", [
    ["zoo", "--models", "hf_bert"], ["graphnet", "--root", "."], ["explain", "gelu", "--backend", "inductor"],
    ["repro", "gelu", "--backend", "inductor"], ["dump", "gelu", "--frontend", "dynamo"], ["train"],
    ["compare", "--workloads", "gelu"],
])
def test_a_cuda_device_torch_cannot_see_is_bad_input_before_any_work(capsys, tmp_path, argv):
    out = [] if argv[0] in ("dump", "train", "compare", "explain") else ["--out", str(tmp_path / "out")]
    err = one_line_error(capsys, [*argv, "--device", "cuda", *out])
    assert err == f"irlens {argv[0]}: error: device 'cuda' asked for, but torch sees no CUDA device here\n"
    assert os.listdir(tmp_path) == []


@no_cuda
def test_a_gpu_configuration_on_a_machine_without_cuda_is_bad_input(capsys, tmp_path):
    assert main(["zoo", "--config", "zoo-gpu-bf16-fwd", "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert not out and err.splitlines()[-1] == "irlens zoo: error: device 'cuda' asked for, but torch sees no " \
        "CUDA device here"
    assert os.listdir(tmp_path) == []


def test_an_argument_a_subcommand_does_not_take_is_its_error(capsys):
    assert one_line_error(capsys, ["compare", "--bogus", "1"]) == \
        "irlens compare: error: unrecognized arguments: --bogus 1 (see `irlens compare --help`)\n"


def test_a_writable_output_path_is_taken_and_the_check_leaves_nothing(tmp_path):
    from irlens.cli import build_parser

    target = tmp_path / "new" / "deeper" / "out.json"
    args = build_parser().parse_args(["compare", "--json", str(target)])
    assert args.json == str(target)
    assert os.listdir(tmp_path) == []  # the probe made and removed its folder; the folders come with the file
    assert build_parser().parse_args(["zoo", "--out", str(tmp_path)]).out == str(tmp_path)
    assert os.listdir(tmp_path) == []


def test_a_worker_closed_by_another_thread_fails_the_call_as_a_call_failure():
    """A run that stops early (a JAX twin that disagrees) closes the reference worker while its
    thread may be about to call it: that call must fail as CallFailed, not raise from the
    closed pipe in the thread."""
    from irlens.runtime.isolation import CallFailed, Worker

    worker = Worker()
    assert worker.call("irlens.runtime.isolation:cpu_cores", {}, timeout=120) >= 1
    worker.close()
    raised: list[BaseException] = []

    def call():
        try:
            worker.call("irlens.runtime.isolation:cpu_cores", {}, timeout=120)
        except BaseException as e:  # noqa: BLE001  (what the thread would die of)
            raised.append(e)

    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    assert len(raised) == 1 and isinstance(raised[0], CallFailed), raised
    assert "closed" in str(raised[0])


def write_doc(path, workloads: list[str]):
    from irlens.matrix import Document, write_document
    from irlens.matrix.row import Row

    rows = [Row(w, "fwd", b, None if b == "eager" else "dynamo", status="ok") for w in workloads
            for b in ("eager", "inductor")]
    write_document(Document("compare", rows, "cpu", "cpu", {"torch": "x"}, "tiny"), path)
    return str(path)


def test_report_from_one_document_twice_counts_its_rows_once(tmp_path, capsys):
    doc = write_doc(tmp_path / "a.json", ["not_builtin_one"])
    copy = tmp_path / "b.json"
    copy.write_bytes((tmp_path / "a.json").read_bytes())
    assert main(["report", "--from", doc, doc, str(copy), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().err.count("given already: read once") == 2
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(written["rows"]) == 2


def test_zoo_from_documents_keeps_the_models_asked_for(tmp_path, capsys):
    doc = write_doc(tmp_path / "zoo.json", ["timm_resnet18", "hf_bert"])
    out = tmp_path / "page"
    main(["zoo", "--from", doc, "--models", "hf_bert", "--out", str(out)])
    capsys.readouterr()
    kept = json.loads((out / "zoo.json").read_text())["rows"]
    assert {r["workload"] for r in kept} == {"hf_bert"} and len(kept) == 2
    assert "no rows for workload(s) timm_vit" in one_line_error(
        capsys, ["zoo", "--from", doc, "--models", "timm_vit", "--out", str(out)])


def test_a_bare_name_after_a_file_reference_says_how_to_name_two_from_that_file(capsys, tmp_path):
    from irlens.cli.command import reference_hint
    from irlens.core.registry import UnknownName

    e = UnknownName("workload", "b", ["gelu"])
    hint = reference_hint(e, ["gelu", "path/file.py:a", "b"])
    assert "write path/file.py:a,path/file.py:b" in hint
    assert reference_hint(e, ["b", "path/file.py:a"]) == ""  # no reference before it: the usual message
    ref = tmp_path / "user.py"
    ref.write_text("import irlens\na = irlens.Workload.from_module('a', lambda x: x * 2.0, example_inputs=((2, 3),))\n")
    err = one_line_error(capsys, ["compare", "--workloads", f"{ref}:a,nope_not_builtin", "--backends", "eager"])
    assert f"write {ref}:a,{ref}:nope_not_builtin" in err


def test_counted_nouns_and_articles():
    from irlens.wording import article, plural

    assert [plural(n, "row") for n in (0, 1, 2)] == ["0 rows", "1 row", "2 rows"]
    assert plural(1, "model") == "1 model" and plural(2, "graph", "graphs of it") == "2 graphs of it"
    assert [article(w) for w in ("int", "float", "Workload", "object", "IntegerProxy")] == [
        "an int", "a float", "a Workload", "an object", "an IntegerProxy"]


def test_a_reference_to_something_else_names_its_type_with_the_right_article(capsys, tmp_path):
    ref = tmp_path / "user.py"
    ref.write_text("x = 3\n")
    assert f"{ref}:x is an int, not an irlens Workload" in one_line_error(capsys, ["compare", "--workloads", f"{ref}:x"])


def test_the_mode_notes_say_batchnorm_only_where_buffers_are_updated():
    from irlens.matrix import Document
    from irlens.matrix.records import ResultCheck
    from irlens.matrix.row import Row
    from irlens.matrix.table import format_table

    plain = Row("rmsnorm", "fwd", "eager", None, status="ok", module_mode="train")
    text = format_table(Document("compare", [plain], "cpu", "cpu", {}, "tiny"))
    assert "in train mode: rmsnorm" in text and "BatchNorm" not in text and "buffer:" not in text
    batchnorm = Row("resnet", "fwd", "eager", None, status="ok", module_mode="train",
                    results={"out0": ResultCheck(0.0, 1e-5), "buffer:bn.running_mean": ResultCheck(0.0, 1e-5)})
    text = format_table(Document("compare", [plain, batchnorm], "cpu", "cpu", {}, "tiny"))
    assert "in train mode: resnet, rmsnorm" in text
    assert "buffers the step updates in place are results too (buffer:<name>): resnet" in text


def test_the_page_of_an_empty_shard_says_nothing_it_does_not_know():
    from irlens.matrix import Document
    from irlens.reporting.zoo_page import zoo_markdown

    page = zoo_markdown(Document("compare", [], "cpu", preset="tiny"))
    assert "Device: cpu; preset tiny" in page and "(None)" not in page
    assert "0 models." in page and "Versions: none recorded (no cell ran)." in page and "Versions: ." not in page


def test_the_report_of_an_empty_shard_names_no_machine(tmp_path):
    from irlens.api import report
    from irlens.matrix import Document

    paths = report([Document("compare", [], "cpu", preset="tiny")], tmp_path, frontends=False)
    text = "".join(open(paths[kind]).read() for kind in ("md", "html"))
    assert "_cpu · preset tiny_" in text and "| device | cpu |" in text
    assert "cpu ()" not in text and " ·  · " not in text and "cpu · preset tiny" in text


def test_an_opaque_object_a_graph_returns_prints_as_its_class():
    """The joint graph returns its device mesh for the backward (`irlens dump llama3 --frontend
    joint`): its class, not `FakeScriptObject object at 0x...`."""
    from torch._library.fake_class_registry import FakeScriptObject

    from irlens.core.ir import Graph

    mesh = FakeScriptObject(object(), "__torch__.torch.classes.c10d.DeviceMesh", None)
    text = Graph("g", "joint", "joint.joint", "composite", [], [], ["x", mesh, None, 2]).to_text()
    assert "return x, <DeviceMesh>, None, 2" in text and "object at 0x" not in text
