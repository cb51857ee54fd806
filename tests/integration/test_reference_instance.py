"""A cell that computes its own float64 reference (on a GPU, irlens.matrix.plan_references.computed_in_cells)
runs on the instance the reference was computed from, rather than building the module and its inputs
again: once, on the same weights and inputs; later callers get a fresh instance pinned to them."""
from __future__ import annotations

import torch

from irlens.matrix.cell import cell_record
from irlens.matrix.references import compute_reference
from irlens.matrix.row import Row
from irlens.matrix.spec import CellSpec
from irlens.backends import get_backend
from irlens.workloads.builtin import resolve_workload


def test_the_computing_process_hands_out_the_reference_instance_once_then_pins_fresh_ones():
    wl = resolve_workload("block")
    assert compute_reference(wl, "fwd", "cpu", "tiny", "float32").kept is None  # kept only where asked
    reference = compute_reference(wl, "fwdbwd", "cpu", "tiny", "float32", keep=True)
    first = reference.instance(wl, "tiny", "float32", "cpu")
    assert first is not None and reference.kept is None
    assert first.inputs is reference.inputs
    again = reference.instance(wl, "tiny", "float32", "cpu")
    assert again is not first and again.module is not first.module
    for instance in (first, again):  # the reference's weights, untouched by the steps it ran
        state = instance.module.state_dict()
        assert all(torch.equal(state[name], value) for name, value in reference.state.items())
    other = compute_reference(wl, "fwd", "cpu", "tiny", "float32", keep=True)
    assert other.instance(wl, "tiny", "bfloat16", "cpu").dtype == "bfloat16"  # not the kept one: another dtype


def test_a_cell_with_its_own_reference_matches_eager_on_it():
    spec = CellSpec(workload="block", mode="fwdbwd", backend="eager", device="cpu", preset="tiny", dtype="float32")
    row = Row.from_json(cell_record(spec, resolve_workload("block"), get_backend("eager"), None))
    assert row.status == "ok" and row.max_rel_err < 1e-5, (row.status, row.reason)
