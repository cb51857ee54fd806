"""The Dynamo frontend's name tables: native names -> canonical ops, at both levels.

Bare names for the torch level (`TORCH_NAMES`: torch / F / operator functions and Tensor
methods), `namespace.op` for OpOverloads (`ATEN_NAMES`, torch's prims among them), module
classes for call_module (`MODULE_NAMES`), and the ops declared from one ATen overload
(`FROM_ATEN`); each table is checked against `irlens.core.ops` at import. Beside them, the calls
that only alias their input, those without a dataflow result, the arguments that never change
a result's values, and the torch-level calls that return a view."""
from __future__ import annotations


import torch
import torch.fx as fx

from irlens.core import ops
from irlens.core.ir import UNKNOWN_PREFIX


def packet(op) -> str:
    """An OpOverload's table key: `aten.mul` for aten.mul.Tensor."""
    return f"{op.namespace}.{op._opname}"


UNARY = ("neg abs exp exp2 expm1 log log1p log2 log10 sqrt rsqrt reciprocal sin cos tan asin acos atan sinh cosh "
          "tanh asinh acosh atanh erf erfc erfinv lgamma digamma sigmoid sign floor ceil trunc round isnan isinf "
          "isfinite logical_not bitwise_not signbit angle conj real imag").split()
BINARY = ("add sub mul div pow maximum minimum remainder fmod atan2 eq ne lt le gt ge logical_and logical_or "
           "logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift igamma igammac nextafter "
           "hypot copysign fmax fmin").split()
# torch.special's functions: the canonical name without the prefix (ATen: `special_<name>`)
SPECIAL_UNARY = ("i0e i1 i1e ndtri log_ndtr erfcx airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0 "
                  "modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 "
                  "scaled_modified_bessel_k1 spherical_bessel_j0").split()
SPECIAL_BINARY = ["zeta", *ops.special.POLYNOMIALS]
SPECIAL = {f"special_{n}": ("bessel_" + n if n in ("i0e", "i1", "i1e") else n) for n in SPECIAL_UNARY + SPECIAL_BINARY}
_SAME = UNARY + BINARY + (
    "where clamp sum amax amin prod any all argmax argmin cumsum cumprod mean var matmul gelu relu silu elu hardtanh "
    "leaky_relu softmax log_softmax layer_norm rms_norm linear embedding dropout tril triu masked_fill gather "
    "scatter_add scatter_reduce index_add slice_scatter masked_scatter flip sort topk cummax cummin").split()

# Names shared by torch functions, Tensor methods and ATen op packets.
_COMMON: dict[str, str] = {
    **{op: op for op in _SAME},
    "true_divide": "div", "divide": "div", "multiply": "mul", "subtract": "sub", "rsub": "sub", "square": "mul",
    "floor_divide": "div", "clamp_min": "clamp", "clamp_max": "clamp", "clip": "clamp", "max": "amax", "min": "amin",
    "mm": "matmul", "bmm": "matmul", "addmm": "matmul", "baddbmm": "matmul",
    "view": "reshape", "reshape": "reshape", "_unsafe_view": "reshape", "unsqueeze": "reshape",
    "squeeze": "reshape", "flatten": "reshape", "unflatten": "reshape", "view_as": "reshape",
    "reshape_as": "reshape",
    "permute": "permute", "transpose": "permute", "t": "permute", "swapaxes": "permute",
    "expand": "broadcast", "expand_as": "broadcast", "broadcast_to": "broadcast",
    "cat": "concat", "concat": "concat", "stack": "stack", "repeat": "broadcast", "diagonal": "slice",
    "split": "slice", "split_with_sizes": "slice", "chunk": "slice", "narrow": "slice", "select": "slice",
    "unbind": "slice", "index_select": "take", "take_along_dim": "gather", "select_scatter": "slice_scatter",
    "constant_pad_nd": "pad", "i0": "bessel_i0", "view_as_real": "view_as_real", "view_as_complex": "view_as_complex",
    "complex": "complex", "polygamma": "polygamma", "frexp": "frexp", "logcumsumexp":
    "logcumsumexp", "_efficientzerotensor": "full", "empty_permuted": "empty", "addbmm": "matmul", "cholesky": "cholesky",
    **SPECIAL, "_conj": "conj", "conj_physical": "conj", "resolve_conj": "copy", "resolve_neg": "copy",
    "clone": "copy", "contiguous": "copy", "copy": "copy", "copy_": "copy",
    "to": "convert", "type_as": "convert", "float": "convert", "half": "convert", "bfloat16": "convert",
    "double": "convert", "long": "convert", "int": "convert", "bool": "convert", "type": "convert",
    "full": "full", "ones": "full", "zeros": "full", "full_like": "full",
    "ones_like": "full", "zeros_like": "full", "new_full": "full",
    "new_ones": "full", "new_zeros": "full", "scalar_tensor": "full",
    "fill": "full", "fill_": "full", "zero": "full", "zero_": "full",
    "empty": "empty", "empty_like": "empty", "new_empty": "empty", "empty_strided": "empty",
    "arange": "iota",
    "rand": "rand", "randn": "rand", "rand_like": "rand", "randn_like": "rand",
}

# Dynamo level: the bare name of a torch / F / operator function or Tensor method.
TORCH_NAMES: dict[str, str] = {
    **_COMMON,
    "truediv": "div", "floordiv": "div", "mod": "remainder", "invert": "bitwise_not", "and_": "bitwise_and",
    "or_": "bitwise_or", "xor": "bitwise_xor", "iadd": "add", "isub": "sub", "imul": "mul", "itruediv": "div",
    "getitem": "slice", "neg": "neg", "abs": "abs",
    "scaled_dot_product_attention": "sdpa", "cross_entropy": "cross_entropy", "nll_loss": "nll_loss",
}

# torch's prims (what torch's reference decompositions are written in), where they mean the
# canonical op of that name; prims.div truncates integers (its converter says so).
_PRIMS = {**{f"prims.{n}": n for n in UNARY + BINARY + ["where", "sum", "amax", "amin", "prod", "var", "iota"]
             if hasattr(torch.ops.prims, n)},
          "prims.erf_inv": "erfinv", "prims.div": "div", "prims.broadcast_in_dim": "broadcast", "prims.reshape": "reshape",
          "prims.squeeze": "reshape", "prims.collapse_view": "reshape", "prims.collapse": "reshape",
          "prims.split_dim": "reshape", "prims.transpose": "permute", "prims.cat": "concat", "prims.rev": "flip",
          "prims.clone": "copy", "prims.full": "full", "prims.scalar_tensor": "full", "prims.fill": "full",
          "prims.full_like": "full", "prims.empty_strided": "empty", "prims.bessel_i0": "bessel_i0",
          "prims.bessel_i0e": "bessel_i0e", "prims.bessel_i1": "bessel_i1", "prims.bessel_i1e": "bessel_i1e",
          "prims.bessel_j0": "bessel_j0", "prims.bessel_j1": "bessel_j1", "prims.zeta": "zeta", "prims.ndtri": "ndtri",
          "prims.erfcx": "erfcx", "prims.spherical_bessel_j0": "spherical_bessel_j0", "prims.conj": "conj",
          "prims.conj_physical": "conj"}

# ATen level: `namespace.op` of an OpOverload.
ATEN_NAMES: dict[str, str] = {
    **{f"aten.{k}": v for k, v in _COMMON.items() if hasattr(torch.ops.aten, k)},
    **_PRIMS,
    "aten.slice": "slice", "aten.index": "index", "aten._unsafe_index": "index", "aten.var_mean": "var",
    "aten.index_put": "index_put", "aten.index_put_": "index_put", "aten._unsafe_index_put": "index_put",
    "aten.scatter": "scatter", "aten.sigmoid_backward": "sigmoid_backward", "aten.as_strided": "as_strided",
    "prims.iota": "iota", "prims.prepare_softmax_online": "sum",
    "aten._to_copy": "convert", "prims.convert_element_type": "convert", "prims.fma": "add",
    "aten._softmax": "softmax", "aten._log_softmax": "log_softmax",
    "aten.native_layer_norm": "layer_norm", "aten._fused_rms_norm": "rms_norm",
    "aten.native_dropout": "dropout",
    "aten.nll_loss_forward": "nll_loss", "aten.nll_loss_backward": "nll_loss_backward",
    "aten._native_batch_norm_legit": "batch_norm", "aten._native_batch_norm_legit_no_training": "batch_norm",
    "aten._native_batch_norm_legit_functional": "batch_norm",
    "aten.native_group_norm": "group_norm", "aten.native_group_norm_backward": "group_norm_backward",
    "aten.convolution": "convolution", "aten.convolution_backward": "convolution_backward",
    # grouped matmuls: ATen's, and the custom op transformers' MoE layers call where it cannot run
    "aten._grouped_mm": "grouped_mm", "transformers.grouped_mm_fallback": "grouped_mm",
    "transformers.grouped_mm_fallback_backward": "grouped_mm_backward",
    **{f"aten.max_pool{n}d_with_indices": "max_pool" for n in (2, 3)},
    **{f"aten.max_pool{n}d_with_indices_backward": "max_pool_backward" for n in (2, 3)},
    **{f"aten.avg_pool{n}d": "avg_pool" for n in (1, 2, 3)}, "aten.adaptive_avg_pool1d": "adaptive_avg_pool",
    **{f"aten.avg_pool{n}d_backward": "avg_pool_backward" for n in (2, 3)},
    **{f"aten._adaptive_avg_pool{n}d": "adaptive_avg_pool" for n in (2, 3)},
    **{f"aten._adaptive_avg_pool{n}d_backward": "adaptive_avg_pool_backward" for n in (2, 3)},
    **{f"aten.reflection_pad{n}d": "reflection_pad" for n in (1, 2, 3)},
    **{f"aten.replication_pad{n}d": "replication_pad" for n in (1, 2, 3)},
    "aten.upsample_nearest2d": "upsample", "aten.upsample_bilinear2d": "upsample", "aten.nonzero": "nonzero",
    "aten.randperm": "randperm",
    "aten.scaled_dot_product_attention": "sdpa",
    "aten._scaled_dot_product_flash_attention_for_cpu": "sdpa",
    "aten._scaled_dot_product_flash_attention": "sdpa",
    "aten._scaled_dot_product_efficient_attention": "sdpa",
    "aten._scaled_dot_product_cudnn_attention": "sdpa",
    "aten._scaled_dot_product_fused_attention_overrideable": "sdpa",
    "aten._scaled_dot_product_flash_attention_for_cpu_backward": "sdpa_backward",
    "aten._scaled_dot_product_flash_attention_backward": "sdpa_backward",
    "aten._scaled_dot_product_efficient_attention_backward": "sdpa_backward",
    "aten._scaled_dot_product_cudnn_attention_backward": "sdpa_backward",
    "aten._scaled_dot_product_fused_attention_overrideable_backward": "sdpa_backward",
    "aten.gelu_backward": "gelu_backward", "aten.tanh_backward": "tanh_backward",
    "aten.silu_backward": "silu_backward", "aten.threshold_backward": "threshold_backward",
    "aten._softmax_backward_data": "softmax_backward",
    "aten._log_softmax_backward_data": "log_softmax_backward",
    "aten.native_layer_norm_backward": "layer_norm_backward",
    "aten.embedding_dense_backward": "embedding_backward",
    **{f"{ns}.{name}": op
       for ns in ("_c10d_functional", "_c10d_functional_autograd")
       for name, op in (("all_gather_into_tensor", "all_gather"), ("reduce_scatter_tensor", "reduce_scatter"),
                        ("all_reduce", "all_reduce"), ("all_to_all_single", "all_to_all"),
                        ("wait_tensor", "wait"))
       if hasattr(getattr(torch.ops, ns), name)},
}

# call_module (Dynamo inlines built-in modules by default; kept for graphs that do not).
MODULE_NAMES: dict[str, str] = {
    "Linear": "linear", "LayerNorm": "layer_norm", "RMSNorm": "rms_norm", "Embedding": "embedding",
    "GELU": "gelu", "ReLU": "relu", "SiLU": "silu", "Tanh": "tanh", "Sigmoid": "sigmoid",
    "Softmax": "softmax", "Dropout": "dropout", "Identity": "copy",
}

# The ops declared from one ATen overload (irlens.core.ops.core.from_aten), by that overload; its
# packet's other overloads are expanded (they decompose to it, where torch says so).
FROM_ATEN: dict = {op.aten: name for name, op in ops.OPS.items() if op.aten is not None}
# What functionalization writes for a view: the same op, as a copy (`permute_copy`).
VIEW_COPIES = {f"aten.{v}_copy": f"aten.{v}" for v in (
    "view", "permute", "expand", "slice", "select", "transpose", "unsqueeze", "squeeze", "t", "diagonal", "unbind",
    "split", "split_with_sizes", "alias", "detach", "as_strided", "narrow", "unfold")}

for _table in (TORCH_NAMES, ATEN_NAMES, MODULE_NAMES, {str(k): v for k, v in FROM_ATEN.items()}):
    ops.check_vocabulary(_table)

# Calls that only alias their input: their value is the input's value.
ALIASES = {"detach", "alias", "lift_fresh", "lift_fresh_copy", "aten.detach", "aten.alias",
            "aten.lift_fresh", "aten.lift_fresh_copy"}
# Calls without a dataflow result: grad mode, asserts, profiler ranges.
BOOKKEEPING = {"_set_grad_enabled", "set_grad_enabled", "_assert_tensor_metadata", "aten._assert_tensor_metadata",
                "_assert_async", "aten._assert_async", "_record_function_enter_new", "_record_function_exit",
                "_enter_autocast", "_exit_autocast", "sym_constrain_range_for_size", "aten.sym_constrain_range_for_size",
                "_assert_scalar", "aten._assert_scalar", "aten._linalg_check_errors", "_linalg_check_errors",
                "prims._sink_tokens"}
# Arguments that never change a result's values: where and how it is stored, and gradient formats.
IGNORED_ARGS = frozenset({"layout", "device", "pin_memory", "memory_format", "non_blocking", "requires_grad",
                          "generator", "sparse", "sparse_grad", "implicit", "copy"})
# Torch-level calls that return a view: an in-place update through one (or of one) changes other values.
VIEWS = frozenset({"view", "reshape", "view_as", "reshape_as", "getitem", "__getitem__", "slice", "select", "narrow",
                    "transpose", "permute", "t", "T", "mT", "H", "mH", "expand", "expand_as", "broadcast_to",
                    "unsqueeze", "squeeze", "flatten", "unflatten", "chunk", "split", "split_with_sizes", "unbind",
                    "diagonal", "as_strided", "detach", "alias", "swapaxes", "swapdims", "movedim", "moveaxis",
                    "unfold", "real", "imag", "view_as_real", "view_as_complex", "getattr", "contiguous", "to",
                    "type_as", "float", "double", "half", "bfloat16", "long", "int", "bool", "type"})


def unknown_op(native: str) -> str:
    return f"{UNKNOWN_PREFIX}{native}"


def canonical_op(node: fx.Node, key: str, native: str) -> str:
    """The canonical op, or `unknown:` + the native name (an OpOverload's without its overload)."""
    if node.op == "call_module":
        return MODULE_NAMES.get(key, unknown_op(native))
    if node.target in FROM_ATEN:
        return FROM_ATEN[node.target]
    if isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return ATEN_NAMES.get(key, unknown_op(key))
    return TORCH_NAMES.get(key, unknown_op(native))
