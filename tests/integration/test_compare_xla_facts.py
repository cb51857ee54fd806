"""The `xla` backend on CPU: what XLA fuses, that its results match the float64 torch
reference, and that its kernels account for every node of the optimized-HLO common view."""
import functools
from collections import Counter

import pytest

from irlens.backends import get_backend
from irlens.core.ir import Graph
from irlens.matrix.backend_run import run_backend
from irlens.workloads.builtin import get_workload
from irlens.numerics.verdicts import compare_results, tolerance
from irlens.core.ops import is_compute
from irlens.workloads.workload import run_eager

MODES = ("fwd", "fwdbwd")


@functools.cache
def xla_run(name: str, mode: str, device: str = "cpu"):
    return run_backend(get_backend("xla"), get_workload(name).instantiate("tiny", device=device), mode)


def _graph(run, stage: str) -> Graph:
    (graph,) = [g for g in run.graphs if g.stage == stage]
    return graph


def _assert_one_fusion_for_gelu(run) -> None:
    (kernel,) = run.kernels
    assert kernel.kind == "fused" and kernel.stage == "jax.hlo"
    hlo = _graph(run, "jax.hlo")
    assert set(kernel.node_ids) == {n.id for n in hlo.nodes}
    assert hlo.compute_op_counts() == Counter({"mul": 6, "add": 2, "tanh": 1})  # x**3 as x*x*x
    assert f"%{kernel.name} = " in kernel.source and "tanh(" in kernel.source


def test_compare_xla_fuses_gelu_formula_into_one_fusion():
    run = xla_run("gelu", "fwd")
    _assert_one_fusion_for_gelu(run)
    # The fusion names the jaxpr equations it computes through op_name/source metadata. XLA
    # gives the outer `0.5 * x * (...)` the location of the inner `0.5 * x`: at most that one
    # equation is unnamed.
    jaxpr = _graph(run, "jax.jaxpr")
    mapping = run.notes["jaxpr"]
    compute = [n.id for n in jaxpr.nodes if is_compute(n.op)]
    named = set(mapping["kernels"][run.kernels[0].name]) | set(mapping["ambiguous"].get(run.kernels[0].name, []))
    assert len(compute) == 8 and len(named & set(compute)) >= 7 and len(mapping["unmapped"]) <= 1
    assert not mapping["recompute"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["tinyhead", "attention", "block"])
def test_compare_xla_matches_float64_reference(name, mode):
    run = xla_run(name, mode)
    inst = get_workload(name).instantiate("tiny")
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, mode)
    cmp = compare_results(run.results, want, tolerance("float32", mode))
    assert cmp.ok, cmp.reason
    assert all(r.dtype == inst.torch_dtype for r in run.results.values())
    assert run.compile_s > 0 and run.run_us > 0


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["gelu", "tinyhead", "attention", "block"])
def test_compare_xla_kernels_cover_each_compute_node_once(name, mode):
    run = xla_run(name, mode)
    hlo = _graph(run, "jax.hlo")
    owners = Counter(i for k in run.kernels for i in k.node_ids)
    recomputed = Counter(i for k in run.kernels for i in k.recompute)
    compute = [n.id for n in hlo.nodes if is_compute(n.op)]
    assert compute
    assert all(owners[i] - recomputed[i] == 1 for i in compute), {i: owners[i] for i in compute if owners[i] != 1}
    assert set(owners) <= {n.id for n in hlo.nodes}
    assert {k.stage for k in run.kernels} == {"jax.hlo"}
    # every kernel that multiplies matrices says so; on CPU XLA has no unfused elementwise kernels here
    matmul_kernels = [k for k in run.kernels if any(hlo.node(i).op == "matmul" for i in k.node_ids)]
    assert all(k.kind == "matmul" for k in matmul_kernels)
    assert len(matmul_kernels) == hlo.op_counts()["matmul"]  # no two dots in one kernel
    # the jaxpr equations named by the kernels exist in the jaxpr graph the run returns
    jaxpr = _graph(run, run.notes["jaxpr"]["stage"])
    named = {e for ids in run.notes["jaxpr"]["kernels"].values() for e in ids}
    assert named and named <= {n.id for n in jaxpr.nodes}


@pytest.mark.gpu
def test_compare_xla_fuses_gelu_into_one_fusion_on_cuda():
    _assert_one_fusion_for_gelu(xla_run("gelu", "fwd", "cuda"))


@pytest.mark.gpu
def test_compare_xla_attention_on_cuda_is_two_gemms_around_one_softmax_fusion():
    """Seen on an H200 (jax 0.11.2): Q·Kᵀ (with the scale) and P·V as Triton GEMM fusions, the
    mask and softmax in one Triton softmax fusion between them."""
    run = xla_run("attention", "fwd", "cuda")
    hlo = _graph(run, "jax.hlo")
    assert Counter(k.kind for k in run.kernels) == Counter({"matmul": 2, "fused": 1})
    (softmax,) = [k for k in run.kernels if k.kind == "fused"]
    assert {"exp", "amax", "sum", "div"} <= {hlo.node(i).op for i in softmax.node_ids}


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", ["tinyhead", "attention", "block"])
def test_compare_xla_matches_float64_reference_on_cuda(name, mode):
    run = xla_run(name, mode, "cuda")
    ref = get_workload(name).instantiate("tiny").cast("float64", "cuda")
    cmp = compare_results(run.results, run_eager(ref.module, ref, mode), tolerance("float32", mode))
    assert cmp.ok, cmp.reason  # XLA's default TF32 matmuls would not pass: the twin runs at "highest"
