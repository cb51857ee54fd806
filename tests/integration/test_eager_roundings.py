"""A half-precision mismatch is run again rounding where eager rounds (Backend.eager_roundings):
Inductor keeps float32 inside its fused kernels where eager rounds each op's result to bfloat16,
more accurate in the forward, yet a bfloat16 backward can amplify that one-unit difference past
irlens' bound (pytorch/pytorch#185676). The row's verdict stands; its reason says what the rerun
found."""
from __future__ import annotations

import contextlib

import torch

from irlens.backends import get_backend
from irlens.backends.base import Backend, Compiled
from irlens.frontends.base import Availability
from tests.support.cell_runs import run_in_process
from irlens.matrix.references import compute_reference
from irlens.workloads.workload import Workload, run_eager


def _workload() -> Workload:
    torch.manual_seed(0)
    return Workload.from_module("mlp", torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                                           torch.nn.Linear(16, 4)), ((4, 8),))


class OffUnlessRounding(Backend):
    """Eager, its outputs 10 % off unless run inside its own `eager_roundings` (`honest`: off there too)."""

    name, frontend, description = "off_unless_rounding", None, "eager, off unless rounding as eager does"

    def __init__(self, honest: bool = False, rounding: bool = True):
        self.honest, self.rounding, self.inside, self.runs = honest, rounding, False, 0

    def availability(self, device: str) -> Availability:
        return Availability(True)

    @contextlib.contextmanager
    def _inside(self):
        self.inside = True
        try:
            yield
        finally:
            self.inside = False

    def eager_roundings(self):
        return self._inside() if self.rounding else None

    def compile(self, inst, mode):
        self.runs += 1
        off = self.honest or not self.inside

        def step() -> dict:
            results = run_eager(inst.module, inst, mode)
            return {k: v * 1.1 for k, v in results.items()} if off else results

        return Compiled(step)


def test_a_bfloat16_mismatch_that_rounding_as_eager_fixes_says_so_and_stays_a_mismatch():
    wl = _workload()
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "bfloat16")
    backend = OffUnlessRounding()
    row = run_in_process(wl, backend, "fwd", "cpu", "tiny", "bfloat16", reference)
    assert row.status == "mismatch" and backend.runs == 2
    assert "with eager's roundings (off_unless_rounding asked to round" in row.reason
    assert "it is within the bound" in row.notes["eager_roundings"]


def test_a_mismatch_rounding_does_not_fix_says_that_and_float32_is_not_rerun():
    wl = _workload()
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "bfloat16")
    honest = OffUnlessRounding(honest=True)
    row = run_in_process(wl, honest, "fwd", "cpu", "tiny", "bfloat16", reference)
    assert row.status == "mismatch" and honest.runs == 2
    assert row.notes["eager_roundings"].startswith("with eager's roundings too: out0: rel err")
    for backend in (OffUnlessRounding(), OffUnlessRounding(rounding=False)):
        dtype = "float32" if backend.rounding else "bfloat16"
        row = run_in_process(wl, backend, "fwd", "cpu", "tiny", dtype, compute_reference(wl, "fwd", "cpu", "tiny", dtype))
        assert row.status == "mismatch" and backend.runs == 1 and "eager_roundings" not in row.notes


class FailsRounding(OffUnlessRounding):
    """Off by default; raises when asked to round as eager does."""

    def compile(self, inst, mode):
        if self.inside:
            raise RuntimeError("no kernel for that rounding")
        return super().compile(inst, mode)


def test_a_recheck_that_fails_leaves_the_mismatch_and_says_why():
    wl = _workload()
    row = run_in_process(wl, FailsRounding(), "fwd", "cpu", "tiny", "bfloat16",
                   compute_reference(wl, "fwd", "cpu", "tiny", "bfloat16"))
    assert row.status == "mismatch" and row.reason.startswith("out0: rel err")
    assert row.notes["eager_roundings"] == ("the recheck with eager's roundings failed: RuntimeError: "
                                            "no kernel for that rounding")


def test_inductor_rounds_as_eager_with_its_own_switch():
    config = torch._inductor.config
    before = config.emulate_precision_casts
    with get_backend("inductor").eager_roundings():
        assert config.emulate_precision_casts is True
    assert config.emulate_precision_casts == before
    assert get_backend("eager").eager_roundings() is None
