"""FX graphs (Dynamo's torch-level graphs and AOTAutograd's ATen graphs) -> the common view: the walk.

One adapter serves both levels: a Dynamo graph calls `torch.*`, `operator.*`, `F.*` and
Tensor methods; an ATen graph calls OpOverloads (`aten.mul.Tensor`, `_c10d_functional.*`).
Native names are looked up in the tables of `names.py` (bare names for the torch level, `ns.op`
for OpOverloads); converters (`converters/`, one module per op family) turn each call's
arguments into the operands and attrs its canonical op declares (`irlens.core.ops`), reading them as
`call.Call` gives them: by name where the op has a schema (OpOverloads) and by torch-level
position otherwise.

Never a wrong meaning: a converter reads every argument it maps (`Call.arg`), and one it does
not read must be at its schema default (or not change values: device, layout, memory format;
`IGNORED_ARGS`); at the torch level, where there is no schema, every argument must be read.
Otherwise the call is `Unmapped`, and so is a call the converter cannot express. A call with
no table entry or Unmapped is then expanded by torch's own decompositions (`expansion.py`): an
ATen op by its entry in `torch._decomp` (core-ATen table first), a torch function by tracing
that one call down to core ATen with the same table; the nodes it becomes keep the call's
native name. Only what that leaves is `unknown:<native name>` (reason in attrs
`adapter_error`); the adapter never fails on an op it does not know. In-place calls are read
as new values of the tensor they update where `mutation.py` finds that safe.

Ids and value names are FX node names. A multi-output node's values take the names of the
`getitem` nodes that read them (an unread output is `<node>.out<i>`); `getitem`, `detach`,
`alias` and non-tensor nodes (sizes) fold away. A call that becomes several common-view
nodes (addmm -> matmul + add, split -> slices, an expansion) gives the extra nodes ids
`<node>.<k>`, so everything derived from FX node `n` has id `n` or `n.<k>`.
"""
from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any

import torch
import torch.fx as fx

from irlens.core import ops
from irlens.frontends.dynamo import aot
from irlens.frontends.dynamo import converters  # noqa: F401  (each family registers its converters)
from irlens.frontends.dynamo.call import BY_KEY, BY_OP, Call, Unmapped, module_scope, plain_node
from irlens.frontends.dynamo.meta import (concrete, data_dependent, example_value, flatten, get_attr, has_tensor,
                                          input_name, tensor_meta)
from irlens.frontends.dynamo.names import ALIASES, BOOKKEEPING, VIEW_COPIES, canonical_op, packet, unknown_op
from irlens.frontends.dynamo.converters.nn import module_call
from irlens.frontends.dynamo.expansion import trace_call
from irlens.frontends.dynamo.mutation import INPUT_UPDATE, in_place_aten, mutation_hazard, updates_in_place
from irlens.core.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta

_MAX_CONSTANT = 4096  # elements of a literal tensor kept as a `constant` node


# --- the graph walk --------------------------------------------------------------------------------

class _Walker:
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
        return self.updated[node] if node in self.updated else example_value(node)

    # values
    def value(self, a: Any) -> Any:
        if isinstance(a, fx.Node):
            return self.env[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        if isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return concrete(a)
        return a

    def output_metas(self, node: fx.Node) -> list[TensorMeta]:
        val = self.example(node)
        if isinstance(val, torch.Tensor):
            return [tensor_meta(self.name_of(node), val)]
        if not isinstance(val, (list, tuple)):
            return []
        names = self._output_names(node)
        metas = []
        for i, v in enumerate(val):
            if isinstance(v, torch.Tensor):
                metas.append(tensor_meta(names[i], v))
            elif isinstance(v, (list, tuple)):  # a list of tensors among the results (histogramdd's edges)
                metas += [tensor_meta(f"{names[i]}.{j}", t) for j, t in enumerate(v) if isinstance(t, torch.Tensor)]
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
            meta = tensor_meta(input_name(node), val)
            self.inputs.append(meta)
            self.metas[meta.name] = meta
            self.env[node] = meta.name
        else:
            self.env[node] = concrete(val)

    def add_param(self, name: str, t: torch.Tensor) -> str:
        if name not in self.metas:
            meta = tensor_meta(name, t)
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
                    self.add_input(node, example_value(node))
                else:
                    self.env[node] = next(placeholders)
            elif node.op == "get_attr":
                val = get_attr(self.gm, node.target)
                if bound is not None or str(node.target).startswith("_tensor_constant"):
                    self.constant(node, val)  # a traced program's literal
                else:
                    self.add_input(node, example_value(node) if example_value(node) is not None else val)
            elif node.op == "output":
                outputs = flatten(self.value(node.args[0]))
            else:
                self.call(node)
        return outputs

    def constant(self, node: fx.Node, val: Any) -> None:
        """A literal tensor of the program as a `constant` node (a graph input if it is large)."""
        if (not isinstance(val, torch.Tensor) or isinstance(val, torch._subclasses.FakeTensor)
                or val.numel() > _MAX_CONSTANT or val.is_complex()):
            if self.prefix:
                raise Unmapped(f"a tensor constant in the expansion ({node.target})")
            self.add_input(node, example_value(node) if example_value(node) is not None else val)
            return
        meta = tensor_meta(self.name_of(node), val)
        self.metas[meta.name] = meta
        self.env[node] = meta.name
        attrs = {"shape": list(meta.shape), "dtype": meta.dtype, "values": val.detach().cpu().reshape(-1).tolist()}
        self.nodes.append(Node(meta.name, "constant", [], [meta], attrs, self.native or node.name, self.scope or ""))

    def call(self, node: fx.Node) -> None:
        key, native = _native_name(self.gm, node)
        key = VIEW_COPIES.get(key, key)
        if in_place_aten(node):  # aten.add_ (in a decomposition's trace): aten.add, and its input updated
            key = key[:-1]
        if key in BOOKKEEPING:
            return
        if key == "prims._make_token":  # Inductor makes the effect token AOTAutograd's graph takes as an input
            self.constant(node, aot.new_token())
            return
        if key == "with_effects":  # an effect token threaded through an op: an assert passes it on
            effect = node.args[1]
            if isinstance(effect, torch._ops.OpOverload) and packet(effect) in BOOKKEEPING:
                self.env[node] = (self.value(node.args[0]),)
                return
        val = example_value(node)
        if node.target is operator.getitem and not isinstance(self.value(node.args[0]), str):
            self.env[node] = self.value(node.args[0])[node.args[1]]  # an output of a multi-output node, or a size
            return
        if key in ALIASES:
            self.env[node] = self.value(node.args[0])
            return
        mutates = updates_in_place(node, key)
        if mutates and val is None and isinstance(node.args[0], fx.Node):  # x[i] = v: the updated x is its value
            val = self.updated[node] = example_value(node.args[0])
        if not has_tensor(val):
            if val is not None and not data_dependent(val):  # sizes and other Python values fold into literals
                self.env[node] = concrete(val)
                return
            if val is not None:  # x.item(): a value of the data, known to no literal
                name = self.name_of(node)
                kind = {torch.SymBool: "bool", torch.SymFloat: "float64"}.get(type(val), "int64")
                self.add([Node(name, unknown_op(native), [self.value(a) for a in node.args if isinstance(a, fx.Node)],
                               [TensorMeta(name, (), kind)], {"adapter_error": "a data-dependent scalar"},
                               self.native or native, self.scope if self.scope is not None else module_scope(node))])
                self.env[node] = name
                return
        op = canonical_op(node, key, native)
        c = Call(node, key, self.native or native, op, self)
        nodes, reason = None, mutation_hazard(node, key)
        if reason == INPUT_UPDATE and self.depth == 0 and not self.prefix:
            reason = None  # the graph's own input (not an expansion's): its new value is a result of the graph
        if reason is None and not op.startswith(UNKNOWN_PREFIX):
            fn = module_call if node.op == "call_module" else BY_KEY.get(key) or BY_OP.get(op)
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
            nodes = plain_node(c)
            nodes[-1].op = unknown_op(key if isinstance(node.target, torch._ops.OpOverload) else native)
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

    def expand(self, node: fx.Node, c: Call, mutates: bool) -> list[Node] | None:
        """The call as torch's decompositions spell it in core ATen, converted; None when it has none."""
        if node.op == "call_module" or self.depth >= 4:
            return None
        gm = trace_call(node, mutates)
        if gm is None:
            return None
        child = _Walker(gm, prefix=f"{self.name_of(node)}.", native=c.native, scope=c.scope, metas=self.metas,
                           depth=self.depth + 1)
        args = [a for a in flatten((node.args, node.kwargs)) if isinstance(a, fx.Node)
                and isinstance(example_value(a), torch.Tensor)]
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


def _rename_outputs(nodes: list[Node], results: list[Arg], c: Call, inputs: set) -> tuple[list[Node], dict]:
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


def _native_name(gm: fx.GraphModule, node: fx.Node) -> tuple[str, str]:
    """(lookup key, display name): `aten.mul` / `aten.mul.Tensor`, `tanh` / `torch.tanh`,
    `view` / `Tensor.view`, `Linear` / `Linear(blocks.0.fc)`."""
    t = node.target
    if node.op == "call_method":
        return t, f"Tensor.{t}"
    if node.op == "call_module":
        cls = type(get_attr(gm, t)).__name__
        return cls, f"{cls}({t})"
    if isinstance(t, torch._ops.OpOverload):
        return f"{t.namespace}.{t._opname}", str(t)
    if isinstance(t, torch._ops.OpOverloadPacket):
        return f"{t._qualified_op_name.replace('::', '.')}", str(t)
    qual = fx.node._get_qualified_name(t) if callable(t) else str(t)
    qual = qual.replace("_operator.", "operator.")
    return qual.rsplit(".", 1)[-1], qual


# --- entry point ---------------------------------------------------------------------------------

def fx_to_graph(gm: fx.GraphModule, *, name: str, frontend: str, stage: str, level: str = "composite") -> Graph:
    """The common view of a Dynamo or ATen FX graph; `level="primitive"` also decomposes it."""
    conv = _Walker(gm)
    outputs = conv.run()
    # inputs updated in place: their new values are results too, after the outputs
    updates = {value: input_name(p) for p, value in conv.input_updates.items()}
    graph = Graph(name, frontend, stage, "composite", conv.inputs, conv.nodes, outputs + list(updates), updates)
    if level == "primitive":
        from irlens.core.decompose import to_primitive

        return to_primitive(graph)
    if level != "composite":
        raise ValueError(f"level must be 'composite' or 'primitive', got {level!r}")
    return graph
