"""Reproducers of GraphNet samples: `irlens repro graphnet:PATH` writes the sample's own model.py
(a sample Dynamo splits into several graphs included: one whose BatchNorm eps is read with
`.item()`), its values drawn from the meta as irlens draws them, judged as compare judges the cell;
`irlens graphnet --repro` writes a file per kind of a stack's own failure or mismatch and its page
names it. Files run in a fresh process where `import irlens` fails (irlens.repro.cell.run_file)."""
from __future__ import annotations

import json
import os
import runpy
from pathlib import Path

import pytest
import torch

from irlens.cli import main
from irlens.frontends.bindings import value_keys
from irlens.matrix import Document
from irlens.matrix.row import Row
from irlens.matrix.spec import CellSpec
from irlens.repro.cell import run_file
from irlens.repro.cell_file import cell_file
from irlens.backends import get_backend
from irlens.repro.torch_source import NotExpressible, capture
from irlens.workloads.builtin import resolve_workload
from irlens.workloads.graphnet import read_meta
from irlens.workloads.graphnet.module import replay
from irlens.zoo.repro import write_repros
from tests.support.graphnet_samples import break_item, linear_cuda, table_f32

# test_repro.py's backend that multiplies every exp by 1.01, named by reference as a user names one
PERTURB_EXP = f"{Path(__file__).with_name('test_repro.py')}:PERTURB_EXP"
RUNNING_VAR = "L_self_modules_bn_buffers_running_var_"


def write_cell_file(tmp_path: Path, spec: CellSpec, embed_max: int) -> Path:
    """The cell's file, written in this process (as irlens.repro.worker writes it)."""
    file = tmp_path / "cell.py"
    file.write_text(cell_file(spec, get_backend(spec.backend).repro_path, ["Made by: a test"], embed_max).render())
    return file


def test_a_sample_dynamo_splits_is_its_own_model_py_in_its_file(tmp_path):
    """Dynamo makes two graphs of the sample (no one captured function holds it); the file holds
    model.py's GraphModule itself, draws the values too large to embed as irlens draws them (the
    running variance clamped at its min_val, 0), and runs fwd+bwd ok in a fresh process."""
    sample = break_item(tmp_path / "samples" / "timm" / "brk")
    inst = resolve_workload(f"graphnet:{sample}").instantiate("tiny", None, "cpu")
    with pytest.raises(NotExpressible, match="Dynamo captured 2 graphs"):
        capture(inst.module, inst.inputs, "model", lambda ex: value_keys(ex, inst))
    file = write_cell_file(tmp_path, CellSpec(f"graphnet:{sample}", "eager", "fwdbwd", None, "cpu", "tiny"), 0)
    text = file.read_text()
    assert "class GraphModule(torch.nn.Module):" in text and "L_self_modules_bn_eps.item()" in text
    assert "SAMPLE_GRAPH = GraphModule()" in text and str(tmp_path) not in text[text.index('"""', 3):]
    mean, std, low, high = replay(read_meta(sample).tensors[RUNNING_VAR])
    assert f"'{RUNNING_VAR}': drawn(" in text and f"{mean!r}, {std!r}, {low!r}, {high!r})" in text
    running_var = runpy.run_path(str(file))["make_values"]()[RUNNING_VAR]  # not run as __main__: values only
    assert running_var.dtype == torch.float32 and running_var.min() >= low == 0.0
    outcome = run_file(str(file), 120)
    # out0, loss, grad:input0 and the weight's gradient (the BatchNorm's statistics are buffers)
    assert outcome.status == "ok" and outcome.detail.startswith("ok: 4 result(s); nearest its bound: "), outcome


def test_a_half_sample_is_the_graph_graphnets_dtype_generalization_makes(tmp_path):
    """In bfloat16 the table the graph builds in float32 is cast before its matmul, as GraphNet's
    pass makes the graph: the file holds that graph's code (fx's), its float64 reference the same
    casts to float64, and runs ok."""
    sample = table_f32(tmp_path / "samples" / "hf" / "table")
    file = write_cell_file(tmp_path, CellSpec(f"graphnet:{sample}", "eager", "fwd", "bfloat16", "cpu", "tiny"), 4096)
    text = file.read_text()
    assert "def model_graph(" in text and "sin.to(torch.bfloat16)" in text
    assert "def model_float64_graph(" in text and "sin.to(torch.float64)" in text
    outcome = run_file(str(file), 120)
    assert outcome.status == "ok" and outcome.detail.startswith("ok: 1 result(s)"), outcome


@pytest.mark.slow
def test_graphnet_repro_writes_a_file_per_kind_of_mismatch_and_the_page_names_it(tmp_path):
    """A backend that perturbs exp mismatches on the sample with an exp (and Dynamo's two graphs),
    not on the one without: one file, the page's Failures line names it by its path from the page,
    and the file, run alone, says what the row says."""
    root, out = tmp_path / "gn", tmp_path / "out"
    break_item(root / "samples" / "timm" / "brk")
    linear_cuda(root / "samples" / "timm" / "lin")
    status = main(["graphnet", "--root", str(root), "--backends", f"eager,{PERTURB_EXP}", "--mode", "fwd",
                   "--repro", "--out", str(out)])
    assert status == 1
    rows = {(r["workload"].rsplit("/", 1)[-1], r["backend"]): r for r in json.loads((out / "graphnet.json").read_text())["rows"]}
    row = rows[("brk", "test-perturb-exp")]
    assert row["status"] == "mismatch" and rows[("lin", "test-perturb-exp")]["status"] == "ok"
    (written,) = os.listdir(out / "repro")
    assert written == "timm_brk-test-perturb-exp-fwd-float32.py"
    page = (out / "graphnet.md").read_text()
    assert f"a mismatch against the float64 reference; 1 row: timm/brk; reproducer: `repro/{written}`" in page
    outcome = run_file(str(out / "repro" / written), 120)
    assert outcome.status == "mismatch" and outcome.exit_status == 1
    assert outcome.detail == row["reason"] and "x eager's" in outcome.detail


def test_a_kind_without_a_file_says_why(tmp_path, capsys):
    """Only a stack's own failures get files (upstream's traceback; mismatches where asked); a sample
    gone from the disk, or a backend whose file cannot hold the cell (xla runs a sample through
    irlens's lowering), is one line saying why, here and from `irlens repro` (exit 2)."""
    sample = linear_cuda(tmp_path / "samples" / "timm" / "a")
    upstream = ('Traceback (most recent call last):\n'
                '  File "/v/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 1, in f\n')
    gone = Row(f"graphnet:{tmp_path / 'samples' / 'timm' / 'gone'}", "fwd", "inductor", "dynamo", status="failed",
               reason="boom", detail=upstream)
    lowered = Row(f"graphnet:{sample}", "fwd", "xla", "dynamo", status="mismatch", reason="out0: rel err 1e-02")
    doc = Document("compare", [gone, lowered], "cpu")
    assert list(write_repros(doc, tmp_path / "repro", "cpu").values()) == [
        f"not written: {tmp_path / 'samples' / 'timm' / 'gone'} is not a folder (a GraphNet sample is a folder "
        "with model.py and weight_meta.py)"]
    why = write_repros(doc, tmp_path / "repro", "cpu", mismatches=True)["xla fwd: out0: rel err Ne-N"]
    message = (f"workload 'graphnet:{sample}' has no JAX twin, which backend xla runs; its cells run Dynamo's "
               "graphs through irlens's lowering (xla via dynamo), which a standalone file cannot hold")
    assert why == f"not written: {message}"
    assert not (tmp_path / "repro").exists() or not os.listdir(tmp_path / "repro")
    capsys.readouterr()
    assert main(["repro", f"graphnet:{sample}", "--backend", "xla", "--out", str(tmp_path / "x")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"irlens repro: error: {message}"]
