"""A half-precision mismatch, or a float32 one on ill-conditioned results, judged over several
input draws (irlens.matrix.draws): a result a single draw puts past eager's bound is ok where its
median error over five draws is within eager's median bound and no draw goes past eager's
largest; a backend wrong on some draws, off on every draw, or with a NaN on one stays a mismatch,
a well-conditioned float32 mismatch is not judged so, and a row that could not be judged so says why."""
import dataclasses

import pytest
import torch

from irlens.backends.base import Backend, Compiled
from irlens.frontends.base import Availability
from irlens.matrix import Document, format_table
from tests.support.cell_runs import run_in_process
from irlens.matrix.draws import DRAWS, DrawErrors, judge_draws
from irlens.matrix.references import compute_reference
from irlens.numerics.verdicts import tolerance
from irlens.workloads.workload import Workload, eager_step

NORM_SEED = 1  # with the BatchNorm: eager's own error is not at its largest on the own inputs either
FLOOR = 4e-3  # bfloat16's (irlens.numerics.verdicts.CRITERIA)
EAGER = [8e-3, 4e-3, 5e-3, 3e-3, 5e-3]  # eager's own error over five draws: median 5e-3, largest 8e-3
MEDIAN_BOUND, CEILING = 3 * 5e-3 + FLOOR, 3 * 8e-3 + FLOOR


def draws(errors: list[float], eager: list[float] = EAGER, problems: dict[int, str] | None = None) -> list[DrawErrors]:
    return [DrawErrors({"out0": e}, {"out0": g}, problems=[(problems or {}).get(d)] if d in (problems or {}) else [])
            for d, (e, g) in enumerate(zip(errors, eager))]


def test_a_result_past_its_bound_on_one_draw_alone_is_ok_with_the_medians_as_its_figures():
    verdict = judge_draws(draws([2.5e-2, 1e-2, 1.2e-2, 0.8e-2, 1.1e-2]), "bfloat16", "fwd")
    assert 2.5e-2 > MEDIAN_BOUND and 2.5e-2 < CEILING  # past eager's median bound on its own draw
    assert verdict.ok, verdict.problems
    check = verdict.checks["out0"]
    assert (check.err, check.eager_err) == (1.1e-2, 5e-3) and check.allowed == pytest.approx(MEDIAN_BOUND)


def test_a_result_wrong_on_two_draws_of_five_is_a_mismatch_though_its_median_is_within():
    verdict = judge_draws(draws([1e-2, 0.2, 1.1e-2, 0.3, 0.9e-2]), "bfloat16", "fwd")
    assert not verdict.ok
    assert verdict.problems == ["out0: rel err 2.00e-01 on draw 1 > 3 x eager's largest over 5 draws 8.0e-03 + 4.0e-03"]


def test_a_result_off_on_every_draw_is_a_mismatch():
    verdict = judge_draws(draws([2.2e-2] * 5), "bfloat16", "fwd")
    assert verdict.problems == ["out0: median rel err 2.20e-02 over 5 draws > 3 x eager's median over 5 draws "
                                "5.0e-03 + 4.0e-03"]


def test_a_nan_or_a_missing_result_on_any_draw_is_a_mismatch():
    nan = judge_draws(draws([2e-2, 1e-2, 1e-2, 1e-2, 1e-2], problems={3: "out0: NaN or Inf in the result"}),
                      "bfloat16", "fwd")
    assert nan.problems == ["draw 3: out0: NaN or Inf in the result"]
    gone = draws([2e-2, 1e-2, 1e-2, 1e-2, 1e-2])
    del gone[2].errors["out0"]
    assert judge_draws(gone, "bfloat16", "fwd").problems == ["out0: not compared on draw 2"]


def test_eagers_overflow_on_a_draw_gives_no_bound_and_is_a_mismatch():
    verdict = judge_draws(draws([2e-2, 1e-2, 1e-2, 1e-2, 1e-2], eager=[8e-3, float("inf"), 5e-3, 3e-3, 5e-3]),
                          "bfloat16", "fwd")
    assert verdict.problems == ["out0: eager's own error is not finite on draw 1"]


# --- in a cell: a backend that is eager, pushed off on chosen draws ---------------------------------

class Mlp(torch.nn.Module):
    """Two linears; with `norm`, a train-mode BatchNorm between them (its running statistics are results)."""

    def __init__(self, norm: bool = False):
        super().__init__()
        self.a, self.b = torch.nn.Linear(64, 256), torch.nn.Linear(256, 64)
        self.norm = torch.nn.BatchNorm1d(256) if norm else torch.nn.Identity()

    def forward(self, x):
        return self.b(torch.tanh(self.norm(self.a(x))))


def _workload(norm: bool = False, seed: int = 4) -> Workload:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)  # eager's own error is not at its largest on the workload's own inputs
        return Workload.from_module("mlp_draws", Mlp(norm).train(norm), example_inputs=((32, 64),), dtype="bfloat16")


class Pushed(Backend):
    """Eager, its output pushed off by `push` (relative, at random) on the workload's own inputs, and made
    NaN on the other draws with `nan_elsewhere`; with `keep`, it keeps its step for them."""

    frontend, description = None, "eager, pushed off on chosen draws"

    def __init__(self, own: torch.Tensor, push: float, nan_elsewhere: bool = False, keep: bool = True):
        self.name = "pushed"
        self.own, self.push, self.nan_elsewhere, self.keep = own, push, nan_elsewhere, keep

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def compile(self, inst, mode):
        step = eager_step(inst.module, inst, mode)

        def pushed(args, raw) -> dict:
            results = step.package(args, raw)
            out = results["out0"].double()
            if torch.equal(inst.inputs[0], self.own):
                noise = torch.randn(out.shape, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
                out = out + self.push * out.norm() * noise / noise.norm()
            elif self.nan_elsewhere:
                out = out.clone().fill_(float("nan"))
            return {**results, "out0": out}  # in float64: no rounding on top of the push

        # timed as every backend is: the calls after the first go on updating a train-mode model's buffers
        return Compiled(dataclasses.replace(step, package=pushed), reruns=self.keep)


@pytest.fixture(scope="module", params=[False, True], ids=["mlp", "mlp_with_train_mode_batchnorm"])
def case(request):
    wl = _workload(norm=request.param, seed=NORM_SEED if request.param else 4)
    reference = compute_reference(wl, "fwd", "cpu", "tiny", None)
    own = reference.eager_errors["out0"]
    bound = 3 * own + FLOOR
    # a push that puts the output just past its bound (a random push adds to eager's error in quadrature)
    return wl, reference, ((1.02 * bound) ** 2 - own ** 2) ** 0.5


def _cell(case, backend: Backend, timeout_s: float | None = None):
    wl, reference, _ = case
    return run_in_process(wl, backend, "fwd", "cpu", "tiny", None, reference, timeout_s=timeout_s)


def test_a_cell_past_its_bound_on_its_own_inputs_alone_is_ok_over_the_draws_and_says_so(case):
    wl, reference, push = case
    row = _cell(case, Pushed(reference.inputs[0], push))
    assert row.status == "ok", row.reason
    assert row.notes["draws"]["verdict"] == "ok" and row.notes["draws"]["draws"] == DRAWS
    own = row.notes["draws"]["own_inputs"]
    assert own.startswith("out0: rel err ") and "x eager's" in own  # what its own inputs alone gave
    assert row.reason.startswith(f"ok over {DRAWS} input draws") and own in row.reason
    check = row.results["out0"]
    assert check.err <= check.allowed  # the medians: consistent with ok
    assert row.max_rel_err == max(c.err for c in row.results.values() if c.err is not None)
    assert check.err < push
    table = format_table(Document(kind="compare", rows=[row]))
    assert "ok ≈" in table and "judged over 5 input draws" in table


def test_a_cell_with_a_nan_on_another_draw_stays_a_mismatch(case):
    wl, reference, push = case
    row = _cell(case, Pushed(reference.inputs[0], push, nan_elsewhere=True))
    assert row.status == "mismatch"
    draws = row.notes["draws"]
    assert draws["verdict"] == "mismatch" and draws["draws"] == DRAWS
    assert draws["why"].startswith("draw 1: out0: NaN or Inf in the result (")
    assert f"over 5 input draws too: {draws['why']}" in row.reason


def test_a_cell_that_keeps_no_step_or_has_no_time_left_is_not_judged_over_draws_and_says_why(case):
    wl, reference, push = case
    row = _cell(case, Pushed(reference.inputs[0], push, keep=False))
    assert row.status == "mismatch" and row.notes["draws"]["verdict"] == "not judged"
    assert "not judged over input draws: pushed keeps no compiled step to run on other inputs" in row.reason
    late = _cell(case, Pushed(reference.inputs[0], push), timeout_s=1e-3)
    assert late.status == "mismatch"
    assert "0 of 4 more draws fit in the cell's timeout" in late.reason


class Cancelling(torch.nn.Module):
    """A Linear, a large offset added and taken away: float32 keeps few of the output's digits, eager's
    own error is over the flat tolerance (an ill-conditioned result), and moves with the inputs."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(64, 64)

    def forward(self, x):
        return (self.a(x) + 3e3) - 3e3


def test_a_float32_mismatch_on_an_ill_conditioned_result_is_judged_over_draws():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        wl = Workload.from_module("cancelling", Cancelling(), example_inputs=((32, 64),))
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
    own = reference.eager_errors["out0"]
    assert own > tolerance("float32", "fwd")  # ill-conditioned: eager itself is past the flat tolerance
    bound = 2 * own + 1e-5  # float32's k and floor, not capped (irlens.numerics.verdicts.CRITERIA)
    row = run_in_process(wl, Pushed(reference.inputs[0], ((1.02 * bound) ** 2 - own ** 2) ** 0.5), "fwd", "cpu", "tiny",
                   "float32", reference)
    assert "out0" in row.ill_conditioned
    assert row.status == "ok", row.reason
    assert row.notes["draws"]["verdict"] == "ok" and row.notes["draws"]["own_inputs"].startswith("out0: rel err ")
    wrong = run_in_process(wl, Pushed(reference.inputs[0], 0.05, nan_elsewhere=True), "fwd", "cpu", "tiny", "float32",
                     reference)
    assert wrong.status == "mismatch" and wrong.notes["draws"]["verdict"] == "mismatch"


def test_a_float32_mismatch_is_not_judged_over_draws():
    wl = _workload()
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
    row = run_in_process(wl, Pushed(reference.inputs[0], 0.05), "fwd", "cpu", "tiny", "float32", reference)
    assert row.status == "mismatch" and "draws" not in row.notes
