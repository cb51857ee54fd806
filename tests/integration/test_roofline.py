"""Roofline figures that are physically possible: each kernel's bytes from its own buffers,
read from the generated code and checked here against an independent reading of it; kernels
timed launch by launch; figures above 100 % of ceiling flagged in every output; one
definition of a kernel launch for every row."""
from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch

from irlens.backends.inductor.backend import InductorCapture
from pathlib import Path

from irlens.bench.run import annotate_kernels
from irlens.reporting.bench_page import format_bench_table, write_results_page
from irlens.core.ceilings import Ceilings, describe
from irlens.core.ir import Graph, Kernel
from irlens.backends.inductor.code import map_kernels, read_launches
from irlens.matrix import Document, Row, read_document
from irlens.matrix.backend_run import run_backend
from irlens.matrix.records import BenchRecord, KernelRecord, RowRoofline, bench_with
from irlens.matrix.schema import full_ceilings
from irlens.workloads.builtin import resolve_workload
from irlens.reporting.build import build_report
from irlens.reporting.ceiling import backend_pct, ceiling_for, judge
from irlens.reporting.markdown import render_markdown
from irlens.reporting.roofline import judge_kernels, recompute
from irlens.runtime.timing import DeviceTiming
from irlens.workloads.workload import run_eager

ITEMSIZE = {"float32": 4, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4, "bool": 1, "float64": 8}


def compiled_graphs(workload: str, mode: str, dtype: str = "float32"):
    torch._dynamo.reset()
    inst = resolve_workload(workload).instantiate("tiny", dtype, "cpu")
    capture = InductorCapture(workload)
    run_eager(torch.compile(inst.module, backend=capture, dynamic=False), inst, mode)
    torch._dynamo.reset()
    return capture.compiled


# --- an independent reading of Inductor's CPU wrapper, with regular expressions --------------

def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text))


def _split_args(text: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "(["
        depth -= ch in ")]"
        if ch == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return [a for a in args if a]


def expected_launch_bytes(code: str) -> list[tuple[str, int, int] | None]:
    """(callee, bytes read, bytes written) for every cpp_fused kernel and extern GEMM call: each
    distinct argument once, its size from the buffer's declaration or `get_args()`'s inputs
    (None for a call that passes a library call's result, which these lines do not size)."""
    sizes: dict[str, tuple[int, str]] = {}  # buffer -> (elements, dtype)
    for name, shape, stride, dtype in re.findall(
            r"(\w+) = (?:empty_strided_cpu|rand_strided)\(\(([\d, ]*)\), \(([\d, ]*)\),[^)]*?torch\.(\w+)\)", code):
        sizes[name] = (math.prod(s for s, st in zip(_ints(shape), _ints(stride)) if st), dtype)
    storage: dict[str, str] = {}
    for new, old in re.findall(r"(\w+) = (\w+); del \w+  # reuse", code):
        storage[new] = storage.get(old, old)
    for new, old in re.findall(r"(\w+) = reinterpret_tensor\((\w+),[^;]*; del \w+  # reuse", code):
        storage[new] = storage.get(old, old)
    params: dict[str, list[str]] = {}  # kernel -> access per argument
    for name, types, signature in re.findall(
            r"^(\w+) = async_compile\.cpp_pybinding\(\[([^\]]*)\], r'''.*?extern \"C\"\s+void\s+kernel\(([^)]*)\)",
            code, re.M | re.S):
        kinds = re.findall(r"'([^']*)'", types)
        names = [p.split()[-1].lstrip("*") for p in signature.split(",")]
        params[name] = ["rw" if n.startswith("in_out_ptr") else "r" if t.startswith("const") else "w"
                        for n, t in zip(names, kinds)]

    def size(arg: str) -> tuple[str, int]:
        view = re.match(r"reinterpret_tensor\((\w+), \(([\d, ]*)\), \(([\d, ]*)\), (\d+)\)", arg)
        base = view.group(1) if view else arg
        base = storage.get(base, base)
        if base not in sizes:
            raise LookupError(base)
        elements, dtype = sizes[base]
        if view:
            elements = math.prod(s for s, st in zip(_ints(view.group(2)), _ints(view.group(3))) if st)
        return arg, elements * ITEMSIZE[dtype]

    found = []
    for line in code[code.index("def call("):].splitlines():
        call = re.match(r"\s*(cpp_fused_\w+|extern_kernels\.\w+)\((.*)\)\s*$", line)
        if call is None:
            continue
        callee, args = call.group(1), _split_args(call.group(2))
        try:
            found.append((callee, *_read_written(callee, args, params, size)))
        except LookupError:
            found.append(None)
    return found


def _read_written(callee, args, params, size) -> tuple[int, int]:
    reads, writes = {}, {}
    if callee.startswith("extern_kernels."):
        for a in args:
            key, value = a.split("=", 1) if re.match(r"^\w+=", a) else (None, a)
            if key in ("alpha", "beta"):
                continue
            (writes if key == "out" else reads).update([size(value.strip())])
    else:
        for a, access in zip(args, params[callee]):
            if "r" in access:
                reads.update([size(a)])
            if "w" in access:
                writes.update([size(a)])
    return sum(reads.values()), sum(writes.values())


@pytest.mark.parametrize("workload,mode,dtype", [pytest.param("block", "fwdbwd", "float32", marks=pytest.mark.slow),
                                                    ("tinyhead", "fwdbwd", "bfloat16")])
def test_inductor_kernel_bytes_are_its_argument_buffers(workload, mode, dtype):
    """The bytes irlens charges each C++ kernel and extern GEMM are the sizes of the buffers the
    call passes, each once: read where the kernel's signature takes a const pointer, written
    where it takes an out pointer, both for an in/out pointer."""
    checked = 0
    for compiled in compiled_graphs(workload, mode, dtype):
        expected = expected_launch_bytes(compiled.source_code)
        charged = [(k.name, k.bytes_read, k.bytes_written) for k in map_kernels(compiled)
                   if k.name.startswith(("cpp_fused", "extern_kernels."))]
        assert len(charged) == len(expected)
        for mine, theirs in zip(charged, expected):
            assert theirs is None or mine == theirs, compiled.graph.stage
        assert all(k.bytes == k.bytes_read + k.bytes_written for k in map_kernels(compiled))
        checked += sum(e is not None for e in expected)
    assert checked >= 6


def test_inductor_fallback_results_are_sized_by_the_node_they_were_made_for():
    """`buf0 = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, ...)`:
    q, k and v read; the attention output and its logsumexp written."""
    (forward, backward) = compiled_graphs("attention", "fwdbwd")
    sdpa = next(k for k in map_kernels(forward) if "flash_attention" in k.name)
    q = next(t for t in forward.graph.inputs if t.name == "primals_1")
    lse = q.numel // q.shape[-1] * 4  # float32 [B, H, S]
    assert (sdpa.bytes_read, sdpa.bytes_written) == (3 * q.nbytes, q.nbytes + lse)
    grads = next(k for k in map_kernels(backward) if k.name.endswith("backward.default"))
    assert grads.bytes_written == 3 * q.nbytes  # dq, dk, dv


TRITON_MODULE = '''
triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', """
import triton
@triton_heuristics.pointwise(
    size_hints={'x': 1024}, filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*bf16', 'in_ptr0': '*fp32', 'out_ptr0': '*bf16', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'constants': {}},
    inductor_meta={'kernel_name': 'triton_poi_fused_add_0', 'mutated_arg_names': ['in_out_ptr0']},
)
@triton.jit
def triton_poi_fused_add_0(in_out_ptr0, in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    pass
""", device_str='cuda')

class Runner:
    def call(self, args):
        arg0_1, arg1_1 = args
        args.clear()
        with torch.cuda._DeviceGuard(0):
            buf0 = empty_strided_cuda((32, 32), (32, 1), torch.bfloat16)
            extern_kernels.mm(arg0_1, reinterpret_tensor(arg0_1, (32, 32), (1, 32), 0), out=buf0)
            buf1 = empty_strided_cuda((16, 32), (32, 1), torch.bfloat16)
            buf2 = reinterpret_tensor(buf0, (32, 32), (32, 1), 0); del buf0  # reuse
            # [Provenance debug handles] triton_poi_fused_add_0:2
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_0.run(buf2, reinterpret_tensor(arg1_1, (32, 16), (0, 1), 0), buf1, 1024, stream=stream0)
            buf1.zero_()
        return (buf2, buf1, )
'''


def test_triton_launch_bytes_follow_the_kernel_signature_and_mutated_args():
    """A Triton launch (the form Inductor writes on CUDA): arguments by position against
    `triton_meta["signature"]`, an in/out pointer read and written, a broadcast view (stride 0)
    counted at its distinct elements, sizes passed along (xnumel, the stream) ignored."""
    from irlens.core.ir import TensorMeta

    graph = Graph("t", "dynamo", "s", "composite",
                  [TensorMeta("arg0_1", (32, 32), "bfloat16"), TensorMeta("arg1_1", (16,), "float32")], [], [])
    mm, add, zero = read_launches(TRITON_MODULE, graph)
    assert (mm.callee, mm.bytes_read, mm.bytes_written) == ("extern_kernels.mm", 2048, 2048)  # arg0_1 whole, once
    assert (add.callee, add.bytes_read, add.bytes_written) == ("triton_poi_fused_add_0", 2048 + 64, 2048 + 1024)
    assert (zero.callee, zero.bytes_read, zero.bytes_written) == ("aten.zero_", 0, 1024)


# --- XLA: a fusion reads its operands and writes its results ---------------------------------

_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%(\S+) = (\(.*?\)|\w+\[[\d,]*\]\S*) (\S+?)\((.*?)\)", re.M)


def _hlo_bytes(shape: str) -> int:
    return sum(math.prod(_ints(dims)) * {"f32": 4, "bf16": 2, "s32": 4, "pred": 1, "s64": 8, "f16": 2, "u8": 1,
                                         "s8": 1}[ty] for ty, dims in re.findall(r"(\w+)\[([\d,]*)\]", shape))


def test_xla_fusion_bytes_are_its_operands_and_results():
    """Read from the optimized HLO's text: a fusion (or any launching ENTRY instruction) reads
    each operand once and writes its result; where its computation slices an operand (q, k, v
    out of one qkv product), it reads less than the whole operand."""
    from irlens.backends.xla.backend import XlaBackend

    inst = resolve_workload("block").instantiate("tiny", "float32", "cpu")
    run = run_backend(XlaBackend(), inst, "fwd")
    text = "\n".join(k.source for k in run.kernels)
    shapes = {name: _hlo_bytes(shape) for name, shape, _, _ in _HLO_INSTRUCTION.findall(text)}
    shapes.update({name: _hlo_bytes(shape) for name, shape in
                   re.findall(r"%(\S+) = (\w+\[[\d,]*\])\S* parameter", text)})
    exact = sliced = 0
    for k in run.kernels:
        head = k.source.splitlines()[0]
        name, shape, opcode, operands = _HLO_INSTRUCTION.match(head).groups()
        names = list(dict.fromkeys(re.findall(r"%([\w.\-]+)", operands)))
        if not all(n in shapes or n.startswith(("params", "inputs", "constant")) for n in names):
            continue
        full = sum(_known_operand(n, shapes, run) for n in names)
        assert k.bytes_written == _hlo_bytes(shape), head
        if " slice(" in k.source:
            assert k.bytes_read < full, head
            sliced += 1
        else:
            assert k.bytes_read == full, head
            exact += 1
    assert exact >= 10 and sliced >= 2


def _known_operand(name: str, shapes: dict[str, int], run) -> int:
    if name in shapes:
        return shapes[name]
    graph = next(g for g in run.graphs if g.stage == "jax.hlo")
    meta = next((t for t in graph.inputs if t.name == name), None)
    return meta.nbytes if meta is not None else 4  # a scalar constant


# --- device times per launch, and flags above 100 % --------------------------------------------

def test_each_record_gets_its_own_launch_time():
    """One Triton kernel launched for two layers is two records and two launches: each record
    gets its own launch's time, not their sum; XLA's `fusion.3` is the device's `fusion_3`."""
    def launched(*launches) -> DeviceTiming:
        return DeviceTiming(100.0, 100.0, launch_us=list(launches))

    row = Row("w", "fwd", "inductor", status="ok", dtype="bfloat16", kernels=[
        KernelRecord("inductor", "triton_a", "fused", []), KernelRecord("inductor", "triton_b", "fused", []),
        KernelRecord("inductor", "triton_a", "fused", []),
        KernelRecord("inductor", "extern_kernels.mm", "matmul", [], time_us=7.0)],
              bench=BenchRecord(device_timing=launched(("triton_a", 10.0), ("triton_b", 5.0), ("nvjet_gemm", 100.0),
                                                       ("triton_a", 30.0))))
    annotate_kernels(row)
    assert [k.time_us for k in row.kernels] == [10.0, 5.0, 30.0, 7.0]
    xla = Row("w", "fwd", "xla", status="ok", dtype="float32", kernels=[KernelRecord("xla", "fusion.3", "fused", [])],
              bench=BenchRecord(device_timing=launched(("fusion_3", 4.0))))
    annotate_kernels(xla)
    assert xla.kernels[0].time_us == 4.0


def test_a_steps_launches_keep_their_order_and_own_times():
    from irlens.runtime.timing import launch_medians

    steps = [[("a", 1.0), ("b", 5.0), ("a", 3.0)], [("a", 2.0), ("b", 6.0), ("a", 4.0)],
             [("warm", 9.0), ("a", 1.0)], [("a", 3.0), ("b", 7.0), ("a", 5.0)]]
    assert launch_medians(steps) == [("a", 2.0), ("b", 6.0), ("a", 4.0)]  # the odd step left out


def _ceilings(memory_gbps: float, tflops: float, l2_bytes: int | None = None) -> Ceilings:
    return Ceilings("stub", memory_gbps, "stub", {"bfloat16": tflops, "float32": tflops}, l2_bytes=l2_bytes)


def test_a_figure_above_the_ceiling_is_a_model_error_unless_the_l2_explains_it():
    """A kernel faster than DRAM allows for its bytes, but not for those beyond the L2's size,
    read part of them from the L2 (a cold L2 starts each step, not each kernel): its figure
    counts the bytes beyond the L2, says so, and is no model error. Faster even so, it is one."""
    l2 = 50 << 20
    ceiling = ceiling_for(_ceilings(1000.0, 100.0, l2_bytes=l2))
    ok = Kernel("b", "k", "fused", [], time_us=10.0, bytes=5_000_000, flops=0)  # 5 MB in 10 µs: 500 GB/s
    fast = Kernel("b", "k", "fused", [], time_us=1.0, bytes=5_000_000, flops=0)  # 5 TB/s: all from L2
    partly = Kernel("b", "k", "fused", [], time_us=100.0, bytes=l2 + 60_000_000, flops=0)  # 60 MB through DRAM
    huge = Kernel("b", "k", "fused", [], time_us=1.0, bytes=500_000_000, flops=0)  # 500 MB in 1 µs
    gemm = Kernel("b", "k", "matmul", [], time_us=1.0, bytes=0, flops=200_000_000)  # 200 TFLOP/s
    assert judge(ok, ceiling, "float32").pct == pytest.approx(50.0) and not judge(ok, ceiling, "float32").model_error
    for kernel, pct in ((fast, 0.0), (partly, 60.0)):
        verdict = judge(kernel, ceiling, "float32")
        assert verdict.pct == pytest.approx(pct) and not verdict.model_error
        assert "the 50 MiB L2 served part" in verdict.via_l2
    assert "bytes are over-counted" in judge(huge, ceiling, "float32").model_error
    assert "flops are over-counted" in judge(gemm, ceiling, "float32").model_error
    figure = backend_pct([ok, fast, partly, huge, gemm], ceiling, "float32")
    # the possible ones are charted: (5 + 0 + 60) µs of ideal time over 111 µs
    assert figure.pct == pytest.approx(100 * 65 / 111) and figure.flagged == 2
    # the older documents' ceilings (one copy, 8192³ products) still read, in the current form (irlens.matrix.schema)
    old = Ceilings.from_json(full_ceilings({"copy_gbps": 1000.0, "bf16_tflops": 100.0, "fp32_tflops": 10.0,
                                            "device": "NVIDIA H200"}))
    assert old.spec is not None and old.vendor("memory") == 4800.0
    old = ceiling_for(old)
    assert old.bandwidth == 1e12 and old.peak("bfloat16") == 1e14 and old.peak("float32") == 1e13


def test_kernels_above_the_ceiling_are_flagged_in_every_output(tmp_path):
    """A real CPU Inductor row, judged against ceilings low enough that its kernels exceed
    them (and high enough that they do not): flagged in the row's JSON, the bench table, the
    report's kernel table, and left out of its charts; none flagged where none exceed."""
    from irlens.backends import get_backend
    from tests.support.cell_runs import run_in_process
    from irlens.matrix.references import compute_reference

    wl = resolve_workload("tinyhead")
    ref = compute_reference(wl, "fwd", "cpu", "tiny", "float32")
    row = run_in_process(wl, get_backend("inductor"), "fwd", "cpu", "tiny", "float32", ref)
    assert row.status == "ok" and all(k.bytes for k in row.kernels)
    row.dtype = "float32"
    for memory_gbps, flagged in ((1e-6, len(row.kernels)), (1e9, 0)):
        judged = dataclasses.replace(row, kernels=[dataclasses.replace(k) for k in row.kernels],
                                     bench=BenchRecord(roofline=RowRoofline(1.0, 1.0, pct_of_ceiling=50.0,
                                                                            bound="memory")))
        ceilings = _ceilings(memory_gbps, 1e9)
        annotate_kernels(judged)
        judge_kernels(judged, ceilings)
        assert sum(bool(k.model_error) for k in judged.kernels) == flagged
        assert judged.bench.roofline.kernels_flagged == flagged
        table = format_bench_table([judged])
        assert (f"| **{flagged} ✗** |" in table) == bool(flagged)
        with_ceilings = dataclasses.replace(judged, bench=bench_with(judged.bench, ceilings=ceilings))
        doc = Document("compare", [with_ceilings], "cpu", preset="tiny")
        md = render_markdown(build_report(doc), tmp_path / f"figures{flagged}")
        assert ("model error:" in md) == bool(flagged)  # the reasons under the kernel table
        assert ("kernels above 100 % left out" in md) == bool(flagged)


# --- the ceilings raised to what the run's kernels did ---------------------------------------

# An H100 bench (bf16): its sweep measured 753 TFLOP/s, while CUPTI timed cuBLAS's products in
# the workloads at up to 861, all below the vendor's 989; 23 kernels were flagged as written
H100_BENCH = Path(__file__).parents[1] / "data" / "h100-single1.json.gz"


def _rates(doc: Document) -> list[tuple[float, float, str]]:
    """(TFLOP/s, GB/s, name) of every timed kernel of the document's ok rows; GB/s of the bytes
    beyond the L2's size (those that must have crossed DRAM)."""
    l2 = doc.ceilings.l2_bytes
    return [((k.flops or 0) / k.time_us / 1e6, max((k.bytes or 0) - l2, 0) / k.time_us / 1e3,
             k.name) for r in doc.rows if r.status == "ok" for k in r.kernels if k.time_us]


def test_the_ceilings_are_the_best_the_device_was_seen_doing():
    stored = read_document(H100_BENCH)
    sweep = stored.ceilings
    assert sum(bool(k.model_error) for r in stored.rows for k in r.kernels) > 0  # as the run wrote it
    doc = recompute(stored)
    c = doc.ceilings
    spec = sweep.spec.tflops["bfloat16"]
    fastest = max((t, name) for t, _, name in _rates(doc) if t <= spec)
    assert fastest[0] > sweep.matmul_tflops["bfloat16"]  # the sweep was below what the kernels did
    assert c.matmul_tflops["bfloat16"] == pytest.approx(fastest[0])
    assert c.raised["bfloat16"].sweep == sweep.matmul_tflops["bfloat16"]
    assert c.raised["bfloat16"].by.startswith(fastest[1] + " in ")
    assert c.memory_gbps == max(sweep.memory_gbps, *(g for _, g, _ in _rates(doc) if g <= sweep.spec.memory_gbps))
    line = describe(c)
    assert f"raised from the sweep's {sweep.matmul_tflops['bfloat16']:.0f} by {c.raised['bfloat16'].by}" in line
    # every kernel and row within 100 % of the raised ceilings, none flagged; the same figures again
    pcts = [k.pct_of_ceiling for r in doc.rows for k in r.kernels if k.pct_of_ceiling is not None]
    assert pcts and max(pcts) == pytest.approx(100.0) and max(pcts) <= 100.0 + 1e-6
    assert not any(k.model_error for r in doc.rows for k in r.kernels)
    rows = [r.bench.roofline for r in doc.rows if r.bench and r.bench.roofline]
    assert rows and all(rf.pct_of_ceiling <= 100.0 and rf.kernels_flagged == 0 for rf in rows)
    assert Document.from_json(recompute(doc).to_json()).to_json() == doc.to_json()


def test_a_kernel_above_the_vendors_peak_is_still_a_model_error():
    """A kernel faster than the datasheet raises nothing: its flops are over-counted. And on a
    device SPECS does not know, nothing is raised: the sweep's ceilings hold, and the kernels
    above them stay flagged."""
    stored = read_document(H100_BENCH)
    row = next(r for r in stored.rows if r.workload == "block" and r.mode == "fwd" and r.backend == "inductor")
    gemm = next(k for k in row.kernels if k.name == "extern_kernels.addmm")
    spec = stored.ceilings.spec.tflops["bfloat16"]
    row.kernels.append(dataclasses.replace(gemm, time_us=gemm.flops / (1.1 * spec * 1e6)))  # 10 % above the datasheet
    doc = recompute(stored)
    c = doc.ceilings
    assert c.matmul_tflops["bfloat16"] < spec and "bfloat16" in c.raised
    judged = next(r for r in doc.rows if r.workload == "block" and r.mode == "fwd" and r.backend == "inductor")
    assert "flops are over-counted" in judged.kernels[-1].model_error
    assert judged.bench.roofline.kernels_flagged == 1
    assert sum(bool(k.model_error) for r in doc.rows for k in r.kernels) == 1

    unknown = read_document(H100_BENCH)
    unknown.ceilings = dataclasses.replace(unknown.ceilings, device="a GPU SPECS does not know", spec=None)
    doc = recompute(unknown)
    c = doc.ceilings
    assert not c.raised and c.matmul_tflops == unknown.ceilings.matmul_tflops
    above = sum(t > c.matmul_tflops["bfloat16"] for t, _, _ in _rates(doc))
    assert above and sum(bool(k.model_error) for r in doc.rows for k in r.kernels) == above


def test_the_report_and_the_bench_page_name_the_kernel_a_ceiling_was_raised_by(tmp_path):
    from irlens.reporting import write_report

    doc = read_document(H100_BENCH)
    doc.rows = [r for r in doc.rows if r.workload == "lm_cross_entropy"]
    raised = (f"raised from the sweep's {doc.ceilings.matmul_tflops['bfloat16']:.0f} by extern_kernels.mm in "
              f"lm_cross_entropy fwdbwd inductor")
    report = write_report(doc, tmp_path / "report", frontends=False)[0]["md"].read_text()
    assert raised in report and "model error:" not in report
    page = tmp_path / "bench.md"
    write_results_page(recompute(doc), page, "bench.json", "irlens bench")
    rows = [line for line in page.read_text().splitlines() if line.startswith("| lm_cross_entropy")]
    assert raised in page.read_text() and rows and not any("✗" in line for line in rows)


# --- one definition of a kernel launch --------------------------------------------------------

@pytest.mark.slow
def test_launches_per_step_have_one_definition_on_the_cpu():
    """kernel_count is the launches a step makes: Inductor's wrapper calls (extern ones
    included), XLA's launching ENTRY instructions, the Inductor modules' calls for
    thunder+torchcompile, and eager's ATen calls below autograd (views and allocations, which
    launch nothing, not counted)."""
    from irlens.backends import get_backend
    from irlens.backends.eager import aten_launches

    inst = resolve_workload("gelu").instantiate("tiny", "float32", "cpu")
    eager = run_backend(get_backend("eager"), inst, "fwd")
    # 0.5 * x * (1 + tanh(c * (x + 0.044715 * x**3))): pow, mul, add, mul, tanh, add, mul, mul
    assert eager.launch_count() == 8 == aten_launches(lambda: inst.module(*inst.inputs))

    inst = resolve_workload("block").instantiate("tiny", "float32", "cpu")
    inductor = run_backend(get_backend("inductor"), inst, "fwd")
    (compiled,) = compiled_graphs("block", "fwd")
    body = compiled.source_code[compiled.source_code.index("def call("):]
    calls = re.findall(r"^\s*(?:\w+ = )?(cpp_fused_\w+|extern_kernels\.\w+|torch\.ops\.[\w.]+)\(", body, re.M)
    assert inductor.launch_count() == len(calls) == len(inductor.kernels)

    xla = run_backend(get_backend("xla"), inst, "fwd")
    entry = "\n".join(k.source.splitlines()[0] for k in xla.kernels)
    assert xla.launch_count() == len(xla.kernels) == entry.count(" = ")
    assert not re.search(r" (parameter|constant|tuple|get-tuple-element|bitcast)\(", entry)

    thunder = run_backend(get_backend("thunder+torchcompile"), inst, "fwd")
    modules = thunder.notes["inductor_kernels"]
    outside = [k for k in thunder.kernels if not k.name.startswith("TorchCompile")]
    assert thunder.launch_count() == sum(map(len, modules.values())) + sum(k.bytes is not None for k in outside)


def test_a_launch_after_other_statements_is_its_handles_kernel():
    """On CUDA the wrapper puts `stream0 = get_raw_stream(0)` between a provenance handle and
    the Triton kernel's `.run`: the launch is still that kernel's, one record with its bytes (an
    H100 bench once charged gelu's kernel twice, once as a copy with no nodes)."""
    import dataclasses

    for compiled in compiled_graphs("gelu", "fwd", "float32"):
        code = re.sub(r"^(\s*)(# \[Provenance debug handles\] \S+\n)", r"\1\2\1stream0 = get_raw_stream(0)\n",
                      compiled.source_code, flags=re.M)
        assert code != compiled.source_code
        plain = map_kernels(compiled)
        shifted = map_kernels(dataclasses.replace(compiled, source_code=code))
        assert [(k.name, k.kind, k.bytes) for k in shifted] == [(k.name, k.kind, k.bytes) for k in plain]
        assert all(k.bytes for k in shifted)
