"""The GPU libraries' custom calls in XLA's optimized GPU HLO, as canonical nodes: cuBLAS and
cuBLASLt GEMMs, and cuDNN convolutions.

Their meaning is the one XLA's GPU rewrites give them (gemm_rewriter, conv_rewriter and
cudnn_fused_conv_rewriter; the fields of backend_configs.proto):
- a GEMM is D = act(alpha * A @ B + beta * C + bias): alpha folds a scalar multiply in, a
  third operand C (beta != 0) an added matrix, the epilogue a bias vector along the output's
  trailing dims (the right operand's free dims), then ReLU or tanh-GELU; an *_AUX epilogue
  returns the value before the activation too;
- a forward convolution is act(conv(x, w) * conv_result_scale + side_input * side_input_scale
  + bias), the bias along the output's feature dim; a backward-input (backward-filter)
  convolution is the gradient of the forward convolution its window and dim_labels describe
  with respect to its input (its kernel), its operands (dy, w) ((x, dy)).
A form whose meaning is not certain (a bias whose dims follow a layout that is not row-major, an
activation XLA does not write, integer or FP8 arithmetic) raises `Unmapped` with the reason."""
from __future__ import annotations

import json
import re

from irlens.core.ir import TensorMeta
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.hlo.structured import CUSTOM_CALLS, TARGET_ATTRS, conv_form, emit_matmul, named
from irlens.frontends.jax.xla.forms import Emitter, Unmapped
from irlens.frontends.jax.xla.op import XlaOp


def backend_config(x: XlaOp) -> dict:
    """An HLO instruction's `backend_config={...}` (JSON, or a string holding it), parsed."""
    found = re.search(r"\bbackend_config=", x.spec)
    if found is None:
        return {}
    decoder = json.JSONDecoder()
    try:
        value, _ = decoder.raw_decode(x.spec[found.end():])
        if isinstance(value, str):
            value, _ = decoder.raw_decode(value)
    except ValueError as err:
        raise Unmapped(f"a backend_config that is not JSON ({err})") from None
    return value if isinstance(value, dict) else {}


def _config(x: XlaOp, key: str, known: frozenset) -> dict:
    """The `key` part of the backend config; a field outside `known` set to anything but its
    default keeps the call unknown (its meaning is not read)."""
    config = backend_config(x).get(key)
    if not isinstance(config, dict):
        raise Unmapped(f"custom call {x.target} without its {key}")
    odd = sorted(k for k, v in config.items() if k not in known and v not in (None, False, 0, "", [], {}))
    if odd:
        raise Unmapped(f"custom call {x.target}: {key} fields not mapped: {', '.join(odd)}")
    return config


def _results(x: XlaOp) -> list[TensorMeta]:
    """The call's results without the scratch buffer a library call returns last (s8 / u8)."""
    last = x.outs[-1]
    return x.outs[:-1] if len(x.outs) > 1 and last.dtype in ("int8", "uint8") and len(last.shape) == 1 else x.outs


def _row_major(layout: tuple) -> bool:
    return list(layout) == list(range(len(layout) - 1, -1, -1))  # () too: HLO's default layout


def _as(e: Emitter, value, meta: TensorMeta, dtype: str):
    return value if meta.dtype == dtype or not isinstance(value, str) else e.emit("convert", [value], dtype=dtype)


def _floating(dtype: str) -> bool:
    return dtype.startswith(("float", "bfloat")) and not dtype.startswith("float8")


# --- cuBLAS / cuBLASLt GEMMs -------------------------------------------------------------------

# autotune_workspace_size: the scratch memory the autotuner timed selected_algorithm with; like the
# algorithm it picks how cuBLAS computes the GEMM, not what. damax_output (an extra amax result) and
# scale_mode (FP8 / MX operand scaling) change the values and stay unread.
_GEMM_FIELDS = frozenset({"selected_algorithm", "alpha_real", "alpha_imag", "beta", "dot_dimension_numbers",
                          "precision_config", "epilogue", "lhs_stride", "rhs_stride", "grad_x", "grad_y",
                          "autotune_workspace_size"})
# epilogue -> (adds a bias vector, activation, returns the value before the activation as well)
_EPILOGUES = {"DEFAULT": (False, None, False), "BIAS": (True, None, False), "RELU": (False, "relu", False),
              "BIAS_RELU": (True, "relu", False), "GELU": (False, "gelu", False), "GELU_AUX": (False, "gelu", True),
              "BIAS_GELU": (True, "gelu", False), "BIAS_GELU_AUX": (True, "gelu", True)}


def _gemm(e: Emitter, x: XlaOp) -> None:
    config = _config(x, "gemm_backend_config", _GEMM_FIELDS)
    if "alpha_real" not in config or not isinstance(config.get("dot_dimension_numbers"), dict):
        raise Unmapped("a GEMM whose config lacks alpha or the dot dimension numbers")
    alpha, beta = float(config["alpha_real"]), float(config.get("beta", 0))
    if float(config.get("alpha_imag", 0)) != 0:
        raise Unmapped("a GEMM scaled by a complex alpha")
    epilogue = config.get("epilogue", "DEFAULT")
    if epilogue not in _EPILOGUES:
        raise Unmapped(f"a GEMM with a {epilogue} epilogue")
    has_bias, activation, aux = _EPILOGUES[epilogue]
    outs = _results(x)
    operands = 2 + (beta != 0) + has_bias
    if len(x.inputs) != operands or len(outs) != 1 + aux:
        raise Unmapped(f"a GEMM of {len(x.inputs)} operands and {len(outs)} results where its config asks for "
                       f"{operands} and {1 + aux}")
    if not all(_floating(m.dtype) for m in x.metas + outs):
        raise Unmapped("a GEMM of integer, FP8 or complex values")
    dims = {k: [int(v) for v in config["dot_dimension_numbers"].get(k, [])] for k in (
        "lhs_contracting_dimensions", "rhs_contracting_dimensions", "lhs_batch_dimensions", "rhs_batch_dimensions")}
    final = outs[0]
    dt = final.dtype
    stages = ["matmul"] + ["alpha"] * (alpha != 1) + ["beta"] * (beta != 0) + ["bias"] * has_bias
    pre = outs[1] if aux else None if activation else final  # the value before the activation

    def into(stage: str) -> TensorMeta | None:
        return pre if stage == stages[-1] else None

    value = emit_matmul(e, x.inputs, x.metas, *dims.values(), dt, into("matmul"))
    if alpha != 1:
        value = e.emit("mul", [value, alpha], into("alpha"))
    if beta != 0:
        c = _as(e, x.inputs[2], x.metas[2], dt)
        c = c if beta == 1 else e.emit("mul", [c, beta])
        value = e.emit("add", [value, c], into("beta"))
    if has_bias:
        value = e.emit("add", [value, _gemm_bias(e, x, len(dims["rhs_contracting_dimensions"])
                                                 + len(dims["rhs_batch_dimensions"]), final)], into("bias"))
    if activation:
        e.emit(activation, [value], final, **({"approximate": "tanh"} if activation == "gelu" else {}))


def _gemm_bias(e: Emitter, x: XlaOp, rhs_bound: int, out: TensorMeta) -> str:
    """The bias vector broadcast to the output. cuBLASLt adds it along the output's most minor
    dims, which XLA makes the right operand's free dims: in a row-major output its trailing ones."""
    bias, meta = x.inputs[-1], x.metas[-1]
    free = len(x.metas[1].shape) - rhs_bound
    operand_layouts, result_layouts = x.layouts or ((), ())
    if not (_row_major(result_layouts[0] if result_layouts else ()) and
            _row_major(operand_layouts[-1] if operand_layouts else ())):
        raise Unmapped("a GEMM bias on an output or bias that is not row-major (the dims it runs along follow "
                       "the layout)")
    trailing = list(range(len(out.shape) - free, len(out.shape)))
    if not isinstance(bias, str) or list(meta.shape) != [out.shape[d] for d in trailing]:
        raise Unmapped("a GEMM bias that is not a vector over the right operand's free dims")
    bias = _as(e, bias, meta, out.dtype)
    return e.emit("broadcast", [bias], shape=list(out.shape), broadcast_dims=trailing)


# --- cuDNN convolutions ----------------------------------------------------------------------

_CONV_FIELDS = frozenset({"algorithm", "conv_result_scale", "activation_mode", "side_input_scale",
                          "leakyrelu_alpha"})
# stream_executor.dnn.ActivationMode, by number and name; those XLA's rewriter writes are mapped
_ACTIVATION_MODES = ("kNone", "kSigmoid", "kRelu", "kRelu6", "kReluX", "kTanh", "kBandPass", "kElu", "kLeakyRelu",
                     "kGeluExact")


def _conv_config(x: XlaOp, inputs: tuple[int, ...]) -> dict:
    config = _config(x, "cudnn_conv_backend_config", _CONV_FIELDS)
    if "conv_result_scale" not in config:
        raise Unmapped("a cuDNN convolution whose config lacks conv_result_scale")
    if len(x.inputs) not in inputs or len(_results(x)) != 1:
        raise Unmapped(f"a cuDNN convolution of {len(x.inputs)} operands and {len(_results(x))} results")
    if not all(_floating(m.dtype) for m in x.metas + _results(x)):
        raise Unmapped("a cuDNN convolution of integer or FP8 values (its rounding and saturation are cuDNN's)")
    mode = config.get("activation_mode", "kNone")
    config["activation_mode"] = _ACTIVATION_MODES[mode] if isinstance(mode, int) and mode < 10 else mode
    if x.target != _CONV_BIAS_ACTIVATION and (float(config["conv_result_scale"]) != 1
                                              or config["activation_mode"] != "kNone"):
        raise Unmapped(f"{x.target} with a result scale or activation (only the bias-activation call applies them)")
    return config


def _conv_forward(e: Emitter, x: XlaOp) -> None:
    """convForward, and convBiasActivationForward: x, w, bias[, side input]."""
    config = _conv_config(x, (2,) if x.target == _CONV_FORWARD else (3, 4))
    form = conv_form(x)
    out = _results(x)[0]
    shape, dt = out.shape, out.dtype
    scale, mode = float(config["conv_result_scale"]), config["activation_mode"]
    activation = _conv_activation(mode, float(config.get("leakyrelu_alpha", 0)))
    stages = ["conv"] + ["scale"] * (scale != 1) + ["side"] * (len(x.inputs) == 4) + ["bias"] * (len(x.inputs) > 2)
    into = lambda stage: (None if activation else out) if stage == stages[-1] else None
    value = forms.expand_conv(e, x.inputs[0], named(x, 0), x.inputs[1], named(x, 1), form, into("conv"), dt)
    if scale != 1:
        value = e.emit("mul", [value, scale], into("scale"))
    if len(x.inputs) == 4:
        side = _as(e, x.inputs[3], x.metas[3], dt)
        side_scale = float(config.get("side_input_scale", 0))
        side = side if side_scale == 1 else e.emit("mul", [side, side_scale])
        value = e.emit("add", [value, side], into("side"))
    if len(x.inputs) > 2:
        feature = form.out_spec[1]
        if list(x.metas[2].shape) != [shape[feature]]:
            raise Unmapped("a cuDNN convolution bias that is not a vector over the output features")
        bias = e.emit("broadcast", [_as(e, x.inputs[2], x.metas[2], dt)], shape=list(shape), broadcast_dims=[feature])
        value = e.emit("add", [value, bias], into("bias"))
    if activation:
        op, bounds, attrs = activation
        e.emit(op, [value, *bounds], out, **attrs)


def _conv_activation(mode: str, leaky_alpha: float) -> tuple[str, list, dict] | None:
    """cuDNN's activation as (canonical op, its inputs after x, attrs): the modes XLA's rewriter
    writes (relu, relu6, elu, leaky relu), or none."""
    found = {"kNone": None, "kRelu": ("relu", [], {}), "kRelu6": ("clamp", [0.0, 6.0], {}), "kElu": ("elu", [], {}),
             "kLeakyRelu": ("leaky_relu", [], {"negative_slope": leaky_alpha})}
    if mode not in found:
        raise Unmapped(f"a cuDNN convolution with activation {mode}, which XLA's rewriter does not write")
    return found[mode]


def _plain_window(x: XlaOp) -> forms.ConvForm:
    form = conv_form(x)
    if any(form.reversal) or any(d != 1 for d in form.lhs_dilation) or form.batch_group_count != 1:
        raise Unmapped(f"{x.target} with a reversed or base-dilated window or batch groups")
    return form


def _forward_sizes(form: forms.ConvForm, x_shape, w_shape, y_shape) -> list[tuple[int, int, int]]:
    """Per spatial dim (input, kernel, output) sizes of the forward convolution, checked against
    the output size its window gives."""
    sizes = []
    for i, ((lo, hi), s, d) in enumerate(zip(form.padding, form.strides, form.rhs_dilation)):
        n, k, p = x_shape[form.lhs_spec[2 + i]], w_shape[form.rhs_spec[2 + i]], y_shape[form.out_spec[2 + i]]
        if p != (n + lo + hi - d * (k - 1) - 1) // s + 1:
            raise Unmapped("a backward convolution whose shapes are not its forward convolution's")
        sizes.append((n, k, p))
    return sizes


def _conv_backward_input(e: Emitter, x: XlaOp) -> None:
    """dx from (dy, w): a convolution of dy dilated by the stride with the flipped kernel, its
    in and out features swapped, padded so that dx[t] is the gradient at the padded input t + lo."""
    _conv_config(x, (2,))
    form = _plain_window(x)
    if form.feature_group_count != 1:
        raise Unmapped("a grouped backward-input convolution (XLA's rewriter writes none)")
    dx = _results(x)[0]
    sizes = _forward_sizes(form, dx.shape, x.metas[1].shape, x.metas[0].shape)
    pads = tuple((d * (k - 1) - lo, n - 1 - (p - 1) * s + lo)
                 for (n, k, p), (lo, _), s, d in zip(sizes, form.padding, form.strides, form.rhs_dilation))
    r = form.rhs_spec
    grad = forms.ConvForm(form.out_spec, (r[1], r[0], *r[2:]), form.lhs_spec, (1,) * len(sizes), pads, form.strides,
                          form.rhs_dilation, 1, 1, (True,) * len(sizes))
    forms.expand_conv(e, x.inputs[0], named(x, 0), x.inputs[1], named(x, 1), grad, dx)


def _conv_backward_filter(e: Emitter, x: XlaOp) -> None:
    """dw from (x, dy): a convolution of x (its batch the features summed over) with dy as the
    kernel dilated by the stride, strided by the forward dilation; forward groups are batch groups."""
    _conv_config(x, (2,))
    form = _plain_window(x)
    dw = _results(x)[0]
    sizes = _forward_sizes(form, x.metas[0].shape, dw.shape, x.metas[1].shape)
    pads = tuple((lo, (k - 1) * d + (p - 1) * s + 1 - n - lo)  # the last window ends at the border
                 for (n, k, p), (lo, _), s, d in zip(sizes, form.padding, form.strides, form.rhs_dilation))
    swap = lambda spec: (spec[1], spec[0], *spec[2:])
    grad = forms.ConvForm(swap(form.lhs_spec), swap(form.out_spec), swap(form.rhs_spec), form.rhs_dilation, pads,
                          (1,) * len(sizes), form.strides, 1, form.feature_group_count, (False,) * len(sizes))
    forms.expand_conv(e, x.inputs[0], named(x, 0), x.inputs[1], named(x, 1), grad, dw)


_CONV_FORWARD, _CONV_BIAS_ACTIVATION = "__cudnn$convForward", "__cudnn$convBiasActivationForward"
CUSTOM_CALLS.update({
    "__cublas$gemm": (_gemm, frozenset()), "__cublas$lt$matmul": (_gemm, frozenset()),
    _CONV_FORWARD: (_conv_forward, TARGET_ATTRS), _CONV_BIAS_ACTIVATION: (_conv_forward, TARGET_ATTRS),
    "__cudnn$convBackwardInput": (_conv_backward_input, TARGET_ATTRS),
    "__cudnn$convBackwardFilter": (_conv_backward_filter, TARGET_ATTRS),
})
