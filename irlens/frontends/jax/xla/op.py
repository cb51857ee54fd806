"""One HLO instruction or StableHLO op as the handlers read it (`XlaOp`; a computation it applies
as a `Body`), the registry of handlers (`HANDLERS`: opcode -> (handler, the attributes it reads);
`register`), and `convert`: an op's canonical nodes, or one `unknown:<opcode>` node with the
reason (an attribute no handler reads that changes the meaning keeps it unknown)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from irlens.core.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta
from irlens.frontends.jax.hlo.names import CLASSIFIED
from irlens.frontends.jax.hlo.text import int_list
from irlens.frontends.jax.xla.forms import Emitter, Unmapped


@dataclass(frozen=True)
class BodyOp:
    opcode: str  # HLO spelling
    direction: str | None  # of a compare
    operands: tuple[str, ...]  # "p<k>" a parameter, "c<k>" a constant, "o<i>" the body's i-th op
    dtype: str | None = None  # of its result, where the reader knows it (HLO's)


@dataclass(frozen=True)
class Body:
    """A computation an op applies (a reduction's, a scatter's, a sort's comparator), as a small
    graph over its parameters, so the conversion can tell what it computes."""

    ops: tuple[BodyOp, ...]
    roots: tuple[str, ...]
    constants: tuple[Arg | None, ...] = ()  # per "c<k>": a scalar constant's value (None: an array)

    def tree(self, ref: str, rename: dict[str, str] | None = None):
        """What `ref` computes as a nested tuple, (opcode[, direction], operand trees...), with
        "p<k>" for a parameter (`rename`d where it says) and ("constant", value) for a constant;
        the operands of a commutative op sorted, so that one formula has one tree in HLO and in
        StableHLO."""
        if ref.startswith("p"):
            return (rename or {}).get(ref, ref)
        if not ref.startswith("o"):
            k = ref[1:]
            return ("constant", self.constants[int(k)] if k.isdigit() and int(k) < len(self.constants) else None)
        op = self.ops[int(ref[1:])]
        return formula(op.opcode, *(self.tree(r, rename) for r in op.operands), direction=op.direction)

    def reachable(self, ref: str) -> list[BodyOp]:
        """The ops `ref` is computed from, itself included."""
        if not ref.startswith("o"):
            return []
        op = self.ops[int(ref[1:])]
        return [op, *(o for r in op.operands for o in self.reachable(r))]

    def binary(self) -> str | None:
        """The op of a one-op body `op(p0, p1)` (either order), else None."""
        if len(self.ops) == 1 and self.roots == ("o0",) and sorted(self.ops[0].operands) == ["p0", "p1"]:
            return self.ops[0].opcode
        return None

    def returns(self) -> str | None:
        return self.roots[0] if len(self.roots) == 1 else None

    def params_of(self, ref: str) -> frozenset[int]:
        if ref.startswith("p"):
            return frozenset({int(ref[1:])})
        if ref.startswith("o"):
            return frozenset().union(*(self.params_of(r) for r in self.ops[int(ref[1:])].operands))
        return frozenset()

    def canonicalizes_nan(self) -> bool:
        """Whether it replaces NaNs (found by x != x) before comparing, as jax's sort comparator does."""
        return any(o.opcode == "compare" and o.direction == "NE" and o.operands[0] == o.operands[1]
                   for o in self.ops)

    def comparison(self, root: str | None = None) -> tuple[str, int, int] | None:
        """A comparator `f(a) <dir> f(b)` with f an order-keeping canonicalization (selects,
        bitcasts, xors with constants, as jax writes -0 -> 0 and NaN -> NaN): (direction,
        the parameter on the left, the one on the right); None for anything else. `root`: the
        comparison within the body to read (its root by default)."""
        root = root or self.returns()
        if root is None or not root.startswith("o"):
            return None
        op = self.ops[int(root[1:])]
        if op.opcode != "compare" or op.direction not in ("LT", "GT") or not all(
                o.opcode in _CANONICALIZING for o in self.reachable(root)):
            return None
        left, right = (self.params_of(r) for r in op.operands)
        if len(left) != 1 or len(right) != 1:
            return None
        return op.direction, next(iter(left)), next(iter(right))


_COMMUTATIVE = frozenset({"add", "multiply", "maximum", "minimum", "and", "or", "xor"})


def formula(opcode: str, *args, direction: str | None = None) -> tuple:
    """One node of a `Body.tree`: the operands of a commutative op (and of == / !=) sorted."""
    args = sorted(args, key=repr) if opcode in _COMMUTATIVE or direction in ("EQ", "NE") else list(args)
    return (opcode, direction, *args) if direction else (opcode, *args)


def logaddexp_trees() -> list[tuple]:
    """jax.numpy.logaddexp(p0, p1) as jax writes it (its cumlogsumexp's window body):
    x1 - x2 is NaN (both infinite alike) ? x1 + x2 : max(x1, x2) + log1p(exp(-|x1 - x2|)),
    the difference taken either way round."""
    trees = []
    for delta in (formula("subtract", "p0", "p1"), formula("subtract", "p1", "p0")):
        soft = formula("log-plus-one", formula("exponential", formula("negate", formula("abs", delta))))
        trees.append(formula("select", formula("compare", delta, delta, direction="NE"), formula("add", "p0", "p1"),
                             formula("add", formula("maximum", "p0", "p1"), soft)))
    return trees


# ops a comparator may apply to each side before comparing (jax's total-order canonicalization)
_CANONICALIZING = frozenset({"compare", "select", "bitcast", "bitcast-convert", "xor", "convert"})


@dataclass
class XlaOp:
    """One HLO instruction or StableHLO op, as the conversion reads it."""

    id: str
    opcode: str  # HLO spelling
    native: str
    scope: str
    inputs: list[Arg]  # value names or literals, tuples flattened
    metas: list[TensorMeta]  # per input
    outs: list[TensorMeta]
    spec: str  # the attributes as text: HLO's own, or StableHLO's `key = value`, joined
    bodies: dict[str, Body]  # to_apply / select / scatter / called_computations
    provenance: dict
    iotas: dict[str, int]  # value name -> the dim an iota counts along
    attr_keys: set[str]
    target: str = ""  # a custom call's target
    layouts: tuple = ()  # a bitcast's or custom call's (per operand, per result) layouts, minor-to-major
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # a while's cond and body, a conditional's branches
    unused: frozenset = frozenset()  # the results nothing reads (of an op with several)
    widened: dict[str, str] = field(default_factory=dict)  # value name -> the narrower float it converts up

    def one(self, e: Emitter, op: str, inputs: list[Arg] | None = None, **attrs) -> None:
        e.node(op, self.inputs if inputs is None else inputs, self.outs, final=True, **attrs)

    def ints(self, *keys: str) -> list[int] | None:
        """The first of `keys` present in the spec, as ints."""
        for key in keys:
            found = _spec_ints(self.spec, key)
            if found is not None:
                return found
        return None

    def word(self, *keys: str) -> str | None:
        for key in keys:
            found = re.search(rf"\b{key}\s*=\s*(?:#[\w.]+<\w+\s+)?\"?([\w$\-.]+)", self.spec)
            if found:
                return found.group(1)
        return None


# Attributes that do not change what an op computes: provenance, layout and precision hints.
_IGNORED_ATTRS = frozenset({
    "metadata", "sharding", "frontend_attributes", "backend_config", "statistics", "control-predecessors", "origin",
    "operand_precision", "precision_config", "result_accuracy", "algorithm", "indices_are_sorted", "unique_indices",
    "mhlo.sharding", "mhlo.frontend_attributes", "mhlo.layout_mode", "output_operand_aliases",
    "api_version", "schedule", "operand_layout_constraints", "result_layout", "custom_call_has_side_effect",
    # physical layouts (the logical values are the same in any), in-place aliasing, sharding rules
    "operand_layouts", "result_layouts", "output_to_operand_aliasing", "sdy.sharding_rule",
})


def convert(op: XlaOp) -> list[Node]:
    """The canonical nodes of one op; an op the vocabulary cannot express exactly is one
    `unknown:<opcode>` node with the reason in attrs."""
    e = Emitter(op.id, op.native, op.scope, dict(op.provenance),
                {v: m for v, m in zip(op.inputs, op.metas) if isinstance(v, str)})
    reason = CLASSIFIED.get(op.opcode)
    if reason is None:
        handler, reads = HANDLERS.get(op.opcode, (None, frozenset()))
        unread = sorted(op.attr_keys - reads - _IGNORED_ATTRS)
        if handler is None:
            reason = "no canonical op for this opcode"
        elif unread:
            reason = f"attributes not mapped: {', '.join(unread)}"
        else:
            try:
                handler(e, op)
            except Unmapped as err:
                reason = str(err)
    if reason is not None:
        attrs = {**op.provenance, "reason": reason, **({"target": op.target} if op.target else {})}
        return [Node(op.id, UNKNOWN_PREFIX + op.opcode, op.inputs, op.outs, attrs, native=op.native, scope=op.scope)]
    return e.nodes


def _spec_ints(spec: str, key: str) -> list[int] | None:
    """`key={1,2}`, `key = [1, 2]`, `key = array<i64: 1, 2>`, `key = dense<[[1, 2]]>` or `key=2` in `spec`."""
    found = re.search(rf"\b{key}\s*=\s*(\{{[^}}]*\}}|\[[^\]]*\]|array<i64(?::[^>]*)?>|dense<[^>]*>|-?\d+)", spec)
    if found is None:
        return None
    return int_list(found.group(1).replace("i64", "").replace("dense<", "").split(":")[0] if "dense<" in found.group(1)
                     else found.group(1).replace("i64", ""))


# opcode -> (handler, the attributes it reads; both IRs' spellings)
HANDLERS: dict[str, tuple[Any, frozenset]] = {}


def register(opcodes, handler, reads=()):
    for opcode in ([opcodes] if isinstance(opcodes, str) else opcodes):
        HANDLERS[opcode] = (handler, frozenset(reads))
