"""Facts about what Inductor does with the workloads, read from its own records (provenance
of each kernel in the post-grad graph), and its numerics against the float64 reference."""
import functools

import pytest

from irlens.core import ops
from irlens.backends import get_backend
from irlens.matrix.backend_run import BackendRun, run_backend
from irlens.workloads.builtin import get_workload
from irlens.numerics.verdicts import compare_results, tolerance
from irlens.workloads.workload import run_eager


@functools.lru_cache(maxsize=None)
def inductor_run(workload: str, mode: str, device: str = "cpu") -> BackendRun:
    """Each (workload, mode) compiles once for the whole file: CPU compiles dominate its time."""
    return run_backend(get_backend("inductor"), get_workload(workload).instantiate("tiny", device=device), mode)


def covered_ops(run: BackendRun, kernel) -> list[str]:
    graph = next(g for g in run.graphs if g.stage == kernel.stage)
    return sorted(graph.node(i).op for i in kernel.node_ids)


def compute_kernels(run: BackendRun) -> list:
    return [k for k in run.kernels if k.kind != "copy"]


DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


@pytest.mark.parametrize("device", DEVICES)
def test_compare_inductor_fuses_the_gelu_formula_into_one_kernel(device):
    run = inductor_run("gelu", "fwd", device)
    (kernel,) = run.kernels
    assert kernel.kind == "fused" and kernel.stage == "inductor.post_grad.forward"
    assert covered_ops(run, kernel) == sorted(["mul"] * 4 + ["pow", "add", "add", "tanh"])
    if device == "cuda":
        assert kernel.name.startswith("triton_") and "@triton.jit" in kernel.source
        assert run.notes["codegen"] == "triton"
    else:
        assert kernel.name.startswith("cpp_fused") and "tanh" in kernel.source


@pytest.mark.parametrize("device", DEVICES)
def test_compare_inductor_fuses_tinyhead_softmax_into_one_kernel(device):
    """On CUDA the statistics come from Inductor's online softmax (prims.prepare_softmax_online),
    which the adapter expands into the same amax, sub, exp, sum."""
    run = inductor_run("tinyhead", "fwd", device)
    softmax = [k for k in run.kernels if {"amax", "exp", "div"} & set(covered_ops(run, k))]
    assert len(softmax) == 1 and softmax[0].kind == "fused"
    assert {"amax", "sub", "exp", "sum", "div"} <= set(covered_ops(run, softmax[0]))
    (matmul,) = [k for k in run.kernels if "matmul" in covered_ops(run, k)]
    assert matmul.kind == "matmul" and matmul.name == "extern_kernels.addmm"


def test_compare_inductor_sdpa_is_a_library_call_forward_and_backward():
    run = inductor_run("attention", "fwdbwd")
    calls = [k for k in compute_kernels(run) if k.kind == "library"]
    assert [covered_ops(run, k) for k in calls] == [["sdpa"], ["sdpa_backward"]]
    assert [k.stage for k in calls] == ["inductor.post_grad.forward", "inductor.post_grad.backward"]


@pytest.mark.parametrize("workload, mode", [("gelu", "fwd"), ("tinyhead", "fwd"), ("tinyhead", "fwdbwd"),
                                            ("attention", "fwdbwd")])
def test_compare_inductor_covers_every_compute_node_exactly_once(workload, mode):
    run = inductor_run(workload, mode)
    stages = {g.stage for g in run.graphs}
    assert {k.stage for k in run.kernels} <= stages
    assert ("inductor.post_grad.backward" in stages) == (mode == "fwdbwd")
    for graph in run.graphs:
        assert not graph.unknown_ops(), dict(graph.unknown_ops())
        owned = [i for k in run.kernels if k.stage == graph.stage for i in k.node_ids]
        assert len(owned) == len(set(owned)), "a node in two kernels' node_ids"
        recomputed = {i for k in run.kernels if k.stage == graph.stage for i in k.recompute}
        assert recomputed <= set(owned)
        compute = [n.id for n in graph.nodes if ops.is_compute(n.op)]
        assert compute and set(compute) <= set(owned), f"{graph.stage}: uncovered {set(compute) - set(owned)}"
    assert all(k.source for k in run.kernels)


@pytest.mark.parametrize("workload, mode", [("gelu", "fwd"), ("tinyhead", "fwd"), ("tinyhead", "fwdbwd"),
                                            ("attention", "fwdbwd")])
def test_compare_inductor_matches_the_float64_reference(workload, mode):
    run = inductor_run(workload, mode)
    ref = get_workload(workload).instantiate("tiny").cast("float64")
    cmp = compare_results(run.results, run_eager(ref.module, ref, mode), tolerance("float32", mode))
    assert cmp.ok, cmp.reason
    assert run.compile_s > 0 and run.run_us > 0


@pytest.mark.parametrize("device", DEVICES)
def test_compare_inductor_times_every_kernel(device):
    """Each launch is matched to its torch.profiler event: fused kernels by their own name."""
    for mode in ("fwd", "fwdbwd"):
        run = inductor_run("tinyhead", mode, device)
        untimed = [k.name for k in run.kernels if not (k.time_us and k.time_us > 0)]
        assert not untimed, untimed
