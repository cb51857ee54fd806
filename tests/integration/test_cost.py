"""Bytes and flops from the common view (irlens.core.cost), which `irlens bench` puts beside device times."""
import dataclasses

import pytest

from irlens.core import cost
from irlens.bench.run import BenchConfig, bench, restrict_to_rerun, share_matrix
from irlens.reporting.bench_page import write_results_page
from irlens.bench.sweep import sweep
from irlens.core.ceilings import Ceilings
from irlens.core.cost import Gemm
from irlens.core.ir import Graph, Kernel, Node, TensorMeta
from irlens.runtime.pool import WorkerPool
from irlens.matrix import Row
from irlens.matrix.join import PARTS, RERUN, join, part
from irlens.matrix.records import BenchRecord, StepWork
from irlens.reporting.roofline import roofline
from irlens.runtime.timing import DeviceTiming
from irlens.workloads.workload import Workload


def stub_ceilings(memory_gbps: float, bf16: float = 100.0, fp32: float = 10.0) -> Ceilings:
    return Ceilings("stub", memory_gbps, "copy of 1024 MiB", {"bfloat16": bf16, "float32": fp32},
                    {"bfloat16": "8192x8192x8192", "float32": "8192x8192x8192"})


def T(name, shape, dtype="float32"):
    return TensorMeta(name, tuple(shape), dtype)


def test_matmul_and_elementwise_flops():
    g = Graph("t", "test", "s", "composite", [T("a", (4, 8, 16)), T("b", (16, 32))],
              [Node("mm", "matmul", ["a", "b"], [T("c", (4, 8, 32))]),
               Node("e", "tanh", ["c"], [T("d", (4, 8, 32))]),
               Node("r", "sum", ["d"], [T("s", (4, 8))], {"dims": [2], "keepdim": False})], ["s"])
    assert cost.graph_flops(g) == 2 * 4 * 8 * 32 * 16 + 4 * 8 * 32 + 4 * 8 * 32


def test_causal_attention_counts_the_unmasked_half():
    q = T("q", (2, 4, 128, 64))
    full = Node("n", "sdpa", ["q", "q", "q", None], [T("o", (2, 4, 128, 64))], {"is_causal": False})
    causal = Node("n", "sdpa", ["q", "q", "q", None], [T("o", (2, 4, 128, 64))], {"is_causal": True})
    f_full = cost.graph_flops(Graph("t", "t", "s", "composite", [q], [full], ["o"]))
    f_causal = cost.graph_flops(Graph("t", "t", "s", "composite", [q], [causal], ["o"]))
    matmuls = 2 * (2 * 2 * 4 * 128 * 128 * 64)  # QKᵀ and PV
    mask = 128 * 128 + 2 * 4 * 128 * 128  # causal only: the row >= col test and the where over the scores
    assert f_full - f_causal == matmuls / 2 - mask


def test_kernel_flops_count_what_it_computes_and_recomputes():
    # x -> exp -> sum -> div(exp, sum); a second kernel recomputes the exp beside its own tanh
    g = Graph("t", "test", "s", "primitive", [T("x", (4, 8))], [
        Node("e", "exp", ["x"], [T("ex", (4, 8))]),
        Node("s", "sum", ["ex"], [T("z", (4, 1))], {"dims": [1], "keepdim": True}),
        Node("d", "div", ["ex", "z"], [T("y", (4, 8))]),
        Node("t", "tanh", ["ex"], [T("w", (4, 8))])], ["y", "w"])
    assert cost.kernel_flops(Kernel("b", "k0", "fused", ["e", "s", "d"]), g) == 32 + 32 + 32
    assert cost.kernel_flops(Kernel("b", "k1", "fused", ["t"], recompute=["e"]), g) == 32 + 32
    assert cost.kernel_flops(Kernel("b", "copy", "copy", []), g) == 0


def test_gemm_shapes_come_from_the_common_view():
    # a linear layer, and attention's two products per (batch, head)
    g = Graph("t", "test", "s", "composite", [T("x", (2, 16, 64)), T("w", (192, 64)), T("q", (2, 4, 16, 8))], [
        Node("l", "linear", ["x", "w", None], [T("y", (2, 16, 192))]),
        Node("a", "sdpa", ["q", "q", "q", None], [T("o", (2, 4, 16, 8))], {"is_causal": False})], ["y", "o"])
    assert cost.gemm_shapes(g) == [Gemm(1, 32, 192, 64), Gemm(8, 16, 16, 8), Gemm(8, 16, 8, 16)]
    # the sweep times the square sizes and then the workload's own shapes, largest first
    swept = sweep([Gemm(1, 16384, 3072, 1024), Gemm(1, 64, 64, 64)], squares=(8192,))
    assert swept == [Gemm(1, 8192, 8192, 8192), Gemm(1, 16384, 3072, 1024), Gemm(1, 64, 64, 64)]


def _stub_ceilings(monkeypatch, ceilings: Ceilings) -> None:
    """`irlens bench` on the CPU: the ceilings need a GPU, so their worker call returns these."""
    real_call = WorkerPool.call
    monkeypatch.setattr(WorkerPool, "call", lambda self, fn, *args, **kwargs: {
        "ceilings": ceilings.to_json(), "source": ceilings.source}
        if fn == "irlens.bench.ceilings_cache:measure_in_worker" else real_call(self, fn, *args, **kwargs))


@pytest.mark.slow
def test_bench_counts_the_work_in_a_worker_and_its_process_does_none(monkeypatch):
    # every instantiation of a workload (work counts, references, cells) must happen in a worker, none here
    here = []
    real_instantiate = Workload.instantiate
    monkeypatch.setattr(Workload, "instantiate", lambda wl, *a, **kw: here.append(wl.name) or real_instantiate(wl, *a, **kw))
    ceilings = stub_ceilings(1000.0)
    _stub_ceilings(monkeypatch, ceilings)
    doc = bench(["tinyhead"], ["eager"], ["fwd"], ["float32", "bfloat16"], device="cpu", preset="tiny").to_json()
    assert here == []
    assert doc["ceilings"] == ceilings.to_json()
    assert [(r["dtype"], r["status"]) for r in doc["rows"]] == [("float32", "ok"), ("bfloat16", "ok")]
    flops = doc["rows"][0]["bench"]["must"]["flops"]
    # Linear(64, 600) on 16 tokens: 2·16·64·600 flops, exact, plus the bias add and the softmax (estimated), in
    # every dtype
    assert 2 * 16 * 64 * 600 < flops < 2 * 16 * 64 * 600 + 20 * 16 * 600
    # x, weight, bias read once; probabilities written once
    elements = 16 * 64 + 600 * 64 + 600 + 16 * 600
    exact = 2 * 16 * 64 * 600
    assert [r["bench"]["must"] for r in doc["rows"]] == [{"bytes": 4 * elements, "flops": flops, "matmul_flops": exact},
                                                {"bytes": 2 * elements, "flops": flops, "matmul_flops": exact}]


def test_roofline_picks_the_binding_ceiling():
    c = stub_ceilings(4000.0, bf16=800.0, fp32=50.0)
    row = Row("w", "fwd", "b", status="ok", dtype="bfloat16",
              bench=BenchRecord(device_timing=DeviceTiming(1000.0, 1000.0)))
    mem = roofline(row, StepWork(bytes=2_000_000_000, flops=1_000_000_000), c)  # 0.5 ms of copying vs 1.25 µs of math
    assert mem.bound == "memory" and mem.pct_of_ceiling == pytest.approx(50.0) and not mem.model_error
    comp = roofline(dataclasses.replace(row, dtype="float32"), StepWork(10**6, 4 * 10**10), c)  # 0.8 ms at 50 TFLOP/s
    assert comp.bound == "compute" and comp.pct_of_ceiling == pytest.approx(80.0)
    # faster than the ceiling allows: a model error, said so, never a speed
    fast = roofline(dataclasses.replace(row, dtype="float32"), StepWork(10**6, 6 * 10**10), c)
    assert fast.pct_of_ceiling == pytest.approx(120.0) and fast.model_error.startswith("model error: 120 %")
    assert roofline(dataclasses.replace(row, status="mismatch"), StepWork(1, 1), c) is None
    assert roofline(row, None, c) is None  # the work could not be counted


@pytest.mark.slow
def test_bench_over_two_gpus_keeps_each_gpus_ceilings(monkeypatch, tmp_path):
    # `irlens bench --gpus 0,1,2,3`: each GPU's share runs with its own measured ceilings; the merged
    # document and page keep every row with its GPU's ceilings
    every = [(d, m) for d in ("bfloat16", "float32") for m in ("fwd", "fwdbwd")]
    assert share_matrix(every, ["0", "1", "2", "3"]) == {
        "0": (["bfloat16"], ["fwd"]), "1": (["bfloat16"], ["fwdbwd"]), "2": (["float32"], ["fwd"]),
        "3": (["float32"], ["fwdbwd"])}
    assert share_matrix(every, ["0", "1", "2"]) == {
        "0": (["bfloat16"], ["fwd", "fwdbwd"]), "1": (["float32"], ["fwd", "fwdbwd"])}
    assert share_matrix([("bfloat16", "fwd"), ("float32", "fwd")], ["3"]) == {"3": (["bfloat16", "float32"], ["fwd"])}
    parts = []
    for gpu, dtype, copy in (("0", "bfloat16", 1000.0), ("1", "float32", 2000.0)):
        _stub_ceilings(monkeypatch, stub_ceilings(copy))
        parts.append(part(bench(["gelu"], ["eager"], ["fwd"], [dtype], device="cpu", preset="tiny"), gpu))
    doc = join(parts, PARTS)
    assert [(r.bench.gpu, r.dtype, r.bench.ceilings.memory_gbps) for r in doc.rows] == \
        [("0", "bfloat16", 1000.0), ("1", "float32", 2000.0)]
    assert [(p.gpu, p.dtypes, p.modes) for p in doc.parts] == [("0", ["bfloat16"], ["fwd"]),
                                                                        ("1", ["float32"], ["fwd"])]
    assert doc.wall_s == max(p.wall_s for p in doc.parts)  # the GPUs ran at once
    doc.wall_s, doc.device_name = 1.0, "stub"
    page = write_results_page(doc, tmp_path / "r.md", "r.json", "irlens bench --gpus 0,1")[0].read_text()
    assert "on GPU 0 (its rows: bfloat16, fwd): memory **1000 GB/s**" in page
    assert "on GPU 1 (its rows: float32, fwd): memory **2000 GB/s**" in page


@pytest.mark.slow
def test_bench_rerun_runs_only_the_rows_not_ok_and_replaces_them(monkeypatch, tmp_path):
    # `irlens bench --rerun h200.json`: the rows that failed or did not run, and only those, run
    # again; the document keeps every other row with its first run's GPU and ceilings
    _stub_ceilings(monkeypatch, stub_ceilings(1000.0))
    first = part(bench(["gelu", "tinyhead"], ["eager", "inductor"], ["fwd"], ["float32"], device="cpu", preset="tiny"),
                 "0")
    assert [r.status for r in first.rows] == ["ok"] * 4
    lost = next(i for i, r in enumerate(first.rows) if (r.workload, r.backend) == ("gelu", "inductor"))
    first.rows[lost] = dataclasses.replace(first.rows[lost], status="unavailable", reason="not run: budget")
    args = BenchConfig(dtypes=None, workloads=None, modes=["fwd", "fwdbwd"], backends=None)
    assert restrict_to_rerun(args, first)
    assert args.only == {"float32": frozenset({("gelu", "fwd", "inductor")})}
    assert (args.dtypes, args.workloads, args.modes, args.backends) == (["float32"], ["gelu"], ["fwd"], ["inductor"])

    _stub_ceilings(monkeypatch, stub_ceilings(3000.0))
    rerun = part(bench(args.workloads, args.backends, args.modes, args.dtypes, device="cpu", preset="tiny",
                       only=args.only), "3")
    assert [(r.workload, r.backend, r.status) for r in rerun.rows] == [("gelu", "inductor", "ok")]
    first.commands, rerun.commands = ["irlens bench --gpus 0"], ["irlens bench --rerun r.json"]
    doc = join([first, rerun], RERUN)
    assert [(r.workload, r.backend, r.status, r.bench.gpu, r.bench.ceilings.memory_gbps) for r in doc.rows] == [
        ("gelu", "eager", "ok", "0", 1000.0), ("gelu", "inductor", "ok", "3", 3000.0),
        ("tinyhead", "eager", "ok", "0", 1000.0), ("tinyhead", "inductor", "ok", "0", 1000.0)]
    assert (doc.reruns, doc.wall_s) == (1, first.wall_s + rerun.wall_s)  # the runs one after the other
    assert not restrict_to_rerun(BenchConfig(dtypes=None, workloads=None, modes=["fwd"], backends=None), doc)

    doc.device_name = "stub"
    page = write_results_page(doc, tmp_path / "r.md", "r.json", doc.commands[-1])[0].read_text()
    assert "Produced by `irlens bench --gpus 0`, then\n`irlens bench --rerun r.json`" in page
    assert "a rerun on GPU 3 (its rows: float32, fwd): memory **3000 GB/s**" in page
    assert "the first run on GPU 0 (its rows: float32, fwd): memory **1000 GB/s**" in page
