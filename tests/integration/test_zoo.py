"""The model zoo (irlens/workloads/zoo/, `irlens zoo`): its entries, their common views through
Dynamo (no unknown op; the float64 interpreter reproduces outputs, loss, gradients and updated
buffers), train mode and in-place buffer updates, the loss that does not vanish, ill-conditioned
checks judged against eager, and the command's shards and merges. A few models per family run
in the default suite; every model runs with `-m slow`."""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from irlens.frontends.bindings import run_program, stage_programs
from irlens.cli import main
from irlens.errors import UsageError
from irlens.core.interpret import interpret
from irlens.matrix import Document, plan_matrix, read_document, run_plan, write_document
from tests.support.cell_runs import run_in_process
from irlens.matrix.execution import BUDGET_PHASE, STARVED_PHASE
from irlens.matrix.references import compute_reference, gradient_conditions
from irlens.matrix.records import ResultCheck
from irlens.matrix.row import Row
from irlens.workloads.builtin import get_workload, workload_names
from irlens.workloads.zoo import zoo_names
from irlens.workloads.zoo.entry import projection_loss
from irlens.numerics.verdicts import Bound, allowed_errors, compare_results, ill_conditioned, rel_err, unit_roundoff
from irlens.reporting.zoo_page import model_table, signature, summarize, upstream_of, zoo_markdown
from irlens.workloads.workload import Workload, mean_square_loss, run_eager
from irlens.matrix.join import RERUN, SHARDS, join
from irlens.zoo.run import fill_cells, parse_shard, shard_of, zoo_models

from tests.support.workload_cache import acquired, instance, reference
from tests.support.perturbed_eager import PerturbedEager

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("transformers", "timm")),
    reason="the zoo's libraries are not installed (pip install 'irlens[zoo]')")

FAST = ["hf_llama", "hf_bert", "timm_vit"]  # a decoder, an encoder, a vision transformer
SLOW = [n for n in zoo_names() if n not in FAST]  # timm_resnet18 (train mode) among them: 40 s a mode here
LEVELS = ("composite", "primitive")
# Model code casts to float32 on purpose (HF's RoPE tables and RMSNorm: `.float()`), which in the
# float64 reference rounds and in the graph of the float32 instance is a no-op: float32's rounding
# of those intermediates (~6e-8 on llama) separates them, not a meaning.
FAITHFUL_TOL = 1e-6
KINDS = {"decoder", "encoder", "encoder-decoder", "ssm", "moe", "vision", "audio"}


def test_the_zoo_covers_the_families_and_stays_out_of_the_default_set():
    hf, timm = zoo_names("hf"), zoo_names("timm")
    assert len(hf) >= 20 and len(timm) >= 15
    assert KINDS <= {t for n in hf + timm for t in get_workload(n).tags}
    assert not set(hf + timm) & set(workload_names()) and not set(hf + timm) & set(workload_names(corpus=True))
    for name in hf + timm:
        wl = get_workload(name)
        assert set(wl.presets) == {"tiny", "bench"} and wl.description and wl.loss is projection_loss


@pytest.mark.parametrize("name", FAST + [pytest.param(n, marks=pytest.mark.slow) for n in SLOW])
def test_tiny_models_are_small_and_return_finite_tensors(name):
    inst = instance(name)
    assert sum(p.numel() for p in inst.module.parameters()) < 1_000_000
    results = run_eager(inst.module, inst, "fwd")
    outs = [v for k, v in results.items() if k.startswith("out")]
    assert outs and all(torch.isfinite(o).all() for o in outs)


FAITHFUL = FAST + [pytest.param(n, marks=pytest.mark.slow) for n in SLOW]


# the fwd+bwd program holds the forward graph again: fwd alone is the slow tier
@pytest.mark.parametrize("mode", [pytest.param("fwd", marks=pytest.mark.slow), "fwdbwd"])
@pytest.mark.parametrize("name", FAITHFUL)
def test_dynamo_common_view_is_faithful(name, mode):
    """No unknown op in any stage at either level, and every program, run by the float64
    interpreter, reproduces the float64 eager results (buffers a train-mode model updates included).
    A model whose float64 reference cannot run (grouped_mm) is checked against float32 eager."""
    acq = acquired(name, mode, "dynamo")
    unknown = {f"{s.name} ({lvl})": dict(s.common(lvl).unknown_ops()) for s in acq.stages.values() for lvl in LEVELS
               if s.common(lvl).unknown_ops()}
    assert not unknown, unknown
    inst = instance(name)
    ref = reference(name, mode)
    # A result that is noise-sized in truth (attention's key bias gradient, the running mean of a
    # BatchNorm fed by a zero-mean channel) is noise in float64 too: judged as the verdicts judge
    # it, against float32 eager's own error (irlens.numerics.verdicts.ill_conditioned)
    eager = run_eager(inst.module, inst, mode)
    eager_errors = {n: rel_err(eager[n], r) for n, r in ref.items() if r is not None and eager.get(n) is not None}
    conditions = gradient_conditions(ref, {**{f"input{i}": t for i, t in enumerate(inst.inputs)}, **inst.params()})
    ill = ill_conditioned(ref, "float32", mode, eager_errors, conditions)
    bounds = {**{n: Bound(FAITHFUL_TOL, f"tol {FAITHFUL_TOL:.0e}") for n in ref},
              **allowed_errors(ill, "float32", mode, eager_errors, conditions, ill)}
    problems = []
    for stage, program in stage_programs(acq, inst).items():
        for level in LEVELS:
            got = run_program(program, inst, lambda step, xs: interpret(step.graph(level), xs))
            cmp = compare_results(got, ref, bounds)
            if not cmp.ok:
                problems.append(f"{stage} ({level}): {cmp.reason}")
    assert not problems, "\n".join(problems)


# --- train mode and buffers updated in place --------------------------------------------------------

def _bn_workload(training: bool | None = None) -> Workload:
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    return Workload.from_module("bn_train", m.train(True if training is None else training), ((4, 3, 8, 8),))


def test_a_module_keeps_its_mode_and_zoo_entries_declare_theirs():
    assert _bn_workload().instantiate().module_mode == "train"
    assert _bn_workload(training=False).instantiate().module_mode == "eval"
    assert instance("timm_resnet18").module_mode == "train" and instance("hf_bert").module_mode == "eval"


def test_updated_buffers_are_results_and_each_step_starts_from_the_same_state():
    inst = _bn_workload().instantiate()
    before = {k: v.clone() for k, v in inst.buffers().items()}
    first = run_eager(inst.module, inst, "fwdbwd")
    second = run_eager(inst.module, inst, "fwdbwd")
    assert sorted(k for k in first if k.startswith("buffer:")) == [
        "buffer:1.num_batches_tracked", "buffer:1.running_mean", "buffer:1.running_var"]
    assert int(first["buffer:1.num_batches_tracked"]) == 1
    assert not torch.equal(first["buffer:1.running_mean"], before["1.running_mean"])
    for k in first:
        if k.startswith("buffer:"):
            assert torch.equal(first[k], second[k])
    assert all(torch.equal(v, before[k]) for k, v in inst.buffers().items())  # put back after each step


def test_dynamo_shows_the_in_place_updates_as_results_of_its_graph():
    """`num_batches_tracked.add_(1)` and F.batch_norm's running statistics: no unknown op, and each
    new value is an output of Dynamo's graph that names the input it updates."""
    wl = _bn_workload()
    inst = wl.instantiate()
    from irlens.frontends import get_frontend

    acq = get_frontend("dynamo").acquire(inst, "fwd")
    graph = acq.stage("dynamo.fx").common()
    assert not graph.unknown_ops()
    updated = sorted(n.split("buffers_")[-1].rstrip("_") for n in graph.updates.values())
    assert updated == ["num_batches_tracked", "running_mean", "running_var"]
    assert graph.outputs[-3:] == list(graph.updates)
    assert "updated in place" in graph.to_text()


@pytest.mark.parametrize("backend", ["eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_train_mode_batchnorm_buffers_are_compared_on_every_backend_that_runs_it(backend):
    plan = plan_matrix([_bn_workload()], [backend], ["fwd", "fwdbwd"])
    doc = run_plan(plan, isolate=False, progress=False)
    for row in doc.rows:
        assert row.status == "ok", (row.backend, row.mode, row.reason)
        assert {"buffer:1.running_mean", "buffer:1.running_var", "buffer:1.num_batches_tracked"} <= set(row.results)
        assert row.module_mode == "train"


# --- the loss, and checks that are ill-conditioned ------------------------------------------------------

def _vanishing(wl: Workload) -> set[str]:
    inst = wl.instantiate()
    ref = inst.cast("float64")
    results = run_eager(ref.module, ref, "fwdbwd")
    conditions = gradient_conditions(results, {**{f"input{i}": t for i, t in enumerate(inst.inputs)}, **inst.params()})
    return {k for k, c in conditions.items() if c * unit_roundoff("float32") > 1}


def test_the_zoo_loss_does_not_vanish_where_a_mean_of_squares_does():
    """BERT ends in a LayerNorm: under a mean of squares its embedding gradient vanishes (float32
    eager was 'wrong' by 1e6 there); under the projection loss only the attention key biases'
    gradients do, which are exactly zero in truth (softmax ignores a per-query constant)."""
    bert = get_workload("hf_bert")
    assert "grad:model.embeddings.word_embeddings.weight" in _vanishing(dataclasses.replace(bert, loss=mean_square_loss))
    vanishing = _vanishing(bert)
    assert vanishing and all(k.endswith("attention.self.key.bias") for k in vanishing)


def test_the_projection_loss_is_the_same_on_torch_and_jax():
    jnp = pytest.importorskip("jax.numpy")
    outs = (torch.randn(2, 3, 5, dtype=torch.float64), torch.randn(4, dtype=torch.float64))
    want = float(projection_loss(outs))
    got = float(projection_loss(tuple(jnp.asarray(o.numpy()) for o in outs)))
    assert want > 0 and math.isclose(got, want, rel_tol=1e-6)


class _Perturbed(PerturbedEager):
    """Eager, with one result moved (`result`, by `amount` of its own norm, or absolutely where zero)."""

    name, description = "perturbed", "eager with one result perturbed"

    def __init__(self, result: str, amount: float):
        self.result, self.amount = result, amount

    def perturb(self, results: dict) -> None:
        r = results[self.result]
        noise = torch.randn(r.shape, generator=torch.Generator().manual_seed(0), dtype=r.dtype)
        results[self.result] = r + self.amount * max(r.norm().item(), 1.0) * noise / noise.norm()


def test_an_ill_conditioned_check_judges_against_eager_and_still_catches_a_backend_that_is_off():
    """A conv bias before a train-mode BatchNorm has an exactly-zero gradient (the batch mean cancels
    it): float32 eager is 'off' by ~1 relative to float64's 1e-17. Eager is ok there, the result
    is named ill-conditioned; a backend whose bias gradient is off by 1e-3 is still a mismatch, as
    is one off on a well-conditioned result."""
    wl = _bn_workload()
    reference = compute_reference(wl, "fwdbwd", "cpu", "tiny", None)
    eager = run_in_process(wl, get_backend_eager(), "fwdbwd", "cpu", "tiny", None, reference)
    assert eager.status == "ok", eager.reason
    assert "vanishes" in eager.results["grad:0.bias"].ill_conditioned
    assert eager.results["grad:0.bias"].err > 1e-3  # float32 noise against a true zero: no flat tolerance holds
    off_bias = run_in_process(wl, _Perturbed("grad:0.bias", 1e-3), "fwdbwd", "cpu", "tiny", None, reference)
    assert off_bias.status == "mismatch" and "grad:0.bias" in off_bias.reason
    off_weight = run_in_process(wl, _Perturbed("grad:0.weight", 1e-3), "fwdbwd", "cpu", "tiny", None, reference)
    assert off_weight.status == "mismatch" and "grad:0.weight" in off_weight.reason


def test_a_result_eager_gets_no_digit_of_is_held_to_its_order_of_magnitude():
    """Noise against noise (a running mean of a zero-mean channel): twice eager's error passes, a
    hundred times does not; a well-conditioned result keeps the flat tolerance as its cap."""
    from irlens.numerics.verdicts import allowed_error

    noise = allowed_error("float32", "fwd", 4e8, ill=True).value
    assert 2 * 4e8 < noise < 100 * 4e8
    assert allowed_error("float32", "fwd", 1e-2, ill=True).value < 1e-1  # some digits: k stays 2
    assert allowed_error("float32", "fwd", 1e-3).value == 1e-4  # not ill-conditioned: capped


def test_a_result_eager_gets_no_digit_of_is_ill_conditioned_in_every_dtype():
    """bfloat16 has no cap to go over: eager's error of 1 or more names the result itself (the H200
    zoo's XLA running mean at 3.07 x eager's 4.2e11 was a mismatch at k = 3; NOISE_ORDER holds it)."""
    from irlens.numerics.verdicts import NOISE_ORDER, allowed_error, ill_conditioned

    ill = ill_conditioned(["buffer:bn.running_mean", "out0"], "bfloat16", "fwd",
                          {"buffer:bn.running_mean": 4.2e11, "out0": 2e-3})
    assert list(ill) == ["buffer:bn.running_mean"] and "no correct digit" in ill["buffer:bn.running_mean"]
    bound = allowed_error("bfloat16", "fwd", 4.2e11, ill=True).value
    assert 1.29e12 < bound == pytest.approx(NOISE_ORDER * 4.2e11, rel=1e-9)
    assert not ill_conditioned(["out0"], "bfloat16", "fwd", {"out0": 0.5})  # some digits: not ill


def test_ill_conditioned_checks_are_one_line_per_model_naming_every_result():
    """A bench-size model has one ill-conditioned bias per layer: one note names them by pattern."""
    from irlens.matrix.table import ill_conditioned_lines

    why = "the float64 gradient vanishes"
    names = [f"grad:layers.{i}.k_proj.bias" for i in range(12)] + ["grad:embed.bias"]
    rows = [_row("hf_vit", "fwdbwd", b, results={n: ResultCheck(1e-3, ill_conditioned=why) for n in names})
            for b in ("eager", "inductor")]
    (line,) = ill_conditioned_lines(Document("compare", rows, "cuda"))
    assert "hf_vit/fwdbwd, 13 results" in line and "grad:layers.N.k_proj.bias (x12)" in line
    assert "grad:embed.bias" in line and line.endswith(f"grad:layers.0.k_proj.bias: {why}")


def get_backend_eager():
    from irlens.backends import get_backend

    return get_backend("eager")


# --- the command: shards, merges, the summary -----------------------------------------------------------

def test_shards_are_deterministic_disjoint_and_complete():
    names = zoo_models()
    shards = [shard_of(list(reversed(names)), k, 4) for k in range(4)]
    assert shards == [shard_of(names, k, 4) for k in range(4)]  # the order names come in does not matter
    assert sorted(n for s in shards for n in s) == sorted(names) and all(s for s in shards)
    assert all(any(n.startswith("hf_") for n in s) and any(n.startswith("timm_") for n in s) for s in shards)
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "1", "a/b", "-1/2"):
        with pytest.raises(UsageError):
            parse_shard(bad)


def test_bad_zoo_arguments_exit_2(capsys):
    assert main(["zoo", "--shard", "2/2"]) == 2
    assert main(["zoo", "--models", "hf_nonesuch"]) == 2
    assert "choose from" in capsys.readouterr().err


def _row(workload, mode, backend, status="ok", **kw) -> Row:
    return Row(workload, mode, backend, None if backend == "eager" else "dynamo", status=status, **kw)


def _shard_docs(tmp_path):
    a = Document("compare", [_row("model_a", "fwd", "eager", run_us=100.0),
                             _row("model_a", "fwd", "inductor", run_us=50.0, kernel_count=7, compile_s=3.0,
                                  notes={"graph_breaks": 1})], "cpu", "cpu", preset="tiny")
    detail = 'Traceback:\n  File "/x/irlens/backends/thunder/backend.py", line 3\n  File ' \
             '"/v/lib/python3.11/site-packages/thunder/core/jit_ext.py", line 9, in f\nAssertionError: boom'
    b = Document("compare", [_row("model_b", "fwd", "eager", run_us=80.0),
                             _row("model_b", "fwd", "inductor", "failed", reason="run: AssertionError: boom 12",
                                  detail=detail)], "cpu", "cpu", preset="tiny")
    paths = [tmp_path / "a.json", tmp_path / "b.json.gz"]
    write_document(a, paths[0])
    write_document(b, paths[1])
    return paths


def test_a_page_rate_is_rounded_down_never_up_to_a_target():
    from irlens.reporting.zoo_page import _pct

    assert [_pct(37, 39), _pct(2, 3), _pct(1, 2), _pct(39, 39), _pct(0, 4), _pct(0, 0)] == [
        "37/39 (94.8 %)", "2/3 (66.6 %)", "1/2 (50 %)", "39/39 (100 %)", "0/4 (0 %)", "-"]


def test_zoo_from_shards_rebuilds_the_summary_and_report_merges_them(tmp_path, capsys):
    paths = _shard_docs(tmp_path)
    out = tmp_path / "zoo"
    assert main(["zoo", "--from", str(paths[0]), "--from", str(paths[1]), "--out", str(out)]) == 1  # a failed row
    page = (out / "zoo.md").read_text()
    assert "| inductor | fwd | 2 | 1/2 (50 %) | 1/2 (50 %) | 1/2 (50 %) | 0 | 1 (1) | 7 | 3.0 |" in page
    assert "upstream (thunder)" in page and "AssertionError: boom N" in page
    assert {(r.workload, r.backend) for r in read_document(out / "zoo.json").rows} == {
        ("model_a", "eager"), ("model_a", "inductor"), ("model_b", "eager"), ("model_b", "inductor")}
    assert (out / "report.html").exists()
    report = tmp_path / "report"
    assert main(["report", "--from", str(paths[0]), "--from", str(paths[1]), "--out", str(report)]) == 0
    assert len(json.loads((report / "results.json").read_text())["rows"]) == 4
    # the same shard given twice is read once: its rows are not counted twice
    assert main(["zoo", "--from", str(paths[0]), str(paths[0]), "--out", str(out)]) != 2
    assert len(read_document(out / "zoo.json").rows) == len(read_document(paths[0]).rows)


def test_a_later_run_fills_the_cells_a_budget_left_and_the_join_says_the_dtype(tmp_path):
    """A cell a run's budget never started is replaced by another document's row for it; a cell no
    document ran stays once; two rows that both ran still overlap. The joined page names the
    dtype its runs shared."""
    cut = _row("model_a", "fwd", "inductor", "unavailable", phase=BUDGET_PHASE, reason="not run: budget")
    first = Document("compare", [_row("model_a", "fwd", "eager", run_us=100.0), cut,
                                 _row("model_b", "fwd", "inductor", "unavailable", phase=BUDGET_PHASE)],
                     "cuda", "NVIDIA H200", preset="bench", dtype="bfloat16")
    later = Document("compare", [_row("model_a", "fwd", "inductor", run_us=50.0)], "cuda", "NVIDIA H200",
                     preset="bench", dtype="bfloat16")
    # a third run whose cells starved waiting for the device replaces nothing; of a cell no run ran
    # the latest attempt's row stays
    starved = Document("compare", [_row("model_a", "fwd", "inductor", "unavailable", phase=STARVED_PHASE),
                                   _row("model_b", "fwd", "inductor", "unavailable", phase=STARVED_PHASE)],
                       "cuda", "NVIDIA H200", preset="bench", dtype="bfloat16")
    merged = join([first, later, dataclasses.replace(later, rows=[]), starved], SHARDS)
    cells = {(r.workload, r.backend): (r.status, r.phase) for r in merged.rows}
    assert cells == {("model_a", "eager"): ("ok", ""), ("model_a", "inductor"): ("ok", ""),
                     ("model_b", "inductor"): ("unavailable", STARVED_PHASE)}
    assert "## Not run" in zoo_markdown(merged)  # every n/a says why, each kind once
    assert "- **inductor fwd: unavailable** — 1 row: model_b" in zoo_markdown(merged).split("## Not run")[1]
    merged = join([first, later], SHARDS)
    assert merged.dtype == "bfloat16" and "dtype bfloat16" in zoo_markdown(merged)
    assert "2.00x" in zoo_markdown(merged)
    with pytest.raises(UsageError, match="shards overlap"):
        join([later, later], SHARDS)
    # a rerun of one cell: the last document's row, the others kept
    again = Document("compare", [_row("model_a", "fwd", "inductor", "mismatch", run_us=40.0)], "cuda", "NVIDIA H200",
                     preset="bench", dtype="bfloat16")
    rerun = join([join([first, later], SHARDS), again], RERUN)
    assert {(r.workload, r.backend): r.status for r in rerun.rows} == {
        ("model_a", "eager"): "ok", ("model_a", "inductor"): "mismatch", ("model_b", "inductor"): "unavailable"}


def test_fill_runs_only_the_cells_an_earlier_document_has_no_ok_row_for(tmp_path, capsys):
    """`--fill DOC`: the cells DOC did not get right (failed, timed out, never run), eager beside each
    (the speedups' base); nothing to run is said and exits 0; another size's document is an error."""
    previous = Document("compare", [_row("hf_llama", "fwd", "eager"), _row("hf_llama", "fwd", "inductor"),
                                    _row("hf_llama", "fwdbwd", "eager"),
                                    _row("hf_llama", "fwdbwd", "inductor", "failed", reason="timed out after 9 s")],
                        "cpu", "cpu", preset="tiny")
    assert fill_cells(previous, ["hf_llama", "hf_bert"], ["eager", "inductor"], ["fwd", "fwdbwd"], "cpu", "tiny",
                      None) == {("hf_llama", "fwdbwd", "eager"), ("hf_llama", "fwdbwd", "inductor"),
                                *{("hf_bert", m, b) for m in ("fwd", "fwdbwd") for b in ("eager", "inductor")}}
    # --fill-not-run: not the failure, only what never ran
    assert fill_cells(previous, ["hf_llama", "hf_bert"], ["eager", "inductor"], ["fwd", "fwdbwd"], "cpu", "tiny",
                      None, not_run=True) == {("hf_bert", m, b) for m in ("fwd", "fwdbwd") for b in ("eager", "inductor")}
    # the same cells whether the run names the models' own dtype (their rows') or leaves it to them
    rows_f32 = dataclasses.replace(previous, rows=[dataclasses.replace(r, dtype="float32") for r in previous.rows])
    assert fill_cells(rows_f32, ["hf_llama"], ["inductor"], ["fwdbwd"], "cpu", "tiny", "float32") == {
        ("hf_llama", "fwdbwd", "inductor")}
    # rows of another size, dtype, device or kind of document are not these cells
    with pytest.raises(UsageError, match="preset tiny, dtype each model its own; this run is of preset bench"):
        fill_cells(previous, ["hf_llama"], ["eager"], ["fwd"], "cpu", "bench", "bfloat16")
    with pytest.raises(UsageError, match="ran on cpu; this run is on cuda"):
        fill_cells(previous, ["hf_llama"], ["eager"], ["fwd"], "cuda", "tiny", None)
    with pytest.raises(UsageError, match="not a bench document"):
        fill_cells(dataclasses.replace(previous, kind="bench"), ["hf_llama"], ["eager"], ["fwd"], "cpu", "tiny", None)
    path = tmp_path / "previous.json"
    write_document(previous, path)
    out = tmp_path / "fill"
    assert main(["zoo", "--fill", str(path), "--models", "hf_llama", "--backends", "eager,inductor",
                 "--mode", "fwd", "--out", str(out)]) == 0
    assert "nothing to run" in capsys.readouterr().err and read_document(out / "zoo.json").rows == []
    assert main(["zoo", "--fill", str(path), "--from", str(path)]) == 2
    assert main(["zoo", "--fill-not-run", "--models", "hf_llama"]) == 2
    # a failed eager cell is run again, alone: a document of that one row, which a join puts in
    write_document(dataclasses.replace(previous, rows=[_row("hf_llama", "fwd", "eager", "failed")] + previous.rows[1:]),
                   path)
    assert main(["zoo", "--fill", str(path), "--models", "hf_llama", "--backends", "eager,inductor",
                 "--mode", "fwd", "--out", str(out)]) == 0
    assert [(r.workload, r.mode, r.backend, r.status) for r in read_document(out / "zoo.json").rows] == [
        ("hf_llama", "fwd", "eager", "ok")]
    joined = join([read_document(path), read_document(out / "zoo.json")], RERUN)
    assert {(r.mode, r.backend): r.status for r in joined.rows} == {
        ("fwd", "eager"): "ok", ("fwd", "inductor"): "ok", ("fwdbwd", "eager"): "ok", ("fwdbwd", "inductor"): "failed"}


def test_the_model_table_lists_a_models_modes_together_whatever_order_a_join_left():
    doc = Document("compare", [_row("model_a", "fwdbwd", "eager"), _row("model_b", "fwd", "eager"),
                               _row("model_a", "fwd", "eager")], "cpu", "cpu", preset="tiny")
    table = [line.split(" | ")[:2] for line in model_table(doc, gpu=False)[2:]]
    assert table == [["| model_a", "fwd"], ["| model_a", "fwdbwd"], ["| model_b", "fwd"]]


def test_a_failure_kind_masks_numbers_and_shapes_not_the_digits_of_names():
    def kind(reason):
        return signature(_row("m", "fwd", "xla", "failed", reason=reason)).split(": ", 1)[1]

    assert kind("rel err 1.25e-03 > 2 x eager's 3.0e-07") == "rel err N.Ne-N > N x eager's N.Ne-N"
    assert kind("unexpected results: out1, out12 of fft_c2c, float32, conv2d_10") == \
        "unexpected results: out1, out12 of fft_c2c, float32, conv2d_10"
    assert kind("tensor<3x128xf32> at grad:blocks.3.12.bn1.weight") == "tensor<Nxf32> at grad:blocks.N.N.bn1.weight"
    # each process's compiler object has its own address: one kind
    assert kind("BackendCompilerFailed: backend='<Capture object at 0x7ff25df4bcd0>' raised:") == \
        kind("BackendCompilerFailed: backend='<Capture object at 0x7fac01bba5d0>' raised:") == \
        "BackendCompilerFailed: backend='<Capture object at N>' raised:"


def test_a_joined_rows_speedup_is_against_eager_of_its_own_run():
    """A rerun brings its own eager row (the base timed beside it); rows kept from the first run keep
    the first run's eager as their base, on the page and in its JSON."""
    first = Document("compare", [_row("m", "fwd", "eager", run_us=100.0), _row("m", "fwd", "inductor", run_us=50.0),
                                 _row("m", "fwd", "nvfuser", "failed")], "cuda", "NVIDIA H200", preset="bench")
    again = Document("compare", [_row("m", "fwd", "eager", run_us=300.0), _row("m", "fwd", "nvfuser", run_us=100.0)],
                     "cuda", "NVIDIA H200", preset="bench")
    merged = join([first, again], RERUN)
    assert merged.device == "cuda (NVIDIA H200)"
    assert join([merged, again], RERUN).device == "cuda (NVIDIA H200)"
    assert {r.backend: r.eager_us for r in merged.rows} == {"eager": None, "inductor": 100.0, "nvfuser": 300.0}
    speedups = {s.backend: s.speedups for s in summarize(merged)}
    assert speedups["inductor"] == {"m": 2.0} and speedups["nvfuser"] == {"m": 3.0}
    assert "| m | fwd | ok | ok 2.00x | ok 3.00x |" in zoo_markdown(merged)


def test_speedups_and_their_geomean_are_shown_on_a_gpu_document():
    rows = [_row(w, "fwd", b, run_us=t) for w, b, t in (("hf_bert", "eager", 100.0), ("hf_bert", "inductor", 50.0),
                                                         ("timm_vit", "eager", 90.0), ("timm_vit", "inductor", 10.0))]
    doc = Document("compare", rows, "cuda", "NVIDIA H100", preset="bench", dtype="bfloat16")
    inductor = next(s for s in summarize(doc) if s.backend == "inductor")
    assert inductor.speedups == {"hf_bert": 2.0, "timm_vit": 9.0} and math.isclose(inductor.geomean, 18 ** 0.5)
    assert "4.24x" in zoo_markdown(doc) and "2.00x" in zoo_markdown(doc)
    assert upstream_of(_row("m", "fwd", "inductor", detail='Traceback:\n File "/a/irlens/x.py", line 1')) is None
    warned = '/v/site-packages/torch/_dynamo/variables/functions.py:2202: UserWarning: lru_cache\n  File "/v/site-packages/torch/x.py", line 3'
    assert upstream_of(_row("m", "fwd", "nvfuser", "failed", reason="timed out after 170 s", detail=warned)) is None
    logged = 'W1127 codecache.py:633] Traceback (most recent call last):\n  File "/v/site-packages/torch/_inductor/codecache.py", line 629'
    assert upstream_of(_row("m", "fwd", "nvfuser", "failed", reason="timed out after 450 s", detail=logged)) is None
    assert upstream_of(_row("m", "fwd", "nvfuser", "failed", reason="boom", detail=logged)) == "torch"
    # nvFuser's C++ assert (hf_wav2vec2 fwd+bwd on an H200): the kept tail of stderr has native frames only,
    # its package folder on the path (not site-packages) and reached through `..`
    assertion = ("run: RuntimeError:  INTERNAL ASSERT FAILED at /workspace/Fuser/csrc/runtime/fusion_kernel_runtime.cpp:476\n"
                 "Exception raised from validateAllocationVectorizedId (most recent call first):\n"
                 "frame #0: nvfuser::nvfCheckFail(char const*, long) + 0xc2 (0x7ff6d592d4a6 in "
                 "/tmp/gpu-site/nvfuser_direct/../nvfuser_common/lib/libnvfuser_codegen.so)\n")
    torch_frames = "frame #3: evaluate_function + 0x1117 (0x7ff99a04c9b7 in /opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so)"
    assert upstream_of(_row("m", "fwdbwd", "nvfuser", "failed", reason=assertion, detail=torch_frames)) == "nvfuser_common"
    assert upstream_of(_row("m", "fwdbwd", "nvfuser", "failed", reason="boom", detail="frame #0: f (0x1 in /usr/lib/libc.so.6)")) is None
    # a Python frame decides over native ones, its header cut off or not; irlens's own is irlens's, a
    # user's folder named like a package is not that package
    cut = f'  File "/home/u/irlens/backends/x.py", line 9, in run\n{torch_frames}'
    assert upstream_of(_row("m", "fwdbwd", "nvfuser", "failed", reason="boom", detail=cut)) is None
    user = 'Traceback (most recent call last):\n  File "/home/u/torch/myproj/x.py", line 9'
    assert upstream_of(_row("m", "fwdbwd", "nvfuser", "failed", reason="boom", detail=user)) is None
    # an illegal memory access surfaces at a later call (hf_bart's nvFuser fwd+bwd on an H200: torch's
    # empty_cache): the frame that raised it does not say whose kernel it was
    fault = _row("hf_bart", "fwdbwd", "nvfuser", "failed",
                 reason="AcceleratorError: CUDA error: an illegal memory access was encountered",
                 detail='Traceback (most recent call last):\n  File "/v/site-packages/torch/cuda/memory.py", line 224')
    assert upstream_of(fault) is None
    assert "— a kernel's fault, reported at a later call: whose kernel, not known; 1 row: hf_bart" in \
        zoo_markdown(Document("compare", [*rows, fault], "cuda", "NVIDIA H100", preset="bench"))
    slow = Document("compare", [*rows, _row("hf_bert", "fwd", "nvfuser", "failed", reason="timed out after 450 s",
                                            detail=logged)], "cuda", "NVIDIA H100", preset="bench")
    assert "**nvfuser fwd: timed out after N s** — a time limit, nothing crashed; 1 row: hf_bert" in zoo_markdown(slow)


def test_a_missing_library_is_a_clear_error_and_an_unavailable_model(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a))
    assert "needs transformers" in get_workload("hf_bert").missing() and not get_workload("timm_vit").missing()
    assert main(["compare", "--workloads", "hf_bert", "--backends", "eager"]) == 2
    assert "pip install 'irlens[zoo]'" in capsys.readouterr().err
    assert main(["list"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("hf_bert")]
    assert listed and "unavailable: workload 'hf_bert' needs transformers" in listed[0]
    from irlens.zoo.run import ZooConfig, run_zoo

    doc = run_zoo(ZooConfig(models=["hf_bert"], backends=["eager"], modes=["fwd"]), progress=False)
    assert [(r.status, r.reason) for r in doc.rows] == [("unavailable", get_workload("hf_bert").missing())]
    # filling a page where the library is missing says so only of the cells the page lacks: a join
    # keeps the page's ok rows
    page = Document("compare", [_row("hf_bert", "fwd", "eager")], "cpu", "cpu", preset="tiny")
    doc = run_zoo(ZooConfig(models=["hf_bert"], backends=["eager"], fill=page), progress=False)
    assert [(r.mode, r.status) for r in doc.rows] == [("fwdbwd", "unavailable")]
    assert {r.mode: r.status for r in join([page, doc], RERUN).rows} == {"fwd": "ok", "fwdbwd": "unavailable"}


def test_weight_norm_backward_expands_as_aten_computes_it():
    """wav2vec 2.0's weight-normed positional convolution: AOT's backward holds
    `_weight_norm_interface_backward`, which torch does not decompose; irlens's decomposition
    computes what the ATen kernel computes."""
    from irlens.frontends.dynamo.decompositions import weight_norm_interface_backward

    for dim in (0, 2):
        v = torch.randn(6, 3, 5, dtype=torch.float64)
        g = torch.randn(*[v.shape[d] if d == dim else 1 for d in range(3)], dtype=torch.float64)
        w, norms = torch._weight_norm_interface(v, g, dim)
        grad_w = torch.randn_like(w)
        want = torch.ops.aten._weight_norm_interface_backward(grad_w, v, g, norms, dim)
        for a, b in zip(weight_norm_interface_backward(grad_w, v, g, norms, dim), want):
            torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def test_projection_is_fixed_by_seed():
    from irlens.workloads.zoo.entry import _projection

    assert np.array_equal(_projection(7, 1), _projection(7, 1)) and not np.array_equal(_projection(7, 1), _projection(7, 0))


def test_rows_written_before_starved_rows_are_rewritten_by_the_same_rule():
    """scripts/starved_rows.py reads a timeout's figures back from its reason
    and applies irlens.runtime.isolation.starved: a cell killed for counted waits is not measured, one
    killed in its own work (a compile) stays a failure."""
    import runpy

    rewritten = runpy.run_path(str(Path(__file__).parents[2] / "scripts/starved_rows.py"))["rewritten"]
    waited = ("timed out after 420 s (timing: waiting for its turn to share the device, its last 1 s); "
              "it waited 192 s for turns on the device, of which 12 s did not count")
    starved = rewritten(_row("m", "fwdbwd", "thunder+torchcompile", "failed", reason=waited, phase="worker"))
    assert (starved.status, starved.phase) == ("unavailable", STARVED_PHASE) and waited in starved.reason
    own = "timed out after 420 s (timing, its last 134 s); it waited 134 s for turns on the device, of which 12 s did not count"
    kept = _row("m", "fwdbwd", "nvfuser", "failed", reason=own, phase="worker")
    assert rewritten(kept) is kept  # 122 s counted of 420, and not waiting at the kill
    compiling = _row("m", "fwdbwd", "nvfuser", "failed", reason="timed out after 420 s (compiling, its last 408 s)")
    assert rewritten(compiling) is compiling


def test_a_compiler_failure_dynamo_wraps_is_named_by_the_compilers_own_error(monkeypatch):
    """Dynamo's BackendCompilerFailed names only the backend object on its first line; the row's
    reason goes on with the compiler's own error (Inductor's attention pattern handing sdpa a
    tensor scale, on GraphNet's GPT-J), and so does the failure's kind on the page."""
    from torch._dynamo.exc import BackendCompilerFailed

    import irlens.matrix.backend_run as backend_run
    from irlens.backends import get_backend

    own = RuntimeError("aten::scaled_dot_product_attention() Expected a value of type 'Optional[float]' for "
                       "argument 'scale' but instead found type 'FakeTensor'.\nPosition: 6")

    def compiler_failed(step, device, **_):
        raise BackendCompilerFailed(lambda: None, own, None)

    monkeypatch.setattr(backend_run, "measure", compiler_failed)
    wl = Workload.from_module("mlp", torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), ((2, 4),))
    row = run_in_process(wl, get_backend("inductor"), "fwd", "cpu", "tiny", None, compute_reference(wl, "fwd", "cpu", "tiny", None))
    first = row.reason.splitlines()[0]
    assert first == ("run: BackendCompilerFailed: RuntimeError: aten::scaled_dot_product_attention() Expected a value "
                     "of type 'Optional[float]' for argument 'scale' but instead found type 'FakeTensor'.")
    assert signature(row) == f"inductor fwd: {first}"


def test_a_model_inductor_captured_then_failed_running_counts_as_acquired(monkeypatch):
    """A native run that fails after Dynamo captured the model (CoAtNet's backward in torch's
    attention on an H200) keeps the graphs, and the page counts the model as acquired, not ran."""
    import irlens.matrix.backend_run as backend_run
    from irlens.backends import get_backend

    def compile_then_fail(step, device, **_):
        step.call(step.prepare())  # Dynamo captures and Inductor compiles here
        raise RuntimeError("(*bias): last dimension must be contiguous")

    monkeypatch.setattr(backend_run, "measure", compile_then_fail)
    wl = Workload.from_module("mlp", torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), ((2, 4),))
    reference = compute_reference(wl, "fwd", "cpu", "tiny", None)
    row = run_in_process(wl, get_backend("inductor"), "fwd", "cpu", "tiny", None, reference)
    assert row.status == "failed" and row.phase == "run" and "last dimension" in row.reason
    assert row.graphs and row.notes["acquired_graphs"] == len(row.graphs)
    stripped = dataclasses.replace(row, graphs={})  # a committed page keeps no graphs: the note counts
    (inductor_stats,) = summarize(Document("compare", [stripped], "cpu", "cpu", preset="tiny"))
    assert (inductor_stats.acquired, inductor_stats.ran) == (1, 0)


def test_an_unavailable_row_that_acquired_graphs_is_outside_every_rate():
    """A row unavailable after its frontend captured the model (XLA through the lowering of Dynamo's
    graphs, an op the lowering lacks) is left out of the rates' base, so of their counts too: no
    rate above 100 %."""
    lacking = Row("gat", "fwd", "xla", "dynamo", status="unavailable", phase="acquire", via="dynamo",
                  reason="the jax lowering does not support: scatter_reduce", notes={"acquired_graphs": 1})
    ok = Row("mlp", "fwd", "xla", "dynamo", status="ok", via="dynamo", notes={"acquired_graphs": 1})
    (xla,) = summarize(Document("compare", [lacking, ok], "cpu", "cpu", preset="tiny"))
    assert (xla.models, xla.unavailable, xla.acquired, xla.ran) == (2, 1, 1, 1)
