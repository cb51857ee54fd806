"""One Thunder symbol call as a normalizer reads it (`Call`: its arguments bound to their
parameter names, each read recorded, so an unread one that matters makes it `Unmapped`), the
`Spec`s normalizers return, and the helpers that read arguments (proxies, numbers, dims, dtypes)."""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from typing import Any

from irlens.core.ir import UNKNOWN_PREFIX, Arg, TensorMeta, canonical_dtype


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
    """A value the adapter adds between two nodes it emits for one symbol (e.g. alpha * b): its
    shape and dtype are its op's rule on the spec's inputs (`output_metas`)."""

    name: str


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


def dtype_name(dtype) -> str:
    if isinstance(dtype, str):
        return dtype
    from irlens._compat import import_thunder

    return canonical_dtype(import_thunder().dtypes.to_torch_dtype(dtype))


def tensor_meta(p) -> TensorMeta | None:
    if not is_tensor(p):
        return None
    return TensorMeta(p.name, tuple(int(d) for d in p.shape), dtype_name(p.dtype))


def output_metas(spec: Spec, known: dict[str, TensorMeta]) -> list[TensorMeta]:
    """A spec's outputs: a proxy's metadata as the trace states it, a `Derived` value's or a
    symbolic number's (a 0-d value) inferred by its op's rule (`irlens.core.ops.infer`) from the
    inputs' (`known`: the symbol's tensors and the values defined before it) and the attrs;
    Unmapped where the rule gives none. An unknown op's symbolic number is 0-d in the dtype of
    its Python type."""
    if spec.op.startswith(UNKNOWN_PREFIX):
        return [m for m in (number_meta(p) if is_symbolic(p) else tensor_meta(p) for p in spec.outputs)
                if m is not None]
    if not any(isinstance(p, Derived) or is_symbolic(p) for p in spec.outputs):
        return [m for m in map(tensor_meta, spec.outputs) if m is not None]
    from irlens.core.ops.infer import Misfit, NotInferable, infer

    metas = {a: (known[a].shape, known[a].dtype) for a in spec.inputs if isinstance(a, str) and a in known}
    try:
        found = infer(spec.op, spec.inputs, metas, spec.attrs)
    except (NotInferable, Misfit) as e:
        raise Unmapped(f"an intermediate {spec.op} whose outputs its rule does not give: {e}") from e
    if len(found) < len(spec.outputs):
        raise Unmapped(f"an intermediate {spec.op}: its rule gives {len(found)} of {len(spec.outputs)} outputs")
    return [TensorMeta(p.name, shape, dtype) if isinstance(p, Derived) or is_symbolic(p) else tensor_meta(p)
            for p, (shape, dtype) in zip(spec.outputs, found) if isinstance(p, Derived) or is_node_output(p)]


def is_node_output(p) -> bool:
    """An output the common view holds: a tensor, or a symbolic number (a 0-d value)."""
    return is_tensor(p) or is_symbolic(p)


# The dtype a Python number of each type is, as a 0-d value.
_NUMBER_DTYPES = {bool: "bool", int: "int64", float: "float64", complex: "complex128"}


def number_meta(p) -> TensorMeta:
    return TensorMeta(p.name, (), _NUMBER_DTYPES[p.python_type])


def is_tensor(x) -> bool:
    from thunder.core.proxies import TensorProxy

    return isinstance(x, TensorProxy)


def is_number(x) -> bool:
    from thunder.core.proxies import NumberProxy

    return isinstance(x, (NumberProxy, bool, int, float))


def is_symbolic(x) -> bool:
    """A number Thunder knows only when the program runs (`item_1 = prims.item(t)`, printed "float ?"):
    in the common view a 0-d value, named as the proxy, that later ops take as an input."""
    from thunder.core.proxies import NumberProxy

    return isinstance(x, NumberProxy) and x.value is None


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
    """A literal attribute value: numbers, strings and sequences of them (dtypes as names).
    A symbolic number has none: Unmapped (an attribute can only hold a constant)."""
    from thunder.core.proxies import NumberProxy

    if isinstance(v, NumberProxy):
        if v.value is None:
            raise Unmapped(f"{v.name} is a number known only when the program runs, not a constant attribute")
        return v.value
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def is_exact(x) -> bool:
    """An integer or bool tensor, or a Python int/bool."""
    if is_tensor(x):
        name = dtype_name(x.dtype)
        return name == "bool" or name.startswith(("int", "uint"))
    if is_symbolic(x):
        return x.python_type in (bool, int)
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


def flat_ints(c: Call, name: str) -> list:
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
