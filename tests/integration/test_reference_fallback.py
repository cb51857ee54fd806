"""A reference that cannot run in float64 (irlens.matrix.references): the cells are judged against
the highest precision that runs, down to eager as the cells run it (the instance not cast), and
every row names that reference; only where eager itself fails as the cells run it is there no
reference, and then the rows say eager fails in every precision, naming each failure.

The modules are GraphNet-style graphs (weights passed as arguments): one builds float16 tensors
inside and takes a float16 weight, so a float64 (or float32) copy mixes dtypes; one calls
F.batch_norm in training mode with eps 0; one builds its tensors on a GPU (its float64 copy out
of that GPU's memory, the CPU unable to run it: the worker goes back to the GPU below float64)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import irlens
from irlens.backends import get_backend
from irlens.matrix import Document, format_table
from tests.support.cell_runs import run_in_process
from irlens.worker.entry import run_spec
from irlens.matrix.spec import ReferenceSpec
from irlens.matrix.references import Reference, ReferenceFailed, compute_reference
from irlens.numerics.verdicts import rel_err, tolerance
from irlens.numerics.tolerance_ladder import ABOVE_ZERO
from irlens.workloads.workload import Workload
from tests.support.perturbed_eager import PerturbedEager


class HalfInside(torch.nn.Module):
    """x @ w in float16, its bias built inside as float16, the weight passed in as float16."""

    def forward(self, x, w16):
        bias = torch.zeros(x.shape[0], w16.shape[1], dtype=torch.float16, device=x.device)
        return torch.tanh(torch.addmm(bias, x.to(torch.float16), w16).float())


def _half_inside() -> Workload:
    # the weight stays float16 whatever the run's dtype, as a GraphNet sample's metadata gives it
    return Workload("half_inside", lambda cfg: HalfInside(),
                    lambda cfg, dtype, gen: (torch.randn(4, 16, generator=gen).to(dtype),
                                             (torch.randn(16, 8, generator=gen) / 4).half()),
                    {"tiny": {}}, training=None)


class Pushed(PerturbedEager):
    """Eager with its first output pushed off by `amount` of its norm."""

    name, description = "pushed", "eager with its output pushed off"

    def __init__(self, amount: float):
        self.amount = amount

    def perturb(self, results: dict) -> None:
        out = results["out0"]
        results["out0"] = out + self.amount * out.norm() * torch.ones_like(out) / out.numel() ** 0.5


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_a_graph_with_float16_inside_is_judged_against_eager_as_the_cells_run_it(mode):
    wl = _half_inside()
    with pytest.raises(RuntimeError):  # a cast copy mixes float16 with float64 or float32 ...
        inst = wl.instantiate("tiny", "float32").cast("float32")
        inst.module(*inst.inputs)
    reference = compute_reference(wl, mode, "cpu", "tiny", "float32")  # ... the instance as it is does not
    assert reference.dtype == "float32" and reference.eager_errors is None
    assert reference.fallback.startswith("float64 failed: RuntimeError: ")
    assert reference.inputs[1].dtype == torch.float16
    eager = run_in_process(wl, get_backend("eager"), mode, "cpu", "tiny", "float32", reference)
    assert eager.status == "ok", eager.reason
    assert eager.reference_dtype == "float32" and eager.reference_fallback == reference.fallback
    assert eager.allowed == tolerance("float32", mode)  # eager's own error is not known: the flat tolerance
    off = run_in_process(wl, Pushed(10 * tolerance("float32", mode)), mode, "cpu", "tiny", "float32", reference)
    assert off.status == "mismatch" and off.reason.startswith("out0: rel err ")
    table = format_table(Document(kind="compare", rows=[eager, off]))
    assert "judged against eager float32, not float64" in table and "float64 failed: RuntimeError" in table


def test_a_graph_eager_cannot_run_as_the_cells_run_it_has_no_reference_and_says_why_in_every_precision():
    class TrainNormNoEps(torch.nn.Module):
        def forward(self, x, weight, bias):
            return F.batch_norm(x, None, None, weight, bias, training=True, eps=0.0)

    wl = Workload.from_module("bn_eps0", TrainNormNoEps(), ((4, 8), (8,), (8,)))
    inst = wl.instantiate("tiny", "float32")
    try:
        own = inst.module(*inst.inputs)
    except Exception as e:  # this torch refuses eps 0 in training: eager fails as the cells run it
        with pytest.raises(ReferenceFailed) as failed:
            compute_reference(wl, "fwd", "cpu", "tiny", "float32")
        why = str(failed.value)
        assert why.startswith("eager fails in every precision: float64 failed: ")
        assert f"float32 (eager as the cells run it) failed: {type(e).__name__}: " in why
        doc = irlens.compare(wl, backends=["eager"], modes=["fwd"], isolate=False)
        (row,) = doc["rows"]
        assert row["status"] == "failed" and row["phase"] == "reference"
        assert "(eager as the cells run it) failed" in row["reason"]
    else:  # a torch that runs it: a float64 reference, and eager's own error beside it
        reference = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
        assert reference.dtype == "float64"
        assert reference.eager_errors["out0"] == rel_err(own, reference.results["out0"])


def test_a_graph_failing_only_in_float64_keeps_a_half_precision_run_judged_against_eager_float32():
    class NoDouble(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(32, 32)

        def forward(self, x):
            if x.dtype == torch.float64:
                raise RuntimeError("no float64 kernel")
            return torch.tanh(self.proj(x))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        wl = Workload.from_module("no_double", NoDouble(), ((8, 32),), dtype="bfloat16")
    reference = compute_reference(wl, "fwd", "cpu", "tiny", None)
    assert reference.dtype == "float32" and reference.fallback == "float64 failed: RuntimeError: no float64 kernel"
    eager = run_in_process(wl, get_backend("eager"), "fwd", "cpu", "tiny", None, reference)
    assert eager.status == "ok" and 0 < eager.eager_err == eager.results["out0"].eager_err
    assert eager.reference_dtype == "float32"


ON_THE_GPU = '''
import torch
import irlens


class OnTheGpu(torch.nn.Module):
    """Builds a tensor on cuda:0 inside; its float64 copy is out of the GPU's memory."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        if x.dtype == torch.float64 and x.is_cuda:
            raise torch.OutOfMemoryError("CUDA out of memory (the float64 copy)")
        return self.proj(x) + torch.ones(16, device="cuda:0", dtype=x.dtype)


torch.manual_seed(0)
wl = irlens.Workload.from_module("on_gpu", OnTheGpu(), ((4, 16),))
'''


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_graph_whose_float64_copy_runs_out_of_memory_gets_a_float32_reference_on_the_gpu(tmp_path):
    path = tmp_path / "on_gpu.py"
    path.write_text(ON_THE_GPU)
    out = tmp_path / "reference.pt"
    run_spec(ReferenceSpec(f"{path}:wl", "fwdbwd", device="cuda").to_json(), "reference", path=str(out))
    reference = Reference.load(str(out), "cuda")
    assert reference.dtype == "float32" and reference.results["out0"].is_cuda
    assert reference.fallback.startswith("float64 failed: out of memory on cuda, and on the CPU: ")
    assert reference.eager_problem == "no precision above float32 ran"


# --- a run's dtype that overflows where float64 does not ------------------------------------------

class Overflows(torch.nn.Module):
    """Its first four columns scaled twice by 1e30: about 1e60 in float64, past float32's 3.4e38
    (+-inf) in float32; the other columns stay a plain tanh layer."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def forward(self, x):
        y = torch.tanh(self.proj(x))
        return torch.cat([y[:, :4] * 1e30 * 1e30, y[:, 4:]], dim=1)


class OverflowsInside(Overflows):
    """The same overflow, divided by itself: about 1 in float64, NaN (inf / inf) in float32."""

    def forward(self, x):
        y = torch.tanh(self.proj(x))
        big = y[:, :4] * 1e30 * 1e30
        return torch.cat([big / (big + 1.0), y[:, 4:]], dim=1)


def _seeded(name: str, module: type) -> Workload:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Workload.from_module(name, module(), ((8, 16),))


def _not_finite(wl: Workload) -> tuple[int, int]:
    """(elements not finite in float32, all of them), float64 finite everywhere."""
    inst = wl.instantiate("tiny", "float32")
    own, wide = inst.module(*inst.inputs), inst.cast("float64")
    assert torch.isfinite(wide.module(*wide.inputs)).all()
    overflowed = int((~torch.isfinite(own)).sum())
    assert 0 < overflowed < own.numel()  # the finite rest is still compared
    return overflowed, own.numel()


def test_values_past_the_runs_dtypes_range_are_not_judged_the_rest_against_float64():
    """No float32 value is right where float64 holds 1e60: those elements are left out (counted in
    the row's notes and the table), the rest is judged against float64 as usual."""
    wl = _seeded("overflows", Overflows)
    overflowed, total = _not_finite(wl)
    doc = irlens.compare(wl, backends=["eager", "inductor"], modes=["fwd", "fwdbwd"], isolate=False)
    for row in doc["rows"]:
        label = (row["backend"], row["mode"])
        assert row["status"] == "ok", (label, row["reason"])
        assert row["reference_dtype"] == "float64" and not row.get("reference_fallback"), label
        assert row["notes"]["beyond_range"]["out0"] == f"{overflowed} of {total} elements", label
        assert 0 < row["per_result"]["out0"] <= row["per_result_allowed"]["out0"], label
    table = irlens.compare_table(doc)
    assert f"not judged: beyond float32's range in the reference (overflows/fwd, out0: {overflowed} of " \
           f"{total} elements)" in table


def test_an_overflow_only_the_runs_dtype_has_inside_is_judged_against_eager_in_that_dtype():
    wl = _seeded("overflows_inside", OverflowsInside)
    overflowed, total = _not_finite(wl)
    doc = irlens.compare(wl, backends=["eager", "inductor"], modes=["fwd", "fwdbwd"], isolate=False)
    why = f"float64 is finite where float32 is not (out0: {overflowed} of {total} elements"
    for row in doc["rows"]:
        label = (row["backend"], row["mode"])
        assert row["status"] == "ok", (label, row["reason"])
        assert row["reference_dtype"] == "float32" and row["reference_fallback"].startswith(why), label
        assert 0 <= row["per_result"]["out0"] <= row["per_result_allowed"]["out0"], label
    table = irlens.compare_table(doc)
    assert f"judged against eager float32, not float64 (overflows_inside/fwd): {why})" in table


class Finite(PerturbedEager):
    """Eager with its NaN and infinities replaced by finite values: finite where eager overflowed."""

    name, description = "finite", "eager with its infinities made finite"

    def perturb(self, results: dict) -> None:
        results["out0"] = torch.nan_to_num(results["out0"])


def test_a_backend_finite_where_eager_overflowed_inside_is_a_mismatch():
    wl = _seeded("overflows_inside", OverflowsInside)
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
    assert reference.dtype == "float32" and reference.eager_errors is None
    overflowed = int((~torch.isfinite(reference.results["out0"])).sum())
    row = run_in_process(wl, Finite(), "fwd", "cpu", "tiny", "float32", reference)
    assert row.status == "mismatch"
    assert row.reason == (f"out0: finite values where the reference has NaN or Inf "
                          f"({overflowed} of {reference.results['out0'].numel()} elements)")
    assert row.notes["graphnet_t"] == ABOVE_ZERO  # GraphNet's check fails it too


class NegativeVariance(torch.nn.Module):
    """An eval-mode BatchNorm whose running variance is below zero in its first channels (as a drawn
    one can be): NaN there in float64 as in float32."""

    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(8))
        self.register_buffer("var", torch.linspace(-1.0, 2.0, 8))

    def forward(self, x):
        return F.batch_norm(x, self.mean, self.var, training=False, eps=1e-5)


def test_a_nan_in_float64_where_eager_has_it_too_is_the_same_value():
    wl = Workload.from_module("negative_variance", NegativeVariance(), ((4, 8),))
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
    nan = reference.results["out0"].isnan()
    assert reference.dtype == "float64" and not reference.fallback and 0 < int(nan.sum()) < nan.numel()
    own = reference.eager_outputs["out0"]
    assert torch.equal(own.isnan(), nan)
    finite = ~nan
    expected = (torch.linalg.vector_norm(own[finite].double() - reference.results["out0"][finite])
                / torch.linalg.vector_norm(reference.results["out0"][finite])).item()
    assert reference.eager_errors["out0"] == pytest.approx(expected, rel=1e-12, abs=1e-300)
    doc = irlens.compare(wl, backends=["eager", "inductor"], modes=["fwd"], isolate=False)
    for row in doc["rows"]:
        assert row["status"] == "ok" and row["reference_dtype"] == "float64", (row["backend"], row["reason"])
        assert row["per_result"]["out0"] <= row["per_result_allowed"]["out0"]
