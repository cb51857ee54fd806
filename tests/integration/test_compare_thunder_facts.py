"""Facts about what Thunder's fusing executors do with the workloads, read from Thunder's own
execution traces (fusion regions) and the fusion executors' records, and their numerics
against the float64 reference."""
import functools
from collections import Counter

import pytest

from irlens.core import ops
from irlens.backends import get_backend
from irlens.matrix.backend_run import BackendRun, run_backend
from irlens.frontends.base import Unavailable
from irlens.workloads.builtin import get_workload
from irlens.numerics.verdicts import compare_results, tolerance
from irlens.workloads.workload import run_eager

pytestmark = pytest.mark.skipif(not get_backend("thunder+torchcompile").availability("cpu"),
                                reason="lightning-thunder not importable")

GELU_FORMULA_OPS = Counter({"mul": 4, "pow": 1, "add": 2, "tanh": 1})
RUNS = [pytest.param(w, m, marks=pytest.mark.slow) if (w, m) == ("block", "fwd") else (w, m)
        for w in ("gelu", "tinyhead", "block") for m in ("fwd", "fwdbwd")]  # block's fwd: inside its fwd+bwd


@functools.lru_cache(maxsize=None)
def thunder_run(backend: str, workload: str, mode: str, device: str = "cpu") -> BackendRun:
    """Each (backend, workload, mode) compiles once for the whole file: compiles dominate its time."""
    return run_backend(get_backend(backend), get_workload(workload).instantiate("tiny", device=device), mode)


def covered_ops(run: BackendRun, kernel) -> Counter:
    graph = next(g for g in run.graphs if g.stage == kernel.stage)
    return Counter(graph.node(i).op for i in kernel.node_ids)


def assert_matches_reference(run: BackendRun, workload: str, mode: str, device: str = "cpu") -> None:
    ref = get_workload(workload).instantiate("tiny", device=device).cast("float64", device="cpu")
    cmp = compare_results({k: v.cpu() for k, v in run.results.items()}, run_eager(ref.module, ref, mode),
                          tolerance("float32", mode))
    assert cmp.ok, cmp.reason
    assert run.compile_s > 0 and run.run_us > 0


@pytest.mark.parametrize("workload, mode", RUNS)
def test_compare_thunder_torchcompile_matches_the_float64_reference(workload, mode):
    assert_matches_reference(thunder_run("thunder+torchcompile", workload, mode), workload, mode)


def test_compare_thunder_torchcompile_gelu_is_one_fusion_region():
    run = thunder_run("thunder+torchcompile", "gelu", "fwd")
    (kernel,) = run.kernels
    assert kernel.kind == "fused" and kernel.name == "TorchCompile0"
    assert covered_ops(run, kernel) == GELU_FORMULA_OPS
    # torch.compile turns the region into one Inductor C++ kernel
    (inductor_kernels,) = run.notes["inductor_kernels"].values()
    assert len(inductor_kernels) == 1 and inductor_kernels[0].startswith("cpp_fused")
    assert inductor_kernels[0] in kernel.source


def test_compare_thunder_torchcompile_one_region_can_be_several_inductor_kernels():
    """tinyhead's forward is one Thunder region (linear + softmax); Inductor runs it as an extern
    GEMM and one fused softmax kernel."""
    run = thunder_run("thunder+torchcompile", "tinyhead", "fwd")
    (kernel,) = run.kernels
    assert covered_ops(run, kernel) == Counter({"linear": 1, "softmax": 1})
    (inductor_kernels,) = run.notes["inductor_kernels"].values()
    assert inductor_kernels[0] == "extern_kernels.addmm" and len(inductor_kernels) == 2
    assert inductor_kernels[1].startswith("cpp_fused") and "softmax" in inductor_kernels[1]


@pytest.mark.parametrize("workload, mode", RUNS)
def test_compare_thunder_torchcompile_covers_every_compute_node_exactly_once(workload, mode):
    run = thunder_run("thunder+torchcompile", workload, mode)
    stages = [g.stage for g in run.graphs]
    assert stages[0].startswith("thunder.trace[")
    assert (len(stages) == 2 and stages[1].startswith("thunder.backward[")) == (mode == "fwdbwd")
    assert {k.stage for k in run.kernels} == set(stages)
    for graph in run.graphs:
        assert not graph.unknown_ops(), dict(graph.unknown_ops())
        covered = [i for k in run.kernels if k.stage == graph.stage for i in k.node_ids]
        assert len(covered) == len(set(covered)), "a node in two kernels"
        compute = [n.id for n in graph.nodes if ops.is_compute(n.op)]
        assert compute and set(compute) <= set(covered), f"{graph.stage}: uncovered {set(compute) - set(covered)}"
        # a fused kernel covers exactly the nodes of its region (a symbol expanded inside it: its
        # nodes' scope is the region's, then the symbol's)
        for k in run.kernels:
            if k.stage == graph.stage and k.kind == "fused":
                regions = {graph.node(i).scope.split("/")[0] for i in k.node_ids}
                assert regions == {k.name}


def test_compare_nvfuser_is_unavailable_without_cuda():
    backend = get_backend("nvfuser")
    available = backend.availability("cpu")
    assert not available and "nvFuser needs CUDA" in available.reason
    with pytest.raises(Unavailable, match="nvFuser needs CUDA"):
        run_backend(backend, get_workload("gelu").instantiate("tiny"), "fwd")


@pytest.mark.gpu
def test_compare_nvfuser_gelu_is_one_segment():
    run = thunder_run("nvfuser", "gelu", "fwd", "cuda")
    (kernel,) = run.kernels
    assert kernel.kind == "fused" and kernel.name.startswith("nvFusion0")
    assert covered_ops(run, kernel) == GELU_FORMULA_OPS
    assert kernel.time_us is not None and kernel.time_us > 0


@pytest.mark.gpu
def test_compare_nvfuser_block_segments_and_library_calls():
    """block with grad: nvFuser regions (the backward's split into segments), GEMMs and sdpa
    through torch and the sdpa executor outside them; each compute node in exactly one kernel."""
    run = thunder_run("nvfuser", "block", "fwdbwd", "cuda")
    regions = [k for k in run.kernels if k.name.startswith("nvFusion")]
    assert regions and all(k.time_us > 0 for k in regions if k.kind == "fused")
    segmented = run.notes["nvfuser_segments"]
    assert segmented and all(r.startswith("thunder.backward[") for r in segmented)
    for region, count in segmented.items():
        name = region.split("/", 1)[1]
        assert len([k for k in regions if k.name.startswith(name + "/")]) == count
    assert all(k.time_us is None for k in regions if k.kind == "extern")  # nvFuser's expression evaluator
    library = [(k.stage.split("[")[0], sorted(covered_ops(run, k))) for k in run.kernels if k.kind == "library"]
    assert library == [("thunder.trace", ["sdpa"]), ("thunder.backward", ["sdpa_backward"])]
    assert any(covered_ops(run, k) == Counter({"linear": 1}) for k in run.kernels if k.kind == "matmul")
    for graph in run.graphs:
        covered = [i for k in run.kernels if k.stage == graph.stage for i in k.node_ids]
        assert len(covered) == len(set(covered)), "a node in two kernels"
        assert {n.id for n in graph.nodes if ops.is_compute(n.op)} <= set(covered)


@pytest.mark.gpu
@pytest.mark.parametrize("workload, mode", RUNS)
def test_compare_nvfuser_matches_the_float64_reference(workload, mode):
    run = thunder_run("nvfuser", workload, mode, "cuda")
    assert_matches_reference(run, workload, mode, "cuda")
    assert any(k.name.startswith("nvFusion") for k in run.kernels)


@pytest.mark.gpu
def test_compare_thunder_torchcompile_on_cuda_matches_the_float64_reference():
    run = thunder_run("thunder+torchcompile", "gelu", "fwdbwd", "cuda")
    assert_matches_reference(run, "gelu", "fwdbwd", "cuda")
    assert "nvfuser" not in run.notes["executors"]
