"""Checks that cannot fail, results that are rounding noise, and buffers a backend leaves as they
were (irlens.numerics.verdicts).

A result exactly zero in the float64 reference and in the run is vacuous: named per result; a
row whose every output is vacuous compared nothing of the model and says so in the compare table,
the report and the zoo page (not counted as numerics ok there), while one all-zero gradient among
live results is a note. A train-mode BatchNorm's running statistics that a backend does not
update are wrong values (a mismatch), judged as the buffers were before the step, never
"missing results". A gradient zero in exact arithmetic and rounding noise in float64 (a bias
feeding a train-mode BatchNorm) is judged by its size beside its module's other gradients, not by
its relative error, and named so."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from irlens.backends import get_backend
from irlens.backends.base import Backend, Compiled
from irlens.frontends.base import Availability
from irlens.matrix import Document, format_table, plan_matrix, read_document, run_plan, write_document
from tests.support.cell_runs import run_in_process
from irlens.matrix.references import compute_reference
from irlens.numerics.verdicts import allowed_error, compare_results, noise_scales, tolerance, unit_roundoff
from irlens.reporting import build_report, render_markdown
from irlens.reporting.zoo_page import summarize, zoo_markdown
from irlens.workloads.workload import Workload, run_eager
from tests.support.perturbed_eager import PerturbedEager


class ZeroHead(torch.nn.Module):
    """A hidden layer, then a head initialized to zeros (as timm's MLP-Mixer initializes its own)."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 16)
        self.head = torch.nn.Linear(16, 4)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(torch.tanh(self.body(x)))


class Unused(torch.nn.Module):
    """A live output and a parameter the loss does not depend on: multiplied by zero."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.idle = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        return self.proj(x) + 0.0 * self.idle


def _seeded(module_type) -> torch.nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return module_type()


def test_an_all_zero_reference_and_result_is_vacuous_and_a_nonzero_result_against_it_is_not():
    zero, live = torch.zeros(3), torch.ones(3)
    assert compare_results({"out0": zero}, {"out0": zero}, 1e-4).vacuous == ["out0"]
    off = compare_results({"out0": live}, {"out0": zero}, 1e-4)  # judged in absolute terms: a mismatch
    assert off.vacuous == [] and not off.ok
    assert compare_results({"out0": live}, {"out0": live}, 1e-4).vacuous == []


def test_a_zero_head_makes_every_row_compare_nothing_and_every_output_says_so(tmp_path):
    wl = Workload.from_module("zero_head", _seeded(ZeroHead), example_inputs=((4, 8),))
    doc = run_plan(plan_matrix([wl], ["eager", "inductor"], ["fwd", "fwdbwd"]), isolate=False, progress=False)
    for r in doc.rows:
        assert r.status == "ok" and r.compared_nothing, (r.backend, r.mode, r.reason)
        assert {"out0", *(["loss", "grad:body.weight", "grad:head.weight"] if r.mode == "fwdbwd" else [])} <= set(r.vacuous)
    table = format_table(doc)
    assert all(line.split()[3:5] == ["ok", "∅"] for line in table.splitlines()[2:6]), table
    assert "∅ a check that cannot fail (zero_head/fwd, 1 result: out0; eager, inductor)" in table
    # the flags travel in the document and back
    write_document(doc, tmp_path / "d.json")
    back = read_document(tmp_path / "d.json")
    assert [r.compared_nothing for r in back.rows] == [True] * 4 and back.rows[1].vacuous == doc.rows[1].vacuous
    html_text = render_markdown(build_report(back))
    assert "ok ∅" in html_text and "a check that cannot fail (zero_head/fwdbwd" in html_text
    # the zoo page: not counted as numerics ok, marked per model, named in the notes
    page = zoo_markdown(back)
    assert {(s.ok, s.vacuous) for s in summarize(back)} == {(0, 1)}  # per backend and mode
    assert "| 0/1 (0 %) + 1 ∅ |" in page and "| zero_head | fwd | ok ∅ | ok ∅ |" in page
    assert "- ∅ a check that cannot fail (zero_head/fwdbwd" in page


def test_one_gradient_the_loss_does_not_reach_is_a_note_not_an_alarm():
    wl = Workload.from_module("unused", _seeded(Unused), example_inputs=((4, 8),))
    doc = run_plan(plan_matrix([wl], ["eager"], ["fwdbwd"]), isolate=False, progress=False)
    (row,) = doc.rows
    assert row.status == "ok" and row.vacuous == ["grad:idle"] and not row.compared_nothing
    table = format_table(doc)
    assert "ok ∅" not in table
    assert ("exactly zero (or NaN or Inf alike) in the reference and in the run, checks that cannot fail (unused/fwdbwd, "
            "1 result: grad:idle); the other results are compared") in table


# --- buffers a backend leaves as they were ------------------------------------------------------------

def _bn_workload() -> Workload:
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4), torch.nn.ReLU())
    return Workload.from_module("bn_train", m.train(), ((4, 3, 8, 8),))


class FrozenStatistics(Backend):
    """Eager with BatchNorm's momentum at 0: it normalizes by the batch, counts the step, and leaves
    the running statistics as they were (a backend that drops those in-place updates)."""

    name, frontend, description = "frozen_statistics", None, "eager, BatchNorm running statistics not updated"

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def compile(self, inst, mode):
        norms = [m for m in inst.module.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        for m in norms:
            m.momentum = 0.0
        return Compiled(lambda: run_eager(inst.module, inst, mode))


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_a_buffer_the_backend_did_not_update_is_a_wrong_value_not_missing_output(mode):
    wl = _bn_workload()
    reference = compute_reference(wl, mode, "cpu", "tiny", None)
    assert {"buffer:1.running_mean", "buffer:1.running_var"} <= set(reference.results)
    row = run_in_process(wl, FrozenStatistics(), mode, "cpu", "tiny", None, reference)
    assert row.status == "mismatch" and "missing" not in row.reason
    assert ("buffer:1.running_mean, buffer:1.running_var not updated (the backend left them as they were): "
            "rel err up to ") in row.reason
    # judged as the values the buffers had before the step: the initial zeros are 100 % off
    assert row.results["buffer:1.running_mean"].err == 1.0
    assert row.results["buffer:1.num_batches_tracked"].err == 0.0  # the count it did update
    eager = run_in_process(wl, get_backend("eager"), mode, "cpu", "tiny", None, reference)
    assert eager.status == "ok", eager.reason


def test_a_buffer_updated_where_the_reference_leaves_it_is_named():
    ref = {"out0": torch.ones(2)}
    cmp = compare_results({"out0": torch.ones(2), "buffer:count": torch.ones(())}, ref, 1e-4)
    assert cmp.problems == ["buffer:count updated, where the reference leaves it as it was"]
    one = compare_results({"out0": torch.ones(2)}, {**ref, "buffer:count": torch.ones(())}, 1e-4,
                          before={"count": torch.zeros(())})
    assert one.problems == ["buffer:count not updated (the backend left it as it was): rel err 1.00e+00"]


# --- the zoo: a zero classifier head is redrawn --------------------------------------------------------

@pytest.mark.skipif(importlib.util.find_spec("timm") is None, reason="timm is not installed (pip install 'irlens[zoo]')")
def test_the_zoo_redraws_a_zero_classifier_head_and_its_mixer_is_live():
    from irlens._compat import import_timm
    from irlens.workloads.builtin import get_workload
    from irlens.workloads.zoo.timm_models import HEAD_STD, live_head

    timm = import_timm()
    own = timm.models.MlpMixer(num_classes=10, img_size=32, patch_size=8, embed_dim=32, num_blocks=2)
    assert not own.head.weight.any() and not own.head.bias.any()  # timm's own init: the output is 0 for any input
    inst = get_workload("timm_mixer").instantiate("tiny")
    head = inst.module.get_classifier()
    assert head.weight.any() and abs(head.weight.std().item() - HEAD_STD) < 0.2 * HEAD_STD
    assert not head.bias.any()  # a zero bias is kept
    again = get_workload("timm_mixer").instantiate("tiny").module.get_classifier()
    assert torch.equal(head.weight, again.weight)  # seeded
    with torch.no_grad():
        assert inst.module(*inst.inputs).abs().min() > 0
    # only all-zero matrices of the head: a live head is left as it was
    live = torch.nn.Linear(4, 2)
    before = live.weight.detach().clone()
    model = type("M", (torch.nn.Module,), {"get_classifier": lambda self: live})()
    live_head(model)
    assert torch.equal(live.weight, before)


@pytest.mark.skipif(importlib.util.find_spec("timm") is None, reason="timm is not installed (pip install 'irlens[zoo]')")
def test_the_zoo_starts_nfnet_s_zero_gain_branches_live():
    """timm's NFNets end each residual branch at zero: a last convolution of gain 0 (test_nfnet) or,
    skipinit (dm_nfnet_*, as the tiny model is built too), a zero gain the branch is multiplied by in
    place; every gradient inside the branch is then exactly zero. The zoo's NFNet starts the gains at
    1 and the skipinit gains at 0.5: no parameter's gradient is zero, the skipinit gains' own included."""
    from irlens._compat import import_timm
    from irlens.workloads.builtin import get_workload

    timm = import_timm()  # before timm's own modules: the shim that lets timm import here
    from timm.layers import ScaledStdConv2d

    def zero_gains(model):
        return [n for n, m in model.named_modules() if isinstance(m, ScaledStdConv2d) and not m.gain.any()] + [
            n for n, p in model.named_parameters() if n.endswith("skipinit_gain") and not p.any()]

    assert zero_gains(timm.create_model("test_nfnet", pretrained=False, num_classes=10))
    assert zero_gains(timm.create_model("test_nfnet", pretrained=False, num_classes=10, skipinit=True))
    inst = get_workload("timm_nfnet").instantiate("tiny")
    gains = [p.item() for n, p in inst.module.named_parameters() if n.endswith("skipinit_gain")]
    # not 1: a backward that reads the in-place product for the multiplied value would pass there
    assert gains == [0.5] * 4 and zero_gains(inst.module) == []
    inst.module(*inst.inputs).square().mean().backward()
    dead = [n for n, p in inst.module.named_parameters() if p.grad is None or not p.grad.any()]
    assert dead == []


def test_a_reproducer_names_a_buffer_the_backend_did_not_update():
    """The standalone file's own check says what irlens says: not updated, not missing."""
    from irlens.repro.emit import _RUN_AND_CHECK

    space = {"torch": torch, "math": __import__("math"), "ALLOWED": {}, "TOL": 1e-4}
    exec(_RUN_AND_CHECK.split("def synchronize", 1)[0], space)  # rel_err, bound, check
    t = torch.ones(3)
    problems, _ = space["check"]({"out0": t}, {"out0": t, "buffer:bn.running_mean": t})
    assert problems == ["buffer:bn.running_mean: not updated (the backend left it as it was)"]
    problems, _ = space["check"]({"out0": t, "buffer:n": t}, {"out0": t, "buffer:n": None, "grad:w": t})
    assert problems == ["buffer:n: updated, where the reference leaves it as it was", "grad:w: missing"]


# --- results zero in exact arithmetic and rounding noise in float64: judged by their size -----------

class LinearNorm(torch.nn.Module):
    """A Linear feeding a train-mode BatchNorm: the batch mean cancels the Linear's bias, whose
    gradient is zero in exact arithmetic and rounding noise in float64."""

    def __init__(self):
        super().__init__()
        self.fc, self.bn, self.out = torch.nn.Linear(32, 64), torch.nn.BatchNorm1d(64), torch.nn.Linear(64, 16)

    def forward(self, x):
        return self.out(torch.relu(self.bn(self.fc(x))))


class NoisyBias(PerturbedEager):
    """Eager, with the Linear's bias gradient moved by `amount` (absolute, in a fixed random direction)."""

    name, description = "noisy_bias", "eager with the bias gradient moved"

    def __init__(self, amount: float):
        self.amount = amount

    def perturb(self, results: dict) -> None:
        g = results["grad:fc.bias"].double()
        push = torch.randn(g.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
        results["grad:fc.bias"] = g + self.amount * push / push.norm()


def test_a_bias_gradient_cancelled_by_a_train_mode_batchnorm_is_judged_by_its_size():
    wl = Workload.from_module("linear_norm", _seeded(LinearNorm).train(), ((8, 32),))
    reference = compute_reference(wl, "fwdbwd", "cpu", "tiny", None)
    bias, weight = reference.results["grad:fc.bias"], reference.results["grad:fc.weight"]
    u = unit_roundoff("float32")
    assert bias.norm() < u * weight.norm()  # noise-sized in float64 beside the weight's gradient
    assert list(noise_scales(reference.results, "float32")) == ["grad:fc.bias"]
    eager = run_in_process(wl, get_backend("eager"), "fwdbwd", "cpu", "tiny", None, reference)
    assert eager.status == "ok", eager.reason
    assert eager.ill_conditioned["grad:fc.bias"].startswith("noise-sized: the float64 gradient vanishes beside ")
    eager_abs = reference.eager_errors["grad:fc.bias"] * bias.norm().item()  # eager's own float32 noise
    # fifty times eager's noise: past the relative bound the verdicts had (noise over noise), still
    # noise beside the weight's gradient
    noisy = run_in_process(wl, NoisyBias(50 * eager_abs), "fwdbwd", "cpu", "tiny", None, reference)
    relative_bound = allowed_error("float32", "fwdbwd", reference.eager_errors["grad:fc.bias"],
                                   reference.conditions["grad:fc.bias"], ill=True).value
    assert noisy.results["grad:fc.bias"].err > relative_bound
    assert noisy.status == "ok", noisy.reason
    assert noisy.results["grad:fc.bias"].allowed == pytest.approx(
        tolerance("float32", "fwdbwd") * weight.norm().item() / bias.norm().item())
    # off by a few times the flat tolerance of the weight's gradient: wrong, whatever its relative error
    wrong = run_in_process(wl, NoisyBias(4 * tolerance("float32", "fwdbwd") * weight.norm().item()), "fwdbwd", "cpu",
                     "tiny", None, reference)
    assert wrong.status == "mismatch"
    assert wrong.reason.startswith("grad:fc.bias: rel err ") and "of its module's largest gradient norm" in wrong.reason
    table = format_table(Document(kind="compare", rows=[eager, noisy, wrong]))
    assert "grad:fc.bias: noise-sized" in table
