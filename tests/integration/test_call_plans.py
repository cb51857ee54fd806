"""`--plan-calls` and `--cells` of `irlens zoo` and `irlens graphnet`: the whole zoo planned from 8
models' rows of an H200 run into calls that each fit, its lists read back, bad input exits 2 in one line, and a run of a list runs
exactly its cells (on the CPU, eager alone)."""
from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from irlens.cli import main
from irlens.cli.call_plans import read_cells
from irlens.matrix import Document, read_document, write_document
from irlens.matrix.row import Row
from irlens.workloads.zoo import zoo_names
from tests.support.graphnet_samples import linear_cuda

# the rows of 8 models of the H200 zoo (docs/results/zoo-h200-bench): cells that ran, cells that timed out
# (hf_mamba's Thunder and nvFuser fwd+bwd) and, for the other 31 models, none. Written by
#   irlens zoo --from docs/results/zoo-h200-bench/zoo.json.gz --device cuda --preset bench --out OUT \
#     --models hf_mamba,hf_albert,hf_gpt2,timm_nfnet,timm_swin,timm_maxvit,timm_resnet18,timm_convnext \
#     --json tests/data/zoo-h200-bench-8-models.json.gz
H200_ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo-h200-bench-8-models.json.gz"
STACKS = ("inductor", "thunder+torchcompile", "nvfuser", "xla")


def test_the_zoo_is_planned_from_h200_rows_into_calls_that_each_fit(tmp_path, capsys):
    out = tmp_path / "plan"
    assert main(["zoo", "--plan-calls", "600", "--from", str(H200_ZOO), "--device", "cuda", "--preset", "bench",
                 "--dtype", "bfloat16", "--jobs", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    files = sorted(out.glob("call-*.cells"))
    calls = [read_cells(str(f)) for f in files]
    assert len(files) > 5
    # every stack's cell of every model and mode in exactly one call; eager beside each call's models
    counts = Counter(c for cells in calls for c in cells)
    assert {c for c in counts if c[2] != "eager"} == {(n, m, b) for n in zoo_names() for m in ("fwd", "fwdbwd")
                                                     for b in STACKS}
    assert all(n == 1 for c, n in counts.items() if c[2] != "eager")
    assert all({(c[0], c[1]) for c in cells} == {(c[0], c[1]) for c in cells if c[2] == "eager"} for cells in calls)
    # each call's estimate within the limit, said in its file and printed
    estimates = [float(re.search(r"about (\d+) s", f.read_text().splitlines()[0]).group(1)) for f in files]
    assert all(e <= 600 for e in estimates) and "OVER THE LIMIT" not in printed
    assert printed.count("irlens zoo --cells ") == len(files)
    assert f"--cells {files[0]} --device cuda --preset bench --dtype bfloat16 --jobs 2 --timeout 300" in printed
    assert f"irlens zoo --from {out}/call-*.json --rerun --out {out}/joined" in printed
    # the 8 models' cells by their rows; the other models' by their backend's recorded cells, or a default
    sources = re.search(r"(\d+) from earlier rows, (\d+) timed out before .*, (\d+) from their backend's .*, "
                        r"(\d+) defaults", printed)
    assert all(int(n) > 0 for n in sources.groups()) and sum(map(int, sources.groups())) == len(zoo_names()) * 10
    # the cells Thunder or nvFuser timed out on there are said to be so
    assert re.search(r"hf_mamba fwdbwd thunder\+torchcompile  \(timed out before\)  \(will time out\)", printed)


@pytest.mark.parametrize("extra, words", [
    (["--plan-calls", "600", "--from", "nonesuch.json"], "cannot read"),
    (["--plan-calls", "50"], "leaves its cells no time"),
    (["--plan-calls", "600", "--device", "cuda", "--preset", "tiny", "--from", str(H200_ZOO)], "preset tiny"),
    (["--plan-calls", "600", "--rerun"], "--rerun"),
    (["--cells", "nonesuch.cells"], "cannot read"),
])
def test_bad_plan_input_exits_2_in_one_line(tmp_path, capsys, extra, words):
    assert main(["zoo", *extra, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert words in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("limit", ["0", "-5", "soon"])
def test_a_limit_that_is_no_number_of_seconds_is_refused_by_the_parser(capsys, limit):
    assert main(["zoo", "--plan-calls", limit]) == 2
    err = capsys.readouterr().err
    assert "argument --plan-calls" in err and len(err.strip().splitlines()) == 1


def test_a_cells_list_must_be_well_formed_and_in_the_selection(tmp_path, capsys):
    bad = tmp_path / "bad.cells"
    for text, words in (("hf_llama fwd\n", "is not `NAME MODE BACKEND`"), ("hf_llama sideways eager\n", "MODE one of"),
                        ("# nothing\n\n", "lists no cell")):
        bad.write_text(text)
        assert main(["zoo", "--cells", str(bad), "--out", str(tmp_path / "o")]) == 2
        assert words in capsys.readouterr().err
    bad.write_text("hf_llama fwd eager\nhf_gpt2 fwd eager\n")
    assert main(["zoo", "--cells", str(bad), "--models", "hf_llama", "--out", str(tmp_path / "o")]) == 2
    assert "1 of the 2 cells listed not in the selection" in capsys.readouterr().err


def test_a_plan_of_nothing_to_run_says_so_and_writes_no_list(tmp_path, capsys):
    done = tmp_path / "done.json"
    write_document(Document("compare", [Row("hf_llama", "fwd", "eager", status="ok", compile_s=1.0, run_us=5.0)],
                            "cpu", "cpu", preset="tiny"), done)
    out = tmp_path / "plan"
    assert main(["zoo", "--plan-calls", "600", "--from", str(done), "--fill", str(done), "--models", "hf_llama",
                 "--backends", "eager", "--mode", "fwd", "--out", str(out)]) == 0
    assert "no call to plan" in capsys.readouterr().err and not list(out.glob("call-*.cells"))


@pytest.mark.slow
def test_a_cells_list_runs_exactly_its_cells(tmp_path):
    listed = tmp_path / "call-01.cells"
    listed.write_text("# two of the eight cells of two models\nhf_llama fwdbwd eager\nhf_gpt2 fwd eager  # quick\n")
    out = tmp_path / "run"
    assert main(["zoo", "--cells", str(listed), "--models", "hf_llama,hf_gpt2", "--backends", "eager,inductor",
                 "--out", str(out)]) == 0
    doc = read_document(out / "zoo.json")
    assert sorted((r.workload, r.mode, r.backend, r.status) for r in doc.rows) == [
        ("hf_gpt2", "fwd", "eager", "ok"), ("hf_llama", "fwdbwd", "eager", "ok")]


@pytest.mark.slow
def test_graphnet_plans_by_sample_path_and_runs_a_list(tmp_path, capsys):
    """A sample is named by its path below samples/ in the lists, whatever the root: the estimates of
    a document written under another clone's root reach it."""
    root = tmp_path / "gn"
    for name in ("a", "b"):
        linear_cuda(root / "samples" / "timm" / name)
    earlier = Document("compare", [Row("graphnet:/elsewhere/samples/timm/a", "fwd", "inductor", status="ok",
                                       compile_s=200.0, run_us=10.0)], "cpu", "cpu", preset="tiny")
    write_document(earlier, tmp_path / "earlier.json")
    out = tmp_path / "plan"
    assert main(["graphnet", "--root", str(root), "--plan-calls", "300", "--from", str(tmp_path / "earlier.json"),
                 "--backends", "eager,inductor", "--mode", "fwd", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"210 s  timm/a fwd inductor\n", printed)  # its recorded compile, not a default
    calls = [read_cells(str(f)) for f in sorted(out.glob("call-*.cells"))]
    assert Counter(c for cells in calls for c in cells if c[2] != "eager") == {("timm/a", "fwd", "inductor"): 1,
                                                                              ("timm/b", "fwd", "inductor"): 1}
    assert f"irlens graphnet --cells {out}/call-01.cells --root {root} --device cpu" in printed
    listed = tmp_path / "one.cells"
    listed.write_text("timm/b fwd eager\n")
    run = tmp_path / "run"
    assert main(["graphnet", "--root", str(root), "--cells", str(listed), "--out", str(run)]) == 0
    assert [(r.workload.rsplit("/", 1)[-1], r.mode, r.backend) for r in read_document(run / "graphnet.json").rows] == [
        ("b", "fwd", "eager")]
    listed.write_text("timm/z fwd eager\n")
    assert main(["graphnet", "--root", str(root), "--cells", str(listed), "--out", str(run)]) == 2
    assert main(["graphnet", "--plan-calls", "300", "--from", str(tmp_path / "earlier.json")]) == 2
    assert "not in the selection" in capsys.readouterr().err
