"""One FX call as its converter reads it (`Call`: arguments by schema name or torch-level
position, each read recorded), and the registry of converters (`converts`, `BY_KEY`, `BY_OP`).

Never a wrong meaning: a converter reads every argument it maps (`Call.arg`), and one it does
not read must be at its schema default (or not change values: `names.IGNORED_ARGS`); at the
torch level, where there is no schema, every argument must be read. Otherwise the call is
`Unmapped`, and so is a call the converter cannot express."""
from __future__ import annotations

import re
from typing import Any, Callable

import torch
import torch.fx as fx

from irlens.frontends.dynamo.names import IGNORED_ARGS
from irlens.core.ir import Arg, Node, TensorMeta, canonical_dtype
from irlens.core.ops.infer import infer


class Unmapped(ValueError):
    """An argument the converter cannot express in the canonical op: the call must not get its name."""


# Schema names an argument goes by across torch functions, ATen and prims.
_ALIASES_OF = {"self": ("self", "input", "a", "x", "inp"), "other": ("other", "b"), "condition": ("condition", "pred"),
               "exponent": ("exponent", "other"), "dim": ("dim", "dims"), "dtype": ("dtype", "output_dtype")}


class Call:
    """An FX call being converted: its arguments by name or position (each read is recorded, so
    an argument nobody read can be found), and its output metas."""

    def __init__(self, node: fx.Node, key: str, native: str, op: str, conv):
        self.node, self.key, self.native, self.op, self.conv = node, key, native, op, conv
        self.args, self.kwargs = tuple(node.args), dict(node.kwargs)
        self.schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        self.named = _bind_schema(self.schema, self.args, self.kwargs) if self.schema is not None else {}
        self.overload = getattr(node.target, "_overloadname", "") if self.schema is not None else ""
        self.bare = key.rsplit(".", 1)[-1]
        self.outputs = conv.output_metas(node)
        self.scope = conv.scope if conv.scope is not None else module_scope(node)
        self.read: set = set()  # schema names, or torch-level positions and keywords
        self.made: dict[str, TensorMeta] = {}  # the values its nodes produce, by name (intermediates' inputs)

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
                left.append(f"{a.name}={short(v)}")
            return left
        left = [f"arg{i}={short(a)}" for i, a in enumerate(self.args) if i not in self.read]
        return left + [f"{k}={short(v)}" for k, v in self.kwargs.items() if k not in self.read and k not in IGNORED_ARGS]

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
        """One node: the call's own (no `suffix`: its id the call's name, its outputs the call's), or an
        intermediate `<call>.<suffix>`, whose outputs its op infers from its inputs and attrs
        (`irlens.core.ops.infer`) unless `outputs` names them."""
        name = self.conv.name_of(self.node)
        nid = name if suffix is None else f"{name}.{suffix}"
        if outputs is None:
            outputs = self.outputs if suffix is None else self._inferred(nid, op, inputs, attrs or {})
        self.made.update((o.name, o) for o in outputs)
        return Node(nid, op, list(inputs), outputs, attrs or {}, self.native, self.scope)

    def _inferred(self, nid: str, op: str, inputs: list[Arg], attrs: dict) -> list[TensorMeta]:
        metas = {a: (m.shape, m.dtype) for a in inputs if isinstance(a, str)
                 for m in [self.made.get(a) or self.conv.metas.get(a)] if m is not None}
        found = infer(op, inputs, metas, attrs)
        names = [nid] if len(found) == 1 else [f"{nid}.{i}" for i in range(len(found))]
        return [TensorMeta(n, shape, dtype) for n, (shape, dtype) in zip(names, found)]

    def one(self, inputs: list[Arg], attrs: dict | None = None, op: str | None = None) -> list[Node]:
        return [self.emit(op or self.op, inputs, attrs)]


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


def short(v: Any) -> str:
    return v.name if isinstance(v, fx.Node) else repr(v)[:40]


def module_scope(node: fx.Node) -> str:
    stack = node.meta.get("nn_module_stack") or node.meta.get("fwd_nn_module_stack") or {}
    if not stack:
        return ""
    path = list(stack.values())[-1][0]
    return re.sub(r"^L\['[^']*'\]\.?", "", str(path))


# --- converters: (call) -> common-view nodes ---------------------------------------------------

Converter = Callable[[Call], list[Node]]
BY_KEY: dict[str, Converter] = {}  # a native bare name (`transpose`, `aten.addmm`) -> converter
BY_OP: dict[str, Converter] = {}  # a canonical op -> converter


def converts(*names: str, ops_: tuple[str, ...] = ()):
    """Register a converter for native names (a bare name covers the torch-level function or
    method and `aten.<name>`; `ns.op` names one OpOverload packet) and/or canonical ops."""
    def deco(fn: Converter) -> Converter:
        for n in names:
            BY_KEY[n] = fn
            if "." not in n:
                BY_KEY[f"aten.{n}"] = fn
        for o in ops_:
            BY_OP[o] = fn
        return fn

    return deco


def dim_list(dim: Any, rank: int) -> list[int]:
    if rank == 0:  # a 0-d tensor has no dim to reduce (torch accepts 0 and -1 for it)
        return []
    if dim is None or dim == [] or dim == ():
        return list(range(rank))
    if isinstance(dim, int):
        dim = [dim]
    return sorted({d % rank if rank else 0 for d in dim})


def plain_node(c: Call) -> list[Node]:
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
            attrs[f"arg{i}"] = attr_value(v)
    attrs.update({k: attr_value(c.value(v)) for k, v in c.kwargs.items()})
    return c.one(inputs, attrs)


def _is_operand(a: Any, v: Any) -> bool:
    if isinstance(a, fx.Node):
        return isinstance(v, (str, int, float, bool))
    return isinstance(a, (int, float, bool))


def operand(c: Call, name: str, pos: int | None = None, required: bool = True) -> Arg:
    """A tensor or number operand as a node input (a value name or a literal)."""
    v = c.value(c.arg(name, pos))
    if v is None and required:
        raise Unmapped(f"no {name}")
    if isinstance(v, (list, tuple)) or (v is not None and not isinstance(v, (str, int, float, bool))):
        raise Unmapped(f"{name} is not a tensor or a number: {short(v)}")
    return v


def attr_value(v: Any) -> Any:
    """An argument as an attr value: dtypes and devices by name, containers element-wise."""
    if isinstance(v, torch.dtype):
        return canonical_dtype(v)
    if isinstance(v, (torch.device, torch.memory_format, torch.layout)):
        return str(v)
    if isinstance(v, (list, tuple)):
        return [attr_value(x) for x in v]
    return v
