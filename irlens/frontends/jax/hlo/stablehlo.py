"""StableHLO -> common view, walked through the MLIR Python bindings (ops, operands, result types,
attributes); `func.call`s into private functions are inlined (scope = the callee). Dead ops
(no live result, no effect) make no node. A `while`'s cond and do regions become the canonical
`while`'s closed graphs (`Node.subgraphs`, their inputs the loop's carried values), `case`/`if`
the canonical `cond` (the regions read values of the enclosing function: those become the
node's operands). Each op converts through `xla.op.convert`, as HLO's instructions do."""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any

from irlens.core.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype
from irlens.frontends.jax.hlo import (  # noqa: F401  (each registers its handlers)
    elementwise, shapes, structured)
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.hlo.names import stablehlo_opcode
from irlens.frontends.jax.jaxpr.walk import at_level
from irlens.frontends.jax.xla.op import Body, BodyOp, XlaOp, convert
from irlens.frontends.jax.xla.forms import full_attrs


def stablehlo_to_graph(module, *, name: str, frontend: str = "jax", stage: str = "jax.stablehlo",
                       level: str = "composite") -> Graph:
    """A StableHLO `ir.Module` (e.g. `lowered.compiler_ir("stablehlo")`), from its `main` function."""
    funcs = {str(op.attributes["sym_name"]).strip('"'): op for op in module.body.operations
             if op.operation.name == "func.func"}
    if "main" not in funcs:
        raise ValueError("StableHLO module has no main function")
    reader = _MlirReader(funcs, stage=stage)
    block = funcs["main"].regions[0].blocks[0]
    env = {}
    for arg in block.arguments:
        reader.inputs.append(_mlir_meta(arg.get_name(), arg.type))
        env[arg.get_name()] = arg.get_name()
    outputs = reader.walk(block, env, "")
    return at_level(Graph(name, frontend, stage, "composite", reader.inputs, reader.nodes, outputs), level)


def _mlir_float(text: str) -> float:
    """A float as MLIR prints it: a decimal, or its bits in hex (inf and NaN), by their width."""
    if text.lower().startswith("0x"):
        raw = bytes.fromhex(text[2:])
        return struct.unpack({2: ">e", 4: ">f", 8: ">d"}[len(raw)], raw)[0]
    return float(text)


def _mlir_meta(name: str, type_) -> TensorMeta:
    shape = tuple(int(d) for d in getattr(type_, "shape", ()))
    return TensorMeta(name, shape, canonical_dtype(str(getattr(type_, "element_type", type_))))


@dataclass
class _MlirReader:
    funcs: dict[str, Any]  # symbol name -> func.func op
    live: set[str] = field(default_factory=set)  # the names of the values the block being walked needs
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)
    iotas: dict[str, int] = field(default_factory=dict)  # value name -> the dim an iota counts along
    calls: int = 0
    stage: str = "jax.stablehlo"
    prefix: str = ""  # of node ids: a loop body's are `<loop id>.body.s<k>`

    def next_id(self) -> str:
        return f"{self.prefix}s{len(self.nodes)}"

    def walk(self, block, env: dict, scope: str) -> list[Arg]:
        """Emit a block's ops; returns the values its terminator returns. MLIR value names are
        per function, so values of an inlined call are prefixed with the call's scope."""
        self.live = _live_values(block)
        for op in block.operations:
            op = op.operation
            if op.results and not _keeps(op, self.live):
                continue  # dead code (jax's NaN select on the eigenvectors of an eigvalsh): no node
            args = [env[v.get_name()] for v in op.operands]
            if op.name in ("func.return", "stablehlo.return"):
                return args
            if op.name == "func.call":
                callee = str(op.attributes["callee"]).lstrip("@")
                body = self.funcs[callee].regions[0].blocks[0]
                inner = {a.get_name(): v for a, v in zip(body.arguments, args)}
                self.calls += 1
                inner_scope = f"{scope}/{callee}#{self.calls}" if scope else f"{callee}#{self.calls}"
                outer_live = self.live
                for res, val in zip(op.results, self.walk(body, inner, inner_scope)):
                    env[res.get_name()] = val
                self.live = outer_live
            elif op.name == "stablehlo.constant" and "complex" in str(op.results[0].type.element_type):
                self.complex_constant(op, env, scope)
            elif op.name == "stablehlo.constant" and self.splat(op) is not None:
                value = self.splat(op)
                shape = tuple(op.results[0].type.shape)
                if shape == ():
                    env[op.results[0].get_name()] = value
                else:  # a splat array: a `full`
                    out = self.outputs(op, env, scope)[0]
                    self.nodes.append(Node(self.next_id(), "full", [], [out], full_attrs(shape, value, out.dtype),
                                           native=op.name, scope=scope))
            elif op.name == "stablehlo.constant":  # an array of values: a `constant`
                import numpy as np

                out = self.outputs(op, env, scope)[0]
                values = np.asarray(op.attributes["value"]).ravel().tolist()
                self.nodes.append(Node(self.next_id(), "constant", [], [out],
                                       {"values": values, "shape": list(out.shape), "dtype": out.dtype},
                                       native=op.name, scope=scope))
            elif op.name == "stablehlo.while":
                self.emit(op, args, env, scope, self.loop_graphs(op, env))
            elif op.name in ("stablehlo.case", "stablehlo.if"):
                self.emit_branches(op, args, env, scope)
            elif op.name == "stablehlo.optimization_barrier":
                for res, val in zip(op.results, args):
                    env[res.get_name()] = val
            else:
                self.emit(op, args, env, scope)
        return []

    def complex_constant(self, op, env: dict, scope: str) -> None:
        """A complex splat `(re, im)` as `complex(re, im)`, of literals for a scalar, of two `full`s
        for an array (literals are real numbers); an array of several complex values stays an
        unknown constant."""
        out = self.outputs(op, env, scope)[0]
        # the op's text: the bindings cannot cast a complex DenseElementsAttr to a Python value
        pair = re.search(r"dense<\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)>", str(op))
        if pair is None:
            self.nodes.append(Node(self.next_id(), UNKNOWN_PREFIX + "constant", [], [out],
                                   {"reason": "an array constant of complex values"}, native=op.name, scope=scope))
            return
        parts = [_mlir_float(pair.group(1)), _mlir_float(pair.group(2))]
        if out.shape:
            dtype = forms.part_dtype(out.dtype)
            metas = [TensorMeta(f"{out.name}.{k}", out.shape, dtype) for k in ("re", "im")]
            for meta, value in zip(metas, parts):
                self.nodes.append(Node(self.next_id(), "full", [], [meta], full_attrs(out.shape, value, dtype),
                                       native=op.name, scope=scope))
            parts = [m.name for m in metas]
        self.nodes.append(Node(self.next_id(), "complex", parts, [out], {}, native=op.name, scope=scope))

    @staticmethod
    def splat(op) -> Arg:
        attr = op.attributes["value"]
        if not getattr(attr, "is_splat", False):
            return None
        value = getattr(attr.get_splat_value(), "value", None)
        element = str(op.results[0].type.element_type)
        if element.startswith("ui") and isinstance(value, int) and value < 0:  # MLIR reads unsigned bits as signed
            value += 1 << int(element[2:])
        return value

    def outputs(self, op, env: dict, scope: str) -> list[TensorMeta]:
        outputs = []
        for res in op.results:
            value = f"{scope}{res.get_name()}" if scope else res.get_name()
            outputs.append(_mlir_meta(value, res.type))
            env[res.get_name()] = value
        return outputs

    def loop_graphs(self, op, env: dict) -> dict[str, Graph]:
        """A while's cond and do regions as closed graphs over its carried values (the block
        arguments); a scalar constant a region reads from outside is substituted in, any other
        outside value makes it {}."""
        graphs = {}
        carry = [_mlir_meta("", res.type) for res in op.results]
        for role, region, out_metas in (("cond", op.regions[0], [TensorMeta("", (), "bool")]),
                                        ("body", op.regions[1], carry)):
            outside = {name: env[name] for name, _ in _free_values(region)}
            if any(isinstance(v, str) for v in outside.values()):
                return {}
            block = region.blocks[0]
            node_id = self.next_id()
            sub = _MlirReader(self.funcs, stage=self.stage, prefix=f"{node_id}.{role}.")
            inputs = [_mlir_meta(arg.get_name(), arg.type) for arg in block.arguments]
            outputs = sub.walk(block, {**outside, **{t.name: t.name for t in inputs}}, "")
            graphs[role] = forms.closed_graph(f"{node_id}.{role}", inputs, sub.nodes, outputs, out_metas, self.stage)
        return graphs

    def emit_branches(self, op, args: list, env: dict, scope: str) -> None:
        """case / if: each region a closed graph over the values of the enclosing function it
        reads (they become the node's operands; a literal one is substituted in); `if`'s regions
        (true, false) in index order."""
        regions = list(op.regions) if op.name == "stablehlo.case" else [op.regions[1], op.regions[0]]
        captured: dict[str, Any] = {}  # MLIR name -> its type, in the order first read
        for region in regions:
            for name, type_ in _free_values(region):
                captured.setdefault(name, type_)
        inputs = [_mlir_meta(name, t) for name, t in captured.items() if isinstance(env[name], str)]
        outs = [_mlir_meta("", res.type) for res in op.results]
        node_id = self.next_id()
        graphs = {}
        for k, region in enumerate(regions):
            sub = _MlirReader(self.funcs, stage=self.stage, prefix=f"{node_id}.branch{k}.")
            inner = {name: (name if isinstance(env[name], str) else env[name]) for name in captured}
            outputs = sub.walk(region.blocks[0], inner, "")
            graphs[f"branch{k}"] = forms.closed_graph(f"{node_id}.branch{k}", inputs, sub.nodes, outputs, outs,
                                                      self.stage)
        self.emit(op, [*args, *(env[t.name] for t in inputs)], env, scope, graphs, inputs)

    def emit(self, op, args: list, env: dict, scope: str, subgraphs: dict | None = None,
             captured: list[TensorMeta] = ()) -> None:
        opcode = stablehlo_opcode(op.name)
        attrs = {name: op.attributes[name] for name in op.attributes}
        metas = [_mlir_meta(a if isinstance(a, str) else "", v.type) for a, v in zip(args, op.operands)]
        metas += [TensorMeta(env[t.name], t.shape, t.dtype) for t in captured]
        outputs = self.outputs(op, env, scope)
        keys = ("to_apply", "scatter") if opcode != "select-and-scatter" else ("select", "scatter")
        bodies = {key: _region_body(region) for key, region in zip(keys, op.regions) if region.blocks} \
            if subgraphs is None else {}
        if opcode == "custom-call":
            called = [str(c).strip('"@') for c in attrs.get("called_computations", [])]
            if called and called[0] in self.funcs:
                bodies["called_computations"] = _region_body(self.funcs[called[0]].regions[0])
        spec = ", ".join(f"{k} = {v}" for k, v in attrs.items())
        unused = frozenset(i for i, r in enumerate(op.results) if r.get_name() not in self.live) \
            if len(op.results) > 1 else frozenset()
        x = XlaOp(self.next_id(), opcode, op.name, scope, args, metas, outputs, spec, bodies, {}, self.iotas,
                  set(attrs), str(attrs.get("call_target_name", "")).strip('"'), subgraphs=subgraphs or {}, unused=unused)
        self.nodes += convert(x)
        if opcode == "iota":
            self.iotas[outputs[0].name] = x.ints("iota_dimension")[0]


def _live_values(block) -> set[str]:
    """The names of the block's values that reach its terminator: a result only a dead op reads
    (jax's NaN select on an eigenvector nobody returns) is not live; one a kept op's regions read
    from outside (a loop body's constant) is."""
    live: set[str] = set()
    for op in reversed(list(block.operations)):
        op = op.operation
        if _keeps(op, live):
            live |= {v.get_name() for v in op.operands}
            live |= {name for region in op.regions for name, _ in _free_values(region)}
    return live


def _keeps(op, live: set[str]) -> bool:
    """Whether `op` is needed: a result is live, or it returns, calls, has regions or effects."""
    return (op.name in ("func.return", "stablehlo.return", "func.call") or len(op.regions) > 0 or not op.results
            or "has_side_effect" in op.attributes and str(op.attributes["has_side_effect"]) == "true"
            or any(r.get_name() in live for r in op.results))


def _region_body(region) -> Body:
    """A region's computation as a `Body`."""
    block = region.blocks[0]
    refs = {arg.get_name(): f"p{i}" for i, arg in enumerate(block.arguments)}
    ops, roots, constants = [], (), []
    for op in block.operations:
        op = op.operation
        if op.name in ("stablehlo.return", "func.return"):
            roots = tuple(refs.get(v.get_name(), "c") for v in op.operands)
        elif op.name == "stablehlo.constant":
            refs[op.results[0].get_name()] = f"c{len(constants)}"
            constants.append(_MlirReader.splat(op) if not op.results[0].type.shape else None)
        else:
            direction = None
            if "comparison_direction" in op.attributes:
                direction = str(op.attributes["comparison_direction"]).split()[-1].rstrip(">")
            for res in op.results:
                refs[res.get_name()] = f"o{len(ops)}"
            ops.append(BodyOp(stablehlo_opcode(op.name), direction, tuple(refs.get(v.get_name(), "c") for v in op.operands)))
    return Body(tuple(ops), roots, tuple(constants))


def _free_values(region) -> list[tuple[str, Any]]:
    """(name, type) of the values a region (its nested regions too) reads but does not define."""
    defined, free = set(), {}

    def visit(region) -> None:
        for block in region.blocks:
            defined.update(arg.get_name() for arg in block.arguments)
            for op in block.operations:
                for v in op.operands:
                    if v.get_name() not in defined:
                        free.setdefault(v.get_name(), v.type)
                for inner in op.regions:
                    visit(inner)
                defined.update(res.get_name() for res in op.results)

    visit(region)
    return list(free.items())
