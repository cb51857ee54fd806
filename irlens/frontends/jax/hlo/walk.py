"""Optimized HLO -> common view: the walk (StableHLO's is stablehlo.py).

Optimized HLO is walked through jaxlib's `HloModule` API (`computations()`, each
instruction's `name`, `opcode`, `operands`). That API exposes no shape, attribute or
metadata accessors and no protobuf bindings ship with jaxlib, so those are read from each
instruction's own one-line `to_string()` (text.py), and source locations from the module's
`FileLocations` / `StackFrames` sections. The ENTRY computation's instructions become nodes,
fusions expanded into their fused instructions (scope = the fusion instruction's name);
`walk_entry` says which nodes each ENTRY instruction became (the XLA backend's kernel records,
`irlens.backends.xla.kernels`, are built from that). Each instruction converts through
`xla.op.convert` (tables in names.py, handlers in elementwise.py, shapes.py,
structured.py, gpu_calls.py).

A `while` (condition= and body= computations) becomes the canonical `while`, its condition and
body read by the same walk into closed graphs of their own (`Node.subgraphs`, their inputs the
loop's carried values); a `conditional` the canonical `cond`, its branches likewise.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from irlens.core.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta
from irlens.frontends.jax.hlo import (  # noqa: F401  (each registers its handlers)
    elementwise, gpu_calls, shapes, structured)
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.hlo.gpu_bodies import WIDENS, holds
from irlens.frontends.jax.hlo.text import (Instruction, SourceFrame, int_list, literal_value, metadata_fields,
                                           parse_instruction, parse_stack_frames, scalar_literal)
from irlens.frontends.jax.jaxpr.walk import at_level
from irlens.frontends.jax.xla.op import Body, BodyOp, XlaOp, convert

# opcodes whose result holds only elements of their first operand
_MOVES_ELEMENTS = frozenset({"bitcast", "reshape", "copy", "transpose", "broadcast", "slice", "reverse"})


@dataclass
class HloReader:
    """Reads optimized HLO computations into common-view nodes (a while's or conditional's bodies
    by readers of their own, sharing the parsed computations)."""

    computations: dict[str, Any]  # name -> HloComputation
    frames: dict[int, SourceFrame]
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)
    shapes: dict[str, tuple[str, tuple[int, ...]]] = field(default_factory=dict)  # instruction -> (dtype, dims)
    parsed: dict[str, list[Instruction]] = field(default_factory=dict)  # computation -> its instructions
    values: dict[str, TensorMeta] = field(default_factory=dict)  # value name -> its meta
    layouts: dict[str, tuple[int, ...]] = field(default_factory=dict)  # instruction -> minor-to-major dims
    constants: dict[str, str] = field(default_factory=dict)  # array constant -> its values, as printed
    iotas: dict[str, int] = field(default_factory=dict)  # value name -> the dim an iota counts along
    widened: dict[str, str] = field(default_factory=dict)  # value name -> the narrower float it converts up
    stage: str = "jax.hlo"

    def instructions(self, comp_name: str) -> list[Instruction]:
        """The computation's instructions in a topological order (the API's order is not)."""
        if comp_name in self.parsed:
            return self.parsed[comp_name]
        raw = {ins.name: ins for ins in self.computations[comp_name].instructions()}
        order, seen = [], set()

        def visit(name: str) -> None:
            if name in seen or name not in raw:
                return
            seen.add(name)
            for op in raw[name].operands():
                visit(op.name)
            order.append(parse_instruction(raw[name]))

        for name in raw:
            visit(name)
        self.parsed[comp_name] = order
        return order

    def unread(self, ins: Instruction, n_results: int) -> frozenset[int]:
        """The results of a tuple-shaped custom call that no get-tuple-element reads (none when
        anything else uses the whole tuple, or it is a root)."""
        if not ins.is_tuple or ins.opcode != "custom-call":  # only a custom call's rules ask
            return frozenset()
        users = [u for comp in self.parsed.values() for u in comp if ins.name in u.operands]
        if any(u.opcode != "get-tuple-element" for u in users) or any(ins.name == self.root(c).name for c in self.parsed):
            return frozenset()
        return frozenset(range(n_results)) - {int(u.attrs["index"]) for u in users}

    def root(self, comp_name: str) -> Instruction:
        """The instruction no other one uses (HLO's ROOT; the API does not mark it)."""
        instrs = self.instructions(comp_name)
        used = {o for ins in instrs for o in ins.operands}
        return [ins for ins in instrs if ins.name not in used][-1]

    def walk(self, comp_name: str, env: dict, scope: str, params: list | None) -> Any:
        """Emit nodes for a computation; `params` binds its parameters (None: graph inputs).
        Returns the root's value (a name, a literal, or a list for a tuple)."""
        for ins in self.instructions(comp_name):
            self.visit(ins, env, scope, params)
        return env[self.root(comp_name).name]

    def visit(self, ins: Instruction, env: dict, scope: str, params: list | None) -> list[str]:
        """Bind `ins`'s value in env; returns the ids of the nodes emitted for it."""
        args = [env[o] for o in ins.operands]
        self.shapes[ins.name] = ins.shapes[0] if ins.shapes else ("", ())
        self.layouts[ins.name] = ins.layouts[0] if ins.layouts else ()
        if ins.opcode == "parameter":
            if params is None:
                meta = self.meta(ins.name, ins.shapes[0])
                self.inputs.append(meta)
                self.values[meta.name] = meta
                env[ins.name] = meta.name
            else:
                env[ins.name] = params[int(ins.args_text)]
            return []
        if ins.opcode == "constant":
            start = len(self.nodes)
            env[ins.name] = self.constant(ins, scope)
            return [n.id for n in self.nodes[start:]]
        if ins.opcode == "tuple":
            env[ins.name] = args
            return []
        if self.widens(ins) and not isinstance(args[0], (str, list)):
            env[ins.name] = args[0]  # a scalar constant widened exactly (a reduction's init, say) stays a literal
            return []
        if ins.opcode == "opt-barrier":  # the identity; it only orders scheduling
            env[ins.name] = args[0]
            return []
        if ins.opcode == "get-tuple-element":
            env[ins.name] = args[0][int(ins.attrs["index"])]
            return []
        if ins.opcode == "while":
            return self.emit(ins, args, env, scope, self.loop_graphs(ins))
        if ins.opcode == "conditional":
            return self.emit(ins, args, env, scope, self.branch_graphs(ins, args))
        called = (ins.attrs.get("calls") or ins.attrs.get("to_apply", "")).lstrip("%")
        if ins.opcode in ("fusion", "call") and called in self.computations:
            start = len(self.nodes)
            env[ins.name] = self.walk(called, {}, scope or ins.name, args)
            return [n.id for n in self.nodes[start:]]
        return self.emit(ins, args, env, scope)

    def constant(self, ins: Instruction, scope: str) -> Arg:
        """Scalar constants become literals, array constants `constant` nodes (their values from
        the module printed with its large constants)."""
        meta = self.meta(ins.name, ins.shapes[0]) if ins.shapes else None
        if meta is not None and meta.dtype.startswith("complex"):
            return self.complex_constant(ins, meta, scope)
        if ins.shapes and ins.shapes[0][1] == ():
            value = literal_value(ins.args_text)  # `f32[] constant(0)` prints an integer: the literal is 0.0
            return float(value) if meta.dtype.startswith(("float", "bfloat")) else value
        text = self.constants.get(ins.name, ins.args_text)
        values = [literal_value(v) for v in re.split(r"[{},\s]+", text) if v]
        if len(values) != meta.numel:
            node = Node(ins.name, UNKNOWN_PREFIX + "constant", [], [meta],
                        {"reason": "an array constant whose values the HLO text does not hold"}, native="constant",
                        scope=scope)
        else:
            node = Node(ins.name, "constant", [], [meta], {"values": values, "shape": list(meta.shape),
                                                          "dtype": meta.dtype}, native="constant", scope=scope)
        self.nodes.append(node)
        self.values[meta.name] = meta
        return meta.name

    def complex_constant(self, ins: Instruction, meta: TensorMeta, scope: str) -> str:
        """A complex scalar `(re, im)` as `complex(re, im)` (literals are real numbers); an array of
        complex values stays an unknown constant."""
        pair = re.fullmatch(r"\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)", ins.args_text.strip())
        if meta.shape == () and pair:
            parts = [float(literal_value(pair.group(1))), float(literal_value(pair.group(2)))]
            node = Node(ins.name, "complex", parts, [meta], {}, native="constant", scope=scope)
        else:
            node = Node(ins.name, UNKNOWN_PREFIX + "constant", [], [meta],
                        {"reason": "an array constant of complex values"}, native="constant", scope=scope)
        self.nodes.append(node)
        self.values[meta.name] = meta
        return meta.name

    def meta(self, name: str, shape: tuple[str, tuple[int, ...]]) -> TensorMeta:
        return TensorMeta(name, shape[1], shape[0])

    def loop_graphs(self, ins: Instruction) -> dict[str, Graph]:
        """A while's condition and body computations as closed graphs over its carried values
        (the tuple's elements, named after each computation's parameter)."""
        carry = [TensorMeta("", dims, dtype) for dtype, dims in ins.shapes]
        roles = {"cond": (ins.attrs.get("condition", ""), [TensorMeta("", (), "bool")]),
                 "body": (ins.attrs.get("body", ""), carry)}
        graphs = {}
        for role, (comp, out_metas) in roles.items():
            comp = comp.lstrip("%")
            if comp not in self.computations:
                return {}
            sub = HloReader(self.computations, self.frames, parsed=self.parsed, constants=self.constants,
                             stage=self.stage)
            (param,) = [i for i in sub.instructions(comp) if i.opcode == "parameter"]
            names = [f"{param.name}.{k}" for k in range(len(carry))] if ins.is_tuple else [param.name]
            inputs = [TensorMeta(name, m.shape, m.dtype) for name, m in zip(names, carry)]
            sub.values.update({t.name: t for t in inputs})
            root = sub.walk(comp, {}, "", [names if ins.is_tuple else names[0]])
            outputs = root if isinstance(root, list) else [root]
            if any(isinstance(o, list) for o in outputs):
                return {}  # a nested tuple: the carry is flat
            graphs[role] = forms.closed_graph(f"{ins.name}.{role}", inputs, sub.nodes, outputs, out_metas, self.stage)
        return graphs

    def branch_graphs(self, ins: Instruction, args: list) -> dict[str, Graph]:
        """A conditional's branch computations as closed graphs over all its operands (each
        branch's own operand, a tuple's elements, bound to its parameter); a predicate's
        branches in index order: false (0), then true (1)."""
        if "branch_computations" in ins.attrs:
            comps = [c.strip().lstrip("%") for c in ins.attrs["branch_computations"].strip("{}").split(",")]
            own = list(range(1, len(args)))
        else:
            comps = [ins.attrs.get(k, "").lstrip("%") for k in ("false_computation", "true_computation")]
            own = [2, 1]
        if len(comps) != len(own) or any(c not in self.computations for c in comps):
            return {}
        params = {}  # operand -> the parameter of the branch it feeds
        for comp, operand in zip(comps, own):
            (params[operand],) = [i for i in self.instructions(comp) if i.opcode == "parameter"]
        spans, inputs = {}, []
        for operand in range(1, len(args)):
            param = params[operand]
            spans[operand] = (len(inputs), len(inputs) + len(param.shapes), param.is_tuple)
            inputs += [TensorMeta(f"{ins.name}.in{len(inputs) + i}", dims, dtype)
                       for i, (dtype, dims) in enumerate(param.shapes)]
        outs = [TensorMeta("", dims, dtype) for dtype, dims in ins.shapes]
        graphs = {}
        for k, (comp, operand) in enumerate(zip(comps, own)):
            sub = HloReader(self.computations, self.frames, parsed=self.parsed, constants=self.constants,
                             stage=self.stage)
            sub.values.update({t.name: t for t in inputs})
            lo, hi, is_tuple = spans[operand]
            names = [t.name for t in inputs[lo:hi]]
            root = sub.walk(comp, {}, "", [names if is_tuple else names[0]])
            outputs = root if isinstance(root, list) else [root]
            if any(isinstance(o, list) for o in outputs) or len(outputs) != len(outs):
                return {}
            graphs[f"branch{k}"] = forms.closed_graph(f"{ins.name}.branch{k}", inputs, sub.nodes, outputs, outs,
                                                      self.stage)
        return graphs

    def emit(self, ins: Instruction, args: list, env: dict, scope: str, subgraphs: dict | None = None) -> list[str]:
        """The nodes of one instruction (through `convert`); returns their ids."""
        if ins.is_tuple:
            outputs = [self.meta(f"{ins.name}.{i}", sh) for i, sh in enumerate(ins.shapes)]
            env[ins.name] = [o.name for o in outputs]
        else:
            outputs = [self.meta(ins.name, ins.shapes[0])]
            env[ins.name] = ins.name
        inputs, metas = [], []
        for operand, arg in zip(ins.operands, args):
            for value in (arg if isinstance(arg, list) else [arg]):
                inputs.append(value)
                metas.append(self.values.get(value) if isinstance(value, str) else
                             self.meta("", self.shapes[operand]))
        bodies = {key: self.body(comp) for key, comp in self.called(ins).items()}
        op = XlaOp(ins.name, ins.opcode, ins.opcode, scope, inputs, metas, outputs, ins.text, bodies,
                   self.provenance(ins), self.iotas, set(ins.attrs),
                   ins.attrs.get("custom_call_target", "").strip('"'), subgraphs=subgraphs or {},
                   unused=self.unread(ins, len(outputs)), widened=self.widened)
        if ins.opcode in ("bitcast", "custom-call"):  # what a library call's bias runs along follows its layouts
            op.layouts = (tuple(self.layouts.get(o, ()) for o in ins.operands), tuple(ins.layouts))
        nodes = convert(op)
        self.nodes += nodes
        for o in outputs:
            self.values[o.name] = o
        if ins.opcode == "iota":
            self.iotas[ins.name] = int_list(ins.attrs["iota_dimension"])[0]
        if source := self.widens(ins) or self.keeps_widened(ins, args):
            self.widened[ins.name] = source
        return [n.id for n in nodes]

    def widens(self, ins: Instruction) -> str | None:
        """The narrower float type `ins` converts up from exactly, if it is such a convert."""
        source = self.shapes.get(ins.operands[0], ("", ()))[0] if ins.opcode == "convert" else ""
        return source if ins.shapes[0][0] in WIDENS.get(source, ()) else None

    def keeps_widened(self, ins: Instruction, args: list) -> str | None:
        """The narrower float a value converted up from it still holds exactly after `ins`, if
        `ins` only moves that value's elements (a bitcast of the convert, say); for a broadcast
        literal, the first narrower float that holds it (bf16 before f16: zeros are held by both)."""
        if ins.opcode not in _MOVES_ELEMENTS or not args or not ins.shapes:
            return None
        same = ins.shapes[0][0] == self.shapes.get(ins.operands[0], ("", ()))[0]  # no dtype-changing bitcast
        if isinstance(args[0], (int, float)) and not isinstance(args[0], bool) and same:
            return next((narrow for narrow, wides in WIDENS.items()
                         if ins.shapes[0][0] in wides and holds(narrow, args[0])), None)
        if not isinstance(args[0], str):
            return None
        source = self.widened.get(args[0])
        return source if source and same else None

    def called(self, ins: Instruction) -> dict[str, str]:
        """The computations an instruction applies, by the attribute naming them."""
        found = {}
        for key in ("to_apply", "select", "scatter", "called_computations"):
            comp = ins.attrs.get(key, "").strip("{}").lstrip("%")
            if comp in self.computations:
                found[key] = comp
        return found

    def body(self, comp: str) -> Body:
        refs, ops, constants = {}, [], []
        for ins in self.instructions(comp):
            if ins.opcode == "parameter":
                refs[ins.name] = f"p{int(ins.args_text)}"
            elif ins.opcode == "constant":
                refs[ins.name] = f"c{len(constants)}"
                constants.append(scalar_literal(ins.args_text))
            elif ins.opcode != "tuple":
                refs[ins.name] = f"o{len(ops)}"
                ops.append(BodyOp(ins.opcode, ins.attrs.get("direction"), tuple(refs.get(o, "c") for o in ins.operands),
                                  ins.shapes[0][0] if len(ins.shapes) == 1 else None))
        root = self.root(comp)
        roots = [refs[o] for o in root.operands] if root.opcode == "tuple" else [refs[root.name]]
        return Body(tuple(ops), tuple(roots), tuple(constants))

    def provenance(self, ins: Instruction) -> dict:
        """Where the instruction came from: XLA's op_name and the source frame."""
        attrs = {}
        meta = metadata_fields(ins.attrs.get("metadata", ""))
        if "op_name" in meta:
            attrs["op_name"] = meta["op_name"].strip('"')
        if "stack_frame_id" in meta and int(meta["stack_frame_id"]) in self.frames:
            attrs["source"] = str(self.frames[int(meta["stack_frame_id"])])
        return attrs


def _array_constants(module) -> dict[str, str]:
    """Array constant -> the values in its text; `to_string()` elides large ones (`{...}`)."""
    from jaxlib import _hlo

    options = _hlo.HloPrintOptions()
    options.print_large_constants = True
    found = re.finditer(r"^\s*(?:ROOT\s+)?%?(\S+) = \S+\[[\d,]+\]\S* constant\((\{.*?\})\)", module.to_string(options),
                        re.M)
    return {m.group(1): m.group(2) for m in found}


@dataclass
class EntryWalk:
    """An optimized module's ENTRY computation read: its graph, each of its instructions with the
    ids of the nodes it became, and the reader (the parsed computations, for what a caller reads
    of an instruction: the XLA backend's kernel records)."""

    graph: Graph
    instructions: list[tuple[Instruction, list[str]]]
    reader: HloReader


def walk_entry(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo") -> EntryWalk:
    """An optimized `HloModule` (e.g. `compiled.runtime_executable().hlo_modules()[0]`)."""
    text = module.to_string()
    entry = re.search(r"^ENTRY %?(\S+)", text, re.M)
    if entry is None:
        raise ValueError(f"HLO module {module.name} has no ENTRY computation")
    reader = HloReader({c.name: c for c in module.computations()}, parse_stack_frames(text), stage=stage)
    reader.constants = _array_constants(module)
    env: dict = {}
    instrs = reader.instructions(entry.group(1))
    visited = [(ins, reader.visit(ins, env, "", None)) for ins in instrs]
    root = env[instrs[-1].name] if instrs else []
    outputs = root if isinstance(root, list) else [root]
    return EntryWalk(Graph(name, frontend, stage, "composite", reader.inputs, reader.nodes, outputs), visited, reader)


def hlo_to_graph(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo", level: str = "composite") -> Graph:
    return at_level(walk_entry(module, name=name, frontend=frontend, stage=stage).graph, level)
