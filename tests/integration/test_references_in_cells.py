"""On a GPU each cell's worker computes its own float64 reference (irlens.matrix.plan_references.
computed_in_cells): no file, no wait for the references' worker. The same path on the CPU, chosen
here by hand: its cells get the verdicts and figures the cells loading the files get, a reference
eager cannot run fails its cells naming why, and no reference file is written."""
from __future__ import annotations

import os

import pytest

import irlens.matrix as cmp
from irlens.matrix.plan_references import References, computed_in_cells

pytestmark = pytest.mark.slow  # worker processes, one per cell kind


def test_a_gpu_run_computes_references_in_its_cells_a_cpu_run_once_in_files():
    assert computed_in_cells("cuda") and computed_in_cells("cuda:1")
    assert not computed_in_cells("cpu")


def _run(plan, folder, in_cells: bool):
    refs = References(plan, str(folder), timeout=120, in_cells=in_cells)
    files_seen = []

    def on_row(cell, row):
        files_seen.append(sorted(n for n in os.listdir(folder) if n.startswith("reference")))

    try:
        doc = cmp.run_plan(plan, timeout=120, progress=False, jobs=2, isolate=True, references=refs, on_row=on_row)
    finally:
        refs.close()
    return doc.rows, files_seen


def test_cells_computing_their_own_reference_judge_like_cells_loading_the_files(tmp_path):
    plan = cmp.plan_matrix(["gelu", "tinyhead"], ["eager"], ["fwd", "fwdbwd"], "cpu", "tiny", "float32")
    (tmp_path / "files").mkdir()
    (tmp_path / "cells").mkdir()
    from_files, files_seen = _run(plan, tmp_path / "files", in_cells=False)
    in_cells, none_seen = _run(plan, tmp_path / "cells", in_cells=True)
    assert all(seen for seen in files_seen) and not any(none_seen)  # each file mode's cell had its file
    assert [r.status for r in in_cells] == ["ok"] * 4
    for a, b in zip(from_files, in_cells):
        assert (a.workload, a.mode, b.reference_dtype) == (b.workload, b.mode, "float64")
        # the same weights, inputs and float64 results: the same errors to the last bit
        assert {n: c.err for n, c in a.results.items()} == {n: c.err for n, c in b.results.items()}
        # eager's own float32 error, computed where the reference is: other thread counts, other sums
        assert b.eager_err == pytest.approx(a.eager_err, rel=0.05) and b.allowed == pytest.approx(a.allowed, rel=0.05)


EAGER_FAILS = '''
import torch, torch.nn.functional as F
import irlens

class TrainNormNoEps(torch.nn.Module):
    def forward(self, x, weight, bias):
        return F.batch_norm(x, None, None, weight, bias, training=True, eps=0.0)

wl = irlens.Workload.from_module("bn_eps0", TrainNormNoEps(), ((4, 8), (8,), (8,)))
'''


def test_a_reference_eager_cannot_run_fails_its_cells_naming_every_precision(tmp_path):
    import torch
    import torch.nn.functional as F

    try:  # a torch that runs batch_norm in training with eps 0 has a reference: nothing to check here
        F.batch_norm(torch.ones(4, 8), None, None, torch.ones(8), torch.ones(8), training=True, eps=0.0)
        pytest.skip("this torch runs batch_norm in training with eps 0")
    except Exception:
        pass
    path = tmp_path / "bn.py"
    path.write_text(EAGER_FAILS)
    plan = cmp.plan_matrix([f"{path}:wl"], ["eager"], ["fwd"], "cpu", "tiny", "float32")
    (row,), _ = _run(plan, tmp_path, in_cells=True)
    assert row.status == "failed" and row.phase == "reference"
    assert row.reason.startswith("the float64 eager reference failed: ReferenceFailed: eager fails in every precision: ")
    assert "float32 (eager as the cells run it) failed" in row.reason


def test_a_worker_keeps_one_acquisition_per_cell_coordinates_whatever_the_references_it_saw():
    # in-cell references are new for every cell: an acquisition on an earlier one's numbers is dropped,
    # not kept beside the new one (on a GPU each holds a model instance)
    import dataclasses

    from irlens.matrix import cell
    from irlens.matrix.references import compute_reference
    from irlens.matrix.spec import CellSpec
    from irlens.workloads.builtin import resolve_workload

    wl = resolve_workload("gelu")
    spec = CellSpec("gelu", "eager", "fwd", "float32", "cpu", "tiny", frontend="dynamo")
    first, second = (compute_reference(wl, "fwd", "cpu", "tiny", "float32") for _ in range(2))
    assert first.token != second.token
    cell.acquired_program(spec, wl, first)
    inst, _ = cell.acquired_program(dataclasses.replace(spec, backend="inductor"), wl, second)
    held = [k for k in cell._acquisitions if k[0] == dataclasses.replace(spec, backend="")]
    assert held == [(dataclasses.replace(spec, backend=""), second.token)]
    assert inst.inputs is second.inputs


@pytest.mark.gpu
def test_a_reference_computed_on_the_cpu_pins_a_gpu_instance_on_its_own_device():
    """Out of device memory, a reference is computed on the CPU: the GPU cell still runs on its
    weights and inputs (minigpt's token ids on the CPU failed the eager GPU cell's embedding)."""
    import torch

    from irlens.matrix.references import compute_reference
    from irlens.workloads.builtin import resolve_workload
    from irlens.workloads.workload import run_eager

    wl = resolve_workload("minigpt")
    reference = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
    inst = reference.pin(wl.instantiate("tiny", "float32", "cuda"))
    assert all(x.device.type == "cuda" for x in inst.inputs if isinstance(x, torch.Tensor))
    out = run_eager(inst.module, inst, "fwd")
    ((name, got),) = [(n, t) for n, t in out.items() if n in reference.results]
    torch.testing.assert_close(got.cpu().double(), reference.results[name].double(), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_a_reference_on_the_host_judges_a_gpu_cell_as_on_the_gpu():
    """A GPU cell's reference waits on the host while the cell runs (results_on_host): its errors
    are those against the same reference on the GPU."""
    import torch

    from irlens.matrix.references import compute_reference
    from irlens.numerics.verdicts import compare_results
    from irlens.workloads.builtin import resolve_workload
    from irlens.workloads.workload import run_eager

    wl = resolve_workload("block")
    on_gpu = compute_reference(wl, "fwdbwd", "cuda", "tiny", "float32")
    on_host = on_gpu.results_on_host()
    assert all(t.device.type == "cpu" for t in on_host.results.values() if isinstance(t, torch.Tensor))
    inst = on_host.pin(wl.instantiate("tiny", "float32", "cuda"))
    got = run_eager(inst.module, inst, "fwdbwd")
    here, there = compare_results(got, on_host.results, 1e-4), compare_results(got, on_gpu.results, 1e-4)
    assert not here.problems and here.errors.keys() == there.errors.keys()
    for name, err in here.errors.items():
        assert err == pytest.approx(there.errors[name], rel=1e-9, abs=1e-15), name
