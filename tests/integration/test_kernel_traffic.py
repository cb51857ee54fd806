"""Kernel figures that are physically possible: each kernel charged what it touches
(a scatter the elements it updates, a gather the elements it reads), a split reduction's
second kernel charged the partial results it adds up (not the reduction it was named after),
and every figure above 100 % flagged in every output. The bad figures come from GPU benches;
each is reproduced here on the CPU from what the kernels themselves say (HLO, Triton source,
the committed bench documents' records)."""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path

from irlens.backends.inductor.accesses import touch_bounds
from irlens.backends.inductor.code import mark_combining_stages, read_launches
from irlens.reporting.bench_page import format_bench_table, write_results_page
from irlens.core.ceilings import Ceilings
from irlens.core.cost import kernel_flops
from irlens.core.ir import Graph, TensorMeta
from irlens.matrix import read_document
from irlens.matrix.records import bench_with
from irlens.reporting.ceiling import above_100
from irlens.reporting.roofline import recompute

DATA = Path(__file__).parents[1] / "data"
H200_BENCH = DATA / "h200-bench.json.gz"  # 4 x H200, 2026-11-21: 112 rows, kernels with their post-grad graphs


# --- XLA: a scatter writes what it updates, a gather reads what it picks ------------------------

def lm_cross_entropy_hlo():
    """lm_cross_entropy's JAX twin, loss and gradients, at the bench size (4096 tokens, a
    32000-word vocabulary, float32), compiled for the CPU from shapes alone (nothing allocated)."""
    import jax
    import jax.numpy as jnp

    from irlens.backends.xla.kernels import read_hlo
    from irlens.workloads.builtin.lm import _lm_head_loss_jax

    cfg = {"batch": 4, "seq": 1024, "dim": 1024, "vocab": 32000}
    step = jax.jit(jax.value_and_grad(_lm_head_loss_jax(cfg), argnums=(0, 1)))
    params = {"lm_head.weight": jax.ShapeDtypeStruct((cfg["vocab"], cfg["dim"]), jnp.float32)}
    h = jax.ShapeDtypeStruct((cfg["batch"], cfg["seq"], cfg["dim"]), jnp.float32)
    targets = jax.ShapeDtypeStruct((cfg["batch"], cfg["seq"]), jnp.int32)
    return cfg, read_hlo(step.lower(params, h, targets).compile().runtime_executable().hlo_modules()[0], name="lm")


_SHAPE = re.compile(r"(\w+)\[([\d,]*)\]")
ITEMSIZE = {"f32": 4, "bf16": 2, "s32": 4, "s64": 8, "pred": 1, "u32": 4, "f16": 2}


def _bytes(shape: str) -> int:
    return sum(math.prod(int(d) for d in dims.split(",") if d) * ITEMSIZE[ty] for ty, dims in _SHAPE.findall(shape))


def _body_shapes(text: str) -> dict[str, str]:
    """Instruction name -> its shape text, for the fused computation(s) printed under a kernel."""
    return dict(re.findall(r"%(\S+) = (\S+\[[\d,]*\])\S* ", text))


def test_a_scatter_fusion_writes_the_elements_it_updates():
    """The gradient of the loss scatters -1/N into one logit per token: on an H200 this fusion was
    charged the whole [4096, 32000] buffer it updates in place (524 MB in 2.8 µs: 11,929 % of
    ceiling). It touches one element per token: it reads the indices and the updates, reads the
    old value of each element it adds to, and writes those elements."""
    cfg, view = lm_cross_entropy_hlo()
    tokens = cfg["batch"] * cfg["seq"]
    (op,) = [op for op in view.entry_ops if re.search(r"\sscatter\(", op.text)]
    shapes = _body_shapes(op.text)
    scatter = re.search(r"%\S+ = (\S+) scatter\(%(\S+), %(\S+), %(\S+)\)", op.text)
    operand, indices, updates = (shapes[name] for name in scatter.groups()[1:])
    assert _bytes(operand) == tokens * cfg["vocab"] * 4 == 524_288_000  # what it was charged
    assert _bytes(updates) == tokens * 4  # one update per token
    assert op.bytes_written == _bytes(updates)
    assert op.bytes_read == _bytes(indices) + _bytes(updates) + _bytes(updates)  # + each old value it adds to


def test_a_gather_reads_the_elements_it_picks():
    """The loss picks the log-probability of each token's target: a fusion reading the [4096,
    32000] logits through a gather (on an H200, `loop_divide_select_fusion` at 5,406 % and
    `input_reduce_select_fusion` at 1,148 % of ceiling) reads one element of each row, not the rows."""
    cfg, view = lm_cross_entropy_hlo()
    tokens, logits = cfg["batch"] * cfg["seq"], cfg["batch"] * cfg["seq"] * cfg["vocab"] * 4
    gathering = [op for op in view.entry_ops if op.opcode == "fusion" and re.search(r"\sgather\(", op.text)]
    assert gathering
    for op in gathering:
        head = op.text.splitlines()[0]
        operands = re.findall(r"%([\w.\-]+)", head.split(" fusion(", 1)[1].split(")", 1)[0])
        reads_logits = any(o.startswith("ynn_fusion") or "exponential" in o for o in operands)
        if reads_logits:
            assert op.bytes_read < logits / 1000, head  # a few bytes per token
            assert op.bytes_read >= tokens * 4, head  # the picked element of each row, at least


# --- Inductor: a scatter kernel writes what its atomics can reach -------------------------------

EMBEDDING_BACKWARD = '''
triton_poi_fused_embedding_dense_backward_0 = async_compile.triton('triton_poi_fused_embedding_dense_backward_0', """
import triton
import triton.language as tl
@triton_heuristics.pointwise(
    size_hints={'x': 33554432}, filename=__file__,
    triton_meta={'signature': {'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0), 'constants': {}},
    inductor_meta={'kernel_name': 'triton_poi_fused_embedding_dense_backward_0', 'mutated_arg_names': []},
)
@triton.jit
def triton_poi_fused_embedding_dense_backward_0(out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 32768000
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = 0.0
    tl.store(out_ptr0 + (x0), tmp0, xmask)
""", device_str='cuda')

triton_poi_fused_embedding_dense_backward_1 = async_compile.triton('triton_poi_fused_embedding_dense_backward_1', """
import triton
import triton.language as tl
@triton_heuristics.pointwise(
    size_hints={'x': 4194304}, filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*i64', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'}, 'device': DeviceProperties(type='cuda', index=0), 'constants': {}},
    inductor_meta={'kernel_name': 'triton_poi_fused_embedding_dense_backward_1', 'mutated_arg_names': ['out_ptr0']},
)
@triton.jit
def triton_poi_fused_embedding_dense_backward_1(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 4194304
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x1 = xindex // 1024
    x2 = xindex
    x0 = (xindex % 1024)
    tmp0 = tl.load(in_ptr0 + (x1), None, eviction_policy='evict_last')
    tmp7 = tl.load(in_ptr1 + (x2), None)
    tmp1 = tl.full([XBLOCK], 32000, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tl.atomic_add(out_ptr0 + (tl.broadcast_to(x0 + 1024*tmp4, [XBLOCK])), tmp7, None, sem='relaxed')
""", device_str='cuda')

class Runner:
    def call(self, args):
        primals_1, tangents_1 = args
        args.clear()
        with torch.cuda._DeviceGuard(0):
            buf0 = empty_strided_cuda((32000, 1024), (1024, 1), torch.float32)
            # [Provenance debug handles] triton_poi_fused_embedding_dense_backward_0:1
            stream0 = get_raw_stream(0)
            triton_poi_fused_embedding_dense_backward_0.run(buf0, 32768000, stream=stream0)
            # [Provenance debug handles] triton_poi_fused_embedding_dense_backward_1:2
            triton_poi_fused_embedding_dense_backward_1.run(primals_1, tangents_1, buf0, 4194304, stream=stream0)
        return (buf0, )
'''


def test_a_triton_scatter_writes_what_its_atomics_reach():
    """An embedding's backward (minigpt's, on an H200, set the run's memory ceiling): the weight's
    gradient is zeroed whole, then each of the 4096 tokens adds its 1024-vector into one row
    with `tl.atomic_add`. The adding kernel can touch 4096 x 1024 elements of the [32000, 1024]
    buffer, not all of it; the zeroing kernel writes all of it."""
    tokens, dim, vocab = 4096, 1024, 32000
    graph = Graph("t", "dynamo", "s", "composite",
                  [TensorMeta("primals_1", (4, 1024), "int64"), TensorMeta("tangents_1", (4, 1024, dim), "float32")],
                  [], [])
    zero, scatter = read_launches(EMBEDDING_BACKWARD, graph)
    assert (zero.bytes_read, zero.bytes_written) == (0, vocab * dim * 4)
    assert scatter.bytes_read == tokens * 8 + tokens * dim * 4  # the ids and the gradient rows
    assert scatter.bytes_written == tokens * dim * 4  # one atomic per point: 16 MiB, not 131 MB


def test_touch_bounds_count_accesses_per_point_and_leave_other_pointers_alone():
    source = EMBEDDING_BACKWARD.split('"""')[3]
    assert touch_bounds(source) == {"in_ptr0": 4194304, "in_ptr1": 4194304, "out_ptr0": 4194304}
    two_loads = source.replace("tmp7 = tl.load(in_ptr1 + (x2), None)",
                               "tmp7 = tl.load(in_ptr1 + (x2), None) + tl.load(in_ptr1 + (1 + x2), None)")
    assert touch_bounds(two_loads)["in_ptr1"] == 2 * 4194304
    passed_on = source.replace("tmp1 = tl.full([XBLOCK], 32000, tl.int32)", "tmp1 = passed_to(in_ptr1)")
    assert "in_ptr1" not in touch_bounds(passed_on)  # used other than by a load: no bound
    assert touch_bounds(source.replace("xnumel = 4194304", "xnumel = ks0")) == {}  # a dynamic extent


# --- Inductor: a split reduction's second kernel ------------------------------------------------

def _h200_row(workload: str, mode: str, dtype: str, backend: str):
    doc = read_document(H200_BENCH)
    return doc, next(r for r in doc.rows if (r.workload, r.mode, r.dtype, r.backend) == (workload, mode, dtype, backend))


def test_a_split_reductions_second_kernel_adds_up_partials_and_recomputes_nothing():
    """block fwd+bwd, float32, Inductor: the gradient of the MLP's bias is a split reduction,
    `triton_red_fused_gelu_gelu_backward_sum_view_2` (recomputes the GELU backward from its
    inputs, sums chunks of rows) then `triton_per_fused_gelu_gelu_backward_sum_view_3` (adds up
    those partial sums). Provenance names the GELU nodes and the sum for both; charged their
    flops, the second kernel ran 2.3 µs at over 1,000 % of the H200's float32 rate. It combines
    the first one's partials and recomputes nothing."""
    doc, row = _h200_row("block", "fwdbwd", "float32", "inductor")
    stage = "inductor.post_grad.backward"
    graph = row.graphs[stage]
    kernels = [k for k in row.kernels if k.stage == stage]
    before = {k.name: kernel_flops(k, graph) for k in kernels}
    fp32 = row.bench.ceilings.peak_tflops("float32") * 1e12  # its GPU's, measured in its run
    second = next(k for k in kernels if k.name == "triton_per_fused_gelu_gelu_backward_sum_view_3")
    assert 100 * before[second.name] / fp32 / (second.time_us * 1e-6) > 1000

    mark_combining_stages(kernels, graph)
    first = next(k for k in kernels if k.name == "triton_red_fused_gelu_gelu_backward_sum_view_2")
    assert second.combines == ["sum_2"] and second.recompute == [] and second.node_ids == []
    assert "sum_2" in first.node_ids and first.recompute and not first.combines  # it does recompute the GELU
    partials = 64 * 4096  # chunks of rows x columns, float32
    second.set_io(partials * 4, 4096 * 4)
    assert kernel_flops(second, graph) == partials
    assert kernel_flops(first, graph) == before[first.name]
    combining = [k.name for k in kernels if k.combines]
    assert combining == ["triton_per_fused_gelu_gelu_backward_sum_view_3", "triton_red_fused_sum_view_7",
                         "triton_per_fused_cat_sum_transpose_view_9"]


# --- every figure above 100 % flagged, in every output --------------------------------------------

def test_every_figure_above_100_is_flagged_in_every_output(tmp_path):
    """The committed H200 report showed kernel rows at 100.4-102.5 % unflagged: it was made
    before figures above 100 % were flagged (and before a run's ceilings were raised to what its
    kernels did), and never remade. Judged as it was then (the sweep's ceilings, nothing
    raised), every kernel above 100 % is flagged in the row's JSON, the bench table, the results
    page and the report, unless the L2 explains it (and then its figure is below 100)."""
    from irlens.reporting import write_report

    stored = read_document(H200_BENCH)

    def as_then(ceilings: Ceilings) -> Ceilings:
        return dataclasses.replace(ceilings, spec=None, l2_bytes=60 << 20)

    rows = [dataclasses.replace(r, bench=bench_with(r.bench, ceilings=as_then(r.bench.ceilings)))
            for r in stored.rows if r.workload in ("gelu", "block")]
    parts = [dataclasses.replace(p, ceilings=as_then(p.ceilings)) for p in stored.parts]
    doc = recompute(dataclasses.replace(stored, rows=rows, parts=parts))
    judged = [(r, k) for r in doc.rows for k in r.kernels if k.pct_of_ceiling is not None]
    above = [(r, k) for r, k in judged if k.pct_of_ceiling > 100.0]
    assert above and all(k.model_error for _, k in above)
    assert any(100.0 < k.pct_of_ceiling < 103.0 for _, k in above)  # the kind the committed report showed
    assert all(k.pct_of_ceiling <= 100.0 for _, k in judged if k.via_l2)
    flagged_rows = {(r.workload, r.mode, r.dtype, r.backend): sum(1 for rr, _ in above if rr is r) for r in doc.rows}
    table = format_bench_table(doc.rows)
    for r in doc.rows:
        count = flagged_rows[(r.workload, r.mode, r.dtype, r.backend)]
        assert r.bench.roofline is None or r.bench.roofline.kernels_flagged == count
        line = next(line for line in table.splitlines()
                    if line.startswith(f"| {r.workload} | {r.mode} | {r.dtype} | {r.backend} |"))
        assert (f"**{count} ✗**" in line) == bool(count)
    report = write_report(doc, tmp_path / "report", frontends=False)[0]["md"].read_text()
    for r, k in above:
        assert f"{k.name}: model error: {k.pct_of_ceiling:.0f} %" in report
    cells = re.findall(r"\| (\d+\.\d)( model error| \(L2\))? \|$", report, re.M)
    assert cells and all(float(pct) <= 100.0 or mark == " model error" for pct, mark in cells)
    page = tmp_path / "bench.md"
    write_results_page(doc, page, "bench.json", "irlens bench")
    lines = [line for line in page.read_text().splitlines() if line.startswith(("| gelu |", "| block |"))]
    assert sum("✗" in line for line in lines) == sum(1 for c in flagged_rows.values() if c)


def test_the_committed_bench_documents_have_no_figure_above_100():
    """Recomputed by today's rules (the ceilings raised to what the run's kernels did, the L2's
    share): no kernel of the committed H100 and H200 benches is above 100 % unflagged (the one a
    ceiling was raised to is at 100 %, give or take float rounding)."""
    for path in (H200_BENCH, DATA / "h100-bench.json.gz", DATA / "h100-checks.json.gz"):
        doc = recompute(read_document(path))
        for r in doc.rows:
            for k in r.kernels:
                assert not above_100(k.pct_of_ceiling) or k.model_error, k.name
