"""Exact and estimated flops (irlens.core.cost, irlens.reporting.ceiling): a matrix product's
2·m·n·k is exact; an elementwise op's one flop per element is an estimate, shown as one, that
never makes a kernel or a bench row compute-bound nor raises a matmul ceiling."""
import pytest

from irlens.core import cost
from irlens.core.ceilings import Ceilings
from irlens.core.ir import Graph, Kernel, Node, TensorMeta
from irlens.matrix import Row
from irlens.matrix.records import BenchRecord, KernelRecord, StepWork
from irlens.reporting.bench_page import format_bench_table
from irlens.reporting.ceiling import ceiling_for, flops_estimated, judge
from irlens.reporting.roofline import kernel_rates, roofline
from irlens.runtime.timing import DeviceTiming

M, N, K = 64, 128, 256


def _graph() -> Graph:
    t = lambda name, shape: TensorMeta(name, shape, "float32")  # noqa: E731
    return Graph("t", "test", "s", "primitive", [t("a", (M, K)), t("b", (K, N))], [
        Node("mm", "matmul", ["a", "b"], [t("c", (M, N))]),
        Node("m", "mul", ["c", "c"], [t("d", (M, N))]),
        Node("e", "tanh", ["d"], [t("f", (M, N))])], ["f"])


def _counted(name: str, kind: str, nodes: list[str], time_us: float, nbytes: int) -> KernelRecord:
    k = KernelRecord("b", name, kind, nodes, "s", time_us=time_us, bytes=nbytes)
    k.flops, k.matmul_flops = (cost.kernel_flops(k, _graph(), exact) for exact in (False, True))
    return k


def _ceilings() -> Ceilings:
    # 1 TB/s and 1 TFLOP/s in both dtypes: 1 byte costs as long as 1 flop
    return Ceilings("stub", 1000.0, "copy", {"bfloat16": 1.0, "float32": 1.0},
                    {"bfloat16": "8192x8192x8192", "float32": "8192x8192x8192"})


def test_a_matmul_kernels_flops_are_exact_and_make_it_compute_bound():
    gemm = _counted("gemm", "matmul", ["mm"], time_us=100.0, nbytes=4 * (M * K + K * N + M * N))
    assert gemm.flops == gemm.matmul_flops == 2 * M * N * K
    assert not flops_estimated(gemm.flops, gemm.matmul_flops)
    verdict = judge(gemm, ceiling_for(_ceilings()), "float32")
    assert verdict.bound == "compute"
    assert verdict.pct == pytest.approx(100.0 * (2 * M * N * K / 1e12) / 100e-6)


def test_a_fused_elementwise_kernels_flops_are_estimated_and_never_compute_bound():
    # two flops per element over 64x128 in a kernel that moves 4 bytes per element: by its
    # estimated flops it would be compute-bound; by its exact ones (none) it is memory-bound
    fused = _counted("fused", "fused", ["m", "e"], time_us=1.0, nbytes=4 * M * N)
    assert fused.flops == 2 * M * N and fused.matmul_flops == 0
    assert flops_estimated(fused.flops, fused.matmul_flops)
    many = KernelRecord("b", "fused", "fused", ["m", "e"], "s", time_us=1.0, bytes=8, flops=10**9, matmul_flops=0)
    verdict = judge(many, ceiling_for(_ceilings()), "float32")
    assert verdict.bound == "memory" and not verdict.model_error  # 10⁹ estimated flops in 1 µs: no speed judged on them
    # nor do they raise the matmul ceiling: only its bytes are a rate
    row = Row("w", "fwd", "b", status="ok", dtype="float32", kernels=[many])
    assert [s.what for s in kernel_rates(row, _ceilings())] == ["memory"]
    # a document written before the two were counted apart: all its flops count, as then, and read as estimates
    old = Kernel("b", "old", "matmul", [], time_us=1.0, bytes=0, flops=10**6)
    assert judge(old, ceiling_for(_ceilings()), "float32").bound == "compute"
    assert flops_estimated(old.flops, old.matmul_flops)


def test_a_rows_estimated_flops_cannot_make_it_compute_bound_and_the_table_says_est():
    row = Row("w", "fwd", "b", status="ok", dtype="float32",
              bench=BenchRecord(device_timing=DeviceTiming(1000.0, 1000.0)))
    c = _ceilings()
    # 10⁶ bytes (1 µs at 1 TB/s) and 5·10⁸ flops (500 µs at 1 TFLOP/s), of which the matmul part is ...
    elementwise = roofline(row, StepWork(10**6, 5 * 10**8, matmul_flops=0), c)  # ... none
    assert elementwise.bound == "memory" and elementwise.pct_of_ceiling == pytest.approx(0.1)
    assert elementwise.tflops == pytest.approx(0.5) and elementwise.matmul_tflops == 0
    exact = roofline(row, StepWork(10**6, 5 * 10**8, matmul_flops=4 * 10**8), c)  # ... most
    assert exact.bound == "compute" and exact.pct_of_ceiling == pytest.approx(40.0)
    assert exact.matmul_tflops == pytest.approx(0.4)
    all_matmul = roofline(row, StepWork(10**6, 5 * 10**8, matmul_flops=5 * 10**8), c)
    rows = []
    for rf, backend in ((elementwise, "elementwise"), (exact, "mixed"), (all_matmul, "gemm")):
        rows.append(Row("w", "fwd", backend, status="ok", dtype="float32",
                        bench=BenchRecord(device_timing=DeviceTiming(1000.0, 1000.0), roofline=rf)))
    cells = {line.split(" | ")[3]: line.split(" | ")[8] for line in format_bench_table(rows).splitlines()[2:]}
    assert cells == {"elementwise": "0.0 + 0.5 est.", "mixed": "0.4 + 0.1 est.", "gemm": "0.5"}
