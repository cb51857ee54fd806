"""A half-precision mismatch judged over other draws of the inputs (irlens.matrix.input_draws):
a backend off on one draw only is ok, marked; one off on every draw stays a mismatch; a model
whose inputs cannot be drawn again is said so."""
from __future__ import annotations

import torch

from irlens.backends.base import Backend, BackendRun
from irlens.frontends.base import Availability
from irlens.matrix import Document
from irlens.matrix.cell import run_cell
from irlens.matrix.input_draws import REDRAWS, redrawn
from irlens.matrix.references import compute_reference
from irlens.matrix.table import format_table, status_text
from irlens.workload import Workload, run_eager


def _workload(int_inputs: bool = False) -> Workload:
    torch.manual_seed(0)
    if int_inputs:
        return Workload.from_module("emb", torch.nn.Sequential(torch.nn.Embedding(10, 8), torch.nn.Tanh()),
                                    (torch.tensor([1, 3, 5, 7]),))
    return Workload.from_module("mlp", torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                                           torch.nn.Linear(16, 4)), ((4, 8),))


class OffOn(Backend):
    """Eager, its results 10 % off on the inputs it was built with (`first`), or on every draw."""

    name, frontend, description = "off_on", None, "eager, off on some inputs"

    def __init__(self, first: tuple | None = None):
        self.first, self.runs = first, 0

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def run(self, inst, mode):
        self.runs += 1
        results = run_eager(inst.module, inst, mode)
        off = self.first is None or all(torch.equal(a, b) for a, b in zip(inst.inputs, self.first))
        return BackendRun({k: v * 1.1 for k, v in results.items()} if off else results, 0.0, 0.0, [])


def test_a_mismatch_on_one_draw_only_is_ok_marked():
    wl = _workload()
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "bfloat16")
    backend = OffOn(first=reference.inputs)
    row = run_cell(wl, backend, "fwd", "cpu", "tiny", "bfloat16", reference)
    assert row.status == "ok" and backend.runs == 1 + REDRAWS and not row.reason
    assert row.judged_over_draws.startswith("out0: rel err")  # the first draw's mismatch, kept
    assert row.notes["input_draws"].startswith(f"over {REDRAWS + 1} input draws the median error of out0")
    doc = Document("compare", [row], "cpu", "cpu", preset="tiny", dtype="bfloat16")
    assert status_text(row) == "ok \u2248" and "\u2248 ok over other input draws (off_on; " in format_table(doc)


def test_a_mismatch_on_every_draw_stays_one_and_says_by_how_much():
    wl = _workload()
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "bfloat16")
    backend = OffOn()
    row = run_cell(wl, backend, "fwd", "cpu", "tiny", "bfloat16", reference)
    assert row.status == "mismatch" and backend.runs == 1 + REDRAWS
    assert "over 5 input draws the median error of out0, the furthest, is" in row.reason
    assert "judged_over_draws" not in row.notes


def test_integer_inputs_are_not_drawn_again_and_the_row_says_so():
    assert torch.equal(redrawn(torch.arange(4), torch.Generator()), torch.arange(4))
    wl = _workload(int_inputs=True)
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "bfloat16")
    backend = OffOn()
    row = run_cell(wl, backend, "fwd", "cpu", "tiny", "bfloat16", reference)
    assert row.status == "mismatch" and backend.runs == 1
    assert row.notes["input_draws"] == "not judged over other input draws: no floating-point input to draw again"
