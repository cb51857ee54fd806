"""Converters of nn composites (activations, softmax, dropout, norms, linear, sdpa, embedding,
losses, convolution, pooling, grouped matmul, upsampling) and of call_module."""
from __future__ import annotations

import re
from typing import Any

import torch

from irlens.frontends.dynamo.call import Call, Unmapped, converts, operand
from irlens.frontends.dynamo.meta import get_attr
from irlens.frontends.dynamo.converters.arithmetic import then_reduce
from irlens.core.ir import Node, canonical_dtype


@converts("tril", "triu")
def _triangle(c: Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0))], {"diagonal": int(c.arg("diagonal", 1, 0))})


@converts("masked_fill")
def _masked_fill(c: Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("mask", 1)), operand(c, "value", 2)])


@converts(ops_=("gelu", "gelu_backward"))
def _gelu(c: Call) -> list[Node]:
    if c.op == "gelu":
        inputs = [c.value(c.arg("self", 0))]
    else:
        inputs = [c.value(c.arg("grad_output", 0)), c.value(c.arg("self", 1))]
    return c.one(inputs, {"approximate": c.arg("approximate", default="none")})


@converts(ops_=("relu", "silu", "sigmoid_backward", "tanh_backward", "silu_backward", "threshold_backward"))
def _activation(c: Call) -> list[Node]:
    if c.op in ("relu", "silu"):
        c.ignore("inplace")
        return c.one([c.value(c.arg("self", 0))])
    second = c.arg("output") if c.op in ("tanh_backward", "sigmoid_backward") else c.arg("self")
    attrs = {"threshold": c.arg("threshold")} if c.op == "threshold_backward" else {}
    return c.one([c.value(c.arg("grad_output")), c.value(second)], attrs)


@converts(ops_=("elu", "hardtanh", "leaky_relu"))
def _parametric_activation(c: Call) -> list[Node]:
    c.ignore("inplace")
    x = c.value(c.arg("self", 0))
    if c.op == "elu":
        return c.one([x], {"alpha": c.arg("alpha", 1, 1.0), "scale": c.arg("scale", default=1.0),
                           "input_scale": c.arg("input_scale", default=1.0)})
    if c.op == "hardtanh":
        return c.one([x], {"min_val": c.arg("min_val", 1, -1.0), "max_val": c.arg("max_val", 2, 1.0)})
    return c.one([x], {"negative_slope": c.arg("negative_slope", 1, 0.01)})


@converts(ops_=("softmax", "log_softmax"))
def _softmax(c: Call) -> list[Node]:
    """softmax(x, dim[, dtype]); ATen's _softmax(x, dim, half_to_float): half in, float out."""
    x = c.arg("self", 0)
    attrs = {"dim": c.dim(c.arg("dim", 1), x)}
    if c.bare.startswith("_"):
        if c.arg("half_to_float") and c.meta(x).dtype != c.outputs[0].dtype:
            raise Unmapped("half_to_float")
        return c.one([c.value(x)], attrs)
    third = c.arg("_stacklevel", 2)  # F.softmax(x, dim, _stacklevel, dtype); torch.softmax(x, dim, dtype)
    dtype = third if isinstance(third, torch.dtype) else c.arg("dtype", 3 if c.schema is None else None)
    return then_reduce(c, x, c.op, attrs, dtype)


@converts("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(c: Call) -> list[Node]:
    y, g = c.arg("output"), c.arg("grad_output")
    if canonical_dtype(c.arg("input_dtype")) != c.meta(g).dtype:
        raise Unmapped("input_dtype differs from the gradient's")
    return c.one([c.value(g), c.value(y)], {"dim": c.dim(c.arg("dim"), y)})


@converts(ops_=("dropout",))
def _dropout(c: Call) -> list[Node]:
    c.ignore("inplace")
    train = c.arg("train") if c.schema is not None else c.arg("training", 2, True)
    return c.one([c.value(c.arg("self", 0))], {"p": float(c.arg("p", 1, 0.5)), "training": bool(train)})


@converts(ops_=("layer_norm", "rms_norm"))
def _norm(c: Call) -> list[Node]:
    x, weight = c.arg("self", 0), c.arg("weight", 2)
    eps = c.arg("eps", 4 if c.op == "layer_norm" else 3)
    c.ignore("cudnn_enable")
    if eps is None:  # the defaults: layer_norm 1e-5, rms_norm the dtype's machine epsilon
        eps = 1e-5 if c.op == "layer_norm" else torch.finfo(getattr(torch, c.meta(x).dtype)).eps
    inputs = [c.value(x), c.value(weight)]
    if c.op == "layer_norm":
        inputs.append(c.value(c.arg("bias", 3)))
    return c.one(inputs, {"normalized_ndim": len(c.arg("normalized_shape", 1)), "eps": float(eps)})


@converts(ops_=("layer_norm_backward",))
def _layer_norm_backward(c: Call) -> list[Node]:
    names = ("grad_out", "input", "mean", "rstd", "weight", "bias")
    attrs = {"normalized_ndim": len(c.arg("normalized_shape")), "grads": [bool(b) for b in c.arg("output_mask")]}
    return c.one([c.value(c.arg(n)) for n in names], attrs)


@converts(ops_=("batch_norm",))
def _batch_norm(c: Call) -> list[Node]:
    """ATen's _native_batch_norm_legit(_functional / _no_training / .no_stats)."""
    x, w, b = (c.value(c.arg(n)) for n in ("input", "weight", "bias"))
    stats = [c.value(c.arg(n)) for n in ("running_mean", "running_var")]
    training = bool(c.arg("training", default=False))
    return c.one([x, w, b, *stats], {"training": training, "momentum": float(c.arg("momentum")),
                                     "eps": float(c.arg("eps"))})


@converts(ops_=("group_norm", "group_norm_backward"))
def _group_norm(c: Call) -> list[Node]:
    c.arg("N"), c.arg("C"), c.arg("HxW")  # x's shape says them
    if c.op == "group_norm":
        inputs = [c.value(c.arg(n)) for n in ("input", "weight", "bias")]
        return c.one(inputs, {"groups": int(c.arg("group")), "eps": float(c.arg("eps"))})
    inputs = [c.value(c.arg(n)) for n in ("grad_out", "input", "mean", "rstd", "weight")]
    return c.one(inputs, {"groups": int(c.arg("group")), "grads": [bool(m) for m in c.arg("output_mask")]})


@converts(ops_=("linear",))
def _linear(c: Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("weight", 1)), c.value(c.arg("bias", 2))])


def _grouped_query(c: Call) -> bool:
    """Whether the call attends grouped queries (fewer key/value heads than query heads). SDPA says
    so (`enable_gqa`); ATen's fused kernels have no such argument and take a key with fewer heads as
    grouped (the CPU flash kernel that transformers' GQA models reach without a mask): their shapes say."""
    if c.has("enable_gqa", 7):
        return bool(c.arg("enable_gqa", 7, False))
    q, k = c.meta(c.arg("query", 0)).shape, c.meta(c.arg("key", 1)).shape
    return len(q) >= 3 and len(k) >= 3 and q[-3] != k[-3]


@converts(ops_=("sdpa",))
def _sdpa(c: Call) -> list[Node]:
    q, k, v = (c.value(c.arg(n, i)) for i, n in enumerate(("query", "key", "value")))
    mask = c.arg("attn_mask", 3) if c.has("attn_mask", 3) else c.arg("attn_bias", 3)
    attrs = {"is_causal": bool(c.arg("is_causal", 5, False)), "scale": c.arg("scale", 6), "enable_gqa": _grouped_query(c)}
    dropout = c.arg("dropout_p", 4, 0.0)
    if dropout:
        attrs["dropout_p"] = float(dropout)
    c.ignore("return_debug_mask", "compute_log_sumexp", "return_softmax")
    return c.one([q, k, v, c.value(mask)], attrs)


@converts(ops_=("sdpa_backward",))
def _sdpa_backward(c: Call) -> list[Node]:
    grad = c.arg("grad_out") if c.has("grad_out") else c.arg("grad_out_")
    if c.arg("dropout_p", default=0.0):
        raise Unmapped("attention backward with dropout")
    mask = c.arg("attn_mask") if c.has("attn_mask") else c.arg("attn_bias")
    c.ignore("philox_seed", "philox_offset", "cum_seq_q", "cum_seq_k", "max_q", "max_k", "grad_input_mask",
             "window_size_left", "window_size_right", "seqused_k", "alibi_slopes", "rng_state", "unused")
    inputs = [c.value(a) for a in (grad, *(c.arg(n) for n in ("query", "key", "value", "out", "logsumexp")))]
    return c.one(inputs + [c.value(mask)], {"is_causal": bool(c.arg("is_causal", default=False)), "scale": c.arg("scale"),
                                            "enable_gqa": _grouped_query(c)})


@converts(ops_=("embedding",))
def _embedding(c: Call) -> list[Node]:
    if c.schema is not None:
        c.ignore("padding_idx", "scale_grad_by_freq")  # gradient-only
        return c.one([c.value(c.arg("weight")), c.value(c.arg("indices"))])
    if c.arg("max_norm", 3) is not None:
        raise Unmapped("embedding with max_norm renormalizes the weight")
    c.arg("padding_idx", 2), c.arg("norm_type", 4), c.arg("scale_grad_by_freq", 5), c.arg("sparse", 6)
    return c.one([c.value(c.arg("weight", 1)), c.value(c.arg("self", 0))])


@converts(ops_=("embedding_backward",))
def _embedding_backward(c: Call) -> list[Node]:
    padding_idx = c.arg("padding_idx", default=-1)  # ATen's -1: none (F.embedding made a negative one positive)
    return c.one([c.value(c.arg("grad_output")), c.value(c.arg("indices"))],
                 {"num_weights": int(c.arg("num_weights")), "padding_idx": None if padding_idx < 0 else int(padding_idx),
                  "scale_grad_by_freq": bool(c.arg("scale_grad_by_freq", default=False))})


_REDUCTIONS = ("none", "mean", "sum")  # ATen's int reduction codes


@converts(ops_=("cross_entropy", "nll_loss", "nll_loss_backward"))
def _loss(c: Call) -> list[Node]:
    """F.cross_entropy / F.nll_loss (class-index targets) and ATen's nll_loss_forward/backward."""
    if c.schema is None:
        x, target, weight = c.arg("self", 0), c.arg("target", 1), c.arg("weight", 2)
        if c.arg("size_average", 3) is not None or c.arg("reduce", 5) is not None:
            raise Unmapped("legacy size_average / reduce")
        reduction, ignore = c.arg("reduction", 6, "mean"), int(c.arg("ignore_index", 4, -100))
        if c.op == "cross_entropy" and c.arg("label_smoothing", 7, 0.0):
            raise Unmapped("label smoothing")
        if c.meta(target).dtype.startswith("float"):
            raise Unmapped("class-probability targets")
        return c.one([c.value(x), c.value(target), c.value(weight)], {"reduction": reduction, "ignore_index": ignore})
    reduction, ignore = _REDUCTIONS[int(c.arg("reduction"))], int(c.arg("ignore_index"))
    attrs = {"reduction": reduction, "ignore_index": ignore}
    if c.op == "nll_loss":
        return c.one([c.value(c.arg(n)) for n in ("self", "target", "weight")], attrs)
    names = ("grad_output", "self", "target", "weight", "total_weight")
    return c.one([c.value(c.arg(n)) for n in names], attrs)


@converts(ops_=("convolution", "convolution_backward"))
def _convolution(c: Call) -> list[Node]:
    attrs = {"stride": list(c.arg("stride")), "padding": list(c.arg("padding")), "dilation": list(c.arg("dilation")),
             "transposed": bool(c.arg("transposed")), "output_padding": list(c.arg("output_padding")),
             "groups": int(c.arg("groups"))}
    if c.op == "convolution":
        return c.one([c.value(c.arg(n)) for n in ("input", "weight", "bias")], attrs)
    attrs["grads"] = [bool(m) for m in c.arg("output_mask")]
    attrs["bias_sizes"] = None if c.arg("bias_sizes") is None else [int(s) for s in c.arg("bias_sizes")]
    return c.one([c.value(c.arg(n)) for n in ("grad_output", "input", "weight")], attrs)


def _per_dim(v: Any, n: int, default: list[int]) -> list[int]:
    """A pooling argument as one int per spatial dim (ATen allows one for all, and [] for the default)."""
    if v is None or (isinstance(v, (list, tuple)) and not v):
        return list(default)
    v = [int(d) for d in (v if isinstance(v, (list, tuple)) else [v])]
    return v * n if len(v) == 1 else v


@converts(ops_=("max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward"))
def _pool(c: Call) -> list[Node]:
    x = c.arg("self")
    n = int(re.search(r"pool(\d)d", c.key).group(1))  # spatial dims: avg_pool1d, max_pool3d_with_indices, ...
    kernel = _per_dim(c.arg("kernel_size"), n, [1] * n)
    attrs = {"kernel": kernel, "stride": _per_dim(c.arg("stride"), n, kernel),
             "padding": _per_dim(c.arg("padding"), n, [0] * n), "ceil_mode": bool(c.arg("ceil_mode"))}
    if c.op.startswith("max"):
        attrs["dilation"] = _per_dim(c.arg("dilation"), n, [1] * n)
    else:
        attrs["count_include_pad"] = bool(c.arg("count_include_pad"))
        attrs["divisor_override"] = c.arg("divisor_override")
    if c.op == "max_pool_backward":
        return c.one([c.value(c.arg("grad_output")), c.value(x), c.value(c.arg("indices"))], attrs)
    if c.op == "avg_pool_backward":
        return c.one([c.value(c.arg("grad_output")), c.value(x)], attrs)
    return c.one([c.value(x)], attrs)


@converts(ops_=("grouped_mm", "grouped_mm_backward"))
def _grouped_mm(c: Call) -> list[Node]:
    """ATen's _grouped_mm at offsets, 2-d x 3-d or 2-d x 2-d (no bias, no other out_dtype), and
    transformers' fallback op and its backward (the 2-d x 3-d meaning, written as a loop over the groups)."""
    if c.op == "grouped_mm_backward":
        return c.one([c.value(c.arg(n)) for n in ("input", "weight", "offs", "grad_output")], {})
    x, w = (c.arg("self"), c.arg("mat2")) if c.has("self") else (c.arg("input"), c.arg("weight"))
    if c.arg("offs") is None or c.arg("bias") is not None or (c.rank(x), c.rank(w)) not in ((2, 3), (2, 2)):
        raise Unmapped("a grouped matmul other than 2-d x 3-d or 2-d x 2-d at offsets without bias")
    if c.arg("out_dtype") is not None and canonical_dtype(c.arg("out_dtype")) != c.meta(x).dtype:
        raise Unmapped("a grouped matmul into another dtype")
    return c.one([c.value(x), c.value(w), c.value(c.arg("offs"))], {})


@converts(ops_=("adaptive_avg_pool", "adaptive_avg_pool_backward"))
def _adaptive_pool(c: Call) -> list[Node]:
    if c.op == "adaptive_avg_pool":
        return c.one([c.value(c.arg("self"))], {"output_size": [int(s) for s in c.arg("output_size")]})
    return c.one([c.value(c.arg("grad_output")), c.value(c.arg("self"))], {"spatial": 3 if "3d" in c.key else 2})


@converts(ops_=("upsample",))
def _upsample(c: Call) -> list[Node]:
    x = c.arg("self") if c.has("self") else c.arg("input")
    mode = "bilinear" if "bilinear" in c.key else "nearest"
    out = c.outputs[0]
    spatial = len(out.shape) - 2
    scales = c.arg("scale_factors") if c.overload == "vec" else [c.arg(f"scales_{d}") for d in "dhw"[3 - spatial:]]
    c.arg("output_size")
    attrs = {"mode": mode, "output_size": list(out.shape[2:]),
             "scales": None if scales is None or all(s is None for s in scales) else list(scales)}
    if mode == "bilinear":
        attrs["align_corners"] = bool(c.arg("align_corners"))
    return c.one([c.value(x)], attrs)


_MODULE_ATTRS = {"eps": "eps", "normalized_shape": "normalized_ndim", "approximate": "approximate", "dim": "dim",
                 "p": "p"}


def module_call(c: Call) -> list[Node]:
    """A call_module: its parameters become graph inputs named `<module path>.<param>`;
    Embedding takes its weight first (the canonical order), other modules after the args."""
    c.read_all()
    module = get_attr(c.conv.gm, c.node.target)
    params = [c.conv.add_param(f"{c.node.target}.{n}", p) for n, p in module.named_parameters(recurse=False)]
    args = [c.value(a) for a in c.args]
    inputs = params + args if c.op == "embedding" else args + params
    attrs = {}
    for field, key in _MODULE_ATTRS.items():
        v = getattr(module, field, None)
        if v is not None and not isinstance(v, torch.Tensor):
            attrs[key] = len(v) if key == "normalized_ndim" else v
    if c.op == "dropout":
        attrs["training"] = module.training
    return c.one(inputs, attrs)
