"""Thunder's symbols -> canonical ops: the name tables and the argument normalization.

Two tables, by the level a symbol lives at:
- `TORCH`: torch-level symbols (`thunder.torch`, printed `ltorch.mul`), keyed by their id, the
  torch name they stand for (`torch.mul`, `torch.nn.functional.gelu`, `torch.Tensor.view`);
- `PRIMS`: Thunder's primitives (`thunder.core.prims.PrimIDs`), keyed `prims.<name>`: every one
  that computes a tensor has an entry (`UNMAPPED_PRIMS` says why the few others have none).
Executor operators resolve to the symbol they implement (`trace.resolve`); the sdpa
executor's fused attention has entries of its own.

An entry is a canonical op and a normalizer, which reads the symbol's arguments (bound to their
parameter names) into the op's inputs and attrs in the conventions of `irlens.ops`. A normalizer
must account for every argument: one it leaves unread whose value is not the parameter's
default, and that is not `NEUTRAL` (it cannot change the values: device, memory format), makes
the call `Unmapped`. The graph builder then expands the symbol into Thunder's own decomposition
(its subsymbols) or, where it has none, makes it `unknown:`; a meaning is never dropped.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any, Callable

from irlens.ir import Arg, TensorMeta, canonical_dtype
from irlens.ops import check_vocabulary


class Unmapped(Exception):
    """A table entry that cannot carry every argument of this call (the message says which)."""


@dataclass
class Spec:
    """One node to emit: canonical op, inputs (value names or literals), attrs, output proxies."""

    op: str
    inputs: list[Arg]
    attrs: dict
    outputs: list


@dataclass(frozen=True)
class Derived:
    """A value the adapter adds between two nodes it emits for one symbol (e.g. alpha * b)."""

    name: str
    shape: tuple
    dtype: Any  # a thunder dtype, or a canonical dtype name

    @classmethod
    def like(cls, name: str, proxy, shape=None, dtype=None) -> "Derived":
        return cls(name, tuple(proxy.shape if shape is None else shape), proxy.dtype if dtype is None else dtype)


# Parameters whose value cannot change the result's values.
NEUTRAL = frozenset({"device", "memory_format", "layout", "pin_memory", "requires_grad", "non_blocking", "inplace",
                     "copy"})
_NO_DEFAULT = inspect.Parameter.empty


class Call:
    """A bound symbol's arguments by parameter name (defaults applied; *args as `name[i]`,
    **kwargs by their keys), and which of them a normalizer has read."""

    def __init__(self, bsym):
        self.bsym = bsym
        self.args, self.defaults = bind(bsym)
        self.outs = list(bsym.flat_proxy_outs)
        self.read: set[str] = set()

    def get(self, *names: str, default: Any = None) -> Any:
        """The first of `names` that is a parameter (marked read), else `default`."""
        for n in names:
            if n in self.args:
                self.read.add(n)
                return self.args[n]
        return default

    def has(self, name: str) -> bool:
        return name in self.args

    def read_all(self) -> None:
        """Every argument is accounted for (the output's metadata says all they decide)."""
        self.read.update(self.args)

    def values(self) -> list:
        """Every argument in order, as read."""
        self.read_all()
        return list(self.args.values())

    def unread(self) -> list[str]:
        return [n for n, v in self.args.items()
                if n not in self.read and n not in NEUTRAL and not _is_default(v, self.defaults.get(n, _NO_DEFAULT))]

    def first(self):
        return self.get(next(iter(self.args)))

    @property
    def in_ndim(self) -> int:
        return len(next(iter(self.args.values())).shape)

    @property
    def out_shape(self) -> list[int]:
        return list(self.outs[0].shape)

    def out_dtype(self, k: int = 0) -> str:
        return dtype_name(self.outs[k].dtype)

    def spec(self, op: str, inputs: list[Arg], **attrs) -> list[Spec]:
        return [Spec(op, inputs, attrs, self.outs)]


def bind(bsym) -> tuple[dict[str, Any], dict[str, Any]]:
    """(arguments by parameter name, defaults by parameter name) of a bound symbol, bound to its
    meta's signature (an executor operator registered like a thunder symbol: that symbol's)."""
    params = _parameters(_meta_of(bsym.sym))
    if params is None:
        return {f"args[{i}]": a for i, a in enumerate(bsym.args)} | dict(bsym.kwargs), {}
    try:
        bound = inspect.Signature(params).bind(*bsym.args, **bsym.kwargs)
    except TypeError:
        return {f"args[{i}]": a for i, a in enumerate(bsym.args)} | dict(bsym.kwargs), {}
    args, defaults = {}, {}
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            for i, v in enumerate(bound.arguments.get(p.name, ())):
                args[f"{p.name}[{i}]"] = v
        elif p.kind is inspect.Parameter.VAR_KEYWORD:
            args.update(bound.arguments.get(p.name, {}))
        else:
            args[p.name] = bound.arguments.get(p.name, p.default)
            defaults[p.name] = p.default
    return args, defaults


def _meta_of(sym):
    from thunder.core.symbol import Symbol

    meta = sym.meta
    while isinstance(meta, Symbol):
        meta = meta.meta
    return meta


@functools.lru_cache(maxsize=None)
def _parameters(meta) -> tuple[inspect.Parameter, ...] | None:
    try:
        return tuple(inspect.signature(meta).parameters.values())
    except (TypeError, ValueError):
        return None


def _is_default(value, default) -> bool:
    if default is _NO_DEFAULT:
        return False
    if value is default:
        return True
    plain = (bool, int, float, str, type(None))
    return isinstance(value, plain) and isinstance(default, plain) and type(value) is type(default) and value == default


# --- values --------------------------------------------------------------------------------------

def dtype_name(dtype) -> str:
    if isinstance(dtype, str):
        return dtype
    from irlens._compat import import_thunder

    return canonical_dtype(import_thunder().dtypes.to_torch_dtype(dtype))


def tensor_meta(p) -> TensorMeta | None:
    if not is_tensor(p) and not isinstance(p, Derived):
        return None
    return TensorMeta(p.name, tuple(int(d) for d in p.shape), dtype_name(p.dtype))


def is_tensor(x) -> bool:
    from thunder.core.proxies import TensorProxy

    return isinstance(x, TensorProxy)


def is_number(x) -> bool:
    from thunder.core.proxies import NumberProxy

    return isinstance(x, (NumberProxy, bool, int, float))


def is_value(x) -> bool:
    """A node input: a tensor, or a scalar literal (numbers and number proxies)."""
    return is_tensor(x) or is_number(x)


def arg(x) -> Arg:
    from thunder.core.proxies import NumberProxy

    if is_tensor(x) or isinstance(x, Derived):
        return x.name
    if isinstance(x, NumberProxy):  # a constant-cached number keeps its value; a symbolic one its name
        return x.value if x.value is not None else x.name
    return x


def plain(v: Any) -> Any:
    """A literal attribute value: numbers, strings and sequences of them (dtypes as names)."""
    from thunder.core.proxies import NumberProxy

    if isinstance(v, NumberProxy):
        return v.value
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _is_exact(x) -> bool:
    """An integer or bool tensor, or a Python int/bool."""
    if is_tensor(x):
        name = dtype_name(x.dtype)
        return name == "bool" or name.startswith(("int", "uint"))
    return isinstance(plain(x), (bool, int))


def dim(d: int, ndim: int) -> int:
    d = plain(d)
    return d + ndim if d < 0 else d


def dims(ds, ndim: int) -> list[int]:
    ds = plain(ds)
    if ds is None:
        return list(range(ndim))
    if isinstance(ds, int):
        ds = [ds]
    return sorted(dim(d, ndim) for d in ds)


def _flat_ints(c: Call, name: str) -> list:
    """A sequence given as one argument or as varargs (`permute(a, (1, 0))`, `permute(a, 1, 0)`)."""
    if c.has(name):
        v = c.get(name)
        return [] if v is None else list(v) if isinstance(v, (list, tuple)) else [v]
    items = []
    i = 0
    while c.has(f"{name}[{i}]"):
        items.append(c.get(f"{name}[{i}]"))
        i += 1
    if len(items) == 1 and isinstance(items[0], (list, tuple)):
        items = list(items[0])
    return items


# --- normalizers: (canonical op, call) -> specs --------------------------------------------------

Normalizer = Callable[[str, Call], list[Spec]]
_ATTR_PARAMS = ("alpha", "rounding_mode")


def values(op: str, c: Call) -> list[Spec]:
    """Elementwise: every tensor or number argument is an input, in order; `alpha` scales the
    second operand (add, sub), `rounding_mode` is div's."""
    inputs = []
    for name, v in c.args.items():
        if name in _ATTR_PARAMS:
            continue
        if is_value(v):
            inputs.append(arg(c.get(name)))
        elif v is None:
            c.get(name)  # an absent optional operand; the op's arity decides
    attrs = {}
    mode = c.get("rounding_mode") if op == "div" else None
    if mode is not None:
        attrs["rounding_mode"] = mode
    if op == "pow" and len(inputs) == 1:  # torch.square
        inputs.append(2)
    alpha = plain(c.get("alpha", default=1)) if op in ("add", "sub") else 1
    if alpha not in (1, None):
        # a + alpha * b: the scaling is a node of its own
        out = c.outs[0]
        scaled = Derived.like(f"{out.name}_alpha", out)
        return [Spec("mul", [inputs[1], alpha], {}, [scaled]), Spec(op, [inputs[0], scaled.name], attrs, c.outs)]
    return c.spec(op, inputs, **attrs)


def prim_div(op: str, c: Call) -> list[Spec]:
    """prims.div truncates when both operands are exact (integers or bools), as its torch
    implementation does; else it is true division."""
    a, b = c.get("a"), c.get("b")
    if _is_exact(a) and _is_exact(b):
        return c.spec(op, [arg(a), arg(b)], rounding_mode="trunc")
    return c.spec(op, [arg(a), arg(b)])


def reduction(op: str, c: Call) -> list[Spec]:
    x = c.first()
    if op in ("argmax", "argmin"):  # one dim, or None: over the flattened input
        d = c.get("dim")
        return c.spec(op, [x.name], dim=None if d is None else dim(d, c.in_ndim),
                      keepdim=bool(plain(c.get("keepdim", default=False))))
    attrs = {"dims": dims(c.get("dim", "dims"), c.in_ndim), "keepdim": bool(plain(c.get("keepdim", default=False)))}
    if op == "var":
        attrs["correction"] = correction(c)
    return c.spec(op, [x.name], **attrs)


def correction(c: Call) -> float:
    corr = plain(c.get("correction"))
    unbiased = plain(c.get("unbiased"))
    if corr is None:
        corr = 0 if unbiased is False else 1
    return corr


def var_mean(op: str, c: Call) -> list[Spec]:
    """var_mean gives (var, mean): two nodes."""
    x = c.first()
    ds = dims(c.get("dim", "dims"), c.in_ndim)
    keep = bool(plain(c.get("keepdim", default=False)))
    return [Spec("var", [x.name], {"dims": ds, "keepdim": keep, "correction": correction(c)}, [c.outs[0]]),
            Spec("mean", [x.name], {"dims": ds, "keepdim": keep}, [c.outs[1]])]


def std(op: str, c: Call) -> list[Spec]:
    """prims.std: the square root of var."""
    x, out = c.first(), c.outs[0]
    v = Derived.like(f"{out.name}_var", out)
    return [Spec("var", [x.name], {"dims": dims(c.get("dims"), c.in_ndim), "keepdim": False,
                                   "correction": correction(c)}, [v]),
            Spec("sqrt", [v.name], {}, c.outs)]


def along_dim(op: str, c: Call) -> list[Spec]:
    return c.spec(op, [c.first().name], dim=dim(c.get("dim"), c.in_ndim))


def ordered(inputs: str, **attrs: str) -> Normalizer:
    """Inputs in the canonical op's order, each from the parameter(s) named ("a|input": the first
    present; an absent optional input is None); attrs from the named parameters."""
    params = [alternatives.split("|") for alternatives in inputs.split()]

    def normalize(op: str, c: Call) -> list[Spec]:
        ins = [arg(c.get(*names)) for names in params]
        return c.spec(op, ins, **{k: plain(c.get(*v.split("|"))) for k, v in attrs.items()})

    return normalize


def with_dim(inputs: str, **attrs: str) -> Normalizer:
    """`ordered` with a non-negative `dim` from the parameter `dim`."""
    base = ordered(inputs, **attrs)

    def normalize(op: str, c: Call) -> list[Spec]:
        ndim = c.in_ndim
        (spec,) = base(op, c)
        spec.attrs["dim"] = dim(c.get("dim"), max(ndim, 1))
        return [spec]

    return normalize


def norm(op: str, c: Call) -> list[Spec]:
    shape = plain(c.get("normalized_shape", default=()))
    ndim = 1 if isinstance(shape, int) else len(shape)
    x = c.first()
    inputs = [arg(x), arg(c.get("weight"))]
    if op == "layer_norm":
        inputs.append(arg(c.get("bias")))
    eps = plain(c.get("eps"))
    if eps is None:  # torch's rms_norm: the machine epsilon of the (float32 or wider) compute dtype
        import torch

        name = dtype_name(x.dtype)
        eps = torch.finfo(torch.float32 if name in ("float16", "bfloat16") else getattr(torch, name)).eps
    return c.spec(op, inputs, normalized_ndim=ndim, eps=float(eps))


# Parameters of the sdpa executor's operators that carry no meaning for the values: RNG state
# and the sequence bookkeeping of the flash kernel.
_SDPA_BOOKKEEPING = ("philox_seed", "philox_offset", "cum_seq_q", "cum_seq_k", "max_q", "max_k")


def sdpa(op: str, c: Call) -> list[Spec]:
    # torch's and the sdpa executor's parameter names; the executor's forward-for-grad also
    # returns logsumexp and philox state, its backward takes them (and returns [dq, dk, dv]).
    names = "query key value attn_mask" if op == "sdpa" else "grad_out query key value out logsumexp attn_mask"
    inputs = [arg(c.get(n)) for n in names.split()]
    for n in _SDPA_BOOKKEEPING:
        c.get(n)
    scale, dropout_p = plain(c.get("scale")), float(plain(c.get("dropout_p", default=0.0)) or 0.0)
    attrs = {"is_causal": bool(plain(c.get("is_causal", default=False))),
             "scale": None if scale is None else float(scale)}
    if op == "sdpa":
        attrs["dropout_p"] = dropout_p
    elif dropout_p:
        raise Unmapped("sdpa backward with dropout")
    if op == "sdpa_backward" and inputs[-1] is None:
        inputs.pop()
    return c.spec(op, inputs, **attrs)


def same_dtype(c: Call, x) -> None:
    """A reshape or copy keeps the dtype; one that changes it (`view(dtype)`) reinterprets bits."""
    if dtype_name(x.dtype) != c.out_dtype():
        raise Unmapped(f"{dtype_name(x.dtype)} -> {c.out_dtype()}: not the same values")


def reshape(op: str, c: Call) -> list[Spec]:
    """Every reshape-like symbol: the output shape says all its arguments decide."""
    x = c.first()
    c.read_all()
    same_dtype(c, x)
    return c.spec(op, [x.name], shape=c.out_shape)


def permute(op: str, c: Call) -> list[Spec]:
    ndim = c.in_ndim
    if c.has("dim0"):  # torch.transpose(a, dim0, dim1): a swap
        perm = list(range(ndim))
        d0, d1 = dim(c.get("dim0"), ndim), dim(c.get("dim1"), ndim)
        perm[d0], perm[d1] = perm[d1], perm[d0]
    else:
        perm = [dim(d, ndim) for d in _flat_ints(c, "dims" if c.has("dims") or c.has("dims[0]") else "permutation")]
    return c.spec(op, [c.first().name], perm=perm)


def broadcast(op: str, c: Call) -> list[Spec]:
    x = c.first()
    bdims = c.get("broadcast_dimensions")
    out_ndim = len(c.out_shape)
    same_dtype(c, x)
    if bdims is None:  # expand: the input's dims align with the trailing output dims
        c.read_all()
        bdims = range(out_ndim - len(x.shape), out_ndim)
    c.get("shape")
    return c.spec(op, [x.name], shape=c.out_shape, broadcast_dims=list(plain(list(bdims))))


def slice_(op: str, c: Call) -> list[Spec]:
    start, limit = plain(list(c.get("start_indices"))), plain(list(c.get("end_indices")))
    step = plain(c.get("strides")) or [1] * len(start)
    return c.spec(op, [c.first().name], start=start, limit=limit, step=list(step))


def concat(op: str, c: Call) -> list[Spec]:
    tensors = c.get("tensors")
    return c.spec(op, [t.name for t in tensors], dim=dim(c.get("dim", default=0), len(c.out_shape)))


def flip(op: str, c: Call) -> list[Spec]:
    ndim = c.in_ndim
    return c.spec(op, [c.first().name], dims=sorted({dim(d, max(ndim, 1)) for d in _flat_ints(c, "dims")}))


def convert(op: str, c: Call) -> list[Spec]:
    """A cast to the output's dtype (a `.to()` that keeps the dtype is a copy); the other
    arguments (device, memory format, the dtype as given) decide nothing more."""
    src = c.first()
    c.read_all()
    if not is_tensor(src):
        raise Unmapped("a cast of a number")
    dtype = c.out_dtype()
    if dtype_name(src.dtype) == dtype:
        return c.spec("copy", [src.name])
    return c.spec(op, [src.name], dtype=dtype)


def copy(op: str, c: Call) -> list[Spec]:
    """The same values: the other arguments say where they live (a device, a memory layout)."""
    x = c.first()
    c.read_all()
    same_dtype(c, x)
    return c.spec(op, [x.name])


def copy_into(op: str, c: Call) -> list[Spec]:
    """prims.copy_(copy_from, copy_to): the new value of copy_to is copy_from cast to its dtype
    and broadcast to its shape."""
    src, dst = c.get("copy_from"), c.get("copy_to")
    c.get("grad_enabled")
    out = c.outs[0]
    specs, value = [], src
    if dtype_name(src.dtype) != dtype_name(dst.dtype):
        cast = Derived.like(f"{out.name}_cast", src, dtype=dst.dtype)
        specs.append(Spec("convert", [src.name], {"dtype": dtype_name(dst.dtype)}, [cast]))
        value = cast
    if tuple(src.shape) != tuple(dst.shape):
        specs.append(Spec("broadcast", [value.name], {"shape": list(dst.shape), "broadcast_dims": None}, c.outs))
    elif specs:
        specs[-1].outputs = c.outs
    else:
        specs.append(Spec("copy", [value.name], {}, c.outs))
    return specs


def aliases(op: str, c: Call) -> list[Spec]:
    """prims.update_aliases: the same values under new names, one copy each."""
    ins = [t for t in c.get("aliases") if is_tensor(t)]
    return [Spec("copy", [t.name], {}, [o]) for t, o in zip(ins, c.outs)]


def full(op: str, c: Call) -> list[Spec]:
    c.get("shape", "size")
    c.get("dtype")
    return c.spec(op, [], shape=c.out_shape, value=plain(c.get("fill_value")), dtype=c.out_dtype())


def empty(op: str, c: Call) -> list[Spec]:
    c.read_all()  # shape and dtype: the output's
    return c.spec(op, [], shape=c.out_shape, dtype=c.out_dtype())


def tensor_from_sequence(op: str, c: Call) -> list[Spec]:
    """prims.tensor_from_sequence(seq, dtype, device): a constant of Python numbers (nested
    sequences, row-major), in the output's dtype (dtype None: the one Thunder inferred). A
    number only known at run time (a symbolic proxy) or a complex one has no literal."""
    c.get("dtype")
    flat, items = [], [c.get("seq")]
    while items:
        x = items.pop(0)
        if isinstance(x, (list, tuple)):
            items[:0] = list(x)
            continue
        v = plain(x)
        if isinstance(v, complex) or not isinstance(v, (bool, int, float)):
            raise Unmapped(f"tensor_from_sequence of {type(x).__name__} {x!r}")
        flat.append(v)
    return c.spec(op, [], shape=c.out_shape, dtype=c.out_dtype(), values=flat)


def iota(op: str, c: Call) -> list[Spec]:
    """arange(start, end, step) / prims.iota(length, start, step): iota along dim 0, then * step
    and + start where they are not the defaults (the canonical iota counts from 0 by 1)."""
    out = c.outs[0]
    start, step = plain(c.get("start", default=0)), plain(c.get("step", default=1))
    c.get("end", "length")
    c.get("dtype")
    if c.has("end") and c.args["end"] is None:  # arange(n): the one positional is the end
        start = 0
    steps = ([("mul", step)] if step != 1 else []) + ([("add", start)] if start != 0 else [])
    value = Derived.like(f"{out.name}_iota", out) if steps else out
    specs = [Spec(op, [], {"shape": c.out_shape, "dim": 0, "dtype": c.out_dtype()}, [value])]
    for i, (step_op, operand) in enumerate(steps):
        result = out if i == len(steps) - 1 else Derived.like(f"{out.name}_{step_op}", out)
        specs.append(Spec(step_op, [value.name, operand], {}, [result]))
        value = result
    return specs


def _affine(op: str, c: Call, value, scale, shift) -> list[Spec]:
    """`value` (a spec making the first derived value) * scale + shift into the output."""
    out = c.outs[0]
    specs = [value]
    steps = ([("mul", scale)] if scale != 1 else []) + ([("add", shift)] if shift != 0 else [])
    if not steps:
        value.outputs = c.outs
        return specs
    current = value.outputs[0]
    for i, (step_op, operand) in enumerate(steps):
        result = out if i == len(steps) - 1 else Derived.like(f"{out.name}_{step_op}", out)
        specs.append(Spec(step_op, [current.name, operand], {}, [result]))
        current = result
    return specs


def uniform(op: str, c: Call) -> list[Spec]:
    """prims.uniform / uniform_philox: uniform on [minval, maxval) (the seed and offset pick the
    values, not their distribution)."""
    lo, hi = plain(c.get("minval")), plain(c.get("maxval"))
    c.get("shape")
    c.get("dtype")
    c.get("seed")
    c.get("offset")
    out = c.outs[0]
    first = Spec(op, [], {"shape": c.out_shape, "dtype": c.out_dtype(), "distribution": "uniform"},
                 [Derived.like(f"{out.name}_rand", out)])
    return _affine(op, c, first, hi - lo, lo)


def randn(op: str, c: Call) -> list[Spec]:
    c.read_all()
    return c.spec(op, [], shape=c.out_shape, dtype=c.out_dtype(), distribution="normal")


def randint(op: str, c: Call) -> list[Spec]:
    """prims.randint(low, high): floor(uniform * (high - low)) + low, in the output's dtype."""
    low, high = plain(c.get("low")), plain(c.get("high"))
    c.get("shape")
    c.get("dtype")
    out = c.outs[0]
    u = Derived.like(f"{out.name}_rand", out, dtype="float64")
    scaled = Derived.like(f"{out.name}_scaled", out, dtype="float64")
    floored = Derived.like(f"{out.name}_floor", out, dtype="float64")
    shifted = Derived.like(f"{out.name}_shifted", out, dtype="float64")
    return [Spec(op, [], {"shape": c.out_shape, "dtype": "float64", "distribution": "uniform"}, [u]),
            Spec("mul", [u.name, float(high - low)], {}, [scaled]),
            Spec("floor", [scaled.name], {}, [floored]),
            Spec("add", [floored.name, float(low)], {}, [shifted]),
            Spec("convert", [shifted.name], {"dtype": c.out_dtype()}, c.outs)]


def take(op: str, c: Call) -> list[Spec]:
    """prims.take / index_select: slices at index along dim. prims.take keeps a 0-d index's dim
    (length 1); the canonical take drops it, so that index is made 1-d first."""
    x, index = c.get("a", "input"), c.get("index", "indices")
    d = dim(c.get("dim"), max(len(x.shape), 1))
    if len(index.shape) == 0 and len(c.out_shape) == len(x.shape):
        one = Derived.like(f"{c.outs[0].name}_index", index, shape=(1,))
        return [Spec("reshape", [index.name], {"shape": [1]}, [one]), Spec(op, [x.name, one.name], {"dim": d}, c.outs)]
    return c.spec(op, [x.name, index.name], dim=d)


def pad(op: str, c: Call) -> list[Spec]:
    config = [list(plain(p)) for p in c.get("padding_config")]
    return c.spec(op, [c.first().name, arg(c.get("padding_value"))], padding=config)


def index_put(op: str, c: Call) -> list[Spec]:
    indices = [arg(i) for i in c.get("indices")]
    return c.spec(op, [c.first().name, arg(c.get("values")), *indices],
                  accumulate=bool(plain(c.get("accumulate", default=False))))


def topk(op: str, c: Call) -> list[Spec]:
    x = c.first()
    d = c.get("dim")
    return c.spec(op, [x.name], k=plain(c.get("k")), dim=dim(-1 if d is None else d, max(len(x.shape), 1)),
                  largest=bool(plain(c.get("largest", default=True))), sorted=bool(plain(c.get("sorted", default=True))))


def sort(op: str, c: Call) -> list[Spec]:
    """prims.sort(a, dim, descending, stable): the last parameter is named `sorted` in its meta."""
    x = c.first()
    d = c.get("dim")
    return c.spec(op, [x.name], dim=dim(-1 if d is None else d, max(len(x.shape), 1)),
                  descending=bool(plain(c.get("descending", default=False))),
                  stable=bool(plain(c.get("stable", "sorted", default=False))))


def argsort(op: str, c: Call) -> list[Spec]:
    """argsort is sort's indices (Thunder runs it whole)."""
    x, out = c.first(), c.outs[0]
    d = c.get("dim")
    values = Derived.like(f"{out.name}_values", x)
    return [Spec(op, [x.name], {"dim": dim(-1 if d is None else d, max(len(x.shape), 1)),
                                "descending": bool(plain(c.get("descending", default=False))),
                                "stable": bool(plain(c.get("stable", default=False)))}, [values, out])]


def unfold(op: str, c: Call) -> list[Spec]:
    x = c.first()
    return c.spec(op, [x.name], dim=dim(c.get("dim"), max(len(x.shape), 1)), size=plain(c.get("size")),
                  step=plain(c.get("step")))


def embedding(op: str, c: Call) -> list[Spec]:
    """The forward's values do not depend on padding_idx, scale_grad_by_freq or sparse (they
    shape the gradient); max_norm renormalizes the weight, which the canonical op does not."""
    for neutral in ("padding_idx", "scale_grad_by_freq", "sparse", "norm_type"):
        c.get(neutral)
    if plain(c.get("max_norm")) is not None:
        raise Unmapped("embedding with max_norm")
    return c.spec(op, [arg(c.get("weight")), arg(c.get("a", "input"))])


def embedding_backward(op: str, c: Call) -> list[Spec]:
    """padding_idx -1 (what torch passes for none) is none: indices are non-negative."""
    if plain(c.get("sparse")):
        raise Unmapped("a sparse embedding gradient")
    padding_idx = plain(c.get("padding_idx"))
    return c.spec(op, [arg(c.get("grad")), arg(c.get("indices"))], num_weights=plain(c.get("num_weights")),
                  padding_idx=None if padding_idx is None or padding_idx < 0 else padding_idx,
                  scale_grad_by_freq=bool(plain(c.get("scale_grad_by_freq"))))


def convolution(op: str, c: Call) -> list[Spec]:
    weight = c.get("weight")
    spatial = len(weight.shape) - 2

    def seq(name):
        v = plain(c.get(name))
        v = [v] if isinstance(v, int) else list(v)
        return v * spatial if len(v) == 1 else v

    return c.spec(op, [c.first().name, weight.name, arg(c.get("bias"))], stride=seq("stride"), padding=seq("padding"),
                  dilation=seq("dilation"), transposed=bool(plain(c.get("transposed"))),
                  output_padding=seq("output_padding"), groups=plain(c.get("groups")))


def nll_loss_backward(op: str, c: Call) -> list[Spec]:
    return c.spec(op, [arg(c.get("g")), arg(c.get("a")), arg(c.get("target")), arg(c.get("weight")),
                       arg(c.get("total_weight"))],
                  reduction=plain(c.get("reduction")), ignore_index=plain(c.get("ignore_index")))


def softmax_like(op: str, c: Call) -> list[Spec]:
    """softmax / log_softmax(a, dim, dtype=None); a dtype is a cast the canonical op lacks."""
    if c.get("dtype") is not None:
        raise Unmapped(f"{op} with a dtype")
    return along_dim(op, c)


def log_softmax_backward(op: str, c: Call) -> list[Spec]:
    """dtype is the forward input's dtype, the gradient's: a cast unless it is the output's."""
    if dtype_name(c.get("dtype")) != c.out_dtype():
        raise Unmapped("log_softmax_backward into another dtype")
    return ordered("g output", dim="dim")(op, c)


def cumsum(op: str, c: Call) -> list[Spec]:
    """cumsum(a, dim, dtype): a dtype casts the input first (torch's semantics)."""
    x, d = c.first(), dim(c.get("dim"), max(c.in_ndim, 1))
    dtype = c.get("dtype")
    if dtype is None:
        return c.spec(op, [x.name], dim=d)
    cast = Derived.like(f"{c.outs[0].name}_cast", x, dtype=dtype_name(dtype))
    return [Spec("convert", [x.name], {"dtype": dtype_name(dtype)}, [cast]), Spec(op, [cast.name], {"dim": d}, c.outs)]


# --- the tables ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    op: str
    normalize: Normalizer = values


def _same(names: str, normalize: Normalizer = values, prefix: str = "") -> dict[str, Entry]:
    return {f"{prefix}{n}": Entry(n, normalize) for n in names.split()}


_UNARY = ("abs acos acosh asin asinh atan atanh bitwise_not ceil cos cosh digamma erf erfc erfinv exp exp2 expm1 "
          "floor lgamma log log10 log1p log2 neg reciprocal round rsqrt sign sin sinh sqrt tan tanh trunc "
          "isfinite signbit erfcinv ndtri")
_BINARY = ("add sub mul pow maximum minimum remainder fmod atan2 eq ne lt le gt ge bitwise_and bitwise_or bitwise_xor "
           "bitwise_left_shift bitwise_right_shift nextafter zeta")

_PRIMS_ONLY = {"erfcinv", "ndtri", "zeta"}  # torch spells them torch.special.*, which Thunder decomposes

TORCH: dict[str, Entry] = {
    **_same(" ".join(n for n in f"{_UNARY} {_BINARY}".split() if n not in _PRIMS_ONLY)
            + " div where sigmoid logical_not logical_and logical_or logical_xor isnan isinf lerp", prefix="torch."),
    "torch.subtract": Entry("sub"), "torch.multiply": Entry("mul"), "torch.true_divide": Entry("div"),
    "torch.divide": Entry("div"), "torch.square": Entry("pow"), "torch.clamp": Entry("clamp", ordered("a min max")),
    # composites
    "torch.nn.functional.gelu": Entry("gelu", ordered("a", approximate="approximate")),
    "torch.relu": Entry("relu", ordered("a")), "torch.nn.functional.silu": Entry("silu", ordered("a")),
    "torch.softmax": Entry("softmax", softmax_like), "torch.log_softmax": Entry("log_softmax", softmax_like),
    "log_softmax_backward": Entry("log_softmax_backward", log_softmax_backward),
    "torch.layer_norm": Entry("layer_norm", norm), "torch.rms_norm": Entry("rms_norm", norm),
    "torch.nn.functional.linear": Entry("linear", ordered("a w bias")),
    "torch.nn.functional.scaled_dot_product_attention": Entry("sdpa", sdpa),
    "torch.nn.functional.embedding": Entry("embedding", embedding),
    "torch.ops.aten.embedding_backward": Entry("embedding_backward", embedding_backward),
    "nll_loss_backward": Entry("nll_loss_backward", nll_loss_backward),
    "torch.mean": Entry("mean", reduction), "torch.var": Entry("var", reduction),
    "torch.var_mean": Entry("var", var_mean),
    "torch.nn.functional.dropout": Entry("dropout", ordered("a", p="p", training="training")),
    "torch.tril": Entry("tril", ordered("a", diagonal="diagonal")),
    "torch.masked_fill": Entry("masked_fill", ordered("a mask value")),
    # reductions, scans, selections, matmul
    **{f"torch.{op}": Entry(op, reduction) for op in ("sum", "amax", "amin", "prod", "argmax", "argmin")},
    "torch.cumsum": Entry("cumsum", cumsum), "torch.topk": Entry("topk", topk), "torch.sort": Entry("sort", sort),
    "torch.argsort": Entry("sort", argsort),
    "torch.matmul": Entry("matmul", ordered("a b")), "torch.bmm": Entry("matmul", ordered("a b")),
    # torch.mm is torch.spmm's function: Thunder's torch-fallback symbol for both is torch.spmm
    "torch.spmm": Entry("matmul", ordered("args[0] args[1]")),
    # indexing
    "torch.index_select": Entry("take", take), "torch.gather": Entry("gather", with_dim("input index")),
    "torch.take_along_dim": Entry("gather", with_dim("a indices")),
    "torch.index_add": Entry("index_add", with_dim("a index source")),
    "torch.index_copy": Entry("index_copy", with_dim("a index source")),
    "torch.scatter_add": Entry("scatter_add", with_dim("a index src")),
    # data movement, casts, creation
    **{name: Entry("reshape", reshape) for name in (
        "torch.reshape", "torch.Tensor.view", "torch.Tensor.view_as", "torch.unsqueeze", "torch.squeeze",
        "torch.flatten", "torch.unflatten")},
    "torch.permute": Entry("permute", permute), "torch.transpose": Entry("permute", permute),
    "torch.Tensor.expand": Entry("broadcast", broadcast), "torch.Tensor.expand_as": Entry("broadcast", broadcast),
    "torch.cat": Entry("concat", concat), "torch.flip": Entry("flip", flip),
    "torch.Tensor.contiguous": Entry("copy", copy), "torch.clone": Entry("copy", copy),
    **{name: Entry("convert", convert) for name in (
        "torch.Tensor.to", "torch.Tensor.type_as", "Tensor.double", "Tensor.half", "Tensor.bfloat16")},
    "torch.full": Entry("full", full), "torch.arange": Entry("iota", iota),
    # the sdpa executor's fused attention (CUDA): forward-for-grad and backward
    **{name: Entry("sdpa", sdpa) for name in ("sdpaex_grad_forward_scaled_dot_product_efficient_attention",
                                              "sdpafx_grad_forward_scaled_dot_product_efficient_attention")},
    **{name: Entry("sdpa_backward", sdpa) for name in ("sdpaex_scaled_dot_product_efficient_attention_backward",
                                                       "sdpafx_scaled_dot_product_efficient_attention_backward")},
}

PRIMS: dict[str, Entry] = {
    **_same(_UNARY + " " + _BINARY + " where lerp frexp", prefix="prims."),
    "prims.div": Entry("div", prim_div),
    # reductions and selections
    **{f"prims.{op}": Entry(op, reduction) for op in ("sum", "amax", "amin", "prod", "argmax", "argmin", "var")},
    "prims.var_mean": Entry("var", var_mean), "prims.std": Entry("var", std),
    "prims.topk": Entry("topk", topk), "prims.sort": Entry("sort", sort),
    # matmul and nn
    "prims.matmul": Entry("matmul", ordered("a b")), "prims.linear": Entry("linear", ordered("a w bias")),
    "prims.convolution": Entry("convolution", convolution),
    "prims.embedding": Entry("embedding", embedding), "prims.embedding_backward": Entry("embedding_backward",
                                                                                          embedding_backward),
    # indexing
    "prims.take": Entry("take", take), "prims.gather": Entry("gather", with_dim("a index")),
    "prims.take_along_axis": Entry("gather", with_dim("a index")),
    "prims.index_add": Entry("index_add", with_dim("a index value")),
    "prims.index_copy": Entry("index_copy", with_dim("a index value")),
    "prims.scatter": Entry("scatter", with_dim("a index src")),
    "prims.scatter_add": Entry("scatter_add", with_dim("a index value")),
    "prims.index_put": Entry("index_put", index_put),
    # data movement and casts
    "prims.reshape": Entry("reshape", reshape), "prims.view": Entry("reshape", reshape),
    "prims.squeeze": Entry("reshape", reshape), "prims.broadcast_in_dim": Entry("broadcast", broadcast),
    "prims.transpose": Entry("permute", permute), "prims.slice_prim": Entry("slice", slice_),
    "prims.cat": Entry("concat", concat), "prims.flip": Entry("flip", flip), "prims.pad": Entry("pad", pad),
    "prims.unfold": Entry("unfold", unfold), "prims.convert_element_type": Entry("convert", convert),
    **{f"prims.{name}": Entry("copy", copy) for name in (
        "shallow_copy", "clone", "stride_order", "device_put", "numpy_array_to_torch_tensor")},
    "prims.copy_": Entry("copy", copy_into), "prims.update_aliases": Entry("copy", aliases),
    # creation
    "prims.full": Entry("full", full), "prims.iota": Entry("iota", iota), "prims.empty": Entry("empty", empty),
    "prims.tensor_from_sequence": Entry("constant", tensor_from_sequence),
    "prims.uniform": Entry("rand", uniform), "prims.uniform_philox": Entry("rand", uniform),
    "prims.randn": Entry("rand", randn), "prims.randint": Entry("rand", randint),
}

# Prims that compute no tensor the common view holds, or that it has no meaning for, and why.
UNMAPPED_PRIMS = {
    "real": "complex", "imag": "complex", "bitcast": "reinterprets bits", "item": "a Python number (data-dependent)",
    "multinomial": "random sampling without a canonical op",
    "copy_with_setitem": "a Python index key", "exogenous_like": "an intermediate of the grad transform",
    "_grouped_mm": "grouped matmul with data-dependent offsets",
    "py_abs": "numbers only", "py_floordiv": "numbers only", "get_and_update_rng_state": "RNG state (numbers)",
}

TORCH_OPS = {k: e.op for k, e in TORCH.items()}
PRIMS_OPS = {k: e.op for k, e in PRIMS.items()}
check_vocabulary(TORCH_OPS)
check_vocabulary(PRIMS_OPS)
TABLE: dict[str, Entry] = {**TORCH, **PRIMS}
NAME_TABLE = {k: e.op for k, e in TABLE.items()}


def normalize(key: str, bsym) -> list[Spec]:
    """The specs of `bsym` by its table entry; Unmapped if the entry cannot carry every argument."""
    entry = TABLE[key]
    c = Call(bsym)
    try:
        specs = entry.normalize(entry.op, c)
    except (AttributeError, TypeError, ValueError, IndexError, KeyError) as e:  # an argument of a form not handled
        raise Unmapped(f"{key}: {type(e).__name__}: {e}") from e
    left = c.unread()
    if left:
        raise Unmapped(f"{key}: argument(s) {', '.join(left)} not mapped")
    return specs
