"""The `primitive` level: composite ops expanded into elementwise, reduction, matmul and
data-movement ops by one frontend-neutral set of rules.

Decomposition is an explicit pass over the common view (DESIGN.md, Principles), so every
frontend's graph is lowered by the same rules and primitive views compare op for op. Each
rule is declared with its op in `irlens.core.ops` (`@decomposition(op)`) and receives an
`Emitter` for the node it expands. The expansion of node `n7` gets ids `n7.0`, `n7.1`, ...
and `scope` = `n7`, so a kernel that covers `n7` covers its expansion. The expansion's last
value keeps the composite's output name; consumers need no rewiring.

A rule states an emitted node's output shape and dtype only where the op's inference
(`irlens.core.ops.infer`) cannot give them; otherwise they are inferred from its inputs' metadata
and attrs, and a value that keeps one of the composite's output names keeps that output's
metadata (its consumers read it), as a frontend keeps its source op's outputs.

A control-flow node's subgraphs (a while loop's cond and body) are taken to the primitive level
in turn.

A composite whose rule declines (raises NotImplementedError: e.g. sdpa with dropout) stays as
it is and is reported by `unexpanded(graph)`.
"""
from __future__ import annotations

from dataclasses import replace

from irlens.core import ops
from irlens.core.dtypes import HALF_DTYPES
from irlens.core.ir import Arg, Graph, Node, TensorMeta
from irlens.core.ops.infer import infer

RULES = {name: op.decomposition for name, op in ops.OPS.items() if op.decomposition is not None}
# ATen computes these in float32 for half-precision tensors and rounds each result once (the
# kernels' opmath type; torch's own decompositions upcast the same way), so their expansions do:
# summed in bfloat16, a 4096-wide softmax or an embedding gradient over 4096 tokens loses most digits
OPMATH_OPS = frozenset({"softmax", "log_softmax", "softmax_backward", "log_softmax_backward", "layer_norm",
                        "layer_norm_backward", "rms_norm", "batch_norm", "group_norm", "group_norm_backward",
                        "embedding_backward"})


class Emitter:
    """Builds the expansion of one composite node (`parent`)."""

    def __init__(self, parent: Node, taken: set[str], vals: dict[str, TensorMeta]):
        self.parent = parent
        self.vals = vals  # the values before the expansion: the parent's inputs among them
        self.attrs = ops.OPS[parent.op].attrs_of(parent.attrs)
        self.nodes: list[Node] = []
        self._emitted: dict[str, TensorMeta] = {}  # the values emitted so far, by name (`values`)
        self.taken = taken  # ids and value names in use: fresh ones skip them
        self.next = 0

    def attr(self, name: str):
        """The parent's attr, or its declared default."""
        return self.attrs[name]

    def emit(self, op: str, inputs: list[Arg], oshape=None, odtype: str | None = None, oname: str | None = None,
             **attrs) -> str:
        """Append one node; returns its output's value name (`oname`, else a fresh one). An omitted
        shape or dtype is the parent's output's where `oname` is one, else the op's inference."""
        nid = f"{self.parent.id}.{self.next}"
        while nid in self.taken:  # an adapter's own `<node>.<k>` (addmm -> matmul + add) may hold it
            self.next += 1
            nid = f"{self.parent.id}.{self.next}"
        self.next += 1
        self.taken.add(nid)
        name = oname or nid
        scope = self.parent.id if not self.parent.scope else f"{self.parent.scope}/{self.parent.id}"
        if oshape is None or odtype is None:
            shape, dtype = self._inferred(op, inputs, name, attrs)
            oshape, odtype = shape if oshape is None else oshape, dtype if odtype is None else odtype
        node = Node(nid, op, list(inputs), [TensorMeta(name, tuple(oshape), odtype)], dict(attrs),
                    self.parent.native or self.parent.op, scope)
        node = ops.conform(node)
        self.nodes.append(node)
        self._emitted.update((o.name, o) for o in node.outputs)
        return name

    def _inferred(self, op: str, inputs: list[Arg], name: str, attrs: dict) -> tuple[tuple[int, ...], str]:
        """The output's metadata: the parent's output `name`'s, else the op's inference (its
        NotInferable or Misfit raised: a rule that emits it must state the output)."""
        kept = next((o for o in self.parent.outputs if o.name == name), None)
        if kept is not None:
            return tuple(kept.shape), kept.dtype
        metas = {a: (tuple(m.shape), m.dtype) for a in inputs if isinstance(a, str)
                 for m in [self._emitted.get(a) or self.vals.get(a)] if m is not None}
        return infer(op, inputs, metas, attrs)[0]

    def out(self, k: int = 0) -> TensorMeta | None:
        outs = self.parent.outputs
        return outs[k] if k < len(outs) else None

    def meta(self, value: str) -> TensorMeta:
        """A value's metadata: the parent's input's, or an emitted value's."""
        return self._emitted.get(value) or self.vals[value]

    def values(self) -> dict[str, TensorMeta]:
        """The values emitted so far, by name."""
        return dict(self._emitted)


def expand(node: Node, vals: dict[str, TensorMeta], taken: set[str]) -> list[Node] | None:
    """`node`'s expansion by its rule, composites it emits expanded in turn (cross_entropy ->
    log_softmax + nll_loss -> ...); None when it has no rule or the rule declines."""
    rule = RULES.get(node.op)
    if rule is None:
        return None
    if node.op in OPMATH_OPS and any(m.dtype in HALF_DTYPES for m in _metas(node, vals)):
        return _expand_in_float32(node, vals, taken)
    e = Emitter(node, taken, vals)
    try:
        rule(e, vals)
    except NotImplementedError:
        return None
    vals = {**vals, **e.values()}
    nodes = []
    for n in e.nodes:
        inner = expand(n, vals, taken) if ops.category(n.op) == ops.COMPOSITE else None
        nodes.extend(inner if inner is not None else [n])
        if inner is not None:
            vals.update({o.name: o for m in inner for o in m.outputs})
    return nodes


def _metas(node: Node, vals: dict[str, TensorMeta]) -> list[TensorMeta]:
    return [vals[a] for a in node.value_inputs() if a in vals] + list(node.outputs)


def _expand_in_float32(node: Node, vals: dict[str, TensorMeta], taken: set[str]) -> list[Node] | None:
    """`node` computed in float32: its half-precision inputs converted up, its expansion, its
    half-precision results converted back under their own names."""
    e = Emitter(node, taken, vals)
    up = lambda a: e.emit("convert", [a], dtype="float32")  # noqa: E731
    inputs = [up(a) if isinstance(a, str) and a in vals and vals[a].dtype in HALF_DTYPES else a for a in node.inputs]
    outputs = []
    for k, o in enumerate(node.outputs):
        name = f"{node.id}.f32.{k}"
        taken.add(name)
        outputs.append(replace(o, name=name, dtype="float32") if o.dtype in HALF_DTYPES else o)
    wide = replace(node, inputs=inputs, outputs=outputs)
    inner = expand(wide, {**vals, **e.values()}, taken)
    if inner is None:
        return None
    down = Emitter(node, taken, vals)
    for o, w in zip(node.outputs, outputs):
        if w is not o:
            down.emit("convert", [w.name], oname=o.name, dtype=o.dtype)
    return e.nodes + inner + down.nodes


def to_primitive(graph: Graph) -> Graph:
    """Expand every composite node that has a rule, in subgraphs too; other nodes are kept as they are."""
    if graph.level == "primitive":
        return graph
    vals = graph.values()
    taken = set(vals) | {n.id for n in graph.nodes}
    nodes: list[Node] = []
    for n in graph.nodes:
        if n.subgraphs:
            n = replace(n, subgraphs={role: to_primitive(g) for role, g in n.subgraphs.items()})
        expansion = expand(n, vals, taken) if ops.category(n.op) == ops.COMPOSITE else None
        if expansion is None:
            nodes.append(n)
            continue
        nodes.extend(expansion)
        vals.update({o.name: o for m in expansion for o in m.outputs})
    return replace(graph, level="primitive", nodes=nodes)


def unexpanded(graph: Graph) -> list[str]:
    """Composite ops left in a primitive graph (no rule for them, or the rule declined)."""
    return sorted({n.op for n in graph.all_nodes() if ops.category(n.op) == ops.COMPOSITE})
