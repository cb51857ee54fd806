"""`irlens explain`: one kernel's ops, reads, writes, reductions and internal values; every CPU backend."""
from __future__ import annotations

import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from irlens.cli.explain import run as explain_main
from irlens.explain.kernel import explain_kernel
from irlens.explain.run import ExplainedRun
from irlens.explain.text import UnknownKernel, explain_run, find_kernel, format_explanation
from irlens.matrix.backend_run import run_backend
from irlens.runtime.isolation import worker_env, worker_threads
from tests.support.report_fixtures import inductor_kernels, jax_graph, torch_graph, xla_kernels

CPU_BACKENDS = ("eager", "inductor", "thunder+torchcompile", "xla")


def test_explain_fused_softmax_dataflow():
    kernel = inductor_kernels()[1]
    expl = explain_kernel(kernel, torch_graph(), 1)
    assert [n.op for n in expl.nodes] == ["add", "amax", "sub", "exp", "sum", "div"]
    assert [m.name for m in expl.reads] == ["mm", "b"]  # the matmul's result (another kernel's) and the bias
    assert [m.name for m in expl.writes] == ["div"]  # only the returned softmax reaches memory
    assert [m.name for m in expl.internal] == ["add", "max", "sub", "exp", "sum"]  # exp(x - max) has no buffer
    assert expl.internal[3].nbytes == 16 * 600 * 4
    assert len(expl.reductions) == 2 and "amax over dims [1]" in expl.reductions[0] and "sum over dims [1]" in expl.reductions[1]
    text = format_explanation(expl, "tinyhead fwd")
    assert "fuses 6 common-view ops: add, amax, sub, exp, sum, div" in text
    assert "never reach memory: 5 intermediates, 115,328 B" in text and "generated source (C++)" in text


def test_explain_recompute_and_reads_through_other_kernels():
    fusion2 = xla_kernels()[2]  # it recomputes the bias add `d`
    expl = explain_kernel(fusion2, jax_graph(), 2)
    assert [n.id for n in expl.recomputed] == ["d"]
    # It recomputes d from the matmul result and the broadcast bias instead of reading d.
    assert {m.name for m in expl.reads} == {"b", "c", "g"}
    assert [m.name for m in expl.writes] == ["m"]
    assert "d" not in {m.name for m in expl.writes} and "j" in {m.name for m in expl.internal}
    matmul = explain_kernel(xla_kernels()[0], jax_graph(), 0)
    assert any("contracts a dimension of size 64" in r for r in matmul.reductions)


def test_find_kernel_by_name_and_index():
    kernels = inductor_kernels()
    assert find_kernel(kernels, "cpp_fused__softmax_add_0") == 1
    assert find_kernel(kernels, "0") == 0 and find_kernel(kernels, "k1") == 1 and find_kernel(kernels, 1) == 1
    with pytest.raises(UnknownKernel, match=r"no kernel 'nope'; this run has 2: k0 extern_kernels.mm, k1 cpp_fused"):
        find_kernel(kernels, "nope")
    with pytest.raises(UnknownKernel):
        find_kernel(kernels, "7")


def _args(backend: str, workload: str = "tinyhead", kernel=None, mode: str = "fwd"):
    return SimpleNamespace(workload=workload, backend=backend, mode=mode, kernel=kernel, preset="tiny", device="cpu",
                           dtype=None, timeout=300.0)


def _registered(name: str) -> bool:
    from irlens.backends import BACKENDS

    return name in BACKENDS


def test_explain_main_usage_errors(capsys):
    assert explain_main(_args("no-such-backend")) == 2
    assert "unknown backend 'no-such-backend'" in capsys.readouterr().err
    assert explain_main(_args("eager", workload="no-such-workload")) == 2
    assert "no-such-workload" in capsys.readouterr().err


@pytest.mark.slow
def test_explain_eager_says_it_has_no_kernels(capsys):
    assert explain_main(_args("eager")) == 0
    assert "eager runs op by op" in capsys.readouterr().out
    assert explain_main(_args("eager", kernel="0")) == 2
    assert "eager reported no kernels" in capsys.readouterr().err


@pytest.fixture(scope="module")
def runs():
    """Each registered compiling CPU backend run once on tinyhead fwd (tiny preset)."""
    from irlens.backends import get_backend
    from irlens.workloads.builtin import get_workload

    out = {}
    for name in CPU_BACKENDS[1:]:
        if _registered(name):
            out[name] = run_backend(get_backend(name), get_workload("tinyhead").instantiate("tiny"), "fwd")
    return out


@pytest.mark.parametrize("backend", CPU_BACKENDS[1:])
def test_explain_every_cpu_backend(runs, backend):
    if backend not in runs:
        pytest.skip(f"backend {backend} is not registered in this tree")
    run = runs[backend]
    assert run.kernels, f"{backend} reported no kernels for tinyhead"
    for i in range(len(run.kernels)):
        text = explain_run(run, backend, i, "tinyhead fwd")
        assert f"kernel k{i} {run.kernels[i].name}" in text and "reads " in text and "writes " in text
    listing = explain_run(run, backend, None, "tinyhead fwd")
    assert "pick one with --kernel" in listing and "fuses " in listing
    with pytest.raises(UnknownKernel, match="this run has"):
        explain_run(run, backend, "no-such-kernel", "tinyhead fwd")


def _explain_cli(monkeypatch, runs, backend: str, kernel=None) -> int:
    """explain_main end to end, with the worker's run served from the module's cached one."""
    import irlens.explain.run

    if backend not in runs:
        pytest.skip(f"backend {backend} is not registered in this tree")
    run = runs[backend]
    monkeypatch.setattr(irlens.explain.run, "run_as_compare_does", lambda *a: ExplainedRun(
        run.kernels, run.graphs, run.unmapped, run.run_us, 1))
    return explain_main(_args(backend, kernel=kernel))


@pytest.mark.slow
def test_explain_times_as_compare_does_and_prints_only_its_own_lines():
    """`irlens explain` runs the backend in a worker with compare's thread count (so its kernel
    times are compare's, not this process's pools fighting over the cores), and the profiler
    that times the kernels prints nothing of its own (Kineto's USDT/STAGE lines)."""
    done = subprocess.run([sys.executable, "-m", "irlens.cli", "explain", "tinyhead", "--backend", "inductor"],
                          capture_output=True, text=True, timeout=600, env=worker_env())
    assert done.returncode == 0, done.stderr
    threads = worker_threads(2)
    assert f"(tiny, float32, cpu, {threads} thread" in done.stdout
    step_us = float(re.search(r"^one step: ([\d.]+) µs", done.stdout, re.M).group(1))
    kernel_us = float(re.search(r"cpp_fused__softmax_0 .*\n=+\n.* time ([\d.]+) µs", done.stdout).group(1))
    assert 0 < kernel_us < step_us, done.stdout[:2000]
    assert done.stderr.splitlines() == [
        "irlens explain: running tinyhead (tiny, float32, fwd) through inductor on cpu in a worker, as irlens "
        "compare runs a cell ..."], done.stderr


def test_explain_inductor_tinyhead_fused_softmax(monkeypatch, runs, capsys):
    """The must-show: `irlens explain tinyhead --backend inductor` shows max, sub, exp, sum and div
    in one kernel, and exp(x - max) never reaches memory."""
    assert _explain_cli(monkeypatch, runs, "inductor") == 0
    out = capsys.readouterr().out
    chosen = out.split("the kernel that fuses the most ops", 1)[1]
    fuses = next(line for line in chosen.splitlines() if line.startswith("fuses "))
    ops = fuses.split(": ", 1)[1].split(", ")
    for op in ("amax", "sub", "exp", "sum", "div"):
        assert op in ops, fuses
    internal = chosen.split("never reach memory", 1)[1].split("generated source", 1)[0]
    assert any(" exp (" in line for line in internal.splitlines()), internal
    assert "generated source (C++)" in chosen


@pytest.mark.parametrize("backend", CPU_BACKENDS[1:])
def test_explain_unknown_kernel_exits_2(monkeypatch, runs, capsys, backend):
    assert _explain_cli(monkeypatch, runs, backend, kernel="no-such-kernel") == 2
    err = capsys.readouterr().err
    assert "no kernel 'no-such-kernel'" in err and "k0 " in err


NVFUSER_CODE = """// Codegen generated code
__global__ void nvfuser_pointwise_f0_c1_r0_g0(Tensor<float, 2, 2> T0, Tensor<float, 2, 2> T1) {
  T1[0] = tanhf(T0[0]);
}
__global__ void __launch_bounds__(/*maxThreadsPerBlock=*/128) nvfuser_inner_persistent_f0_c1_r0_g1(Tensor<float, 2, 2> T0) {
  blockReduce(T0);
}
"""


def test_explain_shows_each_nvfuser_segment_its_own_cuda_kernel():
    """nvFuser gives one region's CUDA (every kernel) at once; each profiled segment, named the way
    CUPTI reports it (demangled), gets its own kernel; a segment without a kernel the definition."""
    from irlens.core.ir import Kernel
    from irlens.backends.thunder.nvfuser import Segment, segment_sources

    segments = [Segment(0, "CudaCodeGen::nvfuser_inner_persistent_f0_c1_r0_g1(CudaCodeGen::Tensor<float, 2, 2>)",
                        "inner_persistent", True, 3.0, 32, 32),
                Segment(1, "segment1:expr_eval", "expr_eval", False, None, None, None),
                Segment(2, "CudaCodeGen::nvfuser_pointwise_f0_c1_r0_g0(...)", "pointwise", True, 2.0, 32, 32)]
    persistent, evaluated, pointwise = segment_sources(NVFUSER_CODE, segments, "fd.ops.tanh(T0)")
    assert "nvfuser_inner_persistent_f0_c1_r0_g1" in persistent and "nvfuser_pointwise" not in persistent
    assert pointwise.startswith("__global__ void nvfuser_pointwise_f0_c1_r0_g0(") and "blockReduce" not in pointwise
    assert evaluated == "fd.ops.tanh(T0)"
    assert segment_sources("", segments, "definition") == ["definition"] * 3
    text = format_explanation(explain_kernel(Kernel("nvfuser", "nvFusion0/k", "fused", [], source=pointwise), None))
    assert "generated source (CUDA)" in text


GPU_SOURCE = {"inductor": "Triton", "nvfuser": "CUDA", "xla": "HLO"}


@pytest.mark.gpu
@pytest.mark.parametrize("backend", sorted(GPU_SOURCE))
def test_explain_every_gpu_backend(backend):
    """On the GPU, every kernel of each compiling backend explains, with its generated source."""
    from irlens.backends import get_backend
    from irlens.workloads.builtin import get_workload

    run = run_backend(get_backend(backend), get_workload("tinyhead").instantiate("tiny", device="cuda"), "fwd")
    assert run.kernels, f"{backend} reported no kernels for tinyhead on the GPU"
    for i, k in enumerate(run.kernels):
        text = explain_run(run, backend, i, "tinyhead fwd")
        assert f"kernel k{i} {k.name}" in text and "reads " in text and "writes " in text
    assert any(f"generated source ({GPU_SOURCE[backend]})" in explain_run(run, backend, i, "tinyhead fwd")
               for i in range(len(run.kernels)))
    with pytest.raises(UnknownKernel, match="this run has"):
        explain_run(run, backend, "no-such-kernel", "tinyhead fwd")
