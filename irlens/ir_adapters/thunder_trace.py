"""Thunder traces -> the common view.

A Thunder trace (`TraceCtx`) is a list of bound symbols (`BoundSymbol`): a symbol (`bsym.sym`,
with a `name` and an `id`), its arguments (`bsym.args` / `bsym.kwargs`, holding proxies and
literals), its outputs (`bsym.flat_proxy_outs`) and the symbols it decomposes into
(`bsym.subsymbols`). Three kinds of symbols appear in the traces Thunder keeps:

- torch-level symbols (`thunder.torch`, printed `ltorch.mul`), whose `id` is the torch name
  they stand for (`torch.mul`, `torch.nn.functional.gelu`, `torch.Tensor.view`);
- primitives (`thunder.core.prims`, printed `prims.mul`), whose `id` is a `PrimIDs` member;
- executor symbols in the execution traces (`torch.mul` run by the torch executor,
  `TorchCompile0` / `nvFusion0` fusion regions). An executor symbol that implements one
  thunder symbol keeps it as its only subsymbol, which is what we normalize; a fusion region
  (`sym.is_fusion`) keeps the fused ops as its subsymbols, which become nodes whose `scope`
  is the region's name, so a backend can map its kernels onto them.

Bookkeeping symbols (unpacking arguments, return, del, comments, checks) become the graph's
inputs and outputs or are dropped. Ops not in the tables below become `unknown:<native>`.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.ir import LEVELS, Arg, Graph, Node, TensorMeta, canonical_dtype
from irlens.ops import check_vocabulary, conform

# --- name tables: thunder symbol id (torch-level) or printed name (prims) -> canonical op ----

_ELEMENTWISE_NAMES = (
    "add sub mul div pow maximum minimum remainder atan2 eq ne lt le gt ge where "
    "neg abs exp exp2 log log1p expm1 tanh sqrt rsqrt reciprocal sin cos erf sigmoid sign "
    "floor ceil round logical_not logical_and logical_or bitwise_and isnan"
).split()

TORCH_OPS: dict[str, str] = {
    **{f"torch.{op}": op for op in _ELEMENTWISE_NAMES},
    "torch.subtract": "sub", "torch.multiply": "mul", "torch.true_divide": "div", "torch.divide": "div",
    "torch.square": "pow",  # x**2; the exponent is added as a literal input
    # composites
    "torch.nn.functional.gelu": "gelu", "torch.relu": "relu", "torch.nn.functional.silu": "silu",
    "torch.softmax": "softmax", "torch.log_softmax": "log_softmax", "log_softmax_backward": "log_softmax_backward",
    "torch.layer_norm": "layer_norm", "torch.rms_norm": "rms_norm", "torch.nn.functional.linear": "linear",
    "torch.nn.functional.scaled_dot_product_attention": "sdpa", "torch.nn.functional.embedding": "embedding",
    "torch.ops.aten.embedding_backward": "embedding_backward",
    "torch.mean": "mean", "torch.var": "var",
    "torch.nn.functional.dropout": "dropout", "torch.tril": "tril", "torch.masked_fill": "masked_fill",
    # reductions and matmul
    "torch.sum": "sum", "torch.amax": "amax", "torch.amin": "amin", "torch.prod": "prod",
    "torch.argmax": "argmax", "torch.argmin": "argmin", "torch.cumsum": "cumsum",
    "torch.matmul": "matmul", "torch.bmm": "matmul", "torch.mm": "matmul",
    # data movement, casts, creation
    "torch.reshape": "reshape", "torch.Tensor.view": "reshape", "torch.Tensor.view_as": "reshape",
    "torch.unsqueeze": "reshape", "torch.squeeze": "reshape", "torch.flatten": "reshape", "torch.unflatten": "reshape",
    "torch.permute": "permute", "torch.transpose": "permute",
    "torch.Tensor.expand": "broadcast", "torch.Tensor.expand_as": "broadcast",
    "torch.cat": "concat",
    "torch.Tensor.contiguous": "copy", "torch.clone": "copy",
    "torch.Tensor.to": "convert", "torch.Tensor.type_as": "convert", "torch.Tensor.type": "convert",
    "Tensor.double": "convert", "Tensor.half": "convert", "Tensor.bfloat16": "convert",
    "torch.full": "full", "torch.arange": "iota",
    # the sdpa executor's fused attention (CUDA): forward-for-grad and backward
    "sdpaex_grad_forward_scaled_dot_product_efficient_attention": "sdpa",
    "sdpafx_grad_forward_scaled_dot_product_efficient_attention": "sdpa",
    "sdpaex_scaled_dot_product_efficient_attention_backward": "sdpa_backward",
    "sdpafx_scaled_dot_product_efficient_attention_backward": "sdpa_backward",
}

PRIMS_OPS: dict[str, str] = {
    **{f"prims.{op}": op for op in _ELEMENTWISE_NAMES if op not in {"sigmoid", "logical_not", "logical_and", "logical_or", "isnan"}},
    "prims.sum": "sum", "prims.amax": "amax", "prims.amin": "amin", "prims.prod": "prod",
    "prims.argmax": "argmax", "prims.argmin": "argmin", "prims.var": "var",
    "prims.matmul": "matmul", "prims.linear": "linear",
    "prims.embedding": "embedding", "prims.embedding_backward": "embedding_backward",
    "prims.reshape": "reshape", "prims.squeeze": "reshape", "prims.broadcast_in_dim": "broadcast",
    "prims.transpose": "permute", "prims.slice_prim": "slice", "prims.cat": "concat", "prims.take": "take",
    "prims.convert_element_type": "convert",
    "prims.shallow_copy": "copy", "prims.clone": "copy", "prims.stride_order": "copy",
    "prims.full": "full", "prims.iota": "iota",
}

# The torch executor's own operators for primitives it runs directly (execution traces).
TORCH_EXECUTOR_OPS: dict[str, str] = {
    "shallow_copy": "copy", "torch_prims_reshape_impl": "reshape", "torch_slice_prim_impl": "slice",
    "torch_div_prim_impl": "div",
}

check_vocabulary(TORCH_OPS)
check_vocabulary(PRIMS_OPS)
check_vocabulary(TORCH_EXECUTOR_OPS)
NAME_TABLE = {**TORCH_OPS, **PRIMS_OPS, **TORCH_EXECUTOR_OPS}

# Torch-level symbols whose meaning their subsymbols say better than one canonical op could:
# indexing and splitting are slices (+ reshapes), zeros/ones are `full`, cross_entropy is
# log_softmax + nll_loss, nll_loss a gather and a mean.
EXPAND_INTO_SUBSYMBOLS = {
    "torch.nn.functional.cross_entropy", "torch.nn.functional.nll_loss",
    "torch.Tensor.__getitem__", "torch.split", "torch.chunk", "torch.tensor_split", "torch.unbind",
    "torch.split_with_sizes", "torch.stack", "torch.zeros", "torch.ones", "torch.zeros_like",
    "torch.ones_like", "torch.full_like", "torch.Tensor.repeat",
}

# var_mean returns (var, mean); the common view has no two-output reduction, so it becomes two nodes.
VAR_MEAN = {"torch.var_mean", "prims.var_mean"}

# Symbols that carry no computation: argument unpacking (-> Graph.inputs), return (-> Graph.outputs),
# deletes, comments, checks and collection bookkeeping.
_BOOKKEEPING_PREFIXES = ("unpack_", "check_", "assert_", "pack_")
_BOOKKEEPING = {
    "python_return", "python_del", "del", "comment", "python_print", "python_vars", "sink",
    "clear_mutable_collection", "construct_tuple", "shape",
}
# The cotangent handed to the backward in the grad-transform trace: a graph input.
_GRAD_INPUTS = {"get_grad"}


@dataclass
class ExecutionGroup:
    """What one top-level bound symbol of a trace runs as: a fusion region (`TorchCompile0`,
    `nvFusion0`) or one op outside any fusion, and the common-view nodes it produced."""

    name: str  # the region's name, or the op as printed (torch.matmul)
    fusion: bool
    node_ids: list[str]
    bsym: Any  # the bound symbol (a fusion's callable is in its call context)


def trace_to_graph(trace, *, name: str, frontend: str = "thunder", stage: str, level: str = "composite") -> Graph:
    """The common view of one Thunder trace (`level` composite, or primitive via decompose)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    graph, _ = trace_to_graph_and_groups(trace, name=name, frontend=frontend, stage=stage)
    if level == "composite":
        return graph
    from irlens.ir_adapters.decompose import to_primitive  # lazily: the decomposition pass is optional here

    return to_primitive(graph)


def trace_to_graph_and_groups(trace, *, name: str, frontend: str = "thunder",
                              stage: str) -> tuple[Graph, list[ExecutionGroup]]:
    """The composite common view of a trace, and what each top-level bound symbol became."""
    builder = _GraphBuilder()
    groups: list[ExecutionGroup] = []
    returned: Any = None
    for bsym in trace.bound_symbols:
        sym_name = bsym.sym.name
        if sym_name == "python_return":
            returned = bsym.args[0] if len(bsym.args) == 1 else bsym.args
        elif sym_name.startswith("unpack_") or sym_name in _GRAD_INPUTS:
            builder.add_inputs(bsym.flat_proxy_outs)
        elif _is_bookkeeping(sym_name):
            continue
        elif bsym.sym.is_fusion:
            ids = [i for sub in bsym.subsymbols for i in builder.add(sub, scope=sym_name)]
            groups.append(ExecutionGroup(sym_name, True, ids, bsym))
        else:
            ids = builder.add(bsym, scope="")
            groups.append(ExecutionGroup(bsym.name_with_module(), False, ids, bsym))
    graph = Graph(name, frontend, stage, "composite", builder.inputs, builder.nodes, _output_names(returned))
    return graph, groups


def native_name(bsym) -> str:
    """The key a bound symbol is looked up by: torch-level and executor symbols by their string id
    (`torch.mul`, `sdpaex_...`), primitives by their printed name (`prims.mul`)."""
    sym_id = bsym.sym.id
    return sym_id if isinstance(sym_id, str) else bsym.name_with_module()


def resolve(bsym):
    """The thunder-level bound symbol to normalize: an executor symbol that implements one
    symbol (`torch.mul` around `ltorch.mul`) stands for its only subsymbol."""
    while native_name(bsym) not in _KNOWN and bsym.sym.executor is not None and len(bsym.subsymbols) == 1:
        sub = bsym.subsymbols[0]
        if _names(sub.flat_proxy_outs) != _names(bsym.flat_proxy_outs):
            break
        bsym = sub
    return bsym


_KNOWN = set(NAME_TABLE) | EXPAND_INTO_SUBSYMBOLS | VAR_MEAN


# --- building the graph -------------------------------------------------------------------

@dataclass
class _GraphBuilder:
    inputs: list[TensorMeta] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set)

    def add_inputs(self, proxies) -> None:
        known = {t.name for t in self.inputs}
        for p in proxies:
            meta = tensor_meta(p)
            if meta is not None and meta.name not in known:
                self.inputs.append(meta)
                known.add(meta.name)

    def add(self, bsym, scope: str) -> list[str]:
        """Append the nodes `bsym` normalizes to; returns their ids."""
        printed = bsym.name_with_module()
        inner = resolve(bsym)
        key = native_name(inner)
        if key in EXPAND_INTO_SUBSYMBOLS and inner.subsymbols:
            return [i for sub in inner.subsymbols for i in self.add(sub, scope)]
        if key in VAR_MEAN:
            specs = _var_mean(_Call(inner))
        elif key in NAME_TABLE:
            op = NAME_TABLE[key]
            specs = _NORMALIZERS.get(op, _values)(op, _Call(inner))
        else:
            specs = [_Spec(f"unknown:{printed}", [_arg(a) for a in bsym.flat_args if _is_value(a)], {}, list(bsym.flat_proxy_outs))]
        return [self._emit(spec, printed, scope) for spec in specs]

    def _emit(self, spec: "_Spec", native: str, scope: str) -> str:
        outputs = [m for m in (tensor_meta(p) for p in spec.outputs) if m is not None]
        node_id = outputs[0].name if outputs else f"{native}:{len(self.nodes)}"
        while node_id in self._ids:  # ids are output names, unique in SSA traces; guard anyway
            node_id += "'"
        self._ids.add(node_id)
        self.nodes.append(conform(Node(node_id, spec.op, spec.inputs, outputs, spec.attrs, native, scope)))
        return node_id


@dataclass
class _Spec:
    op: str
    inputs: list[Arg]
    attrs: dict
    outputs: list  # proxies


class _Call:
    """A bound symbol with its arguments bound to parameter names (defaults applied)."""

    def __init__(self, bsym):
        self.bsym = bsym
        self.args = _bind(bsym)
        self.outs = list(bsym.flat_proxy_outs)

    def get(self, *names: str, default: Any = None) -> Any:
        for n in names:
            if n in self.args:
                return self.args[n]
        return default

    def tensors(self) -> list[str]:
        """Tensor arguments, in signature order (sequences of tensors flattened)."""
        out = []
        for v in self.args.values():
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if _is_tensor(x):
                    out.append(x.name)
        return out

    def first(self):
        return next(iter(self.args.values())) if self.args else self.bsym.args[0]

    @property
    def in_ndim(self) -> int:
        return len(self.first().shape)

    @property
    def out_shape(self) -> list[int]:
        return list(self.outs[0].shape)

    def spec(self, op: str, inputs: list[Arg], **attrs) -> list[_Spec]:
        return [_Spec(op, inputs, attrs, self.outs)]


def _bind(bsym) -> dict[str, Any]:
    from thunder.core.symbol import Symbol

    meta = bsym.sym.meta
    while isinstance(meta, Symbol):  # executor operators registered with a primitive as their meta
        meta = meta.meta
    try:
        bound = inspect.signature(meta).bind(*bsym.args, **bsym.kwargs)
    except (TypeError, ValueError):  # no usable signature: fall back to positions
        return {f"arg{i}": a for i, a in enumerate(bsym.args)} | dict(bsym.kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


# --- normalizers: (canonical op, call) -> node specs in the attrs conventions of irlens.ops ---

def _values(op: str, c: _Call) -> list[_Spec]:
    """Elementwise ops: every positional tensor or scalar is an input, in order."""
    inputs = [_arg(a) for a in c.bsym.args if _is_value(a)]
    alpha = c.bsym.kwargs.get("alpha", 1)
    if c.bsym.kwargs.get("rounding_mode") is not None:  # floor/trunc division: not the canonical div
        return c.spec(f"unknown:{c.bsym.name_with_module()}", inputs, rounding_mode=c.bsym.kwargs["rounding_mode"])
    if op == "pow" and len(inputs) == 1:  # torch.square
        inputs.append(2)
    if op in ("add", "sub") and alpha not in (1, None):
        # a + alpha * b: the scaling is a node of its own, its output named after the result
        scaled = _Derived(f"{c.outs[0].name}_alpha", c.outs[0])
        return [_Spec("mul", [inputs[1], _arg(alpha)], {}, [scaled]), _Spec(op, [inputs[0], scaled.name], {}, c.outs)]
    return c.spec(op, inputs)


@dataclass(frozen=True)
class _Derived:
    """A value the adapter adds (e.g. alpha * b), shaped like an existing proxy."""

    name: str
    like: Any

    @property
    def shape(self):
        return self.like.shape

    @property
    def dtype(self):
        return self.like.dtype


def _reduction(op: str, c: _Call) -> list[_Spec]:
    if op in ("argmax", "argmin"):  # one dim, or None: over the flattened input
        dim = c.get("dim")
        return c.spec(op, [c.first().name], dim=None if dim is None else _dim(dim, c.in_ndim),
                      keepdim=bool(c.get("keepdim", default=False)))
    attrs = {"dims": _dims(c.get("dim", "dims"), c.in_ndim), "keepdim": bool(c.get("keepdim", default=False))}
    if op == "var":
        attrs["correction"] = _correction(c)
    return c.spec(op, [c.first().name], **attrs)


def _var_mean(c: _Call) -> list[_Spec]:
    dims = _dims(c.get("dim", "dims"), c.in_ndim)
    keepdim = bool(c.get("keepdim", default=False))
    x = c.first().name
    var, mean = c.outs[0], c.outs[1]
    return [
        _Spec("var", [x], {"dims": dims, "keepdim": keepdim, "correction": _correction(c)}, [var]),
        _Spec("mean", [x], {"dims": dims, "keepdim": keepdim}, [mean]),
    ]


def _correction(c: _Call) -> float:
    correction = c.get("correction")
    if correction is None:
        correction = 1 if c.get("unbiased", default=True) else 0
    return correction


def _along_dim(op: str, c: _Call) -> list[_Spec]:
    return c.spec(op, [c.first().name], dim=_dim(c.get("dim"), c.in_ndim))


def _ordered(inputs: str, **attrs: str) -> Callable[[str, _Call], list[_Spec]]:
    """Inputs in the canonical order of irlens.ops, each named by the thunder parameter(s) it
    comes from ("a|input": the first present; an absent optional input is None), and attrs
    taken from the named parameters."""
    params = [alternatives.split("|") for alternatives in inputs.split()]

    def normalize(op: str, c: _Call) -> list[_Spec]:
        values = [_arg(c.get(*names)) for names in params]
        return c.spec(op, values, **{k: _plain(c.get(*v.split("|"))) for k, v in attrs.items()})

    return normalize


def _norm(op: str, c: _Call) -> list[_Spec]:
    shape = c.get("normalized_shape", default=())
    ndim = 1 if isinstance(shape, int) else len(shape)
    inputs = [_arg(c.first()), _arg(c.get("weight"))]
    if op == "layer_norm":
        inputs.append(_arg(c.get("bias")))
    return c.spec(op, inputs, normalized_ndim=ndim, eps=c.get("eps"))


def _sdpa(op: str, c: _Call) -> list[_Spec]:
    # torch's and the sdpa executor's parameter names; the executor's forward-for-grad also
    # returns logsumexp and philox state, its backward takes them (and returns [dq, dk, dv]).
    names = "query key value attn_mask" if op == "sdpa" else "grad_out query key value out logsumexp"
    scale = c.get("scale")
    return c.spec(op, [_arg(c.get(n)) for n in names.split()],
                  is_causal=bool(c.get("is_causal", default=False)), scale=None if scale is None else float(scale))


def _reshape(op: str, c: _Call) -> list[_Spec]:
    return c.spec(op, [c.first().name], shape=c.out_shape)


def _permute(op: str, c: _Call) -> list[_Spec]:
    ndim = c.in_ndim
    if "dim0" in c.args:  # torch.transpose(a, dim0, dim1): a swap
        perm = list(range(ndim))
        d0, d1 = _dim(c.args["dim0"], ndim), _dim(c.args["dim1"], ndim)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    else:
        dims = c.get("dims", "permutation")
        if len(dims) == 1 and isinstance(dims[0], (list, tuple)):  # permute(a, (1, 0))
            dims = dims[0]
        perm = [_dim(d, ndim) for d in dims]
    return c.spec(op, [c.first().name], perm=perm)


def _broadcast(op: str, c: _Call) -> list[_Spec]:
    dims = c.get("broadcast_dimensions")
    out_ndim = len(c.out_shape)
    if dims is None:  # expand: input dims align with the trailing output dims
        dims = range(out_ndim - c.in_ndim, out_ndim)
    return c.spec(op, [c.first().name], shape=c.out_shape, broadcast_dims=list(dims))


def _slice(op: str, c: _Call) -> list[_Spec]:
    start, limit = list(c.get("start_indices")), list(c.get("end_indices"))
    step = c.get("strides") or [1] * len(start)
    return c.spec(op, [c.first().name], start=start, limit=limit, step=list(step))


def _concat(op: str, c: _Call) -> list[_Spec]:
    return c.spec(op, c.tensors(), dim=_dim(c.get("dim", default=0), len(c.out_shape)))


def _convert(op: str, c: _Call) -> list[_Spec]:
    src = c.first()
    dtype = tensor_meta(c.outs[0]).dtype
    if tensor_meta(src).dtype == dtype:  # a .to() that changes no dtype (device, or a no-op): a copy
        return c.spec("copy", [src.name])
    return c.spec(op, [src.name], dtype=dtype)


def _copy(op: str, c: _Call) -> list[_Spec]:
    return c.spec(op, [c.first().name])


def _full(op: str, c: _Call) -> list[_Spec]:
    return c.spec(op, [], shape=c.out_shape, value=_plain(c.get("fill_value")), dtype=tensor_meta(c.outs[0]).dtype)


def _iota(op: str, c: _Call) -> list[_Spec]:
    """arange(start, end, step) / prims.iota: iota along dim 0, then * step and + start when
    they are not the defaults (the canonical iota counts from 0 by 1)."""
    out = c.outs[0]
    start, step = _plain(c.get("start", default=0)), _plain(c.get("step", default=1))
    if "end" in c.args and c.args["end"] is None:  # arange(n): the one positional is the end
        start = 0
    steps = ([("mul", step)] if step != 1 else []) + ([("add", start)] if start != 0 else [])
    value = _Derived(f"{out.name}_iota", out) if steps else out
    specs = [_Spec(op, [], {"shape": c.out_shape, "dim": 0, "dtype": tensor_meta(out).dtype}, [value])]
    for i, (step_op, operand) in enumerate(steps):
        result = out if i == len(steps) - 1 else _Derived(f"{out.name}_{step_op}", out)
        specs.append(_Spec(step_op, [value.name, operand], {}, [result]))
        value = result
    return specs


def _take(op: str, c: _Call) -> list[_Spec]:
    return c.spec(op, [c.first().name, _arg(c.get("indices", "index"))], dim=_dim(c.get("dim"), c.in_ndim))


_NORMALIZERS: dict[str, Callable[[str, _Call], list[_Spec]]] = {
    **{op: _reduction for op in ("sum", "amax", "amin", "prod", "argmax", "argmin", "mean", "var")},
    "softmax": _along_dim, "log_softmax": _along_dim, "cumsum": _along_dim,
    "layer_norm": _norm, "rms_norm": _norm, "sdpa": _sdpa, "sdpa_backward": _sdpa,
    "gelu": _ordered("a", approximate="approximate"), "relu": _ordered("a"), "silu": _ordered("a"),
    "linear": _ordered("a w bias"), "matmul": _ordered("a b"),
    "embedding": _ordered("weight a"), "embedding_backward": _ordered("grad indices", num_weights="num_weights"),
    "log_softmax_backward": _ordered("g output", dim="dim"),
    "dropout": _ordered("a", p="p", training="training"), "tril": _ordered("a", diagonal="diagonal"), "masked_fill": _ordered("a mask value"),
    "reshape": _reshape, "permute": _permute, "broadcast": _broadcast, "slice": _slice, "concat": _concat,
    "take": _take, "copy": _copy, "convert": _convert, "full": _full, "iota": _iota,
}


# --- values ---------------------------------------------------------------------------------

def tensor_meta(p) -> TensorMeta | None:
    if not _is_tensor(p) and not isinstance(p, _Derived):
        return None
    return TensorMeta(p.name, tuple(int(d) for d in p.shape), _dtype(p.dtype))


def _dtype(dtype) -> str:
    from irlens._compat import import_thunder

    thunder = import_thunder()
    return canonical_dtype(thunder.dtypes.to_torch_dtype(dtype))


def _is_tensor(x) -> bool:
    from thunder.core.proxies import TensorProxy

    return isinstance(x, TensorProxy)


def _is_value(x) -> bool:
    """A node input: a tensor, or a scalar literal (numbers and number proxies)."""
    from thunder.core.proxies import NumberProxy

    return _is_tensor(x) or isinstance(x, (NumberProxy, bool, int, float))


def _arg(x) -> Arg:
    from thunder.core.proxies import NumberProxy

    if _is_tensor(x):
        return x.name
    if isinstance(x, NumberProxy):  # a constant-cached number keeps its value; a symbolic one its name
        return x.value if x.value is not None else x.name
    return x


def _plain(v: Any) -> Any:
    """A literal attribute value: numbers, strings and sequences of them (dtypes as names)."""
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _dim(d: int, ndim: int) -> int:
    return d + ndim if d < 0 else d


def _dims(dims, ndim: int) -> list[int]:
    if dims is None:
        return list(range(ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted(_dim(d, ndim) for d in dims)


def _names(proxies) -> list[str]:
    return [p.name for p in proxies]


def _is_bookkeeping(sym_name: str) -> bool:
    return sym_name in _BOOKKEEPING or sym_name.startswith(_BOOKKEEPING_PREFIXES)


def _output_names(returned: Any) -> list[Arg]:
    """The tensors a trace returns. The jitted computation returns a dict ({'output': ...,
    'flat_args': ...}; the grad transform's also 'fw_flat_out', the forward's outputs beside
    the gradients in 'output'), and once split for autograd (that dict, saved-for-backward).
    Outputs are the forward outputs, then gradients and saved tensors; never the echoed args."""
    from thunder.core.pytree import tree_flatten

    parts = list(returned) if _is_split_return(returned) else [returned]
    leaves: list[Any] = []
    for part in parts:
        if isinstance(part, dict):
            keys = sorted((k for k in part if k != "flat_args"), key=lambda k: k != "fw_flat_out")
            for k in keys:
                leaves += tree_flatten(part[k])[0]
        else:
            leaves += tree_flatten(part)[0]
    names: list[Arg] = []
    for leaf in leaves:
        if _is_tensor(leaf) and leaf.name not in names:
            names.append(leaf.name)
    return names


def _is_split_return(returned: Any) -> bool:
    return isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], dict)
