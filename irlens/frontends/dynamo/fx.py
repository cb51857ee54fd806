"""FX graphs (Dynamo's torch-level graphs and AOTAutograd's ATen graphs) -> the common view.

One adapter serves both levels: a Dynamo graph calls `torch.*`, `operator.*`, `F.*` and
Tensor methods; an ATen graph calls OpOverloads (`aten.mul.Tensor`, `_c10d_functional.*`).
Native names are looked up in the tables below (bare names for the torch level, `ns.op`
for OpOverloads); converters turn each call's arguments into the operands and attrs its
canonical op declares (`irlens.ops`). Arguments are read by name where the op has a schema
(OpOverloads) and by torch-level position otherwise.

Never a wrong meaning: a converter reads every argument it maps (`_Call.arg`), and one it does
not read must be at its schema default (or not change values: device, layout, memory format;
`IGNORED_ARGS`); at the torch level, where there is no schema, every argument must be read.
Otherwise the call is `Unmapped`, and so is a call the converter cannot express. A call with
no table entry or Unmapped is then expanded by torch's own decompositions (`expansion`): an
ATen op by its entry in `torch._decomp` (core-ATen table first), a torch function by tracing
that one call down to core ATen with the same table; the nodes it becomes keep the call's
native name. Only what that leaves is `unknown:<native name>` (reason in attrs
`adapter_error`); the adapter never fails on an op it does not know.

Ids and value names are FX node names. A multi-output node's values take the names of the
`getitem` nodes that read them (an unread output is `<node>.out<i>`); `getitem`, `detach`,
`alias` and non-tensor nodes (sizes) fold away. A call that becomes several common-view
nodes (addmm -> matmul + add, split -> slices, an expansion) gives the extra nodes ids
`<node>.<k>`, so everything derived from FX node `n` has id `n` or `n.<k>`.
"""
from __future__ import annotations

import functools
import operator
import re
from dataclasses import replace
from typing import Any, Callable

import torch
import torch.fx as fx

from irlens import ops
from irlens.frontends.dynamo import aot
from irlens.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype

# --- name tables ---------------------------------------------------------------------------

def _packet(op) -> str:
    """An OpOverload's table key: `aten.mul` for aten.mul.Tensor."""
    return f"{op.namespace}.{op._opname}"


_UNARY = ("neg abs exp exp2 expm1 log log1p log2 log10 sqrt rsqrt reciprocal sin cos tan asin acos atan sinh cosh "
          "tanh asinh acosh atanh erf erfc erfinv lgamma digamma sigmoid sign floor ceil trunc round isnan isinf "
          "isfinite logical_not bitwise_not signbit angle conj real imag").split()
_BINARY = ("add sub mul div pow maximum minimum remainder fmod atan2 eq ne lt le gt ge logical_and logical_or "
           "logical_xor bitwise_and bitwise_or bitwise_xor bitwise_left_shift bitwise_right_shift igamma igammac nextafter "
           "hypot copysign fmax fmin").split()
# torch.special's functions: the canonical name without the prefix (ATen: `special_<name>`)
_SPECIAL_UNARY = ("i0e i1 i1e ndtri log_ndtr erfcx airy_ai bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0 "
                  "modified_bessel_i1 modified_bessel_k0 modified_bessel_k1 scaled_modified_bessel_k0 "
                  "scaled_modified_bessel_k1 spherical_bessel_j0").split()
_SPECIAL_BINARY = ["zeta", *ops.special.POLYNOMIALS]
_SPECIAL = {f"special_{n}": ("bessel_" + n if n in ("i0e", "i1", "i1e") else n) for n in _SPECIAL_UNARY + _SPECIAL_BINARY}
_SAME = _UNARY + _BINARY + (
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
    **_SPECIAL, "_conj": "conj", "conj_physical": "conj", "resolve_conj": "copy", "resolve_neg": "copy",
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
_PRIMS = {**{f"prims.{n}": n for n in _UNARY + _BINARY + ["where", "sum", "amax", "amin", "prod", "var", "iota"]
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

# The ops declared from one ATen overload (irlens.ops.core.from_aten), by that overload; its
# packet's other overloads are expanded (they decompose to it, where torch says so).
FROM_ATEN: dict = {op.aten: name for name, op in ops.OPS.items() if op.aten is not None}
# What functionalization writes for a view: the same op, as a copy (`permute_copy`).
_VIEW_COPIES = {f"aten.{v}_copy": f"aten.{v}" for v in (
    "view", "permute", "expand", "slice", "select", "transpose", "unsqueeze", "squeeze", "t", "diagonal", "unbind",
    "split", "split_with_sizes", "alias", "detach", "as_strided", "narrow", "unfold")}

for _table in (TORCH_NAMES, ATEN_NAMES, MODULE_NAMES, {str(k): v for k, v in FROM_ATEN.items()}):
    ops.check_vocabulary(_table)

# Calls that only alias their input: their value is the input's value.
_ALIASES = {"detach", "alias", "lift_fresh", "lift_fresh_copy", "aten.detach", "aten.alias",
            "aten.lift_fresh", "aten.lift_fresh_copy"}
# Calls without a dataflow result: grad mode, asserts, profiler ranges.
_BOOKKEEPING = {"_set_grad_enabled", "set_grad_enabled", "_assert_tensor_metadata", "aten._assert_tensor_metadata",
                "_assert_async", "aten._assert_async", "_record_function_enter_new", "_record_function_exit",
                "_enter_autocast", "_exit_autocast", "sym_constrain_range_for_size", "aten.sym_constrain_range_for_size",
                "_assert_scalar", "aten._assert_scalar", "aten._linalg_check_errors", "_linalg_check_errors",
                "prims._sink_tokens"}
# Arguments that never change a result's values: where and how it is stored, and gradient formats.
IGNORED_ARGS = frozenset({"layout", "device", "pin_memory", "memory_format", "non_blocking", "requires_grad",
                          "generator", "sparse", "sparse_grad", "implicit", "copy"})
# Torch-level calls that return a view: an in-place update through one (or of one) changes other values.
_VIEWS = frozenset({"view", "reshape", "view_as", "reshape_as", "getitem", "__getitem__", "slice", "select", "narrow",
                    "transpose", "permute", "t", "T", "mT", "H", "mH", "expand", "expand_as", "broadcast_to",
                    "unsqueeze", "squeeze", "flatten", "unflatten", "chunk", "split", "split_with_sizes", "unbind",
                    "diagonal", "as_strided", "detach", "alias", "swapaxes", "swapdims", "movedim", "moveaxis",
                    "unfold", "real", "imag", "view_as_real", "view_as_complex", "getattr", "contiguous", "to",
                    "type_as", "float", "double", "half", "bfloat16", "long", "int", "bool", "type"})


_MAX_CONSTANT = 4096  # elements of a literal tensor kept as a `constant` node


class Unmapped(ValueError):
    """An argument the converter cannot express in the canonical op: the call must not get its name."""


# Schema names an argument goes by across torch functions, ATen and prims.
_ALIASES_OF = {"self": ("self", "input", "a", "x", "inp"), "other": ("other", "b"), "condition": ("condition", "pred"),
               "exponent": ("exponent", "other"), "dim": ("dim", "dims"), "dtype": ("dtype", "output_dtype")}


# --- one call, its arguments and outputs ----------------------------------------------------------

class _Call:
    """An FX call being converted: its arguments by name or position (each read is recorded, so
    an argument nobody read can be found), and its output metas."""

    def __init__(self, node: fx.Node, key: str, native: str, op: str, conv: "_Converter"):
        self.node, self.key, self.native, self.op, self.conv = node, key, native, op, conv
        self.args, self.kwargs = tuple(node.args), dict(node.kwargs)
        self.schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        self.named = _bind_schema(self.schema, self.args, self.kwargs) if self.schema is not None else {}
        self.overload = getattr(node.target, "_overloadname", "") if self.schema is not None else ""
        self.bare = key.rsplit(".", 1)[-1]
        self.outputs = conv.output_metas(node)
        self.scope = conv.scope if conv.scope is not None else _scope(node)
        self.read: set = set()  # schema names, or torch-level positions and keywords

    def arg(self, name: str, pos: int | None = None, default: Any = None) -> Any:
        """An argument by schema name (OpOverloads), else by keyword or torch-level position."""
        names = _ALIASES_OF.get(name, (name,))
        if self.schema is not None:
            for n in names:
                if n in self.named:
                    self.read.add(n)
                    return self.named[n]
            return default
        for n in names:
            if n in self.kwargs:
                self.read.add(n)
                return self.kwargs[n]
        if pos is not None and pos < len(self.args):
            self.read.add(pos)
            return self.args[pos]
        return default

    def has(self, name: str, pos: int | None = None) -> bool:
        """Whether the call passes this argument (a schema default counts as passed)."""
        if self.schema is not None:
            return name in self.named
        return name in self.kwargs or (pos is not None and pos < len(self.args))

    def ignore(self, *names: str) -> None:
        """Arguments that do not change this call's values (read, and dropped)."""
        for n in names:
            self.read.add(n)

    def read_all(self) -> tuple[tuple, dict]:
        """Every argument, as given (the converter maps them all)."""
        self.read.update(range(len(self.args)), self.kwargs, self.named)
        return self.args, self.kwargs

    def unread(self) -> list[str]:
        """Arguments nobody read that are not at their default: their meaning would be dropped."""
        if self.schema is not None:
            left = []
            for a in self.schema.arguments:
                if a.name in self.read or a.name in IGNORED_ARGS or a.name not in self.named:
                    continue
                v = self.named[a.name]
                if a.has_default_value() and _same(v, a.default_value):
                    continue
                left.append(f"{a.name}={_short(v)}")
            return left
        left = [f"arg{i}={_short(a)}" for i, a in enumerate(self.args) if i not in self.read]
        return left + [f"{k}={_short(v)}" for k, v in self.kwargs.items() if k not in self.read and k not in IGNORED_ARGS]

    def value(self, a: Any) -> Any:
        return self.conv.value(a)

    def meta(self, a: Any) -> TensorMeta:
        return self.conv.metas[self.value(a)]

    def rank(self, a: Any) -> int:
        return len(self.meta(a).shape)

    def dim(self, d: int, a: Any) -> int:
        """A dim of tensor `a`, non-negative."""
        return d % max(self.rank(a), 1)

    def emit(self, op: str, inputs: list[Arg], attrs: dict | None = None, *, suffix: str | None = None,
             outputs: list[TensorMeta] | None = None) -> Node:
        name = self.conv.name_of(self.node)
        nid = name if suffix is None else f"{name}.{suffix}"
        return Node(nid, op, list(inputs), self.outputs if outputs is None else outputs, attrs or {},
                    self.native, self.scope)

    def one(self, inputs: list[Arg], attrs: dict | None = None, op: str | None = None) -> list[Node]:
        return [self.emit(op or self.op, inputs, attrs)]

    def tmp(self, k: Any, like: TensorMeta, shape=None, dtype: str | None = None) -> TensorMeta:
        """An intermediate value of a multi-node expansion."""
        return TensorMeta(f"{self.conv.name_of(self.node)}.{k}", tuple(like.shape if shape is None else shape),
                          dtype or like.dtype)


def _bind_schema(schema, args: tuple, kwargs: dict) -> dict:
    """OpOverload arguments by their schema names, defaults filled in."""
    named = {}
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            named[a.name] = args[i]
        elif a.name in kwargs:
            named[a.name] = kwargs[a.name]
        elif a.has_default_value():
            named[a.name] = a.default_value
    return named


def _same(v: Any, default: Any) -> bool:
    if isinstance(v, (list, tuple)) or isinstance(default, (list, tuple)):
        return isinstance(v, (list, tuple)) and isinstance(default, (list, tuple)) and list(v) == list(default)
    if isinstance(v, fx.Node):
        return False
    try:
        return bool(v == default) and type(v) is not bool or v is default
    except Exception:  # noqa: BLE001  (values that do not compare are not the default)
        return False


def _short(v: Any) -> str:
    return v.name if isinstance(v, fx.Node) else repr(v)[:40]


def _scope(node: fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return re.sub(r"^L\['[^']*'\]\.?", "", str(path))


# --- converters: (call) -> common-view nodes ---------------------------------------------------

Converter = Callable[[_Call], list[Node]]
_BY_KEY: dict[str, Converter] = {}  # a native bare name (`transpose`, `aten.addmm`) -> converter
_BY_OP: dict[str, Converter] = {}  # a canonical op -> converter


def _converts(*names: str, ops_: tuple[str, ...] = ()):
    """Register a converter for native names (a bare name covers the torch-level function or
    method and `aten.<name>`; `ns.op` names one OpOverload packet) and/or canonical ops."""
    def deco(fn: Converter) -> Converter:
        for n in names:
            _BY_KEY[n] = fn
            if "." not in n:
                _BY_KEY[f"aten.{n}"] = fn
        for o in ops_:
            _BY_OP[o] = fn
        return fn

    return deco


def _dims(dim: Any, rank: int) -> list[int]:
    if rank == 0:  # a 0-d tensor has no dim to reduce (torch accepts 0 and -1 for it)
        return []
    if dim is None or dim == [] or dim == ():
        return list(range(rank))
    if isinstance(dim, int):
        dim = [dim]
    return sorted({d % rank if rank else 0 for d in dim})


def _plain(c: _Call) -> list[Node]:
    """An unknown call as it is: positional tensors and numbers (also tensors in a list) are the
    inputs; other positional arguments are attrs `arg<i>`, keyword arguments attrs by name."""
    inputs, attrs = [], {}
    for i, a in enumerate(c.args):
        v = c.value(a)
        if _is_operand(a, v):
            inputs.append(v)
        elif isinstance(a, (list, tuple)) and any(isinstance(x, fx.Node) for x in a):
            inputs.extend(x for x in v if x is not None)  # e.g. index_put's indices
        else:
            attrs[f"arg{i}"] = _attr(v)
    attrs.update({k: _attr(c.value(v)) for k, v in c.kwargs.items()})
    return c.one(inputs, attrs)


def _is_operand(a: Any, v: Any) -> bool:
    if isinstance(a, fx.Node):
        return isinstance(v, (str, int, float, bool))
    return isinstance(a, (int, float, bool))


def _operand(c: _Call, name: str, pos: int | None = None, required: bool = True) -> Arg:
    """A tensor or number operand as a node input (a value name or a literal)."""
    v = c.value(c.arg(name, pos))
    if v is None and required:
        raise Unmapped(f"no {name}")
    if isinstance(v, (list, tuple)) or (v is not None and not isinstance(v, (str, int, float, bool))):
        raise Unmapped(f"{name} is not a tensor or a number: {_short(v)}")
    return v


# --- elementwise ------------------------------------------------------------------------------

# The operands of elementwise ops by schema name and torch-level position.
_OPERANDS = {"where": ("condition", "self", "other"), "clamp": ("self", "min", "max"), "pow": ("self", "exponent"),
             **{n: ("x", "n") for n in ops.special.POLYNOMIALS}}
_ELEMENTWISE_UNARY = set(_UNARY) | {_SPECIAL.get(f"special_{n}") for n in _SPECIAL_UNARY} | {"bessel_i0"}


@_converts(ops_=tuple(_ELEMENTWISE_UNARY | set(_BINARY) | set(_SPECIAL_BINARY) | {"where"}))
def _elementwise(c: _Call) -> list[Node]:
    names = _OPERANDS.get(c.op, ("self",) if c.op in _ELEMENTWISE_UNARY else ("self", "other"))
    if c.op == "where" and c.node.op == "call_method":
        raise Unmapped("x.where(cond, y): self is not the condition")
    if c.node.op == "call_function" and getattr(c.node.target, "__module__", "") in ("_operator", "operator"):
        inputs = [c.value(a) for a in c.read_all()[0]]  # operator.add(a, b): both positional
    else:
        inputs = [_operand(c, n, i) for i, n in enumerate(names)]
    attrs = {}
    if c.op == "div":
        mode = c.arg("rounding_mode", default="floor" if c.bare in ("floor_divide", "floordiv") else None)
        if c.key == "prims.div" and not c.outputs[0].dtype.startswith("float"):
            mode = "trunc"  # prims.div: C division for integers
        attrs = {"rounding_mode": mode} if mode is not None else {}
    elif c.op == "round" and c.arg("decimals", 1):
        attrs = {"decimals": int(c.arg("decimals", 1))}
    alpha = c.arg("alpha", default=1) if c.op in ("add", "sub") else 1
    if c.bare == "rsub":  # other - alpha * self
        inputs = inputs[::-1]
        if alpha != 1:
            scaled = c.tmp(0, c.outputs[0])
            return [c.emit("mul", [inputs[1], alpha], suffix="0", outputs=[scaled]), c.emit("sub", [inputs[0], scaled.name])]
    if alpha != 1:  # x + alpha * y
        scaled = c.tmp(0, c.outputs[0])
        return [c.emit("mul", [inputs[1], alpha], suffix="0", outputs=[scaled]), c.emit(c.op, [inputs[0], scaled.name])]
    return c.one(inputs, attrs)


@_converts(ops_=("clamp",))
def _clamp(c: _Call) -> list[Node]:
    x = _operand(c, "self", 0)
    if c.bare == "clamp_min":
        return c.one([x, _operand(c, "min", 1), None])
    if c.bare == "clamp_max":
        return c.one([x, None, _operand(c, "max", 1)])
    return c.one([x, _operand(c, "min", 1, required=False), _operand(c, "max", 2, required=False)])


@_converts("square")
def _square(c: _Call) -> list[Node]:
    x = _operand(c, "self", 0)
    return c.one([x, x])


@_converts("prims.fma")
def _fma(c: _Call) -> list[Node]:
    """prims.fma(a, b, c) = a * b + c (Inductor's decompositions emit it)."""
    a, b, addend = (c.value(c.arg(n)) for n in ("a", "b", "c"))
    prod = c.tmp(0, c.outputs[0])
    return [c.emit("mul", [a, b], suffix="0", outputs=[prod]), c.emit("add", [prod.name, addend])]


# --- reductions -----------------------------------------------------------------------------

def _then_reduce(c: _Call, x: Any, op: str, attrs: dict, dtype: Any = None) -> list[Node]:
    """`op` over x, converted first to the call's `dtype` when it names one (torch.sum(x, dtype=...))."""
    dtype = c.arg("dtype") if dtype is None else dtype
    if dtype is None:
        return c.one([c.value(x)], attrs, op=op)
    dtype = canonical_dtype(dtype)
    cast = c.tmp(0, c.meta(x), dtype=dtype)
    return [c.emit("convert", [c.value(x)], {"dtype": dtype}, suffix="0", outputs=[cast]),
            c.emit(op, [cast.name], attrs)]


@_converts(ops_=("sum", "prod", "mean", "var", "any", "all", "amax", "amin"))
def _reduction(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.bare in ("max", "min"):
        return _max_min(c, x)
    keepdim_pos = 3 if c.op == "var" and c.schema is None else 2
    dim = c.arg("dim", 1)
    if isinstance(dim, (bool, torch.dtype)):
        raise Unmapped(f"{c.bare}(x, {dim}): not a dim")
    attrs = {"dims": _dims(dim, c.rank(x)), "keepdim": bool(c.arg("keepdim", keepdim_pos, False))}
    if c.op == "var":
        correction = c.arg("correction")
        unbiased = True if c.key.startswith("prims.") else c.arg("unbiased", 1 if c.overload == "default" else 2, True)
        attrs["correction"] = correction if correction is not None else int(bool(unbiased))
    return _then_reduce(c, x, c.op, attrs)


def _max_min(c: _Call, x) -> list[Node]:
    """torch.max / min: of everything (x), elementwise (x, y), or along a dim: values and indices."""
    reduce, arg, elementwise = ("amax", "argmax", "maximum") if c.bare == "max" else ("amin", "argmin", "minimum")
    other = c.arg("other", 1) if c.schema is not None or not isinstance(c.arg("dim", 1), int) else None
    if isinstance(other, fx.Node):
        return c.one([c.value(x), c.value(other)], op=elementwise)
    dim = c.arg("dim", 1)
    if dim is None:
        return c.one([c.value(x)], {"dims": None, "keepdim": False}, op=reduce)
    dim, keepdim = c.dim(dim, x), bool(c.arg("keepdim", 2, False))
    values, indices = c.outputs
    return [c.emit(reduce, [c.value(x)], {"dims": [dim], "keepdim": keepdim}, suffix="0", outputs=[values]),
            c.emit(arg, [c.value(x)], {"dim": dim, "keepdim": keepdim}, outputs=[indices])]


@_converts(ops_=("argmax", "argmin"))
def _arg_reduction(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    dim = c.arg("dim", 1)
    return c.one([c.value(x)], {"dim": None if dim is None else c.dim(dim, x), "keepdim": bool(c.arg("keepdim", 2, False))})


@_converts(ops_=("cumsum", "cumprod", "logcumsumexp"))
def _scan(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return _then_reduce(c, x, c.op, {"dim": c.dim(c.arg("dim", 1), x)})


@_converts(ops_=("cummax", "cummin"))
def _running(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"dim": c.dim(c.arg("dim", 1), x)})


@_converts("var_mean")
def _var_mean(c: _Call) -> list[Node]:
    """var_mean: a var node (`<node>.0`) and a mean node over the same dims."""
    (var,) = _reduction(c)
    var.id, var.op, var.outputs = f"{c.conv.name_of(c.node)}.0", "var", c.outputs[:1]
    attrs = {k: v for k, v in var.attrs.items() if k != "correction"}
    return [var, c.emit("mean", list(var.inputs), attrs, outputs=c.outputs[1:])]


@_converts("prims.prepare_softmax_online")
def _prepare_softmax_online(c: _Call) -> list[Node]:
    """Inductor's online-softmax statistics (GPU): max and sum(exp(x - max)) along dim, kept."""
    x = c.arg("a")
    meta = c.meta(x)
    dim = c.arg("dim") % len(meta.shape)
    row_max, total = c.outputs
    shifted, exp = c.tmp(1, meta), c.tmp(2, meta)
    keep = {"dims": [dim], "keepdim": True}
    return [c.emit("amax", [c.value(x)], keep, suffix="0", outputs=[row_max]),
            c.emit("sub", [c.value(x), row_max.name], suffix="1", outputs=[shifted]),
            c.emit("exp", [shifted.name], suffix="2", outputs=[exp]),
            c.emit("sum", [exp.name], keep, outputs=[total])]


@_converts("topk", "sort")
def _select_k(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.op == "topk":
        attrs = {"k": int(c.arg("k", 1)), "dim": c.dim(c.arg("dim", 2, -1), x), "largest": bool(c.arg("largest", 3, True)),
                 "sorted": bool(c.arg("sorted", 4, True))}
    else:
        attrs = {"dim": c.dim(c.arg("dim", 1, -1), x), "descending": bool(c.arg("descending", 2, False)),
                 "stable": bool(c.arg("stable", default=False))}
    return c.one([c.value(x)], attrs)


# --- matmul -----------------------------------------------------------------------------------

@_converts("matmul", "mm", "bmm")
def _matmul(c: _Call) -> list[Node]:
    return c.one([_operand(c, "self", 0), _operand(c, "mat2" if c.bare in ("mm", "bmm") else "other", 1)], op="matmul")


@_converts("addmm", "baddbmm")
def _addmm(c: _Call) -> list[Node]:
    bias = c.arg("self", 0)
    a = c.arg("mat1", 1) if c.bare == "addmm" else c.arg("batch1", 1)
    b = c.arg("mat2", 2) if c.bare == "addmm" else c.arg("batch2", 2)
    beta, alpha = c.arg("beta", default=1), c.arg("alpha", default=1)
    out = c.outputs[0]
    prod = c.tmp(0, out)
    nodes = [c.emit("matmul", [c.value(a), c.value(b)], suffix="0", outputs=[prod])]
    lhs: Arg = prod.name
    if alpha != 1:
        scaled = c.tmp(1, out)
        nodes.append(c.emit("mul", [lhs, alpha], suffix="1", outputs=[scaled]))
        lhs = scaled.name
    if beta == 0:  # bias ignored, NaNs included (torch's rule)
        nodes[-1] = replace(nodes[-1], id=c.conv.name_of(c.node), outputs=c.outputs)
        return nodes
    bias_in = c.value(bias)
    if beta != 1:
        scaled_bias = c.tmp(2, c.meta(bias))
        nodes.append(c.emit("mul", [bias_in, beta], suffix="2", outputs=[scaled_bias]))
        bias_in = scaled_bias.name
    nodes.append(c.emit("add", [lhs, bias_in]))
    return nodes


# --- data movement ---------------------------------------------------------------------------

@_converts(ops_=("reshape",))
def _reshape(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    dtype = next((a for a in c.args[1:] + tuple(c.kwargs.values()) if isinstance(a, torch.dtype)), None)
    if dtype is not None:  # x.view(torch.int32), aten.view.dtype: the bits read as another dtype
        c.read_all()
        return c.one([c.value(x)], {"dtype": canonical_dtype(dtype), "from_dtype": c.meta(x).dtype}, op="bitcast")
    c.read_all()  # the target shape is the output's
    return c.one([c.value(x)], {"shape": list(c.outputs[0].shape)}, op="reshape")


@_converts("permute", "transpose", "t", "swapaxes", "prims.transpose")
def _permute(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    rank = c.rank(x)
    if c.key == "prims.transpose":
        perm = [d % rank for d in c.arg("permutation")]
    elif c.bare == "permute":
        if c.schema is not None:
            dims = list(c.arg("dims"))
        else:
            args, _ = c.read_all()
            dims = c.kwargs.get("dims", args[1] if len(args) == 2 and isinstance(args[1], (list, tuple)) else args[1:])
        perm = [d % rank for d in dims]
    else:
        perm = list(range(rank))
        if rank >= 2:
            d0 = c.arg("dim0", 1) if c.bare == "transpose" else (c.arg("axis0", 1) if c.bare == "swapaxes" else 0)
            d1 = c.arg("dim1", 2) if c.bare == "transpose" else (c.arg("axis1", 2) if c.bare == "swapaxes" else 1)
            perm[d0 % rank], perm[d1 % rank] = perm[d1 % rank], perm[d0 % rank]
    return c.one([c.value(x)], {"perm": perm}, op="permute")


@_converts(ops_=("broadcast",))
def _broadcast(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    out = c.outputs[0]
    if c.bare == "repeat":
        return _repeat(c, x)
    if c.key == "prims.broadcast_in_dim":
        dims = [int(d) for d in c.arg("broadcast_dimensions")]
    else:
        dims = list(range(len(out.shape) - c.rank(x), len(out.shape)))
    c.read_all()  # the target shape is the output's
    return c.one([c.value(x)], {"shape": list(out.shape), "broadcast_dims": dims})


def _repeat(c: _Call, x) -> list[Node]:
    """x.repeat(r): x tiled; x's dims interleaved with size-r dims, broadcast, flattened."""
    c.read_all()
    meta, out = c.meta(x), c.outputs[0]
    reps = list(out.shape[i] // max(s, 1) for i, s in enumerate([1] * (len(out.shape) - len(meta.shape)) + list(meta.shape)))
    full = [1] * (len(out.shape) - len(meta.shape)) + list(meta.shape)
    wide = [d for r, s in zip(reps, full) for d in (r, s)]
    one = [d for s in full for d in (1, s)]
    a, b = c.tmp(0, meta, one), c.tmp(1, meta, wide)
    return [c.emit("reshape", [c.value(x)], {"shape": one}, suffix="0", outputs=[a]),
            c.emit("broadcast", [a.name], {"shape": wide, "broadcast_dims": list(range(len(wide)))}, suffix="1",
                   outputs=[b]),
            c.emit("reshape", [b.name], {"shape": list(out.shape)})]


@_converts(ops_=("concat", "stack"))
def _concat(c: _Call) -> list[Node]:
    tensors = [c.value(t) for t in c.arg("tensors", 0)]
    dim = c.arg("dim", 1, 0) % len(c.outputs[0].shape)
    if c.op == "concat":  # torch.cat skips 1-d empty tensors (legacy)
        tensors = [t for t in tensors if c.conv.metas[t].shape != (0,)] or tensors[:1]
    return c.one(tensors, {"dim": dim})


def _slice_attrs(shape: tuple[int, ...], dim: int, start: int, limit: int, step: int = 1) -> dict:
    starts, limits, steps = [0] * len(shape), list(shape), [1] * len(shape)
    starts[dim], limits[dim], steps[dim] = start, limit, step
    return {"start": starts, "limit": limits, "step": steps}


def _clamp_index(i: Any, size: int, default: int) -> int:
    if i is None:
        return default
    i = int(i)
    if i < 0:
        i += size
    return min(max(i, 0), size)


def _slice_bounds(c: _Call, shape) -> tuple[int, dict]:
    dim = c.arg("dim", default=0) % len(shape)
    start = _clamp_index(c.arg("start"), shape[dim], 0)
    end = max(_clamp_index(c.arg("end"), shape[dim], shape[dim]), start)
    return dim, _slice_attrs(shape, dim, start, end, int(c.arg("step", default=1)))


@_converts("slice")
def _slice(c: _Call) -> list[Node]:
    x = c.arg("self")
    _, attrs = _slice_bounds(c, c.meta(x).shape)
    return c.one([c.value(x)], attrs)


@_converts("select", "narrow")
def _select(c: _Call) -> list[Node]:
    """select: a one-wide slice, then a reshape that drops the dim; narrow: a slice."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    dim = c.arg("dim", 1) % len(shape)
    start = _clamp_index(c.arg("start", 2) if c.bare == "narrow" else c.arg("index", 2), shape[dim], 0)
    if c.bare == "narrow":
        return c.one([c.value(x)], _slice_attrs(shape, dim, start, start + int(c.arg("length", 3))))
    kept = tuple(1 if i == dim else s for i, s in enumerate(shape))
    sliced = c.tmp(0, c.outputs[0], kept)
    return [c.emit("slice", [c.value(x)], _slice_attrs(shape, dim, start, start + 1), suffix="0", outputs=[sliced]),
            c.emit("reshape", [sliced.name], {"shape": list(c.outputs[0].shape)})]


@_converts("split", "split_with_sizes", "chunk", "unbind")
def _split(c: _Call) -> list[Node]:
    """One slice node per piece (ids `<node>.<i>`), each producing that piece's value; unbind's
    pieces drop the dim (a reshape after each)."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    dim = c.arg("dim", 1 if c.bare == "unbind" else 2, 0) % len(shape)
    c.arg("split_size", 1), c.arg("split_sizes", 1), c.arg("split_size_or_sections", 1), c.arg("chunks", 1)
    nodes, start = [], 0
    for i, out in enumerate(c.outputs):
        size = 1 if c.bare == "unbind" else out.shape[dim]
        attrs = _slice_attrs(shape, dim, start, start + size)
        if c.bare == "unbind":
            kept = c.tmp(f"{i}.0", out, tuple(1 if d == dim else s for d, s in enumerate(shape)))
            nodes += [c.emit("slice", [c.value(x)], attrs, suffix=f"{i}.0", outputs=[kept]),
                      c.emit("reshape", [kept.name], {"shape": list(out.shape)}, suffix=str(i), outputs=[out])]
        else:
            nodes.append(c.emit("slice", [c.value(x)], attrs, suffix=str(i), outputs=[out]))
        start += size
    return nodes


@_converts("diagonal")
def _diagonal(c: _Call) -> list[Node]:
    """x.diagonal(offset, dim1, dim2): dim1 and dim2 moved last and flattened, then every
    (n2 + 1)-th element from the first on the diagonal (a strided slice)."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    offset, d1, d2 = int(c.arg("offset", 1, 0)), c.dim(c.arg("dim1", 2, 0), x), c.dim(c.arg("dim2", 3, 1), x)
    rest = [d for d in range(len(shape)) if d not in (d1, d2)]
    n1, n2 = shape[d1], shape[d2]
    out = c.outputs[0]
    length = out.shape[-1]
    moved = [shape[d] for d in rest] + [n1, n2]
    flat = [shape[d] for d in rest] + [n1 * n2]
    first = offset if offset >= 0 else -offset * n2
    lead = [0] * len(rest)
    a, b = c.tmp(0, out, moved), c.tmp(1, out, flat)
    return [c.emit("permute", [c.value(x)], {"perm": rest + [d1, d2]}, suffix="0", outputs=[a]),
            c.emit("reshape", [a.name], {"shape": flat}, suffix="1", outputs=[b]),
            c.emit("slice", [b.name], {"start": lead + [first if length else 0],
                                       "limit": [shape[d] for d in rest] + [first + (length - 1) * (n2 + 1) + 1 if length else 0],
                                       "step": [1] * len(rest) + [n2 + 1]})]


@_converts("getitem")
def _getitem_tensor(c: _Call) -> list[Node]:
    """Tensor indexing at the torch level: basic indexing (slices, ints, None, ...) is a slice
    followed by a reshape; one integer index tensor is a take along dim 0; the rest is expanded."""
    (x, index), _ = c.read_all()
    shape = c.meta(x).shape
    items = list(index) if isinstance(index, tuple) else [index]
    if len(items) == 1 and isinstance(items[0], fx.Node) and c.meta(items[0]).dtype not in ("bool", "uint8"):
        return c.one([c.value(x), c.value(items[0])], {"dim": 0}, op="take")
    if any(isinstance(i, fx.Node) or not isinstance(i, (slice, int, type(None), type(Ellipsis))) for i in items):
        raise Unmapped("advanced indexing")
    if any(isinstance(s, fx.Node) for i in items if isinstance(i, slice) for s in (i.start, i.stop, i.step)):
        raise Unmapped("symbolic slice bounds")
    if Ellipsis in items:
        at = items.index(Ellipsis)
        fill = len(shape) - sum(1 for i in items if i is not None and i is not Ellipsis)
        items[at:at + 1] = [slice(None)] * fill
    starts, limits, steps, kept, d = [], [], [], [], 0
    for i in items:
        if i is None:
            continue
        size = shape[d]
        if isinstance(i, int):
            s = _clamp_index(i, size, 0)
            starts.append(s), limits.append(s + 1), steps.append(1), kept.append(1)
        else:
            lo, hi, st = i.indices(size)
            starts.append(lo), limits.append(max(hi, lo)), steps.append(st)
            kept.append(len(range(lo, hi, st)))
        d += 1
    for size in shape[d:]:
        starts.append(0), limits.append(size), steps.append(1), kept.append(size)
    out = c.outputs[0]
    if list(kept) == list(shape):  # only None / full slices: a reshape
        return c.one([c.value(x)], {"shape": list(out.shape)}, op="reshape")
    if tuple(kept) == out.shape:
        return c.one([c.value(x)], {"start": starts, "limit": limits, "step": steps})
    sliced = c.tmp(0, out, kept)
    return [c.emit("slice", [c.value(x)], {"start": starts, "limit": limits, "step": steps}, suffix="0",
                   outputs=[sliced]),
            c.emit("reshape", [sliced.name], {"shape": list(out.shape)})]


@_converts("flip", "prims.rev")
def _flip(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"dims": _dims(c.arg("dims", 1), c.rank(x)) if c.arg("dims", 1) else []})


@_converts("constant_pad_nd")
def _constant_pad(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x), c.arg("value", 2, 0)], {"padding": _pad_config(c.arg("pad", 1), c.rank(x))})


def _pad_config(pad, rank: int, interior: bool = True) -> list[list[int]]:
    """torch's pad list (last dim first, (lo, hi) pairs) as one [lo, hi(, 0)] per dim."""
    config = [[0, 0] for _ in range(rank)]
    for i in range(len(pad) // 2):
        config[rank - 1 - i] = [int(pad[2 * i]), int(pad[2 * i + 1])]
    return [p + [0] for p in config] if interior else config


@_converts(ops_=("reflection_pad", "replication_pad"))
def _mode_pad(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"padding": _pad_config(c.arg("padding", 1), c.rank(x), interior=False)})


@_converts("as_strided")
def _as_strided(c: _Call) -> list[Node]:
    """as_strided reads x's storage: only a contiguous x from its start has the layout assumed."""
    x = c.arg("self", 0)
    example = _example(x)
    if not example.is_contiguous() or example.storage_offset() != 0:
        raise Unmapped("as_strided of a strided view")
    return c.one([c.value(x)], {"size": [int(s) for s in c.arg("size", 1)], "stride": [int(s) for s in c.arg("stride", 2)],
                                "storage_offset": int(c.arg("storage_offset", 3) or 0)})


# --- indexing ---------------------------------------------------------------------------------

@_converts("gather", "scatter_add")
def _gather(c: _Call) -> list[Node]:
    """torch.gather(x, dim, index) / torch.scatter_add(x, dim, index, src)."""
    x = c.arg("self", 0)
    if c.rank(x) == 0:
        raise Unmapped("a 0-d input")
    c.ignore("sparse_grad")
    inputs = [c.value(x), c.value(c.arg("index", 2))]
    if c.op == "scatter_add":
        inputs.append(c.value(c.arg("src", 3)))
    return c.one(inputs, {"dim": c.dim(c.arg("dim", 1), x)})


@_converts("take_along_dim")
def _take_along_dim(c: _Call) -> list[Node]:
    """torch.take_along_dim(x, indices, dim): a gather where the two agree outside dim (it
    broadcasts them, and dim None means the flattened x: those are expanded)."""
    x, idx, dim = c.arg("self", 0), c.arg("indices", 1), c.arg("dim", 2)
    xs, ids = c.meta(x).shape, c.meta(idx).shape
    if dim is None or len(xs) != len(ids):
        raise Unmapped("take_along_dim that flattens or broadcasts")
    dim %= len(xs)
    if any(a != b for d, (a, b) in enumerate(zip(xs, ids)) if d != dim):
        raise Unmapped("take_along_dim that broadcasts")
    return c.one([c.value(x), c.value(idx)], {"dim": dim})


@_converts("index_add")
def _index_add(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.rank(x) == 0:
        raise Unmapped("a 0-d input")
    inputs = [c.value(x), c.value(c.arg("index", 2)), c.value(c.arg("source", 3))]
    return c.one(inputs, {"dim": c.dim(c.arg("dim", 1), x), "alpha": c.arg("alpha", default=1)})


@_converts("scatter")
def _scatter(c: _Call) -> list[Node]:
    if c.arg("reduce") is not None:
        raise Unmapped("scatter with reduce")
    x = c.arg("self", 0)
    if c.rank(x) == 0:
        raise Unmapped("a 0-d input")
    src = c.arg("src", 3) if c.has("src", 3) and c.arg("src", 3) is not None else c.arg("value", 3)
    return c.one([c.value(x), c.value(c.arg("index", 2)), c.value(src)], {"dim": c.dim(c.arg("dim", 1), x)})


@_converts("scatter_reduce")
def _scatter_reduce(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x), c.value(c.arg("index", 2)), c.value(c.arg("src", 3))],
                 {"dim": c.dim(c.arg("dim", 1), x), "reduce": c.arg("reduce", 4),
                  "include_self": bool(c.arg("include_self", 5, True))})


@_converts("index_put", "index_put_", "_unsafe_index_put")
def _index_put(c: _Call) -> list[Node]:
    indices = [c.value(i) for i in c.arg("indices", 1)]
    return c.one([c.value(c.arg("self", 0)), _operand(c, "values", 2), *indices],
                 {"accumulate": bool(c.arg("accumulate", 3, False))})


@_converts("index", "_unsafe_index")
def _index(c: _Call) -> list[Node]:
    """aten.index: with one integer index tensor a `take` along its dim, else `index`."""
    x, indices = c.arg("self"), list(c.arg("indices"))
    present = [i for i, t in enumerate(indices) if t is not None]
    if len(present) == 1 and c.meta(indices[present[0]]).dtype not in ("bool", "uint8"):
        return c.one([c.value(x), c.value(indices[present[0]])], {"dim": present[0]}, op="take")
    return c.one([c.value(x), *(c.value(t) for t in indices)], op="index")


@_converts("index_select")
def _index_select(c: _Call) -> list[Node]:
    x, index = c.arg("self", 0), c.arg("index", 2)
    if c.rank(x) > 0:
        return c.one([c.value(x), c.value(index)], {"dim": c.dim(c.arg("dim", 1), x)}, op="take")
    c.arg("dim", 1)  # a 0-d x is one element along dim 0 (torch's rule), the result 0-d again
    row, taken = c.tmp(0, c.meta(x), (1,)), c.tmp(1, c.meta(x), c.meta(index).shape)
    return [c.emit("reshape", [c.value(x)], {"shape": [1]}, suffix="0", outputs=[row]),
            c.emit("take", [row.name, c.value(index)], {"dim": 0}, suffix="1", outputs=[taken]),
            c.emit("reshape", [taken.name], {"shape": list(c.outputs[0].shape)})]


@_converts("slice_scatter", "select_scatter")
def _slice_scatter(c: _Call) -> list[Node]:
    """slice_scatter(x, src, dim, start, end, step); select_scatter(x, src, dim, index): src gets
    its dim back (a reshape) and goes into a one-wide slice."""
    x, src = c.arg("self", 0), c.arg("src", 1)
    shape = c.meta(x).shape
    if c.bare == "slice_scatter":
        _, attrs = _slice_bounds(c, shape)
        return c.one([c.value(x), c.value(src)], attrs)
    dim = c.dim(c.arg("dim", 2), x)
    index = _clamp_index(c.arg("index", 3), shape[dim], 0)
    kept = tuple(1 if d == dim else s for d, s in enumerate(shape))
    wide = c.tmp(0, c.meta(src), kept)
    return [c.emit("reshape", [c.value(src)], {"shape": list(kept)}, suffix="0", outputs=[wide]),
            c.emit("slice_scatter", [c.value(x), wide.name], _slice_attrs(shape, dim, index, index + 1))]


@_converts("view_as_real", "view_as_complex", "complex")
def _operands_only(c: _Call) -> list[Node]:
    """Ops whose arguments are all operands: their tensors, in order."""
    args, kwargs = c.read_all()
    if kwargs:
        raise Unmapped(f"keyword arguments {sorted(kwargs)}")
    return c.one([_operand(c, n, i) for i, n in enumerate(("self", "other")[:len(args)])])


@_converts("masked_scatter")
def _masked_scatter(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("mask", 1)), c.value(c.arg("source", 2))])


@_converts("nonzero")
def _nonzero(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0))])


# --- casts, copies, creation -----------------------------------------------------------------------

@_converts(ops_=("convert",))
def _convert(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.schema is not None:
        c.arg("dtype")
    else:
        c.read_all()  # .to(dtype / device / other), .float(), .type(dtype): the output says which dtype
        if c.bare == "type" and len(c.args) < 2 and not c.kwargs:
            raise Unmapped("x.type() names the type")
    out = c.outputs[0]
    if c.meta(x).dtype == out.dtype:  # .to(device), .contiguous() under another name
        return c.one([c.value(x)], op="copy")
    return c.one([c.value(x)], {"dtype": out.dtype})


@_converts(ops_=("copy",))
def _copy(c: _Call) -> list[Node]:
    """clone / contiguous: a copy; x.copy_(src): src in x's dtype and shape."""
    if c.bare in ("copy", "copy_"):
        c.arg("self", 0)
        return _copy_into(c, c.arg("src", 1))
    return _copy_into(c, c.arg("self", 0))


def _copy_into(c: _Call, src: Any) -> list[Node]:
    """src's values (a tensor or a number) converted to the output's dtype and broadcast to its shape."""
    out = c.outputs[0]
    if not isinstance(src, fx.Node):
        return c.one([], {"shape": list(out.shape), "value": _attr(c.value(src)), "dtype": out.dtype}, op="full")
    meta = c.meta(src)
    if (meta.shape, meta.dtype) == (out.shape, out.dtype):
        return c.one([c.value(src)], op="copy")
    if meta.shape == out.shape:
        return c.one([c.value(src)], {"dtype": out.dtype}, op="convert")
    value, nodes = c.value(src), []
    if meta.dtype != out.dtype:
        cast = c.tmp(0, meta, dtype=out.dtype)
        nodes.append(c.emit("convert", [value], {"dtype": out.dtype}, suffix="0", outputs=[cast]))
        value = cast.name
    rank = len(out.shape)
    dims = list(range(rank - len(meta.shape), rank))
    return nodes + [c.emit("broadcast", [value], {"shape": list(out.shape), "broadcast_dims": dims}, op="broadcast")]


_FILL_VALUES = {"ones": 1, "ones_like": 1, "new_ones": 1, "zeros": 0, "zeros_like": 0, "new_zeros": 0, "zero": 0,
                "zero_": 0, "_efficientzerotensor": 0}


@_converts(ops_=("full", "empty"))
def _full(c: _Call) -> list[Node]:
    """Creation ops: the output's shape and dtype, a fill value from the call."""
    bare, out = c.bare, c.outputs[0]
    c.arg("dtype"), c.arg("size", 0), c.arg("stride", 1), c.arg("shape"), c.arg("strides"), c.arg("physical_layout")
    if bare.endswith("_like") or bare.startswith("new_") or bare in ("fill", "fill_", "zero", "zero_"):
        c.arg("self", 0)  # a tensor giving the shape (and default dtype); its values unused
    if c.schema is None:
        c.read_all()  # sizes given as positional ints; the output's shape is the result
    if c.op == "empty":
        return c.one([], {"shape": list(out.shape), "dtype": out.dtype})
    if bare in _FILL_VALUES:
        value = _FILL_VALUES[bare]
    elif bare == "scalar_tensor":
        value = c.arg("s", 0)
    elif bare in ("fill", "fill_"):
        value = c.arg("value", 1)
        if isinstance(value, fx.Node):  # a 0-d tensor's value, in x's dtype, everywhere
            return _copy_into(c, value)
    else:
        value = c.arg("fill_value", 2 if bare == "new_full" else 1)
    value = c.value(value)
    if not isinstance(value, (int, float, bool)):
        raise Unmapped(f"fill value {_short(value)}")
    return c.one([], {"shape": list(out.shape), "value": value, "dtype": out.dtype})


@_converts("arange", "prims.iota")
def _arange(c: _Call) -> list[Node]:
    """iota, then `* step` and `+ start` where they are not 1 and 0 (arange's values are
    start + i * step, computed in the output dtype)."""
    out = c.outputs[0]
    c.arg("dtype")
    if c.schema is not None and c.bare == "arange":
        start = c.arg("start", default=0) if c.overload != "default" else 0
        step = c.arg("step", default=1)
        c.arg("end")
    elif c.schema is not None:  # prims.iota(length, start, step)
        start, step = c.arg("start"), c.arg("step")
        c.arg("length")
    else:
        args, kwargs = c.read_all()
        start = kwargs.get("start", args[0] if len(args) >= 2 else 0)
        step = kwargs.get("step", args[2] if len(args) >= 3 else 1)
    start, step = c.value(start), c.value(step)
    if isinstance(start, float) or isinstance(step, float):
        if out.dtype.startswith(("int", "uint")):
            raise Unmapped("an integer arange of float bounds")
    iota = {"shape": list(out.shape), "dim": 0, "dtype": out.dtype}
    if start == 0 and step == 1:
        return c.one([], iota, op="iota")
    nodes = [c.emit("iota", [], iota, suffix="0", outputs=[c.tmp(0, out)])]
    if step != 1:
        nodes.append(c.emit("mul", [nodes[-1].outputs[0].name, step], suffix="1", outputs=[c.tmp(1, out)]))
    nodes.append(c.emit("add", [nodes[-1].outputs[0].name, start]))
    return nodes


@_converts(ops_=("rand", "randperm"))
def _rand(c: _Call) -> list[Node]:
    out = c.outputs[0]
    c.read_all()
    if c.op == "randperm":
        return c.one([], {"n": out.shape[0], "dtype": out.dtype})
    distribution = "normal" if "randn" in c.key else "uniform"
    return c.one([], {"shape": list(out.shape), "dtype": out.dtype, "distribution": distribution})


# --- nn composites ---------------------------------------------------------------------------

@_converts("tril", "triu")
def _triangle(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0))], {"diagonal": int(c.arg("diagonal", 1, 0))})


@_converts("masked_fill")
def _masked_fill(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("mask", 1)), _operand(c, "value", 2)])


@_converts(ops_=("gelu", "gelu_backward"))
def _gelu(c: _Call) -> list[Node]:
    if c.op == "gelu":
        inputs = [c.value(c.arg("self", 0))]
    else:
        inputs = [c.value(c.arg("grad_output", 0)), c.value(c.arg("self", 1))]
    return c.one(inputs, {"approximate": c.arg("approximate", default="none")})


@_converts(ops_=("relu", "silu", "sigmoid_backward", "tanh_backward", "silu_backward", "threshold_backward"))
def _activation(c: _Call) -> list[Node]:
    if c.op in ("relu", "silu"):
        c.ignore("inplace")
        return c.one([c.value(c.arg("self", 0))])
    second = c.arg("output") if c.op in ("tanh_backward", "sigmoid_backward") else c.arg("self")
    attrs = {"threshold": c.arg("threshold")} if c.op == "threshold_backward" else {}
    return c.one([c.value(c.arg("grad_output")), c.value(second)], attrs)


@_converts(ops_=("elu", "hardtanh", "leaky_relu"))
def _parametric_activation(c: _Call) -> list[Node]:
    c.ignore("inplace")
    x = c.value(c.arg("self", 0))
    if c.op == "elu":
        return c.one([x], {"alpha": c.arg("alpha", 1, 1.0), "scale": c.arg("scale", default=1.0),
                           "input_scale": c.arg("input_scale", default=1.0)})
    if c.op == "hardtanh":
        return c.one([x], {"min_val": c.arg("min_val", 1, -1.0), "max_val": c.arg("max_val", 2, 1.0)})
    return c.one([x], {"negative_slope": c.arg("negative_slope", 1, 0.01)})


@_converts(ops_=("softmax", "log_softmax"))
def _softmax(c: _Call) -> list[Node]:
    """softmax(x, dim[, dtype]); ATen's _softmax(x, dim, half_to_float): half in, float out."""
    x = c.arg("self", 0)
    attrs = {"dim": c.dim(c.arg("dim", 1), x)}
    if c.bare.startswith("_"):
        if c.arg("half_to_float") and c.meta(x).dtype != c.outputs[0].dtype:
            raise Unmapped("half_to_float")
        return c.one([c.value(x)], attrs)
    third = c.arg("_stacklevel", 2)  # F.softmax(x, dim, _stacklevel, dtype); torch.softmax(x, dim, dtype)
    dtype = third if isinstance(third, torch.dtype) else c.arg("dtype", 3 if c.schema is None else None)
    return _then_reduce(c, x, c.op, attrs, dtype)


@_converts("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(c: _Call) -> list[Node]:
    y, g = c.arg("output"), c.arg("grad_output")
    if canonical_dtype(c.arg("input_dtype")) != c.meta(g).dtype:
        raise Unmapped("input_dtype differs from the gradient's")
    return c.one([c.value(g), c.value(y)], {"dim": c.dim(c.arg("dim"), y)})


@_converts(ops_=("dropout",))
def _dropout(c: _Call) -> list[Node]:
    c.ignore("inplace")
    train = c.arg("train") if c.schema is not None else c.arg("training", 2, True)
    return c.one([c.value(c.arg("self", 0))], {"p": float(c.arg("p", 1, 0.5)), "training": bool(train)})


@_converts(ops_=("layer_norm", "rms_norm"))
def _norm(c: _Call) -> list[Node]:
    x, weight = c.arg("self", 0), c.arg("weight", 2)
    eps = c.arg("eps", 4 if c.op == "layer_norm" else 3)
    c.ignore("cudnn_enable")
    if eps is None:  # the defaults: layer_norm 1e-5, rms_norm the dtype's machine epsilon
        eps = 1e-5 if c.op == "layer_norm" else torch.finfo(getattr(torch, c.meta(x).dtype)).eps
    inputs = [c.value(x), c.value(weight)]
    if c.op == "layer_norm":
        inputs.append(c.value(c.arg("bias", 3)))
    return c.one(inputs, {"normalized_ndim": len(c.arg("normalized_shape", 1)), "eps": float(eps)})


@_converts(ops_=("layer_norm_backward",))
def _layer_norm_backward(c: _Call) -> list[Node]:
    names = ("grad_out", "input", "mean", "rstd", "weight", "bias")
    attrs = {"normalized_ndim": len(c.arg("normalized_shape")), "grads": [bool(b) for b in c.arg("output_mask")]}
    return c.one([c.value(c.arg(n)) for n in names], attrs)


@_converts(ops_=("batch_norm",))
def _batch_norm(c: _Call) -> list[Node]:
    """ATen's _native_batch_norm_legit(_functional / _no_training / .no_stats)."""
    x, w, b = (c.value(c.arg(n)) for n in ("input", "weight", "bias"))
    stats = [c.value(c.arg(n)) for n in ("running_mean", "running_var")]
    training = bool(c.arg("training", default=False))
    return c.one([x, w, b, *stats], {"training": training, "momentum": float(c.arg("momentum")),
                                     "eps": float(c.arg("eps"))})


@_converts(ops_=("group_norm", "group_norm_backward"))
def _group_norm(c: _Call) -> list[Node]:
    c.arg("N"), c.arg("C"), c.arg("HxW")  # x's shape says them
    if c.op == "group_norm":
        inputs = [c.value(c.arg(n)) for n in ("input", "weight", "bias")]
        return c.one(inputs, {"groups": int(c.arg("group")), "eps": float(c.arg("eps"))})
    inputs = [c.value(c.arg(n)) for n in ("grad_out", "input", "mean", "rstd", "weight")]
    return c.one(inputs, {"groups": int(c.arg("group")), "grads": [bool(m) for m in c.arg("output_mask")]})


@_converts(ops_=("linear",))
def _linear(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("weight", 1)), c.value(c.arg("bias", 2))])


@_converts(ops_=("sdpa",))
def _sdpa(c: _Call) -> list[Node]:
    q, k, v = (c.value(c.arg(n, i)) for i, n in enumerate(("query", "key", "value")))
    mask = c.arg("attn_mask", 3) if c.has("attn_mask", 3) else c.arg("attn_bias", 3)
    attrs = {"is_causal": bool(c.arg("is_causal", 5, False)), "scale": c.arg("scale", 6),
             "enable_gqa": bool(c.arg("enable_gqa", 7, False))}
    dropout = c.arg("dropout_p", 4, 0.0)
    if dropout:
        attrs["dropout_p"] = float(dropout)
    c.ignore("return_debug_mask", "compute_log_sumexp", "return_softmax")
    return c.one([q, k, v, c.value(mask)], attrs)


@_converts(ops_=("sdpa_backward",))
def _sdpa_backward(c: _Call) -> list[Node]:
    grad = c.arg("grad_out") if c.has("grad_out") else c.arg("grad_out_")
    if c.arg("dropout_p", default=0.0):
        raise Unmapped("attention backward with dropout")
    mask = c.arg("attn_mask") if c.has("attn_mask") else c.arg("attn_bias")
    c.ignore("philox_seed", "philox_offset", "cum_seq_q", "cum_seq_k", "max_q", "max_k", "grad_input_mask",
             "window_size_left", "window_size_right", "seqused_k", "alibi_slopes", "rng_state", "unused")
    inputs = [c.value(a) for a in (grad, *(c.arg(n) for n in ("query", "key", "value", "out", "logsumexp")))]
    return c.one(inputs + [c.value(mask)], {"is_causal": bool(c.arg("is_causal", default=False)), "scale": c.arg("scale"),
                                            "enable_gqa": bool(c.arg("enable_gqa", default=False))})


@_converts(ops_=("embedding",))
def _embedding(c: _Call) -> list[Node]:
    if c.schema is not None:
        c.ignore("padding_idx", "scale_grad_by_freq")  # gradient-only
        return c.one([c.value(c.arg("weight")), c.value(c.arg("indices"))])
    if c.arg("max_norm", 3) is not None:
        raise Unmapped("embedding with max_norm renormalizes the weight")
    c.arg("padding_idx", 2), c.arg("norm_type", 4), c.arg("scale_grad_by_freq", 5), c.arg("sparse", 6)
    return c.one([c.value(c.arg("weight", 1)), c.value(c.arg("self", 0))])


@_converts(ops_=("embedding_backward",))
def _embedding_backward(c: _Call) -> list[Node]:
    padding_idx = c.arg("padding_idx", default=-1)  # ATen's -1: none (F.embedding made a negative one positive)
    return c.one([c.value(c.arg("grad_output")), c.value(c.arg("indices"))],
                 {"num_weights": int(c.arg("num_weights")), "padding_idx": None if padding_idx < 0 else int(padding_idx),
                  "scale_grad_by_freq": bool(c.arg("scale_grad_by_freq", default=False))})


_REDUCTIONS = ("none", "mean", "sum")  # ATen's int reduction codes


@_converts(ops_=("cross_entropy", "nll_loss", "nll_loss_backward"))
def _loss(c: _Call) -> list[Node]:
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


@_converts(ops_=("convolution", "convolution_backward"))
def _convolution(c: _Call) -> list[Node]:
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


@_converts(ops_=("max_pool", "max_pool_backward", "avg_pool", "avg_pool_backward"))
def _pool(c: _Call) -> list[Node]:
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


@_converts(ops_=("grouped_mm", "grouped_mm_backward"))
def _grouped_mm(c: _Call) -> list[Node]:
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


@_converts(ops_=("adaptive_avg_pool", "adaptive_avg_pool_backward"))
def _adaptive_pool(c: _Call) -> list[Node]:
    if c.op == "adaptive_avg_pool":
        return c.one([c.value(c.arg("self"))], {"output_size": [int(s) for s in c.arg("output_size")]})
    return c.one([c.value(c.arg("grad_output")), c.value(c.arg("self"))], {"spatial": 3 if "3d" in c.key else 2})


@_converts(ops_=("upsample",))
def _upsample(c: _Call) -> list[Node]:
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


def _library(c: _Call) -> list[Node]:
    """An op declared from one ATen overload (irlens.ops.core.from_aten): its tensors the operands
    and its other arguments the attrs, by schema name; another overload of it is expanded."""
    decl = ops.OPS[c.op]
    if c.node.target is not decl.aten:
        raise Unmapped(f"{c.node.target} is not {decl.aten}")
    inputs, attrs = [], {}
    for a in c.schema.arguments:
        v = c.arg(a.name)
        if a.name in decl.attrs:
            attrs[a.name] = _attr(c.value(v))
        elif isinstance(v, (list, tuple)):
            inputs.extend(c.value(t) for t in v)
        else:
            inputs.append(c.value(v))
    return c.one(inputs, attrs)


for _name, _op in ops.OPS.items():
    if _op.aten is not None:
        _BY_OP[_name] = _library


@_converts("polygamma")
def _polygamma(c: _Call) -> list[Node]:
    return c.one([_operand(c, "self", 1)], {"n": int(c.arg("n", 0))})


@_converts("addbmm")
def _addbmm(c: _Call) -> list[Node]:
    """addbmm(x, b1, b2, beta, alpha) = beta * x + alpha * sum over the batch of b1 @ b2."""
    x, b1, b2 = c.arg("self", 0), c.arg("batch1", 1), c.arg("batch2", 2)
    beta, alpha = c.arg("beta", default=1), c.arg("alpha", default=1)
    out = c.outputs[0]
    batch = c.meta(b1).shape[0]
    prods, summed = c.tmp(0, out, (batch, *out.shape)), c.tmp(1, out)
    nodes = [c.emit("matmul", [c.value(b1), c.value(b2)], suffix="0", outputs=[prods]),
             c.emit("sum", [prods.name], {"dims": [0], "keepdim": False}, suffix="1", outputs=[summed])]
    scaled_x, scaled = c.tmp(2, c.meta(x)), c.tmp(3, out)
    nodes += [c.emit("mul", [c.value(x), beta], suffix="2", outputs=[scaled_x]),
              c.emit("mul", [summed.name, alpha], suffix="3", outputs=[scaled])]
    if beta == 0:  # x ignored, NaNs included (torch's rule)
        return nodes[:2] + [replace(nodes[3], id=c.conv.name_of(c.node), outputs=c.outputs)]
    return nodes + [c.emit("add", [scaled_x.name, scaled.name])]


@_converts("cholesky")
def _cholesky(c: _Call) -> list[Node]:
    """torch.cholesky (deprecated): linalg_cholesky_ex's factor, errors unchecked."""
    if c.schema is not None and c.node.target is ops.OPS["cholesky"].aten:
        return _library(c)
    return c.one([_operand(c, "self", 0)], {"upper": bool(c.arg("upper", 1, False)), "check_errors": False})


@_converts(ops_=("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "wait"))
def _collective(c: _Call) -> list[Node]:
    """The tensor is the input; group, sizes and reduce op are attrs (by schema name)."""
    args, _ = c.read_all()
    first = next(iter(c.named)) if c.named else None
    tensor = c.named[first] if first else args[0]
    attrs = {k: _attr(c.value(v)) for k, v in c.named.items() if k != first}
    return c.one([c.value(tensor)], attrs)


_MODULE_ATTRS = {"eps": "eps", "normalized_shape": "normalized_ndim", "approximate": "approximate", "dim": "dim",
                 "p": "p"}


def _module_call(c: _Call) -> list[Node]:
    """A call_module: its parameters become graph inputs named `<module path>.<param>`;
    Embedding takes its weight first (the canonical order), other modules after the args."""
    c.read_all()
    module = _get_attr(c.conv.gm, c.node.target)
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


def _unknown(native: str) -> str:
    return f"{UNKNOWN_PREFIX}{native}"


def _attr(v: Any) -> Any:
    """An argument as an attr value: dtypes and devices by name, containers element-wise."""
    if isinstance(v, torch.dtype):
        return canonical_dtype(v)
    if isinstance(v, (torch.device, torch.memory_format, torch.layout)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [_attr(x) for x in v]
    return v


# --- expansion by torch's own decompositions -------------------------------------------------------

@functools.cache
def _core_table() -> dict:
    """torch's core-ATen decompositions, less those of ops irlens names (they stay whole)."""
    from torch._decomp import core_aten_decompositions

    return {op: fn for op, fn in core_aten_decompositions().items()
            if not isinstance(op, torch._ops.OpOverload) or _packet(op) not in ATEN_NAMES}


def _decomposition_of(target) -> Callable | None:
    """The decomposition torch has for one OpOverload: the core-ATen table's, else the general one's,
    else irlens's own of an op torch does not decompose (decompositions.EXTRA);
    a custom op's (`torch.library.custom_op`, e.g. torch_nn's linear_cross_entropy kernels) is its
    own Python implementation, the function the op was defined by, unless it writes to an
    argument (that write is a side effect an expansion would not carry)."""
    from torch._decomp import core_aten_decompositions, decomposition_table
    from torch._library.custom_ops import _maybe_get_opdef

    from irlens.frontends.dynamo.decompositions import EXTRA

    own = core_aten_decompositions().get(target) or decomposition_table.get(target) or EXTRA.get(target)
    if own is None:
        opdef = _maybe_get_opdef(target)
        writes = any(a.alias_info is not None and a.alias_info.is_write for a in target._schema.arguments)
        own = opdef._init_fn if opdef is not None and not writes else None
    return own


def _trace_call(node: fx.Node, mutates: bool) -> fx.GraphModule | None:
    """The call re-traced on its example values down to core ATen: an ATen op through its
    decomposition, a torch function through its own dispatch (functionalized; an in-place call
    gives the tensor it updated). None when it does not trace or does not decompose."""
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._pytree import tree_flatten, tree_unflatten

    table = dict(_core_table())
    if isinstance(node.target, torch._ops.OpOverload):
        own = _decomposition_of(node.target)
        if own is None:
            return None
        table[node.target] = own
    leaves, spec = tree_flatten((node.args, node.kwargs))
    values = [_example(a) if isinstance(a, fx.Node) else a for a in leaves]
    slots = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    for i, v in enumerate(values):
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            values[i] = _concrete(v)
    if any(isinstance(values[i], fx.Node) for i in range(len(values))):
        return None
    target, method = node.target, node.op == "call_method"

    def call(*tensors):
        vals = list(values)
        for i, t in zip(slots, tensors):
            vals[i] = t
        args, kwargs = tree_unflatten(vals, spec)
        result = getattr(args[0], target)(*args[1:], **kwargs) if method else target(*args, **kwargs)
        return args[0] if mutates else result

    tensors = [values[i] for i in slots]
    mode = detect_fake_mode(tensors)
    if mode is None:
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        tensors = [mode.from_tensor(t) for t in tensors]
    try:
        with mode:
            # decompositions run below functionalization and may write in place (through views):
            # the decomposed graph is traced once more, functionalized
            gm = make_fx(call, decomposition_table=table)(*tensors)
            gm = make_fx(torch.func.functionalize(gm, remove="mutations"))(*tensors)
    except Exception:  # noqa: BLE001  (a call that does not re-trace stays unknown)
        return None
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    if isinstance(node.target, torch._ops.OpOverload) and [n.target for n in calls] == [node.target]:
        return None
    return gm


# --- the graph walk --------------------------------------------------------------------------------

class _Converter:
    def __init__(self, gm: fx.GraphModule, *, prefix: str = "", native: str | None = None, scope: str | None = None,
                 metas: dict | None = None, depth: int = 0):
        self.gm = gm
        self.prefix, self.native, self.scope, self.depth = prefix, native, scope, depth
        self.env: dict[fx.Node, Any] = {}  # fx node -> value name, literal, or tuple of them
        self.metas: dict[str, TensorMeta] = {} if metas is None else metas
        self.inputs: list[TensorMeta] = []
        self.nodes: list[Node] = []
        self.updated: dict[fx.Node, Any] = {}  # x[i] = v (no value of its own): the updated x's example
        # a graph input updated in place (the caller sees it; an expansion's caller reads it back):
        # its placeholder -> its last value
        self.input_updates: dict[fx.Node, str] = {}

    def name_of(self, node: fx.Node) -> str:
        return f"{self.prefix}{node.name}"

    def example(self, node: fx.Node) -> Any:
        return self.updated[node] if node in self.updated else _example(node)

    # values
    def value(self, a: Any) -> Any:
        if isinstance(a, fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return _concrete(a)
        return a

    def output_metas(self, node: fx.Node) -> list[TensorMeta]:
        val = self.example(node)
        if isinstance(val, torch.Tensor):
            return [_tensor_meta(self.name_of(node), val)]
        if not isinstance(val, (list, tuple)):
            return []
        names = self._output_names(node)
        metas = []
        for i, v in enumerate(val):
            if isinstance(v, torch.Tensor):
                metas.append(_tensor_meta(names[i], v))
            elif isinstance(v, (list, tuple)):  # a list of tensors among the results (histogramdd's edges)
                metas += [_tensor_meta(f"{names[i]}.{j}", t) for j, t in enumerate(v) if isinstance(t, torch.Tensor)]
        return metas

    def _output_names(self, node: fx.Node) -> list[str]:
        """A multi-output node's value names: its getitem readers' names, else `<node>.out<i>`."""
        n = len(self.example(node))
        base = self.name_of(node)
        names = [f"{base}.out{i}" for i in range(n)]
        for user in node.users:  # the first getitem of each index names it
            if user.target is operator.getitem and isinstance(user.args[1], int):
                i = user.args[1]
                if names[i].startswith(f"{base}.out"):
                    names[i] = self.name_of(user)
        return names

    def bind_outputs(self, node: fx.Node) -> None:
        val = self.example(node)
        if isinstance(val, torch.Tensor):
            self.env[node] = self.name_of(node)
        else:
            names = self._output_names(node)
            self.env[node] = tuple(
                names[i] if isinstance(v, torch.Tensor)
                else tuple(f"{names[i]}.{j}" if isinstance(t, torch.Tensor) else None for j, t in enumerate(v))
                if isinstance(v, (list, tuple)) else None
                for i, v in enumerate(val))

    # walk
    def add_input(self, node: fx.Node, val: Any) -> None:
        if isinstance(val, torch.Tensor):
            meta = _tensor_meta(_input_name(node), val)
            self.inputs.append(meta)
            self.metas[meta.name] = meta
            self.env[node] = meta.name
        else:
            self.env[node] = _concrete(val)

    def add_param(self, name: str, t: torch.Tensor) -> str:
        if name not in self.metas:
            meta = _tensor_meta(name, t)
            self.inputs.append(meta)
            self.metas[name] = meta
        return name

    def run(self, bound: list | None = None) -> list[Arg]:
        """Convert every node; `bound` gives the placeholders' values (an expansion's), else
        they are the graph's inputs."""
        outputs: list[Arg] = []
        placeholders = iter(bound or [])
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                if bound is None:
                    self.add_input(node, _example(node))
                else:
                    self.env[node] = next(placeholders)
            elif node.op == "get_attr":
                val = _get_attr(self.gm, node.target)
                if bound is not None or str(node.target).startswith("_tensor_constant"):
                    self.constant(node, val)  # a traced program's literal
                else:
                    self.add_input(node, _example(node) if _example(node) is not None else val)
            elif node.op == "output":
                outputs = _flatten(self.value(node.args[0]))
            else:
                self.call(node)
        return outputs

    def constant(self, node: fx.Node, val: Any) -> None:
        """A literal tensor of the program as a `constant` node (a graph input if it is large)."""
        if (not isinstance(val, torch.Tensor) or isinstance(val, torch._subclasses.FakeTensor)
                or val.numel() > _MAX_CONSTANT or val.is_complex()):
            if self.prefix:
                raise Unmapped(f"a tensor constant in the expansion ({node.target})")
            self.add_input(node, _example(node) if _example(node) is not None else val)
            return
        meta = _tensor_meta(self.name_of(node), val)
        self.metas[meta.name] = meta
        self.env[node] = meta.name
        attrs = {"shape": list(meta.shape), "dtype": meta.dtype, "values": val.detach().cpu().reshape(-1).tolist()}
        self.nodes.append(Node(meta.name, "constant", [], [meta], attrs, self.native or node.name, self.scope or ""))

    def call(self, node: fx.Node) -> None:
        key, native = _native_name(self.gm, node)
        key = _VIEW_COPIES.get(key, key)
        if _in_place_aten(node):  # aten.add_ (in a decomposition's trace): aten.add, and its input updated
            key = key[:-1]
        if key in _BOOKKEEPING:
            return
        if key == "prims._make_token":  # Inductor makes the effect token AOTAutograd's graph takes as an input
            self.constant(node, aot.new_token())
            return
        if key == "with_effects":  # an effect token threaded through an op: an assert passes it on
            effect = node.args[1]
            if isinstance(effect, torch._ops.OpOverload) and _packet(effect) in _BOOKKEEPING:
                self.env[node] = (self.value(node.args[0]),)
                return
        val = _example(node)
        if node.target is operator.getitem and not isinstance(self.value(node.args[0]), str):
            self.env[node] = self.value(node.args[0])[node.args[1]]  # an output of a multi-output node, or a size
            return
        if key in _ALIASES:
            self.env[node] = self.value(node.args[0])
            return
        mutates = _mutates(node, key)
        if mutates and val is None and isinstance(node.args[0], fx.Node):  # x[i] = v: the updated x is its value
            val = self.updated[node] = _example(node.args[0])
        if not _has_tensor(val):
            if val is not None and not _data_dependent(val):  # sizes and other Python values fold into literals
                self.env[node] = _concrete(val)
                return
            if val is not None:  # x.item(): a value of the data, known to no literal
                name = self.name_of(node)
                kind = {torch.SymBool: "bool", torch.SymFloat: "float64"}.get(type(val), "int64")
                self.add([Node(name, _unknown(native), [self.value(a) for a in node.args if isinstance(a, fx.Node)],
                               [TensorMeta(name, (), kind)], {"adapter_error": "a data-dependent scalar"},
                               self.native or native, self.scope if self.scope is not None else _scope(node))])
                self.env[node] = name
                return
        op = _canonical(node, key, native)
        c = _Call(node, key, self.native or native, op, self)
        nodes, reason = None, _mutation_hazard(node, key)
        if reason == INPUT_UPDATE and self.depth == 0 and not self.prefix:
            reason = None  # the graph's own input (not an expansion's): its new value is a result of the graph
        if reason is None and not op.startswith(UNKNOWN_PREFIX):
            fn = _module_call if node.op == "call_module" else _BY_KEY.get(key) or _BY_OP.get(op)
            try:
                if fn is None:
                    raise Unmapped(f"no converter for {key}")
                nodes = fn(c)
                left = c.unread()
                if left:
                    raise Unmapped(f"arguments not mapped: {', '.join(left)}")
            except Exception as e:  # noqa: BLE001  (Unmapped, or arguments the converter did not expect)
                nodes, reason = None, f"{type(e).__name__}: {e}"
        if nodes is None and not (reason or "").startswith("in-place"):
            nodes = self.expand(node, c, mutates)
        if nodes is None:
            nodes = _plain(c)
            nodes[-1].op = _unknown(key if isinstance(node.target, torch._ops.OpOverload) else native)
            if reason:
                nodes[-1].attrs["adapter_error"] = reason
        if val is not None:
            self.bind_outputs(node)
        self.add(nodes)
        if mutates and isinstance(node.args[0], fx.Node):
            self.update(node.args[0], self.env[node])

    def update(self, target: fx.Node, value: str) -> None:
        """`target` was updated in place: later reads see `value`; an input's update is recorded."""
        self.env[target] = value
        if target.op in ("placeholder", "get_attr"):
            self.input_updates[target] = value

    def add(self, nodes: list[Node]) -> None:
        for n in nodes:
            for o in n.outputs:
                self.metas[o.name] = o
        self.nodes.extend(ops.conform(n) for n in nodes)

    def expand(self, node: fx.Node, c: _Call, mutates: bool) -> list[Node] | None:
        """The call as torch's decompositions spell it in core ATen, converted; None when it has none."""
        if node.op == "call_module" or self.depth >= 4:
            return None
        gm = _trace_call(node, mutates)
        if gm is None:
            return None
        child = _Converter(gm, prefix=f"{self.name_of(node)}.", native=c.native, scope=c.scope, metas=self.metas,
                           depth=self.depth + 1)
        args = [a for a in _flatten((node.args, node.kwargs)) if isinstance(a, fx.Node)
                and isinstance(_example(a), torch.Tensor)]
        bound = [self.value(a) for a in args]
        try:
            results = child.run(bound)
        except Exception:  # noqa: BLE001  (an expansion that does not convert leaves the call unknown)
            return None
        if any(n.is_unknown for n in child.nodes):  # the call stays whole, unknown by its own name
            return None
        nodes, renamed = _rename_outputs(child.nodes, results, c, set(bound))
        # arguments the call updates in place (F.batch_norm's running statistics in train mode):
        # later reads see the new values, and a graph input's update is a result of the graph
        placeholders = [p for p in gm.graph.nodes if p.op == "placeholder"]
        for p, value in child.input_updates.items():
            if p in placeholders:
                self.update(args[placeholders.index(p)], renamed.get(value, value))
        return nodes


def _rename_outputs(nodes: list[Node], results: list[Arg], c: _Call, inputs: set) -> tuple[list[Node], dict]:
    """An expansion's nodes with its results named as the call's outputs (a copy or a `full`
    where a result is an input or a literal, or already named), and the names it changed."""
    renamed: dict[str, str] = {}
    extra: list[Node] = []
    produced = {o.name for n in nodes for o in n.outputs}
    results = [r for r in results if r is not None]  # as the call's outputs skip its non-tensor results
    for i, (result, meta) in enumerate(zip(results, c.outputs)):
        if isinstance(result, str) and result in produced and result not in renamed and result not in inputs:
            renamed[result] = meta.name
        elif isinstance(result, str):
            extra.append(c.emit("copy", [renamed.get(result, result)], suffix=f"out{i}", outputs=[meta]))
        else:
            extra.append(c.emit("full", [], {"shape": list(meta.shape), "value": result, "dtype": meta.dtype},
                                suffix=f"out{i}", outputs=[meta]))
    for n in nodes:
        n.inputs = [renamed.get(a, a) if isinstance(a, str) else a for a in n.inputs]
        n.outputs = [replace(o, name=renamed.get(o.name, o.name)) for o in n.outputs]
    return nodes + extra, renamed


def _in_place_aten(node: fx.Node) -> bool:
    t = node.target
    return (isinstance(t, torch._ops.OpOverload) and t._opname.endswith("_") and bool(t._schema.arguments)
            and t._schema.arguments[0].alias_info is not None and t._schema.arguments[0].alias_info.is_write)


def _mutates(node: fx.Node, key: str) -> bool:
    """An in-place call (x.add_(y), x += y, aten.add_) whose first argument it updates."""
    if isinstance(node.target, torch._ops.OpOverload):
        return _in_place_aten(node)
    if node.op == "call_module":
        return False
    if getattr(node.target, "__module__", "") in ("_operator", "operator"):  # operator.and_ is not in place
        return key in ("setitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior",
                       "ixor", "ilshift", "irshift")
    return (key.endswith("_") and not key.startswith("__")) or node.kwargs.get("inplace") is True


INPUT_UPDATE = "in-place update of a graph input"


def _mutation_hazard(node: fx.Node, key: str) -> str | None:
    """Why an in-place call cannot be read as a new value of the tensor it updates: that tensor
    is a view, or has views (they would change too), or is a graph input read afterwards (at
    the torch level, the caller sees any update of an input)."""
    if not _mutates(node, key) or not isinstance(node.args[0], fx.Node):
        return None
    target = node.args[0]
    aten = isinstance(node.target, torch._ops.OpOverload)
    if target.op in ("placeholder", "get_attr"):
        later = [u for u in target.users if u is not node and _after(u, node)]
        if not aten or later:
            return INPUT_UPDATE
    if _is_view(target) or any(_is_view(u) and (_after(u, node) or any(_after(r, node) for r in u.users))
                               for u in target.users if u is not node):
        return "in-place update through a view"  # a view of it read afterwards would see the update
    return None


def _after(a: fx.Node, b: fx.Node) -> bool:
    """Whether node a comes after node b in their graph."""
    n = b.next
    while n.op != "root":
        if n is a:
            return True
        n = n.next
    return False


def _is_view(node: fx.Node) -> bool:
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        returns = t._schema.returns
        return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write
    name = _native_name_of(node)
    if name in ("getitem", "__getitem__") and node.args and isinstance(node.args[0], fx.Node):
        return _item_is_view(node.args[0], node.args[1] if len(node.args) > 1 else None)
    return name in _VIEWS


def _item_is_view(source: fx.Node, index: Any) -> bool:
    """x[index] shares x's memory where index is basic (ints, slices, None, ...): a tensor or a list
    in it (advanced indexing) copies. An item of a call's several results (topk's values) is a view
    only where that call gives views (chunk, split, unbind)."""
    if not isinstance(_example(source), torch.Tensor):
        return _is_view(source)
    items = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(i, list) or (isinstance(i, fx.Node) and isinstance(_example(i), torch.Tensor))
                   for i in items)


def _native_name_of(node: fx.Node) -> str:
    if node.op == "call_method":
        return node.target
    if node.op == "call_function":
        t = node.target
        if isinstance(t, torch._ops.OpOverload):
            return t._opname
        return getattr(t, "__name__", str(t))
    return ""


def _canonical(node: fx.Node, key: str, native: str) -> str:
    """The canonical op, or `unknown:` + the native name (an OpOverload's without its overload)."""
    if node.op == "call_module":
        return MODULE_NAMES.get(key, _unknown(native))
    if node.target in FROM_ATEN:
        return FROM_ATEN[node.target]
    if isinstance(node.target, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return ATEN_NAMES.get(key, _unknown(key))
    return TORCH_NAMES.get(key, _unknown(native))


def _native_name(gm: fx.GraphModule, node: fx.Node) -> tuple[str, str]:
    """(lookup key, display name): `aten.mul` / `aten.mul.Tensor`, `tanh` / `torch.tanh`,
    `view` / `Tensor.view`, `Linear` / `Linear(blocks.0.fc)`."""
    t = node.target
    if node.op == "call_method":
        return t, f"Tensor.{t}"
    if node.op == "call_module":
        cls = type(_get_attr(gm, t)).__name__
        return cls, f"{cls}({t})"
    if isinstance(t, torch._ops.OpOverload):
        return f"{t.namespace}.{t._opname}", str(t)
    if isinstance(t, torch._ops.OpOverloadPacket):
        return f"{t._qualified_op_name.replace('::', '.')}", str(t)
    qual = fx.node._get_qualified_name(t) if callable(t) else str(t)
    qual = qual.replace("_operator.", "operator.")
    return qual.rsplit(".", 1)[-1], qual


# --- meta helpers --------------------------------------------------------------------------------

def _input_name(node: fx.Node) -> str:
    """A graph input's name: an AOTAutograd effect token is named so (it is no tensor of the program)."""
    desc = node.meta.get("desc")
    return aot.token_name(desc) if aot.is_token(desc) else node.name


def _example(node: fx.Node) -> Any:
    m = node.meta
    return m["val"] if "val" in m else m.get("example_value")


def _data_dependent(val: Any) -> bool:
    """A symbolic scalar with no value behind it (an unbacked SymInt from .item(), nonzero, ...)."""
    return isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)) and val.node.hint is None


def _has_tensor(val: Any) -> bool:
    if isinstance(val, torch.Tensor):
        return True
    return isinstance(val, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in val)


def _concrete(v: Any) -> Any:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        try:
            return type(v.node.hint)(v.node.hint) if v.node.hint is not None else str(v)
        except Exception:
            return str(v)
    if isinstance(v, torch.Size):
        return tuple(_concrete(d) for d in v)
    if isinstance(v, (list, tuple)):
        return type(v)(_concrete(x) for x in v)
    return v


def _tensor_meta(name: str, t: torch.Tensor) -> TensorMeta:
    shape = tuple(_concrete(d) for d in t.shape)
    return TensorMeta(name, tuple(d if isinstance(d, int) else -1 for d in shape), canonical_dtype(t.dtype))


def _get_attr(gm: fx.GraphModule, target: str) -> Any:
    return functools.reduce(getattr, target.split("."), gm)


def _flatten(v: Any) -> list[Arg]:
    if isinstance(v, dict):
        return [x for item in v.values() for x in _flatten(item)]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flatten(item)]
    return [v]


# --- entry point ---------------------------------------------------------------------------------

def fx_to_graph(gm: fx.GraphModule, *, name: str, frontend: str, stage: str, level: str = "composite") -> Graph:
    """The common view of a Dynamo or ATen FX graph; `level="primitive"` also decomposes it."""
    conv = _Converter(gm)
    outputs = conv.run()
    # inputs updated in place: their new values are results too, after the outputs
    updates = {value: _input_name(p) for p, value in conv.input_updates.items()}
    graph = Graph(name, frontend, stage, "composite", conv.inputs, conv.nodes, outputs + list(updates), updates)
    if level == "primitive":
        from irlens.decompose import to_primitive

        return to_primitive(graph)
    if level != "composite":
        raise ValueError(f"level must be 'composite' or 'primitive', got {level!r}")
    return graph
