"""The float64 reference files of an isolated run (irlens.matrix.plan_references) do not fill the disk:
a file goes once the last cell of its workload x mode has finished, and a reference that would
leave the disk nearly full fails its cells with the sizes, while the run goes on."""
from __future__ import annotations

import os

import pytest

import irlens.matrix as cmp
from irlens.caches.upkeep import MIN_FREE_BYTES
from irlens.matrix import plan_references
from irlens.matrix.plan_references import References
from irlens.matrix.references import NoRoom, compute_reference
from irlens.workloads.builtin import resolve_workload

# eager runs everywhere; nvFuser is a second cell per workload x mode that is unavailable on the
# CPU (nothing compiles), and still finishes like any cell
BACKENDS = ["eager", "nvfuser"]


def _files(folder) -> set[str]:
    return {name for name in os.listdir(folder) if name.startswith("reference")}


def test_a_reference_file_goes_when_the_last_cell_of_its_key_finished_and_not_before(tmp_path):
    plan = cmp.plan_matrix(["gelu"], BACKENDS, ["fwd", "fwdbwd"], "cpu", "tiny", None)
    refs = References(plan, str(tmp_path), timeout=120)
    try:
        refs.prepare()
        fwd, fwdbwd = refs.get("gelu", "fwd").path, refs.get("gelu", "fwdbwd").path
        assert os.path.isfile(fwd) and os.path.isfile(fwdbwd)
        refs.finished("gelu", "fwd")  # one of its two cells
        assert os.path.isfile(fwd)
        refs.finished("gelu", "fwd")
        assert not os.path.exists(fwd) and os.path.isfile(fwdbwd)  # the other key's cells still need theirs
        refs.finished("gelu", "fwdbwd")
        refs.finished("gelu", "fwdbwd")
        assert _files(tmp_path) == set()
    finally:
        refs.close()


@pytest.mark.slow
def test_a_run_leaves_no_reference_file_and_each_cell_had_its_own(tmp_path):
    plan = cmp.plan_matrix(["gelu", "tinyhead"], BACKENDS, ["fwd", "fwdbwd"], "cpu", "tiny", None)
    refs = References(plan, str(tmp_path), timeout=120)
    present = []

    def on_row(cell, row):  # before this cell counts as finished, so its key's file is still there
        present.append((cell.workload, cell.mode, os.path.isfile(refs.get(cell.workload, cell.mode).path)))

    try:
        doc = cmp.run_plan(plan, timeout=120, progress=False, jobs=2, isolate=True, references=refs, on_row=on_row)
        left = _files(tmp_path)
    finally:
        refs.close()
    assert [r.status for r in doc.rows if r.backend == "eager"] == ["ok"] * 4
    assert len(present) == 8 and all(there for *_, there in present)
    assert left == set()


def test_saving_a_reference_that_leaves_the_disk_nearly_full_fails_with_the_sizes(tmp_path, monkeypatch):
    reference = compute_reference(resolve_workload("gelu"), "fwd", "cpu", "tiny", None)
    needs = reference.nbytes()
    assert needs > 0
    monkeypatch.setattr(plan_references, "disk_free", lambda path: MIN_FREE_BYTES + needs - 1)
    path = tmp_path / "reference0.pt"
    with pytest.raises(NoRoom, match=r"^not enough disk for the float64 reference: needs 0\.0 GiB, 2\.0 GiB free"):
        plan_references.save_with_room(reference, str(path), wait_s=0.0)
    assert not path.exists()
    monkeypatch.setattr(plan_references, "disk_free", lambda path: MIN_FREE_BYTES + needs)
    plan_references.save_with_room(reference, str(path), wait_s=0.0)
    assert path.is_file()


TIGHT_DISK = 4000  # bytes the reference worker sees free above the margin: the small ones' fit, gelu's does not


def test_cells_of_a_reference_without_room_say_so_and_the_run_goes_on(tmp_path, monkeypatch):
    # the reference worker imports this file for its first workload: from then on it sees a disk
    # with TIGHT_DISK bytes above the margin (a workload file is the way test code reaches a worker)
    small = tmp_path / "small.py"
    small.write_text("import torch, irlens\n"
                     "from irlens.caches.upkeep import MIN_FREE_BYTES\n"
                     "from irlens.matrix import plan_references\n"
                     f"plan_references.disk_free = lambda path: MIN_FREE_BYTES + {TIGHT_DISK}\n"
                     "one = irlens.Workload.from_module('one', lambda x: torch.tanh(x), example_inputs=((4, 8),))\n"
                     "two = irlens.Workload.from_module('two', lambda x: torch.sin(x), example_inputs=((4, 8),))\n")
    monkeypatch.setattr(plan_references, "disk_free", plan_references.disk_free)  # planning imports it here too
    needs = compute_reference(resolve_workload("gelu"), "fwd", "cpu", "tiny", None).nbytes()
    assert needs > TIGHT_DISK
    plan = cmp.plan_matrix([f"{small}:one", "gelu", f"{small}:two"], ["eager"], ["fwd"], "cpu", "tiny", None)
    folder = tmp_path / "references"
    folder.mkdir()
    refs = References(plan, str(folder), timeout=120)
    try:
        doc = cmp.run_plan(plan, timeout=120, progress=False, isolate=True, references=refs)
    finally:
        refs.close()
    rows = {r.workload: r for r in doc.rows}
    assert rows["one"].status == "ok" and rows["two"].status == "ok"  # the run went on after it
    assert (rows["gelu"].status, rows["gelu"].phase) == ("failed", "reference")
    assert rows["gelu"].reason.startswith(f"not enough disk for the float64 reference: needs {needs / 2**30:.1f} GiB, ")
    assert _files(folder) == set()
