"""The float32 precision policy (irlens.core.precision): one per run, applied alike in the main process and in
every worker it starts, recorded in every row and said on every page; documents written before it read on."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
import torch

from irlens.core import precision
from irlens.bench.run import BenchConfig, child_argv
from irlens.cli import main
from irlens.cli.bench import add_arguments as bench_arguments
from irlens.cli.command import options
from irlens.errors import UsageError
from irlens.runtime.isolation import CallFailed, Worker, worker_env
from irlens.matrix import Document, plan_matrix, read_document
from irlens.reporting import build_report, render_markdown
from irlens.reporting.zoo_page import zoo_markdown

DATA = Path(__file__).resolve().parents[1] / "data"

# what a worker reports of its own arithmetic: torch's switches and jax's default matmul precision
PROBE = """
def flags():
    import jax
    import torch

    from irlens.core import precision

    return {"policy": precision.current(), "cublas_tf32": torch.backends.cuda.matmul.allow_tf32,
            "cudnn_tf32": torch.backends.cudnn.allow_tf32, "matmul": torch.get_float32_matmul_precision(),
            "inductor_dots": torch.backends.cuda.matmul.fp32_precision,
            "jax": jax.config.jax_default_matmul_precision}
"""

EXPECTED = {"ieee": {"policy": "ieee", "cublas_tf32": False, "cudnn_tf32": False, "matmul": "highest",
                     "inductor_dots": "ieee", "jax": "highest"},
            "tf32": {"policy": "tf32", "cublas_tf32": True, "cudnn_tf32": True, "matmul": "high",
                     "inductor_dots": "tf32", "jax": "tensorfloat32"}}


@pytest.fixture
def restored():
    """The test process back at the default policy, and its environment as it was, afterwards."""
    saved = {k: os.environ.get(k) for k in (precision.ENV, precision.JAX_ENV)}
    yield
    precision.apply(precision.DEFAULT)
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _probe_env(tmp_path) -> dict[str, str]:
    (tmp_path / "precision_probe.py").write_text(PROBE)
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp_path), env.get("PYTHONPATH")) if p)
    return env


@pytest.mark.parametrize("policy", ["tf32", "ieee"])
def test_a_worker_computes_under_the_policy_its_parent_applied(tmp_path, restored, policy):
    """The policy travels to a worker through irlens.runtime.isolation; the worker imports jax only after it is
    applied, so jax reads it from the environment; Inductor's Triton dots read `fp32_precision`."""
    precision.apply(policy)
    worker = Worker(env=_probe_env(tmp_path))
    try:
        assert worker.call("precision_probe:flags", {}, timeout=120) == EXPECTED[policy]
    finally:
        worker.close()


def test_applying_in_a_process_that_imported_jax_updates_its_config(restored):
    import jax

    precision.apply("tf32")
    assert (jax.config.jax_default_matmul_precision, precision.jax_matmul_precision()) == ("tensorfloat32",) * 2
    assert torch.backends.cudnn.allow_tf32 and torch.backends.cuda.matmul.allow_tf32
    precision.apply("ieee")
    assert (jax.config.jax_default_matmul_precision, precision.jax_matmul_precision()) == ("highest",) * 2
    assert not torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32


def test_the_policy_applies_where_torchs_testing_utilities_froze_the_switches(restored, monkeypatch):
    """Importing torch's OpInfo (the conformance corpus) freezes torch.backends' switches for the
    process (disable_global_flags); every later apply failed there, and every cell of that process."""
    # torch.backends.disable_global_flags(), put back after the test (the flag lives in the module's globals)
    monkeypatch.setitem(torch.backends.flags_frozen.__globals__, "__allow_nonbracketed_mutation_flag", False)
    assert torch.backends.flags_frozen()
    precision.apply("tf32")
    assert torch.backends.cudnn.allow_tf32 and torch.backends.flags_frozen()
    precision.apply("ieee")
    assert not torch.backends.cudnn.allow_tf32


def test_an_unknown_policy_is_a_usage_error_and_a_worker_given_one_does_not_start(tmp_path, restored):
    with pytest.raises(UsageError, match="unknown precision policy 'fp16'; choose from: ieee, tf32"):
        plan_matrix(["gelu"], ["eager"], ["fwd"], precision="fp16")
    env = {**_probe_env(tmp_path), precision.ENV: "fp16"}
    worker = Worker(env=env)
    try:
        with pytest.raises(CallFailed) as failed:
            worker.call("precision_probe:flags", {}, timeout=120)
    finally:
        worker.close()
    assert "unknown precision policy 'fp16'" in failed.value.detail


@pytest.mark.slow
def test_compare_tf32_runs_every_cell_and_the_xla_compile_under_it_and_says_so(tmp_path, restored, capsys):
    """The rows come from the cell workers: each says the policy it computed under, XLA the matmul
    precision it compiled at; the report's run facts name it; without --tf32 the rows say ieee."""
    out = tmp_path / "tf32.json"
    assert main(["compare", "--workloads", "tinyhead", "--backends", "eager,xla", "--mode", "fwd", "--tf32",
                 "--json", str(out)]) == 0
    doc = read_document(out)
    assert [(r.backend, r.precision) for r in doc.rows] == [("eager", "tf32"), ("xla", "tf32")]
    assert doc.rows[1].notes["matmul_precision"] == "tensorfloat32"
    assert json.loads(out.read_text())["rows"][0]["precision"] == "tf32"
    facts = dict(map(tuple, build_report(doc).sections[0].blocks[0].rows))
    assert facts["precision"] == precision.describe("tf32", "cpu")
    out = tmp_path / "ieee.json"
    assert main(["compare", "--workloads", "tinyhead", "--backends", "xla", "--mode", "fwd", "--json", str(out)]) == 0
    row, = read_document(out).rows
    assert (row.precision, row.notes["matmul_precision"]) == ("ieee", "highest")


def test_zoo_tf32_rows_and_page_say_the_policy(tmp_path, restored):
    out = tmp_path / "zoo"
    assert main(["zoo", "--models", "hf_llama", "--backends", "eager", "--mode", "fwd", "--tf32",
                 "--out", str(out)]) == 0
    assert [r.precision for r in read_document(out / "zoo.json").rows] == ["tf32"]
    assert f"Precision: {precision.describe('tf32', 'cpu')}." in (out / "zoo.md").read_text()


def test_bench_tf32_reaches_its_config_and_each_gpus_child_run():
    """`irlens bench` needs a GPU to run; what --tf32 sets is its configuration, which every GPU's child
    run is started with."""
    import argparse

    parser = argparse.ArgumentParser()
    bench_arguments(parser)
    tf32 = options(BenchConfig, parser.parse_args(["--tf32"]))
    assert tf32.precision == "tf32" and options(BenchConfig, parser.parse_args([])).precision == "ieee"
    argv = child_argv(tf32, ["float32"], ["fwd"], "part.json")
    assert "--tf32" in argv and "--tf32" not in child_argv(BenchConfig(), ["float32"], ["fwd"], "part.json")
    assert options(BenchConfig, parser.parse_args(argv[1:])).precision == "tf32"  # the child reads it back
    aside = options(BenchConfig, parser.parse_args(["--compiles-aside"]))  # the same road for compiles beside timings
    assert aside.compiles_aside and not tf32.compiles_aside
    assert options(BenchConfig, parser.parse_args(child_argv(aside, ["float32"], ["fwd"], "p.json")[1:])).compiles_aside


def test_a_document_written_before_the_policy_reads_with_none_and_its_pages_say_not_recorded():
    with gzip.open(DATA / "zoo-cpu-tiny.json.gz", "rt") as f:
        raw = json.load(f)
    assert not any("precision" in row for row in raw["rows"])
    doc = Document.from_json(raw)
    assert {r.precision for r in doc.rows} == {None}
    assert doc.to_json()["rows"] == raw["rows"]  # written again without the field
    assert "Precision: not recorded" in zoo_markdown(doc)
    assert "| precision | not recorded" in render_markdown(build_report(doc))


def test_a_page_names_each_policy_its_rows_ran_under_once():
    from irlens.matrix.row import Row

    rows = [Row("w", "fwd", "eager", status="ok", precision="ieee"),
            Row("w", "fwd", "xla", status="ok", precision="ieee"),
            Row("w", "fwd", "inductor", status="ok", precision="tf32", device="cuda"),
            Row("w", "fwd", "nvfuser", status="unavailable", precision=None)]  # never ran: says nothing of arithmetic
    assert precision.describe_rows(rows, "cpu") == "; ".join(
        [precision.describe("ieee", "cpu"), precision.describe("tf32", "cuda")])
    assert precision.describe_rows(rows[3:], "cpu") == "no row ran"
