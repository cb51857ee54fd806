"""jaxpr -> common view: one node per equation (a few for the structured ones), sub-jaxprs of
call-like primitives inlined.

A jaxpr is already close to the primitive level (jax.nn.gelu traces to mul/tanh/...), so the
adapter renames primitives and turns their params into the attrs conventions of `irlens.core.ops`.
This module is the walk; the tables are in `names.py`, the handlers in `elementwise.py`,
`shapes.py` and `structured.py` (their registry in `eqn.py`).
Every lax primitive is accounted for: renamed (`PRIMITIVES`, `BY_DTYPE`), converted by a
handler (`HANDLERS`, the structured ones through `irlens.frontends.jax.xla.forms`), inlined
(`CALLS`), passed through (`IDENTITIES`), or kept `unknown:` with the reason (`CLASSIFIED`:
random bits, control flow other than while loops and conditionals, linear-algebra
decompositions). A complex literal is a `complex(re, im)` node (literals are real numbers). A
`while` becomes the canonical `while` with its cond and body read as closed graphs
(`Node.subgraphs`) by the same walk, a `cond` the canonical `cond` with its branches. A param that
changes the meaning and is not read (`PARAMS` lists those each primitive reads, `HINTS` those
that only guide the compiler) keeps the node unknown: a node never carries a meaning it does
not have. Value names come from jaxpr's own pretty-printer names (`a`, `b`, ...), except the
graph inputs, which take the names the caller gives (parameter names, `input<i>`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from irlens.core.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype
from irlens.frontends.jax.jaxpr import (  # noqa: F401  (each registers its handlers)
    elementwise, shapes, structured)
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.jaxpr.eqn import HANDLERS, Eqn, scalar_of
from irlens.frontends.jax.jaxpr.names import CALLS, CLASSIFIED, HINTS, IDENTITIES, MAX_SCAN_STEPS, SOLVES
from irlens.frontends.jax.xla.forms import Emitter, Unmapped, full_attrs


# closed-over arrays up to this size become `constant` nodes (their values in the node's attrs)
MAX_CONSTANT_ELEMENTS = 4096


def _meta(name: str, aval) -> TensorMeta:
    return TensorMeta(name, tuple(int(d) for d in aval.shape), canonical_dtype(aval.dtype))


@dataclass
class _Builder:
    """Walks a jaxpr (and the bodies it inlines), binding jaxpr vars to common-view values."""

    names: Any  # jax's JaxprPpContext: the var names jaxpr's printer uses
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)
    env: dict = field(default_factory=dict)  # jaxpr Var -> Arg
    taken: set = field(default_factory=set)  # value names in use
    iotas: dict[str, int] = field(default_factory=dict)  # value name -> the dim an iota counts along
    origins: dict[str, "EqnOrigin"] = field(default_factory=dict)  # node id -> the equation it came from
    origin: "EqnOrigin | None" = None  # of the equation being emitted
    stage: str = "jax.jaxpr"
    prefix: str = ""  # of node ids: a loop body's are `<loop id>.body.e<k>`

    def next_id(self) -> str:
        return f"{self.prefix}e{len(self.nodes)}"

    def read(self, atom) -> Arg:
        from jax.extend.core import Literal

        if isinstance(atom, Literal):
            return self.literal(scalar_of(atom.val), atom.aval)
        return self.env[atom]

    def literal(self, value, aval) -> Arg:
        """A scalar as a literal; a complex one as `complex(re, im)` (literals are real numbers)."""
        if not isinstance(value, complex):
            return value
        meta = _meta(f"{self.prefix}complex{len(self.nodes)}", aval)
        self.taken.add(meta.name)
        self.nodes.append(Node(meta.name, "complex", [value.real, value.imag], [meta], {}, native="literal"))
        return meta.name

    def bind_input(self, var, name: str) -> None:
        self.env[var] = name
        self.taken.add(name)
        self.inputs.append(_meta(name, var.aval))

    def bind_consts(self, constvars, consts) -> None:
        """Scalar constants become literals; small array constants (a closed-over index array,
        up to MAX_CONSTANT_ELEMENTS) `constant` nodes holding their values, as the HLO reader
        makes them; larger ones graph inputs (`const<k>`), which no binding feeds."""
        import numpy as np

        for var, val in zip(constvars, consts):
            if getattr(val, "shape", None) == ():
                self.env[var] = self.literal(scalar_of(val), var.aval)
            elif np.iscomplexobj(val) and np.size(val) <= MAX_CONSTANT_ELEMENTS:
                # `complex` of two real constants (jnp.fft's scale under norm="ortho" / "forward")
                meta = _meta(f"const{sum(n.op == 'constant' for n in self.nodes)}", var.aval)
                dtype = forms.part_dtype(meta.dtype)
                parts = []
                for part, values in (("re", np.real(val)), ("im", np.imag(val))):
                    part_meta = TensorMeta(f"{meta.name}.{part}", meta.shape, dtype)
                    self.nodes.append(Node(part_meta.name, "constant", [], [part_meta],
                                           {"values": np.asarray(values).ravel().tolist(), "shape": list(meta.shape),
                                            "dtype": dtype}, native="constvar"))
                    parts.append(part_meta.name)
                self.env[var] = meta.name
                self.taken.update([meta.name, *parts])
                self.nodes.append(Node(meta.name, "complex", parts, [meta], {}, native="constvar"))
            elif np.size(val) <= MAX_CONSTANT_ELEMENTS:
                k = sum(n.op == "constant" for n in self.nodes)
                meta = _meta(f"const{k}", var.aval)
                self.env[var] = meta.name
                self.taken.add(meta.name)
                self.nodes.append(Node(meta.name, "constant", [], [meta],
                                       {"values": np.asarray(val).ravel().tolist(), "shape": list(meta.shape),
                                        "dtype": meta.dtype}, native="constvar"))
            else:
                self.bind_input(var, f"const{sum(t.name.startswith('const') for t in self.inputs)}")

    def walk(self, jaxpr, scope: str, caller: "EqnOrigin | None" = None) -> None:
        from jax.extend.core import Var

        read = {v for v in [*jaxpr.outvars, *(a for q in jaxpr.eqns for a in q.invars)] if isinstance(v, Var)}
        for eqn in jaxpr.eqns:
            self.origin = EqnOrigin.of(eqn, caller)
            body = _call_body(eqn)
            if body is not None:
                self.inline(eqn, body, scope)
            elif eqn.primitive.name in IDENTITIES:
                for outer, value in zip(eqn.outvars, IDENTITIES[eqn.primitive.name]([self.read(a) for a in eqn.invars])):
                    self.env[outer] = value
            elif eqn.primitive.name == "scan" and 0 < int(eqn.params["length"]) <= MAX_SCAN_STEPS:
                self.unroll(eqn, scope)
            elif eqn.primitive.name in SOLVES:
                self.linear_solve(eqn, scope)
            else:
                self.emit(eqn, scope, read)

    def inline(self, eqn, body, scope: str) -> None:
        inner = getattr(body, "jaxpr", body)
        name = eqn.params.get("name") or getattr(getattr(inner, "debug_info", None), "func_name", "") or eqn.primitive.name
        outs = self.call(body, [self.read(a) for a in eqn.invars], f"{scope}/{name}" if scope else str(name))
        for outer, value in zip(eqn.outvars, outs):
            self.env[outer] = value

    def call(self, body, args: list[Arg], scope: str) -> list[Arg]:
        """A (closed) jaxpr's equations emitted on `args`; its outputs' values."""
        from jax.extend.core import ClosedJaxpr

        inner, consts = (body.jaxpr, body.consts) if isinstance(body, ClosedJaxpr) else (body, ())
        self.bind_consts(inner.constvars, consts)
        for var, value in zip(inner.invars, args):
            self.env[var] = value
        self.walk(inner, scope, self.origin)
        return [self.read(var) for var in inner.outvars]

    def linear_solve(self, eqn, scope: str) -> None:
        """lax.custom_linear_solve's value: its `solve` jaxpr on the solve's consts and b (matvec,
        vecmat and transpose_solve only define its derivatives), as jax's own impl runs it."""
        lengths, args = eqn.params["const_lengths"], [self.read(a) for a in eqn.invars]
        start = lengths.matvec + lengths.vecmat
        consts = args[start:start + lengths.solve]
        b = args[lengths.matvec + lengths.vecmat + lengths.solve + lengths.transpose_solve:]
        inner = f"{scope}/custom_linear_solve" if scope else "custom_linear_solve"
        for outer, value in zip(eqn.outvars, self.call(eqn.params["jaxprs"].solve, consts + b, inner)):
            self.env[outer] = value

    def unroll(self, eqn, scope: str) -> None:
        """lax.scan of a static length as its steps, one after the other: each step the body on the
        carry and the xs' slice at that step; the ys stacked along a new first dim."""
        from jax.extend.core import DropVar

        p = eqn.params
        steps, n_consts, n_carry = int(p["length"]), int(p["num_consts"]), int(p["num_carry"])
        values = [self.read(a) for a in eqn.invars]
        consts, carry = values[:n_consts], values[n_consts:n_consts + n_carry]
        xs = list(zip(values[n_consts + n_carry:], eqn.invars[n_consts + n_carry:]))
        ys_by_step = {}
        for i in (reversed(range(steps)) if p["reverse"] else range(steps)):
            e = Emitter(self.next_id(), "scan", scope,
                        known={value: _meta(value, var.aval) for value, var in xs if isinstance(value, str)})
            step_xs = []
            for value, var in xs:
                shape = [int(d) for d in var.aval.shape]
                row = e.emit("slice", [value], start=[i] + [0] * (len(shape) - 1), limit=[i + 1, *shape[1:]],
                             step=[1] * len(shape))
                step_xs.append(e.reshape(row, shape[1:]))
            for node in e.nodes:
                self.add(node)
            outs = self.call(p["jaxpr"], [*consts, *carry, *step_xs], f"{scope}/scan[{i}]" if scope else f"scan[{i}]")
            carry, ys_by_step[i] = outs[:n_carry], outs[n_carry:]
        for outer, value in zip(eqn.outvars[:n_carry], carry):
            self.env[outer] = value
        for j, outer in enumerate(eqn.outvars[n_carry:]):
            if isinstance(outer, DropVar):
                continue
            (out,) = self.outputs([outer], self.next_id())
            e = Emitter(self.next_id(), "scan", scope)
            rows = [ys_by_step[i][j] for i in range(steps)]
            rows = [r if isinstance(r, str) else e.emit("full", [], **full_attrs(out.shape[1:], r, out.dtype))
                    for r in rows]
            e.emit("stack", rows, out, dim=0)
            for node in e.nodes:
                self.add(node)

    def outputs(self, outvars, node_id: str) -> list[TensorMeta]:
        from jax.extend.core import DropVar

        metas = []
        for i, var in enumerate(outvars):
            name = f"{node_id}_dropped{i}" if isinstance(var, DropVar) else var.pretty_print(self.names)
            if name in self.taken:  # a shared sub-jaxpr inlined twice binds the same vars again
                name = f"{name}_{node_id}"
            self.taken.add(name)
            self.env[var] = name
            metas.append(_meta(name, var.aval))
        return metas

    def emit(self, eqn, scope: str, read: set) -> None:
        """The equation's nodes; `read`: the vars its jaxpr reads (an output none reads is dropped)."""
        prim = eqn.primitive.name
        node_id = self.next_id()
        inputs = [self.read(a) for a in eqn.invars]
        metas = [_meta(v if isinstance(v, str) else "", a.aval) for v, a in zip(inputs, eqn.invars)]
        outs = self.outputs(eqn.outvars, node_id)
        e = Emitter(node_id, prim, scope, known={v: m for v, m in zip(inputs, metas) if isinstance(v, str)})
        reason = why_unknown(prim, eqn.params)
        if reason is None:
            try:
                dropped = frozenset(i for i, v in enumerate(eqn.outvars) if v not in read)
                HANDLERS[prim][0](e, Eqn(prim, dict(eqn.params), inputs, metas, outs, self.iotas,
                                         functools.partial(self.subgraph, node_id), dropped))
            except Unmapped as err:
                reason = str(err)
        if reason is not None:
            e.nodes = [Node(node_id, UNKNOWN_PREFIX + prim, inputs, outs, {"reason": reason}, native=prim, scope=scope)]
        elif prim == "iota":
            self.iotas[outs[0].name] = int(eqn.params["dimension"])
        for node in e.nodes:
            self.add(node)

    def add(self, node: Node) -> None:
        self.nodes.append(node)
        self.origins[node.id] = self.origin

    def subgraph(self, node_id: str, role: str, closed, inputs: list[TensorMeta], bound: list[int],
                 out_metas: list[TensorMeta]) -> Graph:
        """A loop's cond or body, or a conditional's branch: the closed jaxpr walked into a graph
        of its own over `inputs`, its invars taking `inputs[bound[k]]`."""
        sub = _Builder(self.names, inputs=list(inputs), taken={t.name for t in inputs}, stage=self.stage,
                       prefix=f"{node_id}.{role}.")
        sub.bind_consts(closed.jaxpr.constvars, closed.consts)
        if len(sub.inputs) != len(inputs):
            raise Unmapped(f"a {role} closing over an array of more than {MAX_CONSTANT_ELEMENTS} elements")
        for var, k in zip(closed.jaxpr.invars, bound):
            sub.env[var] = inputs[k].name
        sub.walk(closed.jaxpr, "", self.origin)
        outputs = [sub.read(v) for v in closed.jaxpr.outvars]
        return forms.closed_graph(f"{node_id}.{role}", sub.inputs, sub.nodes, outputs, out_metas, self.stage)


def why_unknown(prim: str, params: dict) -> str | None:
    """Why `prim` with `params` cannot become canonical ops (None: it can)."""
    if prim in CLASSIFIED:
        return CLASSIFIED[prim]
    if prim not in HANDLERS:
        return "no canonical op for this primitive"
    unread = sorted(k for k, v in params.items() if k not in HINTS and k not in HANDLERS[prim][1])
    if unread:
        return f"params not mapped: {', '.join(unread)}"
    return None


def _call_body(eqn):
    for param in CALLS.get(eqn.primitive.name, ()):
        if eqn.params.get(param) is not None:
            return eqn.params[param]
    return None


def source_span(file: str, line: int, column: int, end_line: int, end_column: int) -> str:
    """One spelling of a source range for jaxpr frames and HLO stack frames, so they compare."""
    return f"{file}:{line}:{column}-{end_line}:{end_column}"


@dataclass(frozen=True)
class EqnOrigin:
    """Where an equation came from, as XLA's op_name/source metadata can name it too: the
    primitive, whether it is on the backward pass (a `transpose(...)` name stack) and the
    user source frame. Equations inlined from a call without a frame take the call's."""

    primitive: str
    backward: bool
    source: str  # source_span(...), "" when unknown

    @classmethod
    def of(cls, eqn, caller: "EqnOrigin | None") -> "EqnOrigin":
        from jax._src import source_info_util

        frame = source_info_util.user_frame(eqn.source_info.traceback)
        stack = str(eqn.source_info.name_stack)
        source = source_span(frame.file_name, frame.start_line, frame.start_column, frame.end_line,
                             frame.end_column) if frame else ""
        backward = "transpose(" in stack
        if caller is not None:
            source = source or caller.source
            backward = backward or caller.backward
        return cls(eqn.primitive.name, backward, source)


def _build(closed_jaxpr, input_names: list[str] | None, stage: str = "jax.jaxpr") -> tuple[_Builder, list[Arg]]:
    from jax._src.core import JaxprPpContext

    jaxpr = closed_jaxpr.jaxpr
    b = _Builder(JaxprPpContext(), stage=stage)
    b.bind_consts(jaxpr.constvars, closed_jaxpr.consts)
    if input_names is not None and len(input_names) != len(jaxpr.invars):
        raise ValueError(f"{len(input_names)} input names for a jaxpr with {len(jaxpr.invars)} inputs")
    for i, var in enumerate(jaxpr.invars):
        b.bind_input(var, input_names[i] if input_names else var.pretty_print(b.names))
    b.walk(jaxpr, "")
    return b, [b.read(v) for v in jaxpr.outvars]


def jaxpr_to_graph(
    closed_jaxpr,
    *,
    name: str,
    frontend: str = "jax",
    stage: str = "jax.jaxpr",
    level: str = "composite",
    input_names: list[str] | None = None,
) -> Graph:
    """The common view of a ClosedJaxpr. `input_names` name its invars in order (default: jaxpr's names)."""
    b, outputs = _build(closed_jaxpr, input_names, stage)
    return at_level(Graph(name, frontend, stage, "composite", b.inputs, b.nodes, outputs), level)


def jaxpr_origins(closed_jaxpr) -> dict[str, EqnOrigin]:
    """Node id (as in `jaxpr_to_graph`'s composite graph) -> the equation's origin."""
    return _build(closed_jaxpr, None)[0].origins


def at_level(graph: Graph, level: str) -> Graph:
    """`graph` (composite) at `level`: primitive goes through the decomposition pass."""
    if level == "primitive":
        from irlens.core.decompose import to_primitive

        return to_primitive(graph)
    return graph
