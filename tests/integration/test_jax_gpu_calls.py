"""HLO forms only XLA's GPU compiler writes, from HLO text: cuBLAS / cuBLASLt GEMMs with alpha,
beta and epilogues, cuDNN convolutions forward (with bias, side input, scales, activations),
backward-input and backward-filter, bitcasts between layouts. Each mapped form is interpreted
against a float64 torch computation of the same thing; each uncertain one stays unknown with
its reason (irlens/frontends/jax/hlo/gpu_calls.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from irlens.core.interpret import interpret
from irlens.frontends.jax.hlo.walk import hlo_to_graph

G = torch.Generator().manual_seed(0)


def rand(*shape):
    return torch.randn(*shape, generator=G, dtype=torch.float64)


def _module(body: str, params: str, result: str):
    import jaxlib._hlo as hlo_lib

    return hlo_lib.hlo_module_from_text(f"HloModule m\n\nENTRY %main ({params}) -> {result} {{\n{body}\n}}\n")


def _call(target: str, operands: list[str], results: list[str], attrs: str, config: dict, scratch: str = "s8[0]{0}"):
    """A graph of one custom call: parameters `operands` (HLO shapes), its results (plus the
    library's scratch buffer), each read by a get-tuple-element."""
    params = "\n".join(f"  %p{k} = {shape} parameter({k})" for k, shape in enumerate(operands))
    tuple_shape = ", ".join(results + [scratch])
    args = ", ".join(f"%p{k}" for k in range(len(operands)))
    body = (f"{params}\n  %call = ({tuple_shape}) custom-call({args}), custom_call_target=\"{target}\"{attrs}, "
            f"backend_config={json.dumps(config, separators=(',', ':'))}")
    body += "".join(f"\n  %r{k} = {shape} get-tuple-element(%call), index={k}" for k, shape in enumerate(results))
    body += f"\n  ROOT %out = ({', '.join(results)}) tuple({', '.join(f'%r{k}' for k in range(len(results)))})"
    signature = ", ".join(f"p{k}: {shape.split('{')[0]}" for k, shape in enumerate(operands))
    return hlo_to_graph(_module(body, signature, f"({', '.join(r.split('{')[0] for r in results)})"), name="call")


def _dims(lc, rc, lb=(), rb=()):
    return {"lhs_contracting_dimensions": [str(d) for d in lc], "rhs_contracting_dimensions": [str(d) for d in rc],
            "lhs_batch_dimensions": [str(d) for d in lb], "rhs_batch_dimensions": [str(d) for d in rb]}


def _gemm(operands, results, alpha=1.0, beta=0.0, epilogue="DEFAULT", dims=None, target="__cublas$lt$matmul", **more):
    # the fields jax 0.11.2's XLA writes on a GPU
    config = {"alpha_real": alpha, "alpha_imag": 0, "beta": beta, "dot_dimension_numbers": dims or _dims([1], [1]),
              "precision_config": {"operand_precision": ["DEFAULT", "DEFAULT"], "algorithm": "ALG_UNSET"},
              "epilogue": epilogue, "lhs_stride": "32", "rhs_stride": "128", "grad_x": False, "grad_y": False,
              "damax_output": False, "autotune_workspace_size": "33554432", **more}
    return _call(target, operands, results, "", {"operation_queue_id": "0", "wait_on_operation_queues": [],
                                                 "gemm_backend_config": config, "force_earliest_schedule": False})


A, B, C = "f32[4,8]{1,0}", "f32[16,8]{1,0}", "f32[4,16]{1,0}"
BIAS = "f32[16]{0}"


def _gelu(x):
    return F.gelu(x, approximate="tanh")


def test_cublas_gemm_forms_are_their_formulas():
    """D = act(alpha * A @ B + beta * C + bias): every epilogue XLA writes, alone and together,
    an *_AUX epilogue's second result the value before the GELU; the bias runs along the output's
    trailing dims (a batched GEMM's too)."""
    a, b, c, bias = rand(4, 8), rand(16, 8), rand(4, 16), rand(16)
    ab = a @ b.T
    cases = [  # (operands, results, config, inputs, wanted)
        ([A, B], [C], dict(alpha=0.125), [a, b], [ab * 0.125]),
        ([A, B, C], [C], dict(alpha=2.0, beta=1.0), [a, b, c], [2 * ab + c]),
        ([A, B, C], [C], dict(beta=0.5), [a, b, c], [ab + 0.5 * c]),
        ([A, B, BIAS], [C], dict(epilogue="BIAS"), [a, b, bias], [ab + bias]),
        ([A, B], [C], dict(epilogue="RELU"), [a, b], [torch.relu(ab)]),
        ([A, B, BIAS], [C], dict(epilogue="BIAS_RELU"), [a, b, bias], [torch.relu(ab + bias)]),
        ([A, B], [C], dict(epilogue="GELU"), [a, b], [_gelu(ab)]),
        ([A, B, BIAS], [C], dict(epilogue="BIAS_GELU"), [a, b, bias], [_gelu(ab + bias)]),
        ([A, B], [C, C], dict(epilogue="GELU_AUX"), [a, b], [_gelu(ab), ab]),
        ([A, B, C, BIAS], [C, C], dict(alpha=0.5, beta=1.0, epilogue="BIAS_GELU_AUX"), [a, b, c, bias],
         [_gelu(0.5 * ab + c + bias), 0.5 * ab + c + bias]),
    ]
    for operands, results, config, inputs, wanted in cases:
        for target in ("__cublas$lt$matmul", "__cublas$gemm"):
            g = _gemm(operands, results, target=target, **config)
            assert not g.unknown_ops(), (config, [n.attrs.get("reason") for n in g.nodes])
            for got, want in zip(interpret(g, inputs), wanted, strict=True):
                torch.testing.assert_close(got, want, msg=str(config))
    # batched: [2, 4, 8] x [2, 8, 16] -> [2, 4, 16], the bias along the last dim
    x, w = rand(2, 4, 8), rand(2, 8, 16)
    g = _gemm(["f32[2,4,8]{2,1,0}", "f32[2,8,16]{2,1,0}", BIAS], ["f32[2,4,16]{2,1,0}"], alpha=0.25,
              epilogue="BIAS", dims=_dims([2], [1], [0], [0]))
    (got,) = interpret(g, [x, w, bias])
    torch.testing.assert_close(got, 0.25 * (x @ w) + bias)
    # bf16 operands, an f32 result: the operands converted first, each a value of its own
    g = _gemm(["bf16[4,8]{1,0}", "bf16[16,8]{1,0}", BIAS], [C], epilogue="BIAS")
    assert [n.op for n in g.nodes][:3] == ["convert", "convert", "matmul"]
    names = [o.name for n in g.nodes for o in n.outputs]
    assert len(set(names)) == len(names)
    ab16, bb16 = a.bfloat16(), b.bfloat16()
    (got,) = interpret(g, [ab16, bb16, bias])
    torch.testing.assert_close(got.double(), ab16.double() @ bb16.double().T + bias)


def test_uncertain_gemm_forms_stay_unknown():
    """A bias on a column-major output (its dims follow the layout), a complex alpha, an epilogue
    XLA does not write, an FP8 flag, FP8 / MX scaling, an amax output, operands the config does not
    account for: unknown, with why."""
    cases = [
        (dict(operands=[A, B, BIAS], results=["f32[4,16]{0,1}"], epilogue="BIAS"), "not row-major"),
        (dict(operands=[A, B], results=[C], alpha_imag=1.0), "complex alpha"),
        (dict(operands=[A, B], results=[C], epilogue="SILU"), "SILU epilogue"),
        (dict(operands=[A, B], results=[C], is_fp8=True), "fields not mapped: is_fp8"),
        (dict(operands=[A, B], results=[C], scale_mode=1), "fields not mapped: scale_mode"),
        (dict(operands=[A, B], results=[C], damax_output=True), "fields not mapped: damax_output"),
        (dict(operands=[A, B], results=[C], epilogue="BIAS"), "its config asks for 3"),
        (dict(operands=[A, B, "f32[4]{0}"], results=[C], epilogue="BIAS"), "not a vector over the right operand"),
        (dict(operands=["s8[4,8]{1,0}", "s8[16,8]{1,0}"], results=["s32[4,16]{1,0}"], target="__cublas$gemm"),
         "integer"),
    ]
    for config, reason in cases:
        g = _gemm(**config)
        (node,) = [n for n in g.nodes if n.is_unknown]
        assert node.op == "unknown:custom-call" and reason in node.attrs["reason"], (config, node.attrs["reason"])
    g = _call("__cublas$gemm", [A, B], [C], "", {"gemm_backend_config": {"beta": 0, "dot_dimension_numbers":
                                                                        _dims([1], [1])}})
    assert "lacks alpha" in g.nodes[0].attrs["reason"]


# --- cuDNN convolutions (NHWC, as XLA's GPU layout assignment writes them) ------------------

NHWC = ", window={size=3x3 stride=2x2 pad=1_1x1_1}, dim_labels=b01f_01io->b01f"


def _conv(target, operands, result, attrs=NHWC, **config):
    config = {"activation_mode": "kNone", "conv_result_scale": 1, "side_input_scale": 0, "leakyrelu_alpha": 0,
              **config}
    return _call(target, operands, [result], attrs, {"operation_queue_id": "0", "wait_on_operation_queues": [],
                                                     "cudnn_conv_backend_config": config}, scratch="u8[0]{0}")


def _nchw(t):
    return t.permute(0, 3, 1, 2)


def _oihw(w):  # 01io -> oi01
    return w.permute(3, 2, 0, 1)


def _nhwc(t):
    return t.permute(0, 2, 3, 1)


X, W, Y = "f32[2,8,8,4]{3,2,1,0}", "f32[3,3,4,6]{3,2,1,0}", "f32[2,4,4,6]{3,2,1,0}"


def test_cudnn_forward_convolutions_are_their_formulas():
    """convForward is the convolution its window and dim_labels describe; convBiasActivationForward
    act(conv * conv_result_scale + side * side_input_scale + bias), the bias along the features,
    for each activation XLA's rewriter writes."""
    x, w, bias, side = rand(2, 8, 8, 4), rand(3, 3, 4, 6), rand(6), rand(2, 4, 4, 6)
    conv = _nhwc(F.conv2d(_nchw(x), _oihw(w), stride=2, padding=1))
    (got,) = interpret(_conv("__cudnn$convForward", [X, W], Y), [x, w])
    torch.testing.assert_close(got, conv)
    pre = 0.5 * conv + 2.0 * side + bias
    for mode, act, more in (("kNone", lambda v: v, {}), ("kRelu", torch.relu, {}),
                            ("kRelu6", lambda v: v.clamp(0, 6), {}), ("kElu", F.elu, {}),
                            ("kLeakyRelu", lambda v: F.leaky_relu(v, 0.1), {"leakyrelu_alpha": 0.1})):
        g = _conv("__cudnn$convBiasActivationForward", [X, W, "f32[6]{0}", Y], Y, activation_mode=mode,
                  conv_result_scale=0.5, side_input_scale=2.0, **more)
        assert not g.unknown_ops(), mode
        (got,) = interpret(g, [x, w, bias, side])
        torch.testing.assert_close(got, act(pre), msg=mode)
    g = _conv("__cudnn$convBiasActivationForward", [X, W, "f32[6]{0}"], Y, activation_mode="kRelu")
    (got,) = interpret(g, [x, w, bias])
    torch.testing.assert_close(got, torch.relu(conv + bias))


@pytest.mark.parametrize("size, window", [
    (9, "size=3x3 stride=2x2 pad=1_1x1_1"), (8, "size=3x3 stride=2x2 pad=1_1x1_1"),  # 8: a trailing row unused
    (9, "size=3x3 stride=2x2 pad=2_2x2_2 rhs_dilate=2x2"), (7, "size=3x3 pad=0_2x1_1")])
def test_cudnn_backward_convolutions_are_the_forward_gradients(size, window):
    """convBackwardInput(dy, w) and convBackwardFilter(x, dy): the gradients of the forward
    convolution their window and dim_labels describe (the filter's with feature groups)."""
    from torch.nn.grad import conv2d_input, conv2d_weight

    fields = dict(f.split("=") for f in window.split())
    stride = int(fields.get("stride", "1x1").split("x")[0])
    dil = int(fields.get("rhs_dilate", "1x1").split("x")[0])
    pads = [tuple(int(v) for v in p.split("_")) for p in fields["pad"].split("x")]
    x, w = rand(2, size, size, 4), rand(3, 3, 4, 6)
    xp = F.pad(_nchw(x), (pads[1][0], pads[1][1], pads[0][0], pads[0][1]))  # torch pads symmetric only
    out = (size + sum(pads[0]) - dil * 2 - 1) // stride + 1
    dy = rand(2, out, out, 6)
    attrs = f", window={{{window}}}, dim_labels=b01f_01io->b01f"
    dx_padded = conv2d_input(xp.shape, _oihw(w), _nchw(dy), stride=stride, dilation=dil)
    want = _nhwc(dx_padded[:, :, pads[0][0]:pads[0][0] + size, pads[1][0]:pads[1][0] + size])
    x_shape, dy_shape = f"f32[2,{size},{size},4]{{3,2,1,0}}", f"f32[2,{out},{out},6]{{3,2,1,0}}"
    g = _conv("__cudnn$convBackwardInput", [dy_shape, W], x_shape, attrs)
    assert not g.unknown_ops(), [n.attrs.get("reason") for n in g.nodes]
    torch.testing.assert_close(interpret(g, [dy, w])[0], want)
    grouped = rand(3, 3, 2, 6)
    want = conv2d_weight(xp, _oihw(grouped).shape, _nchw(dy), stride=stride, dilation=dil, groups=2)
    g = _conv("__cudnn$convBackwardFilter", [x_shape, dy_shape], "f32[3,3,2,6]{3,2,1,0}",
              attrs + ", feature_group_count=2")
    assert not g.unknown_ops(), [n.attrs.get("reason") for n in g.nodes]
    torch.testing.assert_close(interpret(g, [x, dy])[0], want.permute(2, 3, 1, 0))


def test_uncertain_cudnn_forms_stay_unknown():
    """An activation XLA's rewriter does not write, a serialized cuDNN graph, a result scale on a
    plain forward call, integer convolutions, a grouped backward-input call, a call without its
    config, a fused graph call: unknown, with why."""
    cases = [
        (_conv("__cudnn$convBiasActivationForward", [X, W, "f32[6]{0}"], Y, activation_mode="kSigmoid"),
         "activation kSigmoid"),
        (_conv("__cudnn$convForward", [X, W], Y, serialized_graph="1:[f32]conv();"), "fields not mapped: serialized"),
        (_conv("__cudnn$convForward", [X, W], Y, conv_result_scale=2), "result scale"),
        (_conv("__cudnn$convForward", ["s8[2,8,8,4]{3,2,1,0}", "s8[3,3,4,6]{3,2,1,0}"], "f32[2,4,4,6]{3,2,1,0}"),
         "integer"),
        (_conv("__cudnn$convBackwardInput", ["f32[2,4,4,6]{3,2,1,0}", "f32[3,3,2,6]{3,2,1,0}"], X,
               NHWC + ", feature_group_count=2"), "grouped backward-input"),
        (_call("__cudnn$convForward", [X, W], [Y], NHWC, {"operation_queue_id": "0"}, scratch="u8[0]{0}"),
         "without its cudnn_conv_backend_config"),
        (_conv("__cudnn$convForwardGraph", [X, W], Y), "no canonical op"),
    ]
    for g, reason in cases:
        (node,) = [n for n in g.nodes if n.is_unknown]
        assert node.op == "unknown:custom-call" and reason in node.attrs["reason"], (reason, node.attrs["reason"])


def test_bitcast_between_layouts_is_a_transpose():
    """After layout assignment a bitcast reads the same buffer in another shape and layout: from
    f32[2,3]{1,0} (row-major) to f32[3,2]{0,1} (column-major) the logical values are transposed."""
    body = """  %x = f32[2,3]{1,0} parameter(0)
  ROOT %t = f32[3,2]{0,1} bitcast(%x)"""
    g = hlo_to_graph(_module(body, "x: f32[2,3]", "f32[3,2]"), name="bitcast")
    x = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    torch.testing.assert_close(interpret(g, [x])[0], x.T)


@pytest.mark.gpu
def test_library_calls_xla_writes_on_a_gpu_are_mapped_exactly():
    """On a GPU (Triton GEMMs off, cuBLASLt on): dense layers with bias and ReLU / GELU, a GEMM plus
    a matrix, scaled attention scores, a convolution with bias and ReLU and a convolution's
    gradients become cuBLAS / cuDNN calls; bf16 pooling, argmax and top-k and a stable argsort
    have the bodies XLA's GPU passes rewrite (hlo_gpu_bodies). Their common view has no unknown
    op and its float64 interpretation matches JAX's result (no TF32)."""
    script = Path(__file__).parents[1] / "support" / "jax_gpu_calls_run.py"
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=500)
    assert run.returncode == 0, run.stderr[-4000:]
    cases = json.loads(run.stdout.splitlines()[-1])
    assert cases.pop("platform") == "gpu"
    calls = {c.split(":")[0] for case in cases.values() for c in case["calls"]}
    assert calls & {"__cublas$gemm", "__cublas$lt$matmul"} and calls & {"__cudnn$convForward",
                                                                       "__cudnn$convBiasActivationForward"}, cases
    for name, case in cases.items():
        assert "error" not in case and not case["unknown"], (name, {**case, "hlo": case.get("hlo", "")[-3000:]})
        assert case["rel_err"] < 5e-3, (name, case)
