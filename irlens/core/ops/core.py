"""How a canonical op is declared: its schema, its float64 meaning, and the rules registered
beside it (decomposition, lowerings), the way JAX declares `abs_p` and registers its lowering
and derivative on the next lines.

    neg = unary("neg", jax="negative", nvfuser="neg")          # one line for a plain unary op

    div = declare("div", ELEMENTWISE, "x y", rounding_mode=Attr("str", None, choices=(None, "floor", "trunc")))

    @meaning(div)
    def _div(a, x, y): ...                                       # float64 meaning, dtype-preserving

    @lowering(div, "jax")
    def _div_jax(a, x, y): ...

A meaning and a JAX lowering take `(attrs, *inputs)`; attrs arrive with the declared defaults
filled in (`Op.attrs_of`). An nvFuser lowering takes `(fd, nv, node, args, metas)`. A
decomposition rule takes `(emitter, values)` (see `irlens.core.decompose`). A control-flow op
declares the graphs it runs (`subgraphs="cond body"`, held in `Node.subgraphs`); its meaning
and JAX lowering find each of them in attrs, under its role, as a function of values
returning the subgraph's outputs (a list), made by whoever runs the node: the interpreter
interprets the subgraph, the JAX lowering traces it. A string
in place of a lowering names the library's function of the same arity (`jnp.negative`,
`fd.ops.neg`).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable

ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
MATMUL = "matmul"
DATA_MOVEMENT = "data_movement"
CAST = "cast"
CREATION = "creation"
COMPOSITE = "composite"
COLLECTIVE = "collective"
OTHER = "other"

CATEGORIES = (ELEMENTWISE, REDUCTION, MATMUL, DATA_MOVEMENT, CAST, CREATION, COMPOSITE, COLLECTIVE, OTHER)
PRIMITIVE_CATEGORIES = frozenset(CATEGORIES) - {COMPOSITE}
COMPUTE_CATEGORIES = frozenset({ELEMENTWISE, REDUCTION, MATMUL, COMPOSITE})
LOWERINGS = ("jax", "nvfuser")

UNKNOWN_PREFIX = "unknown:"  # irlens.core.ir's; repeated here so the vocabulary imports nothing of irlens
# Attributes any node may carry: where it came from (HLO metadata, a custom call's target).
PROVENANCE_ATTRS = frozenset({"op_name", "source", "target"})

_REQUIRED = object()


@dataclass(frozen=True)
class Attr:
    """One attribute: its kind, its default (none: required), and the values it may take."""

    kind: str  # int, bool, float, str, ints (list of int), dtype (a canonical dtype name), any
    default: Any = _REQUIRED
    choices: tuple = ()

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def problem(self, value: Any) -> str | None:
        if value is None and (self.default is None or self.kind == "any"):
            return None
        if self.choices and value not in self.choices:
            return f"{value!r} is not one of {self.choices}"
        ok = _KIND_CHECKS[self.kind](value)
        return None if ok else f"{value!r} is not of kind {self.kind}"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


_KIND_CHECKS: dict[str, Callable[[Any], bool]] = {
    "int": _is_int,
    "bool": lambda v: isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float, bool)),
    "str": lambda v: isinstance(v, str),
    "ints": lambda v: isinstance(v, (list, tuple)) and all(_is_int(x) for x in v),
    "dtype": lambda v: isinstance(v, str),
    "any": lambda v: True,
}


@dataclass(frozen=True)
class Operand:
    """One input (or output) position: `x`, `bias?` (optional: None when absent), `*xs` (any
    number, last only; `*indices?` may hold None entries)."""

    name: str
    optional: bool = False
    variadic: bool = False

    @classmethod
    def parse(cls, spec: str) -> tuple["Operand", ...]:
        out = []
        for word in spec.split():
            variadic, optional = word.startswith("*"), word.endswith("?")
            out.append(cls(word.strip("*?"), optional, variadic))
        if any(o.variadic for o in out[:-1]):
            raise ValueError(f"only the last operand may be variadic: {spec!r}")
        return tuple(out)

    def __str__(self) -> str:
        return f"{'*' if self.variadic else ''}{self.name}{'?' if self.optional else ''}"


POSITION, CLASS, FLAT = "position", "class", "flat"  # IndexOf.dim: the dims that depend on the node


@dataclass(frozen=True)
class IndexOf:
    """An index operand: integer positions into the operand `table` along `dim` (an attr naming
    the dim, or the dim itself; `POSITION`: the k-th entry of a variadic operand indexes dim k;
    `CLASS`: torch's class dim, 1, or 0 of a 1-d table; `FLAT`: the table's elements), or, where
    no operand has the size, up to the count the attr `size` holds. A value equal to the attr
    `keep` (a loss's ignore_index) is no position. Negative positions count from the end."""

    table: str = ""
    dim: str | int = 0
    size: str = ""
    keep: str = ""

    def bound(self, shapes: dict[str, tuple[int, ...]], attrs: dict, k: int = 0) -> int | None:
        """How many positions there are (None: the table's shape is not known)."""
        if self.size:
            return attrs[self.size]
        shape = shapes.get(self.table)
        if shape is None:
            return None
        if self.dim == FLAT:
            return math.prod(shape)
        if self.dim == POSITION:
            dim = k
        elif self.dim == CLASS:
            dim = 1 if len(shape) > 1 else 0
        else:
            dim = attrs[self.dim] if isinstance(self.dim, str) else self.dim
        return shape[dim] if -len(shape) <= dim < len(shape) else None


def _arity(operands: tuple[Operand, ...]) -> tuple[int, float]:
    required = sum(1 for o in operands if not o.optional and not o.variadic)
    most = float("inf") if operands and operands[-1].variadic else len(operands)
    return required, most


@dataclass
class Op:
    """A canonical op: the one place its schema, meaning and rules live."""

    name: str
    category: str
    operands: tuple[Operand, ...]
    outputs: tuple[Operand, ...]
    attrs: dict[str, Attr]
    doc: str = ""
    family: str = ""  # the module that declares it (irlens.core.ops.<family>)
    meaning: Callable | None = None
    decomposition: Callable | None = None
    lowerings: dict[str, Any] = field(default_factory=dict)
    lowerable: dict[str, Callable] = field(default_factory=dict)  # lowering -> node predicate
    aten: Any = None  # the ATen overload it is declared from (`from_aten`): its meaning, its attrs' names
    subgraphs: tuple[str, ...] = ()  # control flow: the roles of the graphs a node runs (Node.subgraphs)
    index_of: dict[str, IndexOf] = field(default_factory=dict)  # operand name -> the positions it holds

    @property
    def is_composite(self) -> bool:
        return self.category == COMPOSITE

    def attrs_of(self, attrs: dict) -> dict:
        """`attrs` with the declared defaults filled in (what a meaning or lowering reads)."""
        missing = {k: a.default for k, a in self.attrs.items() if k not in attrs and not a.required}
        return {**missing, **attrs} if missing else attrs

    def problem(self, inputs: list, attrs: dict, n_outputs: int, subgraphs=()) -> str | None:
        """Why a node with these inputs, attrs, outputs and subgraphs (their roles) does not fit
        the schema (None: it does)."""
        if not self.takes_subgraphs(tuple(subgraphs)):
            return f"{self.name} runs subgraphs {list(self.subgraphs)}, got {list(subgraphs)}"
        lo, hi = _arity(self.operands)
        if not lo <= len(inputs) <= hi:
            return f"{self.name} takes {self.signature()}, got {len(inputs)} inputs"
        for operand, value in zip(self.operands, inputs):
            if value is None and not operand.optional:
                return f"{self.name}: input {operand.name} is required"
        if self.operands and self.operands[-1].variadic and not self.operands[-1].optional:
            if any(v is None for v in inputs[len(self.operands) - 1:]):
                return f"{self.name}: {self.operands[-1].name} holds None"
        lo, hi = _arity(self.outputs)
        if not lo <= n_outputs <= hi:
            return f"{self.name} gives {' '.join(map(str, self.outputs))}, got {n_outputs} outputs"
        for key, value in attrs.items():
            if key in self.attrs:
                bad = self.attrs[key].problem(value)
                if bad:
                    return f"{self.name}: attr {key}: {bad}"
            elif key not in PROVENANCE_ATTRS:
                return f"{self.name}: unknown attr {key!r} (declared: {', '.join(self.attrs) or 'none'})"
        missing = [k for k, a in self.attrs.items() if a.required and k not in attrs]
        if missing:
            return f"{self.name}: missing attr {', '.join(missing)}"
        return None

    def index_operands(self, n_inputs: int) -> list[tuple[int, IndexOf, int]]:
        """(input position, what it indexes, its place within a variadic operand) of each index
        operand of a node with `n_inputs` inputs."""
        found = []
        for i in range(n_inputs):
            variadic = self.operands and self.operands[-1].variadic and i >= len(self.operands) - 1
            operand = self.operands[-1] if variadic else self.operands[i] if i < len(self.operands) else None
            if operand is not None and operand.name in self.index_of:
                found.append((i, self.index_of[operand.name], i - len(self.operands) + 1 if variadic else 0))
        return found

    def takes_subgraphs(self, roles: tuple[str, ...]) -> bool:
        """Whether a node's subgraph roles are the declared ones; a last role `*branch` stands
        for `branch0`, `branch1`, ... (at least one)."""
        if not self.subgraphs or not self.subgraphs[-1].startswith("*"):
            return roles == self.subgraphs
        fixed, base = self.subgraphs[:-1], self.subgraphs[-1][1:]
        rest = roles[len(fixed):]
        return roles[:len(fixed)] == fixed and bool(rest) and rest == tuple(f"{base}{k}" for k in range(len(rest)))

    def signature(self) -> str:
        ins = ", ".join(map(str, self.operands))
        attrs = ", ".join(f"{k}" if a.required else f"{k}={a.default!r}" for k, a in self.attrs.items())
        outs = ", ".join(map(str, self.outputs))
        runs = f" runs [{', '.join(self.subgraphs)}]" if self.subgraphs else ""
        return f"{self.name}({ins}){' {' + attrs + '}' if attrs else ''}{runs} -> {outs}"


OPS: dict[str, Op] = {}


def declare(name: str, category: str, operands: str = "x", *, outputs: str = "out", doc: str = "",
            subgraphs: str = "", index_of: dict[str, IndexOf] | None = None, **attrs: Attr) -> Op:
    """Declare a canonical op once; its family module registers its rules on the next lines.
    `subgraphs` names the roles of the graphs a control-flow node runs (`"cond body"`; `"*branch"`:
    branch0, branch1, ...); `index_of` its index operands, by name, and what each indexes."""
    if name in OPS:
        raise ValueError(f"canonical op {name!r} declared twice ({OPS[name].family} and again)")
    if category not in CATEGORIES:
        raise ValueError(f"{name}: unknown category {category!r}")
    family = _caller_module()
    op = Op(name, category, Operand.parse(operands), Operand.parse(outputs), dict(attrs), doc, family,
            subgraphs=tuple(subgraphs.split()), index_of=dict(index_of or {}))
    unknown = set(op.index_of) - {o.name for o in op.operands}
    if unknown:
        raise ValueError(f"{name}: index_of names no operand: {sorted(unknown)}")
    OPS[name] = op
    return op


def composite(name: str, operands: str = "x", *, outputs: str = "out", doc: str = "",
              index_of: dict[str, IndexOf] | None = None, **attrs: Attr) -> Op:
    """Declare a composite op (its family registers its decomposition rule beside it)."""
    return declare(name, COMPOSITE, operands, outputs=outputs, doc=doc, index_of=index_of, **attrs)


def _caller_module() -> str:
    import sys

    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return frame.f_globals.get("__name__", "").rsplit(".", 1)[-1] if frame else ""


def from_aten(name: str, category: str, overload, *, doc: str = "", index_of: dict[str, IndexOf] | None = None) -> Op:
    """Declare an op that is one ATen overload: its tensor arguments the operands (in schema order,
    `Tensor?` optional, a trailing `Tensor[]` variadic), every other argument an attr of the same
    name (schema defaults), its returns the outputs, and its meaning that overload run in float64.
    For the ATen ops no decomposition reaches (linalg factorizations, special functions with
    parameters, selections): the frontends' own primitives, as JAX's lax.linalg has them."""
    schema = overload._schema
    operands, attrs = [], {}
    for a in schema.arguments:
        kind = str(a.type)
        if kind in _TENSOR_KINDS or kind in _TENSOR_LIST_KINDS:
            operands.append(("*" if kind in _TENSOR_LIST_KINDS else "") + a.name + ("?" if "Optional" in kind else ""))
        else:
            attrs[a.name] = Attr("any", a.default_value) if a.has_default_value() else Attr("any")
    # the first result always; ATen gives None for results not asked for (FX then has no value)
    outputs = [("*" if str(r.type).startswith("List") else "") + (r.name or f"out{i}") + ("?" if i else "")
               for i, r in enumerate(schema.returns)]
    op = declare(name, category, " ".join(operands), outputs=" ".join(outputs), doc=doc or f"ATen's {overload}",
                 index_of=index_of, **attrs)
    op.aten = overload

    def run(a, *inputs):
        values, args, kwargs = list(inputs), [], {}
        for arg in schema.arguments:
            kind = str(arg.type)
            if kind in _TENSOR_KINDS:
                v = values.pop(0) if values else None
            elif kind in _TENSOR_LIST_KINDS:
                v, values = values, []
            else:
                v = a[arg.name]
            if arg.kwarg_only:
                kwargs[arg.name] = v
            else:
                args.append(v)
        result = overload(*args, **kwargs)
        return tuple(r for r in result if r is not None) if isinstance(result, (tuple, list)) else result

    op.meaning = run
    return op


_TENSOR_KINDS = ("Tensor", "Optional[Tensor]")
_TENSOR_LIST_KINDS = ("List[Tensor]", "List[Optional[Tensor]]")


def meaning(op: Op):
    """Register the float64 meaning of `op`: `fn(attrs, *inputs)`, torch ops, dtype-preserving."""
    def deco(fn: Callable) -> Callable:
        op.meaning = fn
        return fn
    return deco


def decomposition(op: Op):
    """Register the rule expanding composite `op` into primitive ops: `fn(emitter, values)`."""
    def deco(fn: Callable) -> Callable:
        op.decomposition = fn
        return fn
    return deco


def lowering(op: Op, backend: str, when: Callable | None = None):
    """Register `op`'s lowering to `backend` (one of LOWERINGS); `when(node)` limits it to the
    nodes it can take (e.g. unit-stride slices)."""
    if backend not in LOWERINGS:
        raise ValueError(f"unknown lowering {backend!r}; choose from {LOWERINGS}")

    def deco(fn: Callable) -> Callable:
        op.lowerings[backend] = fn
        if when is not None:
            op.lowerable[backend] = when
        return fn
    return deco


def lowers(op: Op, backend: str, impl: Any, when: Callable | None = None) -> None:
    """`lowering` without a decorator: a library function's name, or a callable."""
    lowering(op, backend, when)(impl)


# --- queries ---------------------------------------------------------------------------------

def category(op: str) -> str:
    decl = OPS.get(op)
    return decl.category if decl is not None else OTHER


def is_compute(op: str) -> bool:
    return category(op) in COMPUTE_CATEGORIES


def is_primitive(op: str) -> bool:
    return op.startswith(UNKNOWN_PREFIX) or category(op) in PRIMITIVE_CATEGORIES


@dataclass(frozen=True)
class IndexBound:
    """One index input of a node: its positions lie in [-bound, bound), or equal `keep`."""

    input: int  # its place among the node's inputs
    bound: int
    keep: Any = None  # a value that is no position (a loss's ignore_index); None: every value is one


def index_bounds(op: str, inputs: list, attrs: dict, shapes: dict[str, tuple[int, ...]]) -> list[IndexBound]:
    """The index inputs of a node (`inputs`: value names or literals; `shapes`: the shapes of its
    tensor inputs by value name) and the positions each may hold, from its op's declared
    `index_of`. An op outside the vocabulary declares none; a literal index is left out."""
    decl = OPS.get(op)
    if decl is None or not decl.index_of:
        return []
    attrs = decl.attrs_of(attrs)
    tables = {o.name: shapes[v] for o, v in zip(decl.operands, inputs)
              if not o.variadic and isinstance(v, str) and v in shapes}
    found = []
    for i, of, k in decl.index_operands(len(inputs)):
        bound = of.bound(tables, attrs, k) if isinstance(inputs[i], str) else None
        if bound is not None:
            found.append(IndexBound(i, bound, attrs.get(of.keep) if of.keep else None))
    return found


def check_vocabulary(table: dict[str, str]) -> None:
    """Fail loudly at import if a name table maps to an op outside the vocabulary."""
    bad = sorted({v for v in table.values() if v not in OPS})
    if bad:
        raise ValueError(f"name table maps to ops outside irlens.core.ops.OPS: {bad}")


# --- nodes against the schema ------------------------------------------------------------------

class SchemaError(ValueError):
    """A node that does not fit its op's declared schema (raised in strict mode)."""


def strict() -> bool:
    """Strict mode (IRLENS_STRICT_OPS=1, set by the test suite): a node off its schema raises."""
    return os.environ.get("IRLENS_STRICT_OPS", "") not in ("", "0")


def node_problem(node) -> str | None:
    if node.op.startswith(UNKNOWN_PREFIX):
        return None
    decl = OPS.get(node.op)
    if decl is None:
        return f"{node.op!r} is not a canonical op"
    return decl.problem(node.inputs, node.attrs, len(node.outputs), tuple(node.subgraphs))


def conform(node):
    """`node` if it fits its op's schema; else (strict mode: SchemaError) the node as
    `unknown:<native>`, the reason in attrs `schema_error`: a node off its schema has no meaning.
    A control-flow node whose subgraphs hold an unknown op is `unknown:<op>` (its subgraphs
    kept), the reason naming them: a loop is known only as far as its body is."""
    problem = node_problem(node)
    if problem is None:
        inner = sorted({op for g in node.subgraphs.values() for op in g.unknown_ops()})
        if not inner or node.op.startswith(UNKNOWN_PREFIX):
            return node
        return replace(node, op=UNKNOWN_PREFIX + node.op,
                       attrs={**node.attrs, "reason": f"its subgraphs hold unknown ops: {', '.join(inner)}"})
    if strict():
        raise SchemaError(f"node {node.id} ({node.native or node.op}): {problem}")
    return replace(node, op=UNKNOWN_PREFIX + (node.native or node.op), attrs={**node.attrs, "schema_error": problem})


def check_declarations() -> None:
    """Import-time checks of the vocabulary itself."""
    problems = []
    for op in OPS.values():
        if op.is_composite and op.decomposition is None:
            problems.append(f"composite {op.name} has no decomposition rule")
        if op.meaning is None and op.category != COLLECTIVE:
            problems.append(f"{op.name} has no float64 meaning")
        for backend, impl in op.lowerings.items():
            if isinstance(impl, str) and op.attrs and backend not in op.lowerable:
                problems.append(f"{op.name}: a {backend} lowering by name would drop its attrs {sorted(op.attrs)}")
        for key, a in op.attrs.items():
            if a.kind not in _KIND_CHECKS:
                problems.append(f"{op.name}.{key}: unknown attr kind {a.kind!r}")
            elif not a.required and a.default is not None and a.problem(a.default):
                problems.append(f"{op.name}.{key}: default {a.problem(a.default)}")
    if problems:
        raise ValueError("irlens.core.ops vocabulary: " + "; ".join(problems))
