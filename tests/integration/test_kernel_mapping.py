"""A failure to map kernels never fails a cell that ran.

Reading kernels from a backend's records is irlens's work after the run (irlens.matrix.backend_run): where it
raises, the row keeps its numerics verdict, has no kernels and no launch count, and says
`kernels unmapped: <reason>` in the table, the JSON and the report. Failures are injected into each
backend's mapping: a Thunder backend named by reference whose region recorder raises (through the
CLI, in a worker, as a user's own backend would), and each built-in mapping step patched to raise.
"""
import json

import pytest

import irlens
from irlens.backends.thunder.backend import ThunderTorchCompileBackend
from irlens.backends.thunder.recorders import InductorRecorder

INJECTED = "injected mapping failure"


class RaisingRecorder(InductorRecorder):
    def region_kernels(self, group, graph, cupti_taken):
        raise RuntimeError(INJECTED)


class UnmappableThunder(ThunderTorchCompileBackend):
    """thunder+torchcompile, whose kernels cannot be read: the run itself is Thunder's own."""

    name = "test-unmappable"
    recorder = RaisingRecorder


UNMAPPABLE = UnmappableThunder()
UNMAPPABLE_REF = f"{__file__}:UNMAPPABLE"


@pytest.mark.slow
def test_a_cell_whose_kernels_cannot_be_mapped_keeps_its_verdict_in_every_output(tmp_path, capsys):
    from irlens.cli import main

    results = tmp_path / "results.json"
    status = main(["compare", "--workloads", "gelu", "--backends", f"eager,{UNMAPPABLE_REF}", "--mode", "fwd",
                   "--json", str(results)])
    table = capsys.readouterr().out
    assert status == 0, table  # every row ok: nothing failed
    line = next(x for x in table.splitlines() if x.startswith("gelu") and "test-unmappable" in x)
    assert line.split()[3] == "ok" and line.split()[7] == "-", line  # the verdict, and no launch count
    assert f"test-unmappable (gelu/fwd): ok: kernels unmapped: RuntimeError: {INJECTED}" in table

    row = next(r for r in json.loads(results.read_text())["rows"] if r["backend"] == "test-unmappable")
    assert row["status"] == "ok" and row["max_rel_err"] < row["tol"] and row["run_us"] > 0
    assert row["kernels_unmapped"] == f"RuntimeError: {INJECTED}"
    assert row["kernels"] == [] and row["kernel_count"] is None and row["coverage"] is None
    assert "region_kernels" in row["notes"]["kernel_mapping_traceback"]
    eager = next(r for r in json.loads(results.read_text())["rows"] if r["backend"] == "eager")
    assert "kernels_unmapped" not in eager  # written only where set: older documents read back unchanged

    out = tmp_path / "report"
    irlens.report(str(results), str(out), frontends=False)  # what `irlens report --from` writes
    for name in ("report.html", "report.md"):
        text = (out / name).read_text()
        assert f"kernels unmapped: RuntimeError: {INJECTED}" in text, name


def _gelu_row(backend_name: str):
    from irlens.backends import get_backend
    from tests.support.cell_runs import run_in_process
    from irlens.matrix.references import compute_reference
    from irlens.workloads.builtin import get_workload

    wl = get_workload("gelu")
    return run_in_process(wl, get_backend(backend_name), "fwd", "cpu", "tiny", None,
                    compute_reference(wl, "fwd", "cpu", "tiny", None))


def _raise(*args, **kwargs):
    raise RuntimeError(INJECTED)


@pytest.mark.parametrize("backend, module, attribute, reason", [
    ("inductor", "irlens.backends.inductor.backend", "map_kernels", f"RuntimeError: {INJECTED}"),
    # read inside Inductor's compilation: the compilation goes on, the graph goes unrecorded
    ("inductor", "irlens.backends.inductor.backend", "fx_to_graph",
     f"RuntimeError: the post-grad graph could not be read: RuntimeError: {INJECTED}"),
    ("xla", "irlens.backends.xla.backend", "read_hlo", f"RuntimeError: {INJECTED}"),
    ("thunder+torchcompile", "irlens.backends.thunder.backend", "trace_to_graph_and_groups", f"RuntimeError: {INJECTED}"),
])
def test_each_backends_mapping_runs_guarded(monkeypatch, backend, module, attribute, reason):
    import importlib

    monkeypatch.setattr(importlib.import_module(module), attribute, _raise)
    row = _gelu_row(backend)
    assert row.status == "ok" and row.max_rel_err < row.tol, row.reason
    assert row.kernels_unmapped == reason and row.unmapped_note == f"kernels unmapped: {reason}"
    assert row.kernels == [] and row.kernel_count is None


def test_a_region_of_another_fusion_executor_is_one_fused_kernel_for_the_nvfuser_recorder():
    """The H100's `'function' object has no attribute 'last_used'`: on CUDA, Thunder's default
    executors hold torchcompile_xentropy, whose `TorchCompileN` regions (cross-entropy) call a plain
    function, not a FusionDefinitionWrapper. Thunder's torchcompile regions on the CPU are the same
    kind of region: the nvFuser recorder reports each as one fused kernel and says whose it is."""
    from irlens._compat import import_thunder
    from irlens.backends.thunder.recorders import NvFuserRecorder
    from irlens.frontends.thunder.frontend import final_traces
    from irlens.backends.thunder.nvfuser import fusion_wrapper, is_nvfuser_region
    from irlens.frontends.thunder.trace import trace_to_graph_and_groups
    from irlens.workloads.builtin import get_workload
    from irlens.workloads.workload import run_eager

    thunder = import_thunder()
    inst = get_workload("gelu").instantiate("tiny")
    jfn = thunder.jit(inst.module, executors=ThunderTorchCompileBackend().executors(thunder))
    run_eager(jfn, inst, "fwd")
    (stage, trace), = final_traces(thunder, jfn, "fwd")
    graph, groups = trace_to_graph_and_groups(trace, name=inst.name, stage=stage)
    (region,) = [g for g in groups if g.fusion]
    assert region.name.startswith("TorchCompile") and not is_nvfuser_region(region.bsym)
    with pytest.raises(ValueError, match="is not an nvFuser region"):
        fusion_wrapper(region.bsym)
    recorder = NvFuserRecorder("nvfuser")
    (kernel,) = recorder.region_kernels(region, graph, cupti_taken=False)
    assert kernel.name == region.name and kernel.kind == "fused" and kernel.node_ids == region.node_ids
    assert recorder.notes()["regions_of_other_executors"] == {f"{stage}/{region.name}": "torchcompile"}
