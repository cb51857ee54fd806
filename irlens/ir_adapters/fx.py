"""FX graphs (Dynamo's torch-level graphs and AOTAutograd's ATen graphs) -> the common view.

One adapter serves both levels: a Dynamo graph calls `torch.*`, `operator.*`, `F.*` and
Tensor methods; an ATen graph calls OpOverloads (`aten.mul.Tensor`, `_c10d_functional.*`).
Native names are looked up in the tables below (bare names for the torch level, `ns.op`
for OpOverloads); converters turn each call's arguments into the canonical input order and
attrs documented in `irlens.ops`. Arguments are read by name where the op has a schema
(OpOverloads) and by torch-level position otherwise.

Ids and value names are FX node names. A multi-output node's values take the names of the
`getitem` nodes that read them (an unread output is `<node>.out<i>`); `getitem`, `detach`,
`alias` and non-tensor nodes (sizes) fold away. A call that becomes several common-view
nodes (addmm -> matmul + add, split -> slices) gives the extra nodes ids `<node>.<k>`, so
everything derived from FX node `n` has id `n` or `n.<k>`. Unknown ops become
`unknown:<native name>`; the adapter never fails on an op it does not know.
"""
from __future__ import annotations

import functools
import operator
import re
from typing import Any, Callable

import torch
import torch.fx as fx

from irlens import ops
from irlens.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype

# --- name tables ---------------------------------------------------------------------------

_SAME = (
    "neg abs exp exp2 log log1p expm1 tanh sqrt rsqrt reciprocal sin cos erf sigmoid sign floor ceil round "
    "logical_not isnan add sub mul div pow maximum minimum remainder atan2 eq ne lt le gt ge logical_and "
    "logical_or logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not where sum amax amin prod argmax argmin "
    "cumsum matmul gelu relu silu softmax log_softmax layer_norm rms_norm linear embedding mean var dropout tril "
    "masked_fill gather scatter_add index_add"
)

# Names shared by torch functions, Tensor methods and ATen op packets.
_COMMON: dict[str, str] = {
    **{op: op for op in _SAME.split()},
    "true_divide": "div", "multiply": "mul", "subtract": "sub", "rsub": "sub", "square": "mul",
    "mm": "matmul", "bmm": "matmul", "addmm": "matmul", "baddbmm": "matmul",
    "view": "reshape", "reshape": "reshape", "_unsafe_view": "reshape", "unsqueeze": "reshape",
    "squeeze": "reshape", "flatten": "reshape", "unflatten": "reshape", "view_as": "reshape",
    "reshape_as": "reshape",
    "permute": "permute", "transpose": "permute", "t": "permute", "swapaxes": "permute",
    "expand": "broadcast", "expand_as": "broadcast", "broadcast_to": "broadcast",
    "cat": "concat", "concat": "concat", "stack": "stack",
    "split": "slice", "split_with_sizes": "slice", "chunk": "slice", "narrow": "slice", "select": "slice",
    "index_select": "take", "take_along_dim": "gather",
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
    "or_": "bitwise_or", "xor": "bitwise_xor", "iadd": "add", "isub": "sub", "imul": "mul", "itruediv": "div", "getitem": "slice",
    "scaled_dot_product_attention": "sdpa",
}

# ATen level: `namespace.op` of an OpOverload.
ATEN_NAMES: dict[str, str] = {
    **{f"aten.{k}": v for k, v in _COMMON.items()},
    "aten.slice": "slice", "aten.index": "index", "aten._unsafe_index": "index", "aten.var_mean": "var",
    "aten.index_put": "index_put", "aten.index_put_": "index_put", "aten._unsafe_index_put": "index_put",
    "aten.scatter": "scatter", "aten.topk": "topk", "aten.sigmoid_backward": "sigmoid_backward",
    "prims.iota": "iota", "prims.prepare_softmax_online": "sum",
    "aten._to_copy": "convert", "prims.convert_element_type": "convert", "prims.fma": "add",
    "aten._softmax": "softmax", "aten._log_softmax": "log_softmax",
    "aten.native_layer_norm": "layer_norm", "aten._fused_rms_norm": "rms_norm",
    "aten.native_dropout": "dropout",
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
                        ("wait_tensor", "wait"))},
}

# call_module (Dynamo inlines built-in modules by default; kept for graphs that do not).
MODULE_NAMES: dict[str, str] = {
    "Linear": "linear", "LayerNorm": "layer_norm", "RMSNorm": "rms_norm", "Embedding": "embedding",
    "GELU": "gelu", "ReLU": "relu", "SiLU": "silu", "Tanh": "tanh", "Sigmoid": "sigmoid",
    "Softmax": "softmax", "Dropout": "dropout", "Identity": "copy",
}

for _table in (TORCH_NAMES, ATEN_NAMES, MODULE_NAMES):
    ops.check_vocabulary(_table)

# Calls that only alias their input: their value is the input's value.
_ALIASES = {"detach", "alias", "lift_fresh", "lift_fresh_copy", "aten.detach", "aten.alias",
            "aten.lift_fresh", "aten.lift_fresh_copy"}
# Calls without a dataflow result: grad mode, asserts, profiler ranges.
_BOOKKEEPING = {"_set_grad_enabled", "set_grad_enabled", "_assert_tensor_metadata", "aten._assert_tensor_metadata",
                "_assert_async", "aten._assert_async", "_record_function_enter_new", "_record_function_exit",
                "_enter_autocast", "_exit_autocast", "sym_constrain_range_for_size"}


# --- one call, its arguments and outputs ----------------------------------------------------------

class _Call:
    """An FX call being converted: its arguments by name or position, and its output metas."""

    def __init__(self, node: fx.Node, key: str, native: str, op: str, conv: "_Converter"):
        self.node, self.key, self.native, self.op, self.conv = node, key, native, op, conv
        self.args, self.kwargs = tuple(node.args), dict(node.kwargs)
        self.named = _bind_schema(node.target, self.args, self.kwargs)
        self.outputs = conv.output_metas(node)
        self.scope = _scope(node)

    def arg(self, name: str, pos: int | None = None, default: Any = None) -> Any:
        """An argument by schema name (OpOverloads), else by keyword or torch-level position."""
        names = (name, "input") if name == "self" else (name,)
        if self.named:
            return next((self.named[n] for n in names if n in self.named), default)
        for n in names:
            if n in self.kwargs:
                return self.kwargs[n]
        if pos is not None and pos < len(self.args):
            return self.args[pos]
        return default

    def value(self, a: Any) -> Any:
        return self.conv.value(a)

    def meta(self, a: Any) -> TensorMeta:
        return self.conv.metas[self.value(a)]

    def rank(self, a: Any) -> int:
        return len(self.meta(a).shape)

    def emit(self, op: str, inputs: list[Arg], attrs: dict | None = None, *, suffix: str | None = None,
              outputs: list[TensorMeta] | None = None) -> Node:
        nid = self.node.name if suffix is None else f"{self.node.name}.{suffix}"
        return Node(nid, op, list(inputs), self.outputs if outputs is None else outputs, attrs or {},
                    self.native, self.scope)

    def one(self, inputs: list[Arg], attrs: dict | None = None, op: str | None = None) -> list[Node]:
        return [self.emit(op or self.op, inputs, attrs)]

    def tmp(self, k: int, like: TensorMeta, shape=None) -> TensorMeta:
        """An intermediate value of a multi-node expansion."""
        return TensorMeta(f"{self.node.name}.{k}", tuple(like.shape if shape is None else shape), like.dtype)


def _bind_schema(target: Any, args: tuple, kwargs: dict) -> dict:
    """OpOverload arguments by their schema names, defaults filled in; {} for other targets."""
    schema = getattr(target, "_schema", None)
    if schema is None:
        return {}
    named = {}
    for i, a in enumerate(schema.arguments):
        if i < len(args) and not a.kwarg_only:
            named[a.name] = args[i]
        elif a.name in kwargs:
            named[a.name] = kwargs[a.name]
        elif a.has_default_value():
            named[a.name] = a.default_value
    return named


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
    if dim is None or dim == [] or dim == ():
        return list(range(rank))
    if isinstance(dim, int):
        dim = [dim]
    return [d % rank if rank else 0 for d in dim]


def _plain(c: _Call) -> list[Node]:
    """Positional tensors and numbers (also tensors in a list) are the inputs; other positional
    arguments are attrs `arg<i>`, keyword arguments attrs by name."""
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


class Unmapped(ValueError):
    """An argument the converter cannot express in the canonical op: the node must not get its name."""


@_converts("rsub")
def _rsub(c: _Call) -> list[Node]:
    if c.arg("alpha", default=1) != 1:
        raise Unmapped("rsub with alpha")
    return c.one([c.value(c.arg("other", 1)), c.value(c.arg("self", 0))])


@_converts("floordiv")
def _floordiv(c: _Call) -> list[Node]:
    """Python's // on tensors: torch.floor_divide."""
    return c.one([c.value(c.args[0]), c.value(c.args[1])], {"rounding_mode": "floor"})


@_converts("prims.fma")
def _fma(c: _Call) -> list[Node]:
    """prims.fma(a, b, c) = a * b + c (Inductor's decompositions emit it)."""
    a, b, addend = (c.value(c.arg(n)) for n in ("a", "b", "c"))
    prod = c.tmp(0, c.outputs[0])
    return [c.emit("mul", [a, b], suffix="0", outputs=[prod]), c.emit("add", [prod.name, addend])]


@_converts("square")
def _square(c: _Call) -> list[Node]:
    x = c.value(c.arg("self", 0))
    return c.one([x, x])


@_converts(ops_=("sum", "amax", "amin", "prod", "mean", "var"))
def _reduction(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    keepdim = c.arg("keepdim", 3 if c.op == "var" else 2, False)
    attrs = {"dims": _dims(c.arg("dim", 1), c.rank(x)), "keepdim": bool(keepdim)}
    if c.op == "var":
        correction = c.arg("correction")
        attrs["correction"] = correction if correction is not None else int(bool(c.arg("unbiased", 2, True)))
    if c.arg("dtype") is None:
        return c.one([c.value(x)], attrs)
    # torch.sum(x, dtype=...): x converted first, then reduced
    dtype = canonical_dtype(c.arg("dtype"))
    cast = TensorMeta(f"{c.node.name}.0", c.meta(x).shape, dtype)
    return [c.emit("convert", [c.value(x)], {"dtype": dtype}, suffix="0", outputs=[cast]),
            c.emit(c.op, [cast.name], attrs)]


@_converts(ops_=("argmax", "argmin"))
def _arg_reduction(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    dim = c.arg("dim", 1)
    return c.one([c.value(x)], {"dim": None if dim is None else dim % max(c.rank(x), 1),
                                "keepdim": bool(c.arg("keepdim", 2, False))})


@_converts("var_mean")
def _var_mean(c: _Call) -> list[Node]:
    """var_mean: a var node (`<node>.0`) and a mean node over the same dims."""
    (var,) = _reduction(c)
    var.id, var.op, var.outputs = f"{c.node.name}.0", "var", c.outputs[:1]
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


@_converts("scatter_add", "gather")
def _scatter_add(c: _Call) -> list[Node]:
    """torch.scatter_add(x, dim, index, src) / torch.gather(x, dim, index)."""
    x = c.arg("self", 0)
    inputs = [c.value(x), c.value(c.arg("index", 2))]
    if c.op == "scatter_add":
        inputs.append(c.value(c.arg("src", 3)))
    return c.one(inputs, {"dim": c.arg("dim", 1) % max(c.rank(x), 1)})


@_converts("take_along_dim")
def _take_along_dim(c: _Call) -> list[Node]:
    """torch.take_along_dim(x, indices, dim): a gather where the two agree outside dim (it
    broadcasts them, and dim None means the flattened x: those stay unknown)."""
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
    inputs = [c.value(x), c.value(c.arg("index", 2)), c.value(c.arg("source", 3))]
    return c.one(inputs, {"dim": c.arg("dim", 1) % max(c.rank(x), 1), "alpha": c.arg("alpha", default=1)})


@_converts("scatter")
def _scatter(c: _Call) -> list[Node]:
    if c.arg("reduce") is not None:
        raise Unmapped("scatter with reduce")
    x = c.arg("self", 0)
    src = c.arg("src", 3) if c.arg("src") is not None else c.arg("value", 3)
    return c.one([c.value(x), c.value(c.arg("index", 2)), c.value(src)],
                 {"dim": c.arg("dim", 1) % max(c.rank(x), 1)})


@_converts("index_put", "index_put_", "_unsafe_index_put")
def _index_put(c: _Call) -> list[Node]:
    indices = [c.value(i) for i in c.arg("indices", 1)]
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("values", 2)), *indices],
                 {"accumulate": bool(c.arg("accumulate", 3, False))})


@_converts("topk")
def _topk(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"k": int(c.arg("k", 1)), "dim": c.arg("dim", 2, -1) % max(c.rank(x), 1),
                                "largest": bool(c.arg("largest", 3, True)), "sorted": bool(c.arg("sorted", 4, True))})


@_converts("cumsum", "softmax", "log_softmax", "_softmax", "_log_softmax")
def _along_dim(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"dim": c.arg("dim", 1) % max(c.rank(x), 1)})


@_converts("_softmax_backward_data", "_log_softmax_backward_data")
def _softmax_backward(c: _Call) -> list[Node]:
    y = c.arg("output")
    return c.one([c.value(c.arg("grad_output")), c.value(y)], {"dim": c.arg("dim") % max(c.rank(y), 1)})


@_converts("addmm", "baddbmm")
def _addmm(c: _Call) -> list[Node]:
    bias, a, b = c.arg("self", 0), c.arg("mat1", 1, c.arg("batch1", 1)), c.arg("mat2", 2, c.arg("batch2", 2))
    beta, alpha = c.arg("beta", default=1), c.arg("alpha", default=1)
    out = c.outputs[0]
    prod = c.tmp(0, out)
    nodes = [c.emit("matmul", [c.value(a), c.value(b)], suffix="0", outputs=[prod])]
    lhs: Arg = prod.name
    if alpha != 1:
        scaled = c.tmp(1, out)
        nodes.append(c.emit("mul", [lhs, alpha], suffix="1", outputs=[scaled]))
        lhs = scaled.name
    bias_in = c.value(bias)
    if beta != 1:
        scaled_bias = c.tmp(2, c.meta(bias))
        nodes.append(c.emit("mul", [bias_in, beta], suffix="2", outputs=[scaled_bias]))
        bias_in = scaled_bias.name
    nodes.append(c.emit("add", [lhs, bias_in]))
    return nodes


@_converts(ops_=("reshape",))
def _reshape(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0))], {"shape": list(c.outputs[0].shape)}, op="reshape")


@_converts("permute", "transpose", "t", "swapaxes")
def _permute(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    rank = c.rank(x)
    if c.key.endswith("permute"):
        dims = c.arg("dims", 1)
        dims = list(dims) if isinstance(dims, (list, tuple)) else list(c.args[1:])
        perm = [d % rank for d in dims]
    else:
        perm = list(range(rank))
        if rank >= 2:
            d0 = c.arg("dim0", 1, c.arg("axis0", 1, 0)) % rank
            d1 = c.arg("dim1", 2, c.arg("axis1", 2, 1)) % rank
            perm[d0], perm[d1] = perm[d1], perm[d0]
    return c.one([c.value(x)], {"perm": perm}, op="permute")


@_converts(ops_=("broadcast",))
def _broadcast(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    out_rank = len(c.outputs[0].shape)
    dims = list(range(out_rank - c.rank(x), out_rank))
    return c.one([c.value(x)], {"shape": list(c.outputs[0].shape), "broadcast_dims": dims})


@_converts(ops_=("concat", "stack"))
def _concat(c: _Call) -> list[Node]:
    tensors = c.arg("tensors", 0)
    return c.one(list(c.value(tensors)), {"dim": c.arg("dim", 1, 0) % len(c.outputs[0].shape)})


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


@_converts("slice")
def _slice(c: _Call) -> list[Node]:
    x = c.arg("self")
    shape = c.meta(x).shape
    dim = c.arg("dim", default=0) % len(shape)
    start = _clamp_index(c.arg("start"), shape[dim], 0)
    end = _clamp_index(c.arg("end"), shape[dim], shape[dim])
    return c.one([c.value(x)], _slice_attrs(shape, dim, start, end, int(c.arg("step", default=1))))


@_converts("select", "narrow")
def _select(c: _Call) -> list[Node]:
    """select: a one-wide slice, then a reshape that drops the dim; narrow: a slice."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    dim = c.arg("dim", 1) % len(shape)
    start = _clamp_index(c.arg("index", 2, c.arg("start", 2)), shape[dim], 0)
    if c.key.endswith("narrow"):
        return c.one([c.value(x)], _slice_attrs(shape, dim, start, start + int(c.arg("length", 3))))
    kept = tuple(1 if i == dim else s for i, s in enumerate(shape))
    sliced = c.tmp(0, c.outputs[0], kept)
    return [c.emit("slice", [c.value(x)], _slice_attrs(shape, dim, start, start + 1), suffix="0", outputs=[sliced]),
            c.emit("reshape", [sliced.name], {"shape": list(c.outputs[0].shape)})]


@_converts("split", "split_with_sizes", "chunk")
def _split(c: _Call) -> list[Node]:
    """One slice node per piece (ids `<node>.<i>`), each producing that piece's value."""
    x = c.arg("self", 0)
    shape = c.meta(x).shape
    dim = c.arg("dim", 2, 0) % len(shape)
    nodes, start = [], 0
    for i, out in enumerate(c.outputs):
        size = out.shape[dim]
        nodes.append(c.emit("slice", [c.value(x)], _slice_attrs(shape, dim, start, start + size),
                             suffix=str(i), outputs=[out]))
        start += size
    return nodes


@_converts("index", "_unsafe_index")
def _index(c: _Call) -> list[Node]:
    """aten.index: with one integer index tensor a `take` along its dim, else `index`."""
    x, indices = c.arg("self"), list(c.arg("indices"))
    present = [i for i, t in enumerate(indices) if t is not None]
    if len(present) == 1 and c.meta(indices[present[0]]).dtype != "bool":
        return c.one([c.value(x), c.value(indices[present[0]])], {"dim": present[0]}, op="take")
    return c.one([c.value(x), *(c.value(t) for t in indices)], op="index")


@_converts("index_select")
def _index_select(c: _Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x), c.value(c.arg("index", 2))], {"dim": c.arg("dim", 1) % max(c.rank(x), 1)}, op="take")


@_converts("getitem")
def _getitem_tensor(c: _Call) -> list[Node]:
    """Tensor indexing at the torch level: basic indexing (slices, ints, None, ...) is a slice
    followed by a reshape; one index tensor is a gather along dim 0; the rest stays unknown."""
    x, index = c.args
    shape = c.meta(x).shape
    items = list(index) if isinstance(index, tuple) else [index]
    if len(items) == 1 and isinstance(items[0], fx.Node) and c.meta(items[0]).dtype != "bool":
        return c.one([c.value(x), c.value(items[0])], {"dim": 0}, op="take")
    if any(isinstance(i, fx.Node) or not isinstance(i, (slice, int, type(None), type(Ellipsis))) for i in items):
        return c.one([c.value(x)], op=_unknown(c.native))
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


@_converts(ops_=("convert",))
def _convert(c: _Call) -> list[Node]:
    x = c.value(c.arg("self", 0))
    out = c.outputs[0]
    if c.conv.metas[x].dtype == out.dtype:  # .to(device), .contiguous() under another name
        return c.one([x], op="copy")
    return c.one([x], {"dtype": out.dtype})


@_converts(ops_=("copy",))
def _copy(c: _Call) -> list[Node]:
    """clone / contiguous: a copy; x.copy_(src): src in x's dtype and shape."""
    src = c.arg("src", 1) if c.key.rsplit(".", 1)[-1] in ("copy", "copy_") else c.arg("self", 0)
    return _copy_into(c, src)


def _copy_into(c: _Call, src: fx.Node) -> list[Node]:
    """src's values converted to the output's dtype and broadcast to its shape."""
    out, meta = c.outputs[0], c.meta(src)
    if (meta.shape, meta.dtype) == (out.shape, out.dtype):
        return c.one([c.value(src)], op="copy")
    if meta.shape == out.shape:
        return c.one([c.value(src)], {"dtype": out.dtype}, op="convert")
    value, nodes = c.value(src), []
    if meta.dtype != out.dtype:
        cast = TensorMeta(f"{c.node.name}.0", meta.shape, out.dtype)
        nodes.append(c.emit("convert", [value], {"dtype": out.dtype}, suffix="0", outputs=[cast]))
        value = cast.name
    rank = len(out.shape)
    dims = list(range(rank - len(meta.shape), rank))
    return nodes + [c.emit("broadcast", [value], {"shape": list(out.shape), "broadcast_dims": dims})]


_FILL_VALUES = {"ones": 1, "ones_like": 1, "new_ones": 1, "zeros": 0, "zeros_like": 0, "new_zeros": 0, "zero": 0,
                "zero_": 0}


@_converts(ops_=("full", "empty"))
def _full(c: _Call) -> list[Node]:
    bare = c.key.rsplit(".", 1)[-1]
    out = c.outputs[0]
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
    return c.one([], {"shape": list(out.shape), "value": _attr(c.value(value)), "dtype": out.dtype})


@_converts("arange", "prims.iota")
def _arange(c: _Call) -> list[Node]:
    """iota, then `* step` and `+ start` where they are not 1 and 0."""
    start = c.value(c.arg("start", default=c.args[0] if len(c.args) >= 2 else 0))
    step = c.value(c.arg("step", 2, 1))
    out = c.outputs[0]
    iota = {"shape": list(out.shape), "dim": 0, "dtype": out.dtype}
    if start == 0 and step == 1:
        return c.one([], iota, op="iota")
    nodes = [c.emit("iota", [], iota, suffix="0", outputs=[c.tmp(0, out)])]
    if step != 1:
        nodes.append(c.emit("mul", [nodes[-1].outputs[0].name, step], suffix="1", outputs=[c.tmp(1, out)]))
    nodes.append(c.emit("add", [nodes[-1].outputs[0].name, start]))
    return nodes


@_converts(ops_=("rand",))
def _rand(c: _Call) -> list[Node]:
    out = c.outputs[0]
    distribution = "normal" if "randn" in c.key else "uniform"
    return c.one([], {"shape": list(out.shape), "dtype": out.dtype, "distribution": distribution})


@_converts("tril")
def _tril(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0))], {"diagonal": int(c.arg("diagonal", 1, 0))})


@_converts("masked_fill")
def _masked_fill(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("mask", 1)), c.value(c.arg("value", 2))])


@_converts(ops_=("gelu", "gelu_backward"))
def _gelu(c: _Call) -> list[Node]:
    if c.op == "gelu":
        inputs = [c.value(c.arg("self", 0))]
    else:
        inputs = [c.value(c.arg("grad_output", 0)), c.value(c.arg("self", 1))]
    return c.one(inputs, {"approximate": c.arg("approximate", default="none")})


@_converts(ops_=("tanh_backward", "silu_backward", "threshold_backward"))
def _activation_backward(c: _Call) -> list[Node]:
    second = c.arg("output") if c.op == "tanh_backward" else c.arg("self")
    attrs = {"threshold": c.arg("threshold")} if c.op == "threshold_backward" else {}
    return c.one([c.value(c.arg("grad_output")), c.value(second)], attrs)


@_converts(ops_=("dropout",))
def _dropout(c: _Call) -> list[Node]:
    train = c.arg("train", default=c.arg("training", 2, True))
    return c.one([c.value(c.arg("self", 0))], {"p": float(c.arg("p", 1, 0.5)), "training": bool(train)})


@_converts(ops_=("layer_norm", "rms_norm"))
def _norm(c: _Call) -> list[Node]:
    x, weight = c.arg("self", 0), c.arg("weight", 2)
    eps_pos = 4 if c.op == "layer_norm" else 3
    eps = c.arg("eps", eps_pos)
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


@_converts(ops_=("linear",))
def _linear(c: _Call) -> list[Node]:
    return c.one([c.value(c.arg("self", 0)), c.value(c.arg("weight", 1)), c.value(c.arg("bias", 2))])


@_converts(ops_=("sdpa",))
def _sdpa(c: _Call) -> list[Node]:
    q, k, v = (c.value(c.arg(n, i)) for i, n in enumerate(("query", "key", "value")))
    mask = c.arg("attn_mask", 3, c.arg("attn_bias"))
    attrs = {"is_causal": bool(c.arg("is_causal", 5, False)), "scale": c.arg("scale", 6),
             "enable_gqa": bool(c.arg("enable_gqa", 7, False))}
    if c.arg("dropout_p", 4, 0.0):
        attrs["dropout_p"] = float(c.arg("dropout_p", 4))
    return c.one([q, k, v, c.value(mask)], attrs)


@_converts(ops_=("sdpa_backward",))
def _sdpa_backward(c: _Call) -> list[Node]:
    grad = c.arg("grad_out", default=c.arg("grad_out_"))
    inputs = [c.value(a) for a in (grad, *(c.arg(n) for n in ("query", "key", "value", "out", "logsumexp")))]
    return c.one(inputs, {"is_causal": bool(c.arg("is_causal", default=False)), "scale": c.arg("scale")})


@_converts(ops_=("embedding",))
def _embedding(c: _Call) -> list[Node]:
    if c.key.startswith("aten."):
        return c.one([c.value(c.arg("weight")), c.value(c.arg("indices"))])
    return c.one([c.value(c.arg("weight", 1)), c.value(c.arg("self", 0))])


@_converts(ops_=("embedding_backward",))
def _embedding_backward(c: _Call) -> list[Node]:
    padding_idx = c.arg("padding_idx", default=-1)  # ATen's -1: none (F.embedding made a negative one positive)
    return c.one([c.value(c.arg("grad_output")), c.value(c.arg("indices"))],
                 {"num_weights": int(c.arg("num_weights")), "padding_idx": None if padding_idx < 0 else int(padding_idx),
                  "scale_grad_by_freq": bool(c.arg("scale_grad_by_freq", default=False))})


@_converts(ops_=("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "wait"))
def _collective(c: _Call) -> list[Node]:
    """The tensor is the input; group, sizes and reduce op are attrs (by schema name)."""
    first = next(iter(c.named)) if c.named else None
    tensor = c.named[first] if first else c.args[0]
    attrs = {k: _attr(c.value(v)) for k, v in c.named.items() if k != first}
    return c.one([c.value(tensor)], attrs)


_MODULE_ATTRS = {"eps": "eps", "normalized_shape": "normalized_ndim", "approximate": "approximate", "dim": "dim",
                 "p": "p"}


def _module_call(c: _Call) -> list[Node]:
    """A call_module: its parameters become graph inputs named `<module path>.<param>`;
    Embedding takes its weight first (the canonical order), other modules after the args."""
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


# --- the graph walk --------------------------------------------------------------------------------

class _Converter:
    def __init__(self, gm: fx.GraphModule):
        self.gm = gm
        self.env: dict[fx.Node, Any] = {}  # fx node -> value name, literal, or tuple of them
        self.metas: dict[str, TensorMeta] = {}
        self.inputs: list[TensorMeta] = []
        self.nodes: list[Node] = []

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
        val = _example(node)
        if isinstance(val, torch.Tensor):
            return [_tensor_meta(node.name, val)]
        if not isinstance(val, (list, tuple)):
            return []
        names = self._output_names(node)
        return [_tensor_meta(names[i], v) for i, v in enumerate(val) if isinstance(v, torch.Tensor)]

    def _output_names(self, node: fx.Node) -> list[str]:
        """A multi-output node's value names: its getitem readers' names, else `<node>.out<i>`."""
        n = len(_example(node))
        names = [f"{node.name}.out{i}" for i in range(n)]
        for user in node.users:  # the first getitem of each index names it
            if user.target is operator.getitem and isinstance(user.args[1], int):
                i = user.args[1]
                if names[i].startswith(f"{node.name}.out"):
                    names[i] = user.name
        return names

    def bind_outputs(self, node: fx.Node) -> None:
        val = _example(node)
        if isinstance(val, torch.Tensor):
            self.env[node] = node.name
        else:
            names = self._output_names(node)
            self.env[node] = tuple(names[i] if isinstance(v, torch.Tensor) else None for i, v in enumerate(val))

    # walk
    def add_input(self, node: fx.Node, val: Any) -> None:
        if isinstance(val, torch.Tensor):
            meta = _tensor_meta(node.name, val)
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

    def run(self) -> list[Arg]:
        outputs: list[Arg] = []
        for node in self.gm.graph.nodes:
            if node.op == "placeholder":
                self.add_input(node, _example(node))
            elif node.op == "get_attr":
                self.add_input(node, _example(node) if _example(node) is not None else _get_attr(self.gm, node.target))
            elif node.op == "output":
                outputs = _flatten(self.value(node.args[0]))
            else:
                self.call(node)
        return outputs

    def call(self, node: fx.Node) -> None:
        key, native = _native_name(self.gm, node)
        if key in _BOOKKEEPING:
            return
        val = _example(node)
        if node.target is operator.getitem and not isinstance(self.value(node.args[0]), str):
            self.env[node] = self.value(node.args[0])[node.args[1]]  # an output of a multi-output node, or a size
            return
        if key in _ALIASES:
            self.env[node] = self.value(node.args[0])
            return
        if not _has_tensor(val):
            if val is not None:  # sizes and other Python values fold into literals
                self.env[node] = _concrete(val)
                return
        op = _canonical(node, key, native)
        c = _Call(node, key, native, op, self)
        if op.startswith(UNKNOWN_PREFIX):
            nodes = _plain(c)
        else:
            fn = _module_call if node.op == "call_module" else _BY_KEY.get(key) or _BY_OP.get(op) or _plain
            try:
                nodes = fn(c)
            except Exception as e:  # a known op with arguments the converter did not expect: keep it visible
                nodes = _plain(c)
                nodes[-1].op, nodes[-1].attrs["adapter_error"] = _unknown(native), f"{type(e).__name__}: {e}"
        if val is not None:
            self.bind_outputs(node)
        for n in nodes:
            for o in n.outputs:
                self.metas[o.name] = o
        self.nodes.extend(ops.conform(n) for n in nodes)


def _canonical(node: fx.Node, key: str, native: str) -> str:
    """The canonical op, or `unknown:` + the native name (an OpOverload's without its overload)."""
    if node.op == "call_module":
        return MODULE_NAMES.get(key, _unknown(native))
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

def _example(node: fx.Node) -> Any:
    m = node.meta
    return m["val"] if "val" in m else m.get("example_value")


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
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flatten(item)]
    return [v]


# --- entry point ---------------------------------------------------------------------------------

def fx_to_graph(gm: fx.GraphModule, *, name: str, frontend: str, stage: str, level: str = "composite") -> Graph:
    """The common view of a Dynamo or ATen FX graph; `level="primitive"` also decomposes it."""
    conv = _Converter(gm)
    outputs = conv.run()
    graph = Graph(name, frontend, stage, "composite", conv.inputs, conv.nodes, outputs)
    if level == "primitive":
        from irlens.ir_adapters.decompose import to_primitive

        return to_primitive(graph)
    if level != "composite":
        raise ValueError(f"level must be 'composite' or 'primitive', got {level!r}")
    return graph
