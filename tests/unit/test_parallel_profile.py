"""`irlens train --profile`'s breakdown, on synthetic traces with known intervals (the end-to-end
run on gloo ranks is in test_parallel.py; on a GPU in its @gpu test)."""
import gzip
import json

import pytest

from irlens.parallel.train.profile import PARTS, analyze, classify, load_trace

STEP = "irlens_step#7"


def _span(name, ts, dur, cat, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur, "args": args}


def _kernel(name, ts, dur, stream):
    # as Kineto writes a CUDA kernel: pid the device, tid and args.stream the stream
    return _span(name, ts, dur, "kernel", pid=0, tid=stream, device=0, stream=stream)


def _gpu_trace():
    """One step of 100 µs on two streams (numbers in µs):
         compute stream 7:  matmul 10-30, attention 30-40, Triton fused 50-60, a copy 85-90
         NCCL stream 20:    all-gather 20-45 (20 under compute, 5 exposed), reduce-scatter 70-80
       and a kernel of the step before, which ends 2 µs into this one."""
    return {"traceEvents": [
        _span(STEP, 1000, 100, "user_annotation"),
        _span("aten::mm", 1005, 30, "cpu_op"),  # host side: not device time on a GPU
        _kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT", 1010, 20, 7),
        _kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0",
                1030, 10, 7),
        _kernel("triton_poi_fused_add_addmm_view_0", 1050, 10, 7),
        _span("Memcpy DtoD (Device -> Device)", 1085, 5, "gpu_memcpy", pid=0, tid=7, stream=7),
        _kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1020, 25, 20),
        _kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 1070, 10, 20),
        _kernel("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>", 990, 12, 7),
        {"ph": "f", "cat": "ac2g", "name": "ac2g", "pid": 0, "tid": 7, "ts": 1010},  # flow events: ignored
    ]}


def test_gpu_step_breakdown_from_known_intervals():
    report = analyze(_gpu_trace())
    (s,) = report.steps
    assert report.device == "cuda" and s.step == 7 and s.time_ms == pytest.approx(0.100)
    expected = {"matmul": 20, "attention": 10, "fused": 10, "other": 2 + 5, "comm_exposed": 5 + 10,
                "idle": 100 - 2 - 20 - 10 - 5 - 10 - 10 - 5, "comm_overlapped": 20}
    assert {k: round(getattr(s, k) * 1e3, 6) for k in expected} == expected
    assert sum(getattr(s, p) for p in PARTS) == pytest.approx(s.time_ms)
    assert s.kernels == 6  # started in the step (the fill began before it)
    assert report.top[0]["class"] == "communication" and report.top[0]["ms"] == pytest.approx(0.025)


def test_compute_on_two_streams_is_split_between_them():
    trace = {"traceEvents": [
        _span(STEP, 0, 40, "user_annotation"),
        _kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_execute_kernel", 0, 20, 7),
        _kernel("triton_red_fused_sum_0", 10, 20, 9),
        _kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 15, 25, 20),
    ]}
    (s,) = analyze(trace).steps
    # 0-10 matmul; 10-20 matmul and fused half each; 20-30 fused; 30-40 the all-reduce alone
    assert (s.matmul, s.fused, s.comm_exposed, s.comm_overlapped, s.idle) == \
        pytest.approx((0.015, 0.015, 0.010, 0.015, 0.0))


def test_cpu_trace_counts_known_ops_whole_and_other_ops_innermost():
    """Without kernels: a matmul op counts with what it calls, another op only through its
    innermost ops (its own time is dispatch: idle), communication spans whole, on every thread."""
    main, gloo = 11, 12
    trace = {"traceEvents": [
        _span(STEP, 0, 100, "user_annotation", tid=main),
        _span("aten::linear", 10, 30, "cpu_op", tid=main),
        _span("aten::mm", 12, 26, "cpu_op", tid=main),
        _span("aten::resolve_conj", 13, 1, "cpu_op", tid=main),
        _span("aten::add", 45, 5, "cpu_op", tid=main),
        _span("aten::to", 55, 5, "cpu_op", tid=main),
        _span("aten::copy_", 56, 3, "cpu_op", tid=main),
        _span("_c10d_functional::wait_tensor", 60, 20, "cpu_op", tid=main),
        _span("aten::empty", 61, 1, "cpu_op", tid=main),
        _span("gloo:all_gather", 30, 45, "user_annotation", tid=gloo),
    ]}
    report = analyze(trace)
    (s,) = report.steps
    assert report.device == "cpu"
    # 0-12 idle, 12-38 matmul (30-38 beside the gather), 38-45 gather alone, 45-50 add beside it,
    # 50-56 gather, 56-59 copy beside it, 59-80 gather then the wait, 80-100 idle
    expected = {"matmul": 26, "other": 8, "comm_exposed": 7 + 6 + 21, "comm_overlapped": 8 + 5 + 3, "idle": 12 + 20}
    assert {k: round(getattr(s, k) * 1e3, 6) for k in expected} == expected
    assert s.attention == s.fused == 0 and sum(getattr(s, p) for p in PARTS) == pytest.approx(0.1)


@pytest.mark.parametrize("name, cls", [
    ("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_bias_TNN", "matmul"),
    ("sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4_execute_kernel",
     "matmul"),
    ("void cutlass::Kernel2<cutlass_80_simt_sgemm_128x128_8x4_nt_align1>(cutlass_80_simt_sgemm_128x128_8x4_nt_align1::Params)",
     "matmul"),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, false>", "matmul"),
    ("triton_tem_fused_mm_0", "matmul"),
    ("aten::addmm", "matmul"),
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>",
     "attention"),
    ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128>>", "attention"),
    ("fmha_cutlassB_f32_aligned_64x64_k64_sm80(PyTorchMemEffAttention::AttentionBackwardKernel<cutlass::arch::Sm80>)",
     "attention"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_26_64x64x128_1x4x1_cga1x1x1_kernel0_0", "attention"),
    ("void cudnn::fusion::compute_dot_do_o_specialized<true, 128>(void const*, void const*, void*)", "attention"),
    ("triton_tem_fused_flex_attention_0", "attention"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "attention"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "communication"),
    ("gloo:reduce_scatter", "communication"),
    ("_c10d_functional::wait_tensor", "communication"),
    # Inductor's fused kernels name the ops they fuse, a bias add of an addmm or an SDPA layout copy included
    ("triton_poi_fused_add_addmm_view_0", "fused"),
    ("triton_per_fused__scaled_dot_product_flash_attention_transpose_1", "fused"),
    ("triton_red_fused__softmax_backward_data_arange_gt_masked_fill_mul_unsqueeze_view_3", "fused"),
    ("void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::TensorIteratorBase&)>",
     "other"),
    ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>", "other"),
    ("Memset (Device)", "other"),
    ("aten::mul", "other"),
])
def test_classify_kernel_names(name, cls):
    """Names as this repository's H200 bench runs recorded them (docs/results)."""
    assert classify(name) == cls


def test_trace_file_round_trip_and_no_steps_is_an_error(tmp_path):
    path = tmp_path / "trace-rank0.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump(_gpu_trace(), f)
    assert analyze(load_trace(path), str(path)).steps[0].step == 7
    with pytest.raises(ValueError, match="no irlens_step#<n> spans"):
        analyze({"traceEvents": [_kernel("nvjet_x", 0, 1, 7)]})


def test_communication_is_cut_by_collective():
    """Each collective's running time in the step and its exposed part: an all-to-all (NCCL's
    SendRecv) 0-30 with compute 10-20, an all-gather 25-35 alone, a gloo all-reduce op 50-60."""
    trace = {"traceEvents": [
        _span(STEP, 0, 100, "user_annotation"),
        _kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 0, 30, 20),
        _kernel("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NTT", 10, 10, 7),
        _kernel("ncclDevKernel_AllGather_RING_LL", 25, 10, 21),
        _kernel("gloo:all_reduce", 50, 10, 22),
    ]}
    report = analyze(trace)
    (s,) = report.steps
    # all-to-all: 30 running, exposed 0-10, 20-25 and half of 25-30 (shared with the all-gather)
    expected = {"all_to_all": [30, 17.5], "all_gather": [10, 7.5], "all_reduce": [10, 10]}
    assert {k: [round(v * 1e3, 6) for v in vs] for k, vs in s.comm_kinds.items()} == expected
    assert s.comm_exposed == pytest.approx(sum(e for _, e in s.comm_kinds.values()))
    assert report.to_json()["mean"]["comm_kinds"]["all_to_all"] == pytest.approx([0.030, 0.0175])
    assert "all_to_all (runs; exposed: 0.02 ms)" in report.table()
