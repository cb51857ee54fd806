"""StableHLO and optimized HLO -> common view.

StableHLO is walked through the MLIR Python bindings (ops, operands, result types,
attributes); `func.call`s into private functions are inlined (scope = the callee).

Optimized HLO is walked through jaxlib's `HloModule` API (`computations()`, each
instruction's `name`, `opcode`, `operands`). That API exposes no shape, attribute or
metadata accessors and no protobuf bindings ship with jaxlib, so those are read from each
instruction's own one-line `to_string()`, and source locations from the module's
`FileLocations` / `StackFrames` sections. The ENTRY computation's instructions become nodes,
fusions expanded into their fused instructions (scope = the fusion instruction's name);
`EntryOp`s record which nodes each ENTRY instruction (a launched kernel) covers.

A `while` (HLO's condition= and body= computations, StableHLO's cond and do regions) becomes
the canonical `while`, its condition and body read by the same walk into closed graphs of
their own (`Node.subgraphs`, their inputs the loop's carried values); a `conditional` (HLO) or
`case`/`if` (StableHLO) the canonical `cond`, its branches likewise (StableHLO's regions read
values of the enclosing function: those become the node's operands).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from irlens.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype, dtype_size
from irlens.frontends.jax import hlo_traffic, linalg
from irlens.frontends.jax import xla_forms as forms
from irlens.frontends.jax import xla_gather
from irlens.frontends.jax.jaxpr import at_level, source_span
from irlens.frontends.jax.jaxpr_elementwise import polygamma_of
from irlens.frontends.jax.jaxpr_eqn import matmul_attrs
from irlens.frontends.jax.xla_forms import Emitter, Unmapped, full_attrs
from irlens.ops import check_vocabulary

# HLO opcode (as printed in HLO text) -> canonical op, for opcodes whose attrs need no
# translation. StableHLO names map onto these through `_stablehlo_opcode`; the structured
# opcodes are converted by `HANDLERS`, the rest classified in `CLASSIFIED`.
OPCODES: dict[str, str] = {
    "add": "add", "subtract": "sub", "multiply": "mul", "negate": "neg",
    "maximum": "maximum", "minimum": "minimum", "power": "pow", "remainder": "fmod", "atan2": "atan2",
    "exponential": "exp", "log": "log", "log-plus-one": "log1p", "exponential-minus-one": "expm1",
    "tanh": "tanh", "logistic": "sigmoid", "sqrt": "sqrt", "rsqrt": "rsqrt", "cbrt": "cbrt", "sine": "sin",
    "cosine": "cos", "tan": "tan", "erf": "erf", "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil",
    "round-nearest-afz": "round_half_away", "round-nearest-even": "round", "is-finite": "isfinite",
    "popcnt": "population_count", "count-leading-zeros": "clz", "clz": "clz",
    "shift-left": "bitwise_left_shift", "select": "where",
    "broadcast": "broadcast", "reshape": "reshape", "bitcast": "reshape",
    "transpose": "permute", "slice": "slice", "concatenate": "concat", "pad": "pad",
    "copy": "copy", "convert": "convert", "iota": "iota", "reverse": "flip",
    # chlo ops StableHLO keeps whole
    "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan", "atanh": "atanh",
    "cosh": "cosh", "sinh": "sinh", "erfc": "erfc", "erf-inv": "erfinv", "lgamma": "lgamma", "digamma": "digamma",
    "igamma": "igamma", "igammac": "igammac", "bessel-i1e": "bessel_i1e", "zeta": "zeta",
    "next-after": "nextafter", "is-inf": "isinf", "mulhi": "mulhi",
}
# opcodes whose canonical op depends on the operand's dtype: (bool, integer, floating)
BY_DTYPE: dict[str, tuple[str, str, str]] = {
    "and": ("logical_and", "bitwise_and", ""), "or": ("logical_or", "bitwise_or", ""),
    "xor": ("logical_xor", "bitwise_xor", ""), "not": ("logical_not", "bitwise_not", ""),
    "divide": ("", "div", "div"),
}
_COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}
check_vocabulary({**OPCODES, **_COMPARE, **{op: op for ops in BY_DTYPE.values() for op in ops if op}})

_RANDOM = "random bits: a counter-based generator, no canonical op"
# opcode -> why it stays unknown
CLASSIFIED: dict[str, str] = {
    "rng": _RANDOM, "rng-bit-generator": _RANDOM, "rng-get-and-update-state": _RANDOM,
    "map": "a map of a computation over elements: no canonical op",
    **{op: "complex numbers: the common view's dtypes are real" for op in ("complex", "real", "imag", "fft")},
    # XLA leaves the factor's other triangle, and the result for a matrix that is not positive
    # definite, implementation-defined
    "cholesky": "a Cholesky factor whose other triangle is implementation-defined: no canonical meaning",
    **{op: "a collective across devices" for op in ("all-reduce", "all-gather", "all-to-all", "reduce-scatter",
                                                      "collective-permute", "all-reduce-start", "all-reduce-done",
                                                      "all-gather-start", "all-gather-done",
                                                      "collective-permute-start", "collective-permute-done")},
    "stochastic-convert": "a conversion with random rounding",
}

# StableHLO names that differ from the HLO opcode beyond `_` -> `-`
_STABLEHLO_RENAMES = {"broadcast_in_dim": "broadcast", "dot_general": "dot", "round_nearest_afz": "round-nearest-afz",
                      "round_nearest_even": "round-nearest-even", "count_leading_zeros": "count-leading-zeros",
                      "popcnt": "popcnt", "top_k": "top-k", "bessel_i1e": "bessel-i1e", "erf_inv": "erf-inv",
                      "next_after": "next-after", "is_inf": "is-inf", "reduce_precision": "reduce-precision"}


def _stablehlo_opcode(op_name: str) -> str:
    """`stablehlo.dot_general` -> `dot`, `chlo.erf` -> `erf`, `stablehlo.log_plus_one` -> `log-plus-one`."""
    short = op_name.split(".", 1)[1] if "." in op_name else op_name
    return _STABLEHLO_RENAMES.get(short, short.replace("_", "-"))


# --- optimized HLO ----------------------------------------------------------------------

_ARRAY_SHAPE = re.compile(r"(\w+)\[([\d,]*)\](?:\{([\d,]*))?")
# `%name = <shape> <opcode>(` : the shape is everything between `= ` and the opcode
_HEAD = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>\S+)\s+=\s+(?P<shape>.+?)\s+(?P<opcode>[\w\-]+)\(")


@dataclass(frozen=True)
class SourceFrame:
    file: str
    function: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        """file:line:column-end_line:end_column, as `irlens.frontends.jax.jaxpr.source_span` writes it."""
        return source_span(self.file, self.line, self.column, self.end_line, self.end_column)


@dataclass
class Instruction:
    """One HLO instruction: the API's name/opcode/operands plus what only its text carries."""

    name: str
    opcode: str
    operands: list[str]
    shapes: list[tuple[str, tuple[int, ...]]]  # (dtype, dims) per result (several for a tuple)
    attrs: dict[str, str]  # key=value pairs after the operand list, values unparsed
    text: str
    args_text: str  # what the parentheses hold: operand names, a constant's value, a parameter's index
    layouts: list[tuple[int, ...]] = field(default_factory=list)  # minor-to-major dims per result ({1,0})

    @property
    def is_tuple(self) -> bool:
        return self.text.split("=", 1)[1].lstrip().startswith("(")


def parse_instruction(ins) -> Instruction:
    """An `HloInstruction` (jaxlib._hlo) as an `Instruction`."""
    text = ins.to_string()
    head = _HEAD.match(text)
    if head is None:
        raise ValueError(f"unrecognized HLO instruction text: {text[:200]}")
    found = _ARRAY_SHAPE.findall(head.group("shape"))
    shapes = [(canonical_dtype(dt), tuple(int(d) for d in dims.split(",") if d)) for dt, dims, _ in found]
    layouts = [tuple(int(d) for d in layout.split(",") if d) for _, _, layout in found]
    rest = text[head.end():]
    close = _matching_paren(rest)
    return Instruction(ins.name, head.group("opcode"), [o.name for o in ins.operands()], shapes,
                       _split_attrs(rest[close + 1:]), text, rest[:close], layouts)


def _matching_paren(s: str) -> int:
    """Index of the `)` closing the operand list that `s` starts inside of."""
    depth = 1
    for i, ch in enumerate(s):
        depth += ch in "({"
        depth -= ch in ")}"
        if depth == 0:
            return i
    return len(s)


def _split_attrs(s: str) -> dict[str, str]:
    """`, dims={0,1}, metadata={op_name="a, b"}` -> {dims: '{0,1}', metadata: '{op_name="a, b"}'}."""
    attrs, depth, quoted, start = {}, 0, False, 0
    parts = []
    for i, ch in enumerate(s):
        if ch == '"' and (i == 0 or s[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted:
            depth += ch in "{(["
            depth -= ch in "})]"
            if ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
    parts.append(s[start:])
    for part in parts:
        key, sep, value = part.strip().partition("=")
        if sep:
            attrs[key] = value
    return attrs


def _int_list(value: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", value)]


def _metadata(value: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+?)(?=[ }])', value))


def parse_stack_frames(module_text: str) -> dict[int, SourceFrame]:
    """stack_frame_id -> the innermost source frame, from an HLO module's text header."""
    sections: dict[str, dict[int, str]] = {}
    current = None
    for line in module_text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = sections.setdefault(line, {})
        elif not line.strip() or line.startswith(("%", "ENTRY", "HloModule")):
            current = None if not line.strip() else current
            if line.startswith(("%", "ENTRY")):
                break
        elif current is not None:
            key, _, value = line.partition(" ")
            current[int(key)] = value
    files = {k: v.strip('"') for k, v in sections.get("FileNames", {}).items()}
    functions = {k: v.strip('"') for k, v in sections.get("FunctionNames", {}).items()}
    locations = {}
    for k, v in sections.get("FileLocations", {}).items():
        f = dict(re.findall(r"(\w+)=(\d+)", v))
        locations[k] = SourceFrame(files.get(int(f["file_name_id"]), ""), functions.get(int(f["function_name_id"]), ""),
                                   int(f["line"]), int(f.get("column", 0)), int(f.get("end_line", f["line"])),
                                   int(f.get("end_column", 0)))
    return {k: locations[int(dict(re.findall(r"(\w+)=(\d+)", v))["file_location_id"])]
            for k, v in sections.get("StackFrames", {}).items()}


@dataclass
class EntryOp:
    """One ENTRY-computation instruction that launches work, and the nodes it covers."""

    name: str
    opcode: str
    fusion_kind: str  # kLoop, kInput, kOutput, kCustom ... ("" when not a fusion)
    node_ids: list[str]
    text: str  # the instruction, and for a fusion its fused computation(s)
    custom_kind: str = ""  # backend_config's fusion kind (__ynn_fusion, __triton_gemm ...) or custom-call target
    bytes_read: int = 0  # its operands, each once (see `_HloReader.io_bytes`)
    bytes_written: int = 0  # its results


@dataclass
class HloView:
    graph: Graph
    entry_ops: list[EntryOp]


# instructions that only name or regroup values; they launch nothing and become no node
_STRUCTURAL = {"parameter", "tuple", "get-tuple-element", "constant", "after-all", "opt-barrier"}
# instructions that become a node but launch nothing (a bitcast reinterprets a buffer in place)
_NO_LAUNCH = _STRUCTURAL | {"bitcast"}


@dataclass
class _HloReader:
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
        if ins.shapes and ins.shapes[0][1] == ():
            return _literal(ins.args_text)
        meta = self.meta(ins.name, ins.shapes[0])
        text = self.constants.get(ins.name, ins.args_text)
        values = [_literal(v) for v in re.split(r"[{},\s]+", text) if v]
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

    def io_bytes(self, ins: Instruction, entry: dict[str, Instruction]) -> tuple[int, int]:
        """(bytes read, bytes written) by an ENTRY instruction: what it touches (hlo_traffic)."""
        called = ins.attrs.get("calls", "").lstrip("%")
        body = self.instructions(called) if ins.opcode == "fusion" and called in self.computations else []
        return hlo_traffic.io_bytes(ins, entry, body, self.root(called) if body else None, self.instructions)

    def source_text(self, ins: Instruction) -> str:
        """The instruction's HLO text, followed by the computations it calls (fusion bodies)."""
        lines = [ins.text]
        for called in re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", ins.text):
            if called in self.computations:
                lines.append(f"{called}:")
                lines += ["  " + i.text for i in self.instructions(called)]
        return "\n".join(lines)

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
            sub = _HloReader(self.computations, self.frames, parsed=self.parsed, constants=self.constants,
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
            sub = _HloReader(self.computations, self.frames, parsed=self.parsed, constants=self.constants,
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
                   unused=self.unread(ins, len(outputs)))
        if ins.opcode == "bitcast":
            op.layouts = (self.layouts[ins.operands[0]], self.layouts[ins.name])
        nodes = convert(op)
        self.nodes += nodes
        for o in outputs:
            self.values[o.name] = o
        if ins.opcode == "iota":
            self.iotas[ins.name] = _int_list(ins.attrs["iota_dimension"])[0]
        return [n.id for n in nodes]

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
                constants.append(_scalar_literal(ins.args_text))
            elif ins.opcode != "tuple":
                refs[ins.name] = f"o{len(ops)}"
                ops.append(BodyOp(ins.opcode, ins.attrs.get("direction"), tuple(refs.get(o, "c") for o in ins.operands)))
        root = self.root(comp)
        roots = [refs[o] for o in root.operands] if root.opcode == "tuple" else [refs[root.name]]
        return Body(tuple(ops), tuple(roots), tuple(constants))

    def provenance(self, ins: Instruction) -> dict:
        """Where the instruction came from: XLA's op_name and the source frame."""
        attrs = {}
        meta = _metadata(ins.attrs.get("metadata", ""))
        if "op_name" in meta:
            attrs["op_name"] = meta["op_name"].strip('"')
        if "stack_frame_id" in meta and int(meta["stack_frame_id"]) in self.frames:
            attrs["source"] = str(self.frames[int(meta["stack_frame_id"])])
        return attrs


def _scalar_literal(text: str) -> Arg | None:
    """A scalar constant's value; None for an array's."""
    try:
        return _literal(text)
    except ValueError:
        return None


def _literal(text: str) -> Arg:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return float(text)  # also parses inf, -inf, nan


# --- forms shared by HLO and StableHLO ----------------------------------------------------


@dataclass(frozen=True)
class BodyOp:
    opcode: str  # HLO spelling
    direction: str | None  # of a compare
    operands: tuple[str, ...]  # "p<k>" a parameter, "c<k>" a constant, "o<i>" the body's i-th op


@dataclass(frozen=True)
class Body:
    """A computation an op applies (a reduction's, a scatter's, a sort's comparator), as a small
    graph over its parameters, so the conversion can tell what it computes."""

    ops: tuple[BodyOp, ...]
    roots: tuple[str, ...]
    constants: tuple[Arg | None, ...] = ()  # per "c<k>": a scalar constant's value (None: an array)

    def tree(self, ref: str):
        """What `ref` computes as a nested tuple, (opcode[, direction], operand trees...), with
        "p<k>" for a parameter and ("constant", value) for a constant; the operands of a
        commutative op sorted, so that one formula has one tree in HLO and in StableHLO."""
        if ref.startswith("p"):
            return ref
        if not ref.startswith("o"):
            k = ref[1:]
            return ("constant", self.constants[int(k)] if k.isdigit() and int(k) < len(self.constants) else None)
        op = self.ops[int(ref[1:])]
        return formula(op.opcode, *(self.tree(r) for r in op.operands), direction=op.direction)

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

    def comparison(self) -> tuple[str, int, int] | None:
        """A comparator `f(a) <dir> f(b)` with f an order-keeping canonicalization (selects,
        bitcasts, xors with constants, as jax writes -0 -> 0 and NaN -> NaN): (direction,
        the parameter on the left, the one on the right); None for anything else."""
        root = self.returns()
        if root is None or not root.startswith("o"):
            return None
        op = self.ops[int(root[1:])]
        if op.opcode != "compare" or op.direction not in ("LT", "GT") or not all(
                o.opcode in _CANONICALIZING for o in self.ops):
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


def _logaddexp_trees() -> list[tuple]:
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
    layouts: tuple = ()  # a bitcast's (operand, result) layouts, minor-to-major
    subgraphs: dict[str, Graph] = field(default_factory=dict)  # a while's cond and body, a conditional's branches
    unused: frozenset = frozenset()  # the results nothing reads (of an op with several)

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
    e = Emitter(op.id, op.native, op.scope, dict(op.provenance))
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
    return _int_list(found.group(1).replace("i64", "").replace("dense<", "").split(":")[0] if "dense<" in found.group(1)
                     else found.group(1).replace("i64", ""))


def _kind(dtype: str) -> int:
    return 0 if dtype == "bool" else 1 if dtype.startswith(("int", "uint")) else 2


def _rename(op: str):
    def handle(e: Emitter, x: XlaOp) -> None:
        x.one(e, op)
    return handle


def _by_dtype(e: Emitter, x: XlaOp) -> None:
    op = BY_DTYPE[x.opcode][_kind(x.metas[0].dtype)]
    if not op:
        raise Unmapped(f"{x.opcode} of {x.metas[0].dtype}")
    x.one(e, op, **({"rounding_mode": "trunc"} if x.opcode == "divide" and _kind(x.metas[0].dtype) == 1 else {}))


def _compare(e: Emitter, x: XlaOp) -> None:
    direction = x.word("direction", "comparison_direction")
    kind = x.word("type", "compare_type") or ""
    if kind == "TOTALORDER" and _kind(x.metas[0].dtype) == 2:
        raise Unmapped("a total-order compare of floats (-0 < +0, NaNs ordered)")
    if direction not in _COMPARE:
        raise Unmapped(f"compare direction {direction}")
    x.one(e, _COMPARE[direction])


def _clamp(e: Emitter, x: XlaOp) -> None:
    lo, value, hi = x.inputs
    x.one(e, "clamp", [value, lo, hi])


def _literal_or(op: str, attrs):
    """broadcast / convert / copy: of a literal, a `full` (XLA copies a constant into a loop's carry)."""
    def handle(e: Emitter, x: XlaOp) -> None:
        out = x.outs[0]
        if not isinstance(x.inputs[0], str):
            x.one(e, "full", [], **full_attrs(out.shape, x.inputs[0], out.dtype))
        else:
            x.one(e, op, **attrs(x))
    return handle


def _shape_of(e: Emitter, x: XlaOp) -> None:
    out = x.outs[0]
    if not isinstance(x.inputs[0], str):  # a literal, reshaped: a `full`
        x.one(e, "full", [], **full_attrs(out.shape, x.inputs[0], out.dtype))
    else:
        x.one(e, "reshape", shape=list(out.shape))


def _bitcast(e: Emitter, x: XlaOp) -> None:
    """A bitcast reads the operand's buffer in the result's shape and layout: a reshape between
    row-major layouts; else the operand's dims in memory order, reshaped to the result's dims
    in memory order, then put back in the result's logical order."""
    (src, dst), value, out = x.layouts or ((), ()), x.metas[0], x.outs[0]
    if not isinstance(x.inputs[0], str):
        x.one(e, "full", [], **full_attrs(out.shape, x.inputs[0], out.dtype))
        return
    major_in = list(reversed(src)) or list(range(len(value.shape)))
    major_out = list(reversed(dst)) or list(range(len(out.shape)))
    if major_in == sorted(major_in) and major_out == sorted(major_out):
        x.one(e, "reshape", shape=list(out.shape))
        return
    memory = e.permute(x.inputs[0], value.shape, value.dtype, major_in)
    flat = e.reshape(memory, [out.shape[d] for d in major_out], out.dtype)
    e.permute(flat, [out.shape[d] for d in major_out], out.dtype, [major_out.index(d) for d in range(len(major_out))],
              out)


def _slice(e: Emitter, x: XlaOp) -> None:
    ranges = re.search(r"slice=\{([^}]*)\}", x.spec)
    if ranges:
        parts = [_int_list(r) for r in re.findall(r"\[([^\]]*)\]", ranges.group(1))]
        start, limit, step = [r[0] for r in parts], [r[1] for r in parts], [r[2] if len(r) > 2 else 1 for r in parts]
    else:
        start, limit = x.ints("start_indices"), x.ints("limit_indices")
        step = x.ints("strides") or [1] * len(start)
    x.one(e, "slice", start=start, limit=limit, step=step)


def _pad(e: Emitter, x: XlaOp) -> None:
    found = re.search(r"padding=([\d_\-x]+)", x.spec)
    if found:  # lo_hi[_interior] per dim, x-separated
        config = [[int(v) for v in dim.split("_")] + [0] * (3 - len(dim.split("_"))) for dim in found.group(1).split("x")]
    else:
        config = [list(c) for c in zip(x.ints("edge_padding_low"), x.ints("edge_padding_high"),
                                       x.ints("interior_padding"))]
    x.one(e, "pad", padding=config)


def _dot(e: Emitter, x: XlaOp) -> None:
    if "dot_dimension_numbers" in x.spec:
        dn = x.spec[x.spec.index("dot_dimension_numbers"):]
        field_ = lambda key: _int_list(m.group(1)) if (m := re.search(key + r"\s*=\s*\[([^\]]*)\]", dn)) else []
        lc, rc = field_("lhs_contracting_dimensions"), field_("rhs_contracting_dimensions")
        lb, rb = field_("lhs_batching_dimensions"), field_("rhs_batching_dimensions")
    else:
        lc, rc = x.ints("lhs_contracting_dims") or [], x.ints("rhs_contracting_dims") or []
        lb, rb = x.ints("lhs_batch_dims") or [], x.ints("rhs_batch_dims") or []
    _matmul(e, x, lc, rc, lb, rb)


def _matmul(e: Emitter, x: XlaOp, lc, rc, lb, rb) -> None:
    out = x.outs[0]
    inputs = [v if m.dtype == out.dtype or not isinstance(v, str) else
              e.emit("convert", [v], m.shape, out.dtype, dtype=out.dtype)  # accumulated in the result's dtype
              for v, m in zip(x.inputs[:2], x.metas[:2])]
    attrs = matmul_attrs(len(x.metas[0].shape), len(x.metas[1].shape), lc, rc, lb, rb)
    e.emit("matmul", inputs, out.shape, out.dtype, out, **attrs)


def _reduce(e: Emitter, x: XlaOp) -> None:
    """A reduction whose body is one add/multiply/maximum/minimum (and/or: logical or bitwise):
    the canonical reduction, and its init combined in unless it is the op's identity."""
    if len(x.outs) == 2:
        _arg_reduce(e, x)
        return
    if len(x.outs) != 1:
        raise Unmapped("a reduction of several operands")
    body = x.bodies.get("to_apply")
    op = body.binary() if body else None
    value, init = x.inputs
    out = x.outs[0]
    dims = sorted(x.ints("dimensions") or [])
    if op in ("and", "or", "xor"):
        reduce = {"and": ("all", "reduce_and"), "or": ("any", "reduce_or"), "xor": ("", "reduce_xor")}[op]
        reduce = reduce[0] if out.dtype == "bool" and reduce[0] else reduce[1]
        identity = {"and": True if out.dtype == "bool" else -1, "or": False if out.dtype == "bool" else 0,
                    "xor": False if out.dtype == "bool" else 0}[op]
        combine = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}[op]
    else:
        reduce = forms.REDUCTION_BY_BODY.get(op or "")
        if reduce is None:
            raise Unmapped("a reduction body other than one add, multiply, maximum, minimum, and, or, xor")
        identity = forms.identity_of(reduce, out.dtype)
        combine = {"sum": "add", "prod": "mul", "amax": "maximum", "amin": "minimum"}[reduce]
    if not isinstance(init, str) and init == identity:
        forms.emit_accumulating(e, reduce, [value], out, dims=dims, keepdim=False)
        return
    part = forms.emit_accumulating(e, reduce, [value], e.fresh(out.shape, out.dtype), False, dims=dims,
                                     keepdim=False)
    e.emit(combine, [part, init], out.shape, out.dtype, out)


def _arg_reduce(e: Emitter, x: XlaOp) -> None:
    """jax's argmax / argmin: a reduction of (values, an iota along the dim) whose body keeps the
    greater (smaller) value, a NaN first, the lower index on ties; inits -inf (inf) and 0. It
    gives the max (min) and its first index."""
    body = x.bodies.get("to_apply")
    values, index, value_init, index_init = x.inputs
    dims = x.ints("dimensions") or []
    if body is None or len(dims) != 1 or x.iotas.get(index) != dims[0] or index_init != 0:
        raise Unmapped("a reduction of several operands other than an argmax / argmin")
    compares = {(o.direction, o.operands) for o in body.ops if o.opcode == "compare"}
    kinds = {o.opcode for o in body.ops}
    tie = ("LT", ("p1", "p3")) in compares and ("EQ", ("p0", "p2")) in compares
    which = [d for d in ("GT", "LT") if (d, ("p0", "p2")) in compares]
    if not tie or len(which) != 1 or not kinds <= {"compare", "or", "and", "select"} or len(body.roots) != 2:
        raise Unmapped("a reduction of several operands other than an argmax / argmin")
    reduce, arg = ("amax", "argmax") if which[0] == "GT" else ("amin", "argmin")
    if value_init != forms.identity_of(reduce, x.metas[0].dtype):
        raise Unmapped(f"an {arg} whose initial value is not the identity")
    best, where = x.outs
    e.emit(reduce, [values], best.shape, best.dtype, best, dims=dims, keepdim=False)
    e.emit(arg, [values], where.shape, where.dtype, where, dim=dims[0], keepdim=False)


def _window(x: XlaOp, rank: int, reversible: bool = False) -> tuple[list[int], list[int], list[list[int]], list[int],
                                                                      list[int]]:
    """(size, stride, [lo, hi] padding, base dilation, window dilation) of HLO's `window={...}`
    or StableHLO's attributes; a reversed window only where `reversible` (`_reversal` reads it)."""
    found = re.search(r"window=\{([^}]*)\}", x.spec)
    if found:
        fields = dict(re.findall(r"(\w+)=([\w\-]+)", found.group(1)))
        per_dim = lambda key, default: [int(v) for v in fields[key].split("x")] if key in fields else [default] * rank
        size = per_dim("size", 1)
        pads = [[int(v) for v in p.split("_")] for p in fields["pad"].split("x")] if "pad" in fields else [[0, 0]] * rank
        if "rhs_reversal" in fields and "1" in fields["rhs_reversal"] and not reversible:
            raise Unmapped("a reversed window")
        return size, per_dim("stride", 1), pads, per_dim("lhs_dilate", 1), per_dim("rhs_dilate", 1)
    size = x.ints("window_dimensions") or [1] * rank
    pads = x.ints("padding") or [0]
    pads = pads * (2 * rank) if len(pads) == 1 else pads  # a splat: dense<0>
    pads = [pads[i:i + 2] for i in range(0, len(pads), 2)]
    return (size, x.ints("window_strides") or [1] * rank, pads, x.ints("base_dilations") or [1] * rank,
            x.ints("window_dilations") or [1] * rank)


def _reversal(x: XlaOp, rank: int) -> tuple[bool, ...]:
    """Which dims of HLO's `window={... rhs_reversal=0x1}` run reversed."""
    found = re.search(r"window=\{[^}]*rhs_reversal=([\dx]+)", x.spec)
    return tuple(v == "1" for v in found.group(1).split("x")) if found else (False,) * rank


def _reduce_window(e: Emitter, x: XlaOp) -> None:
    body = x.bodies.get("to_apply")
    size, stride, pads, base, dil = _window(x, len(x.metas[0].shape))
    if body is None:
        raise Unmapped("a windowed reduction without its body")
    if len(x.outs) > 1:
        _select_window(e, x, body, dict(window=size, strides=stride, padding=pads, base_dilation=base,
                                        window_dilation=dil))
        return
    reduce = _window_reducer(body, x.outs[0].dtype)
    value, init = x.inputs
    form = forms.WindowForm(reduce, tuple(size), tuple(stride), tuple(map(tuple, pads)), tuple(base), tuple(dil))
    forms.expand_reduce_window(e, value, x.metas[0], init, form, x.outs[0])


def _window_reducer(body: Body, dtype: str) -> str:
    """The canonical reducer of a window body: one add / multiply / maximum / minimum (a logical
    and / or of bools: their min / max), or jax's logaddexp of floats."""
    reduce = forms.window_reducer(body.binary(), dtype)
    if reduce:
        return reduce
    floating = dtype != "bool" and not dtype.startswith(("int", "uint"))
    if floating and body.returns() and body.tree(body.returns()) in _logaddexp_trees():
        return "logsumexp"
    raise Unmapped("a window body other than one add, multiply, maximum, minimum, logaddexp or logical and/or")


def _select_window(e: Emitter, x: XlaOp, body: Body, window: dict) -> None:
    """A windowed reduction of m operands that keeps, per window, the whole tuple of the element
    the first operand selects (>= or <=): each output k is `select_and_gather_add` of operand k
    along the first. Two bodies do that: jax's select_and_gather_add (inits -inf / inf for the
    values, 0 for the rest: the canonical op's padding), and XLA's select-and-scatter rewrite on
    the CPU (the rest are iotas, init -1: an index that marks the init, never selected), exact
    where every window element is one of x's: no padding, no base dilation. The first output is
    the selected value itself."""
    m = len(x.outs)
    operands, inits = x.inputs[:m], x.inputs[m:]
    trees = [body.tree(r) for r in body.roots]
    chooser = trees[0][1] if len(trees) == m and trees[0][0] == "select" else None
    if chooser is None or trees != [formula("select", chooser, f"p{k}", f"p{m + k}") for k in range(m)]:
        raise Unmapped("a windowed reduction of several operands other than a selection by the first")
    real_only = all(list(p) == [0, 0] for p in window["padding"]) and all(b == 1 for b in window["base_dilation"])
    select = None
    for direction in ("GE", "LE"):
        compare = formula("compare", "p0", f"p{m}", direction=direction)
        flagged = formula("or", formula("and", compare, formula("compare", "p1", ("constant", -1), direction="NE")),
                          formula("not", formula("compare", f"p{m + 1}", ("constant", -1), direction="NE")))
        fill = float("-inf") if direction == "GE" else float("inf")
        if chooser == compare and inits[0] == fill and all(i == 0 for i in inits[1:]):
            select = direction.lower()  # jax's own: padding holds the fill, tangent 0
        elif chooser == flagged and real_only and x.iotas.get(operands[1]) is not None and inits[1] == -1:
            select = direction.lower()  # XLA's rewrite: operand 1 an iota, so only the init is flagged -1
    if select is None:
        raise Unmapped("a selecting window whose inits or padding the canonical select_and_gather_add does not hold")
    attrs = {key: [list(p) for p in v] if key == "padding" else list(v) for key, v in window.items()}
    attrs["select"] = select
    xm = x.metas[0]
    for k, out in enumerate(x.outs):
        if k or real_only:
            e.emit("select_and_gather_add", [operands[k], operands[0]], out.shape, out.dtype, out, **attrs)
            continue
        # where the window selects padding the value is the fill (the init), where the canonical op
        # gives padding's tangent 0: the selection of ones tells the two apart
        ones = e.emit("full", [], xm.shape, xm.dtype, shape=list(xm.shape), value=1.0, dtype=xm.dtype)
        real = e.emit("select_and_gather_add", [ones, operands[0]], out.shape, out.dtype, **attrs)
        value = e.emit("select_and_gather_add", [operands[0], operands[0]], out.shape, out.dtype, **attrs)
        e.emit("where", [e.emit("ne", [real, 0.0], out.shape, "bool"), value, inits[0]], out.shape, out.dtype, out)


def _select_and_scatter(e: Emitter, x: XlaOp) -> None:
    """select-and-scatter with a `>=` / `<=` selection of two parameters and an adding scatter
    into zeros: max (min) pooling's gradient."""
    select, scatter = x.bodies.get("select"), x.bodies.get("scatter")
    operand, source, init = x.inputs
    chooser = select.ops[0] if select and len(select.ops) == 1 and select.roots == ("o0",) else None
    if not (chooser and chooser.opcode == "compare" and chooser.operands == ("p0", "p1")
            and chooser.direction in ("GE", "LE") and scatter and scatter.binary() == "add"
            and not isinstance(init, str) and init == 0):
        raise Unmapped("a selection other than >= or <=, or a scatter other than an add into zeros")
    size, stride, pads, base, dil = _window(x, len(x.metas[0].shape))
    if any(d != 1 for d in base + dil):
        raise Unmapped("a dilated selection window")
    x.one(e, "select_and_scatter_add", [source, operand], select=chooser.direction.lower(), window=size, strides=stride,
          padding=pads)


def _gather(e: Emitter, x: XlaOp) -> None:
    operand, indices = x.metas[0], x.metas[1]
    vector_dim = x.ints("index_vector_dim")
    form = xla_gather.GatherForm(
        tuple(x.ints("offset_dims") or []), tuple(x.ints("collapsed_slice_dims") or []),
        tuple(x.ints("start_index_map") or []), tuple(x.ints("slice_sizes") or []),
        len(indices.shape) if vector_dim is None else vector_dim[0],
        tuple(x.ints("operand_batching_dims") or []), tuple(x.ints("start_indices_batching_dims") or []),
        mode="clip")  # XLA clamps a gather's start indices into the operand
    xla_gather.expand_gather(e, x.inputs[0], _named(x, 0), x.inputs[1], _named(x, 1), form, x.outs[0])


_SCATTER_BODIES = {"add": "add", "multiply": "mul", "maximum": "max", "minimum": "min"}


def _scatter(e: Emitter, x: XlaOp) -> None:
    if len(x.outs) != 1:
        raise Unmapped("a scatter of several operands")
    body = x.bodies.get("to_apply")
    kind = ("set" if body and body.returns() == "p1" else
            "sub" if body and body.binary() == "subtract" and body.ops[0].operands == ("p0", "p1") else
            _SCATTER_BODIES.get((body.binary() if body else None) or ""))
    if kind is None:
        raise Unmapped("a scatter body other than the update or one add, subtract, multiply, maximum, minimum")
    vector_dim = x.ints("index_vector_dim")
    form = xla_gather.ScatterForm(
        tuple(x.ints("update_window_dims") or []), tuple(x.ints("inserted_window_dims") or []),
        tuple(x.ints("scatter_dims_to_operand_dims") or []),
        len(x.metas[1].shape) if vector_dim is None else vector_dim[0], kind,
        tuple(x.ints("input_batching_dims") or []), tuple(x.ints("scatter_indices_batching_dims") or []),
        mode="drop")  # XLA skips an update whose window is out of bounds
    xla_gather.expand_scatter(e, x.inputs[0], _named(x, 0), x.inputs[1], _named(x, 1), x.inputs[2], _named(x, 2), form,
                         x.outs[0])


def _named(x: XlaOp, k: int) -> TensorMeta:
    meta = x.metas[k]
    return TensorMeta(x.inputs[k] if isinstance(x.inputs[k], str) else "", meta.shape, meta.dtype)


def _dynamic_slice(e: Emitter, x: XlaOp) -> None:
    x.one(e, "dynamic_slice", sizes=x.ints("dynamic_slice_sizes", "slice_sizes"))


def _sort(e: Emitter, x: XlaOp) -> None:
    """A sort whose comparator compares the first operand's two elements (LT ascending, GT
    descending); the other operands follow the permutation."""
    body = x.bodies.get("to_apply")
    cmp = body.comparison() if body else None
    if cmp is None or {cmp[1], cmp[2]} != {0, 1}:
        raise Unmapped("a comparator other than < or > of the first operand's elements")
    descending = (cmp[0] == "GT") == (cmp[1] == 0)
    dim = (x.ints("dimensions", "dimension") or [len(x.metas[0].shape) - 1])[0]
    stable = bool(re.search(r"is_stable\s*=\s*true", x.spec))
    if not all(isinstance(v, str) for v in x.inputs):
        raise Unmapped("a sort of a literal")
    iotas = {v for v in x.inputs[1:] if x.iotas.get(v) == dim}
    floats = not x.metas[0].dtype.startswith(("int", "uint", "bool"))
    forms.expand_sort(e, x.inputs, x.metas, x.outs, dim, descending, stable, iotas,
                      total_order=floats and not body.canonicalizes_nan())


def _top_k(e: Emitter, x: XlaOp) -> None:
    """chlo.top_k / HLO topk, and the CPU's TopK custom call (its comparator: greater-than)."""
    comparator = x.bodies.get("called_computations")
    largest = True
    if comparator is not None:
        cmp = comparator.comparison()
        if cmp is None or {cmp[1], cmp[2]} != {0, 1}:
            raise Unmapped("a top-k comparator other than > or <")
        largest = (cmp[0] == "GT") == (cmp[1] == 0)
    if re.search(r"largest\s*=\s*false", x.spec):
        largest = not largest
    k = x.outs[0].shape[-1]
    e.node("topk", x.inputs, x.outs, final=True, k=k, dim=len(x.metas[0].shape) - 1, largest=largest, sorted=True)


def _triangular_solve(e: Emitter, x: XlaOp) -> None:
    """XLA's TriangularSolve (what jax's CPU lowering emits where LAPACK has no routine for the dtype)."""
    flag = lambda key: x.word(key) == "true"
    transpose = x.word("transpose_a") or "NO_TRANSPOSE"
    if transpose not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise Unmapped(f"triangular solve with transpose_a={transpose}")
    linalg.triangular_solve(e, x.inputs[0], x.metas[0], x.inputs[1], x.outs[0], left_side=flag("left_side"),
                            lower=flag("lower"), transpose_a=transpose != "NO_TRANSPOSE",
                            unit_diagonal=flag("unit_diagonal"))


def _custom_call(e: Emitter, x: XlaOp) -> None:
    if linalg.is_lapack(x.target):
        linalg.lapack_call(e, x.target, x.inputs, x.metas, x.outs, linalg.lapack_options(x.spec), x.unused)
    elif "mhlo.backend_config" in x.attr_keys and (x.target == "TopK" or x.target in _GEMM_TARGETS):
        raise Unmapped(f"custom call {x.target}: attributes not mapped: mhlo.backend_config")
    elif x.target == "TopK":
        _top_k(e, x)
    elif x.target in _GEMM_TARGETS:
        _gemm(e, x)
    else:
        raise Unmapped(f"custom call {x.target or '(no target)'}: no canonical op")


# cuBLAS / cuBLASLt GEMMs XLA calls on GPUs; their backend_config holds the dot dimension numbers
_GEMM_TARGETS = {"__cublas$gemm", "__cublas$lt$matmul"}


def _gemm(e: Emitter, x: XlaOp) -> None:
    """A library GEMM: `gemm_backend_config` names its dot dimensions, alpha, beta (beta != 0 adds
    a third operand) and epilogue. Only alpha 1, beta 0 and no epilogue is a plain matmul."""
    config = x.spec
    number = lambda key: float(m.group(1)) if (m := re.search(rf'"{key}"\s*:\s*"?(-?[\d.e+-]+)', config)) else None
    epilogue = re.search(r'"epilogue"\s*:\s*"(\w+)"', config)
    if number("alpha_real") not in (None, 1.0) or number("alpha_imag") not in (None, 0.0):
        raise Unmapped("a GEMM scaled by alpha")
    if number("beta") not in (None, 0.0):
        raise Unmapped("a GEMM adding beta times an operand")
    if epilogue and epilogue.group(1) != "DEFAULT":
        raise Unmapped(f"a GEMM with a {epilogue.group(1)} epilogue")
    dims = lambda key: [int(v) for v in re.findall(r'"?(\d+)"?', m.group(1))] if (
        m := re.search(rf'"{key}"\s*:\s*\[([^\]]*)\]', config)) else []
    if not re.search(r'"lhs_contracting_dimensions"', config):
        raise Unmapped("a GEMM without dot dimension numbers")
    outs = [o for o in x.outs if o.dtype not in ("int8", "uint8")][:1]  # the workspace result is scratch
    if len(x.inputs) != 2 or not outs:
        raise Unmapped("a GEMM of other than two operands")
    x = XlaOp(x.id, x.opcode, x.native, x.scope, x.inputs, x.metas, outs, x.spec, x.bodies, x.provenance, x.iotas,
              x.attr_keys, x.target)
    _matmul(e, x, dims("lhs_contracting_dimensions"), dims("rhs_contracting_dimensions"),
            dims("lhs_batch_dimensions"), dims("rhs_batch_dimensions"))


def _conv_labels(x: XlaOp) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """HLO's `dim_labels=b01f_01io->b01f` or StableHLO's `[b, 0, f]x[0, i, o]->[b, 0, f]` as
    (lhs, rhs, out) specs: dim indices of (batch / out feature, feature / in feature, *spatial)."""
    found = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", x.spec)
    if found:
        labels = [list(part) for part in found.groups()]
    else:
        found = re.search(r"\[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]", x.spec)
        if found is None:
            raise Unmapped("no convolution dimension labels")
        labels = [[t.strip() for t in part.split(",")] for part in found.groups()]

    def spec(tokens, first, second):
        spatial = sorted((t for t in tokens if t.isdigit()), key=int)
        return tuple(tokens.index(t) for t in [first, second, *spatial])
    return spec(labels[0], "b", "f"), spec(labels[1], "o", "i"), spec(labels[2], "b", "f")


def _convolution(e: Emitter, x: XlaOp) -> None:
    lhs_spec, rhs_spec, out_spec = _conv_labels(x)
    n = len(lhs_spec) - 2
    size, stride, pads, lhs_dil, rhs_dil = _window(x, n, reversible=True)
    if "window_strides" in x.spec or "lhs_dilation" in x.spec:  # StableHLO's attributes
        stride = x.ints("window_strides") or [1] * n
        lhs_dil, rhs_dil = x.ints("lhs_dilation") or [1] * n, x.ints("rhs_dilation") or [1] * n
        if re.search(r"window_reversal\s*=\s*array<i1:[^>]*true", x.spec):
            raise Unmapped("a reversed window")
    form = forms.ConvForm(lhs_spec, rhs_spec, out_spec, tuple(stride), tuple(map(tuple, pads)), tuple(lhs_dil),
                          tuple(rhs_dil), (x.ints("feature_group_count") or [1])[0],
                          (x.ints("batch_group_count") or [1])[0], _reversal(x, n))
    forms.expand_conv(e, x.inputs[0], _named(x, 0), x.inputs[1], _named(x, 1), form, x.outs[0])


def _shift(kind: str):
    def handle(e: Emitter, x: XlaOp) -> None:
        forms.expand_shift(e, kind, x.inputs, x.metas, x.outs[0])
    return handle


def _reduce_precision(e: Emitter, x: XlaOp) -> None:
    x.one(e, "reduce_precision", exponent_bits=x.ints("exponent_bits")[0], mantissa_bits=x.ints("mantissa_bits")[0])


def _bitcast_convert(e: Emitter, x: XlaOp) -> None:
    forms.emit_bitcast(e, x.inputs[0], x.metas[0], x.outs[0])


def _iota(e: Emitter, x: XlaOp) -> None:
    out = x.outs[0]
    x.one(e, "iota", [], shape=list(out.shape), dim=x.ints("iota_dimension")[0], dtype=out.dtype)


# opcode -> (handler, the attributes it reads; both IRs' spellings)
HANDLERS: dict[str, tuple[Any, frozenset]] = {}


def _while(e: Emitter, x: XlaOp) -> None:
    if set(x.subgraphs) != {"cond", "body"}:
        raise Unmapped("a loop whose condition and body are not flat computations over its carried values "
                       "(a nested tuple, or a region reading values from outside it)")
    forms.emit_while(e, x.inputs, x.outs, x.subgraphs["cond"], x.subgraphs["body"])


def _conditional(e: Emitter, x: XlaOp) -> None:
    """HLO's conditional, StableHLO's case and if: the index (or predicate), then the operands
    every branch graph takes."""
    branches = [x.subgraphs.get(f"branch{k}") for k in range(len(x.subgraphs))]
    if not branches or None in branches:
        raise Unmapped("a conditional whose branches are not flat computations over its operands")
    forms.emit_cond(e, x.inputs[0], x.metas[0], x.inputs[1:], x.outs, branches)


def _register(opcodes, handler, reads=()):
    for opcode in ([opcodes] if isinstance(opcodes, str) else opcodes):
        HANDLERS[opcode] = (handler, frozenset(reads))


for _opcode, _op in OPCODES.items():
    _register(_opcode, _rename(_op))
_register(list(BY_DTYPE), _by_dtype)
_register("compare", _compare, ("direction", "type", "comparison_direction", "compare_type"))
_register("clamp", _clamp)
_register("broadcast", _literal_or("broadcast", lambda x: {
    "shape": list(x.outs[0].shape), "broadcast_dims": x.ints("dimensions", "broadcast_dimensions") or []}),
    ("dimensions", "broadcast_dimensions"))
_register("convert", _literal_or("convert", lambda x: {"dtype": x.outs[0].dtype}))
_register("copy", _literal_or("copy", lambda x: {}))
_register("reshape", _shape_of)
_register("bitcast", _bitcast)
_register("transpose", lambda e, x: x.one(e, "permute", perm=x.ints("dimensions", "permutation")),
          ("dimensions", "permutation"))
_register("reverse", lambda e, x: x.one(e, "flip", dims=x.ints("dimensions")), ("dimensions",))
_register("concatenate", lambda e, x: x.one(e, "concat", dim=x.ints("dimensions", "dimension")[0]),
          ("dimensions", "dimension"))
_register("slice", _slice, ("slice", "start_indices", "limit_indices", "strides"))
_register("pad", _pad, ("padding", "edge_padding_low", "edge_padding_high", "interior_padding"))
_register("iota", _iota, ("iota_dimension",))
_register("dot", _dot, ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims",
                        "dot_dimension_numbers"))
_register("reduce", _reduce, ("dimensions", "to_apply"))
_register("reduce-window", _reduce_window, ("window", "to_apply", "window_dimensions", "window_strides", "padding",
                                            "base_dilations", "window_dilations"))
_register("select-and-scatter", _select_and_scatter, ("window", "select", "scatter", "window_dimensions",
                                                       "window_strides", "padding"))
_register("gather", _gather, ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim",
                              "slice_sizes", "operand_batching_dims", "start_indices_batching_dims",
                              "dimension_numbers"))
_register("scatter", _scatter, ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                                "index_vector_dim", "input_batching_dims", "scatter_indices_batching_dims",
                                "to_apply", "scatter_dimension_numbers"))
_register("dynamic-slice", _dynamic_slice, ("dynamic_slice_sizes", "slice_sizes"))
_register("dynamic-update-slice", lambda e, x: x.one(e, "dynamic_update_slice"))
_register("sort", _sort, ("dimensions", "dimension", "is_stable", "to_apply"))
_register(["top-k", "topk"], _top_k, ("k", "largest"))
_register("custom-call", _custom_call, ("custom_call_target", "called_computations", "call_target_name",
                                        "backend_config", "has_side_effect", "mhlo.backend_config"))
_register("triangular-solve", _triangular_solve, ("left_side", "lower", "transpose_a", "unit_diagonal",
                                                  "triangular_solve_options"))
_register("convolution", _convolution, ("window", "dim_labels", "feature_group_count", "batch_group_count",
                                        "dimension_numbers", "window_strides", "padding", "lhs_dilation",
                                        "rhs_dilation", "window_reversal"))
_register("shift-right-arithmetic", _shift("right_arithmetic"))
_register("shift-right-logical", _shift("right_logical"))
_register("shift-left", _shift("left"))
_register("reduce-precision", _reduce_precision, ("exponent_bits", "mantissa_bits"))
_register("bitcast-convert", _bitcast_convert)
_register("polygamma", lambda e, x: polygamma_of(e, x.inputs, x.outs))  # chlo.polygamma
_register("square", lambda e, x: x.one(e, "pow", [x.inputs[0], 2]))  # chlo.square
_register("while", _while, ("condition", "body"))
_register(["conditional", "case", "if"], _conditional, ("branch_computations", "true_computation",
                                                       "false_computation"))


# --- StableHLO ----------------------------------------------------------------------------


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
        opcode = _stablehlo_opcode(op.name)
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
            ops.append(BodyOp(_stablehlo_opcode(op.name), direction, tuple(refs.get(v.get_name(), "c") for v in op.operands)))
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


def read_hlo(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo") -> HloView:
    """An optimized `HloModule` (e.g. `compiled.runtime_executable().hlo_modules()[0]`)."""
    text = module.to_string()
    entry = re.search(r"^ENTRY %?(\S+)", text, re.M)
    if entry is None:
        raise ValueError(f"HLO module {module.name} has no ENTRY computation")
    reader = _HloReader({c.name: c for c in module.computations()}, parse_stack_frames(text), stage=stage)
    reader.constants = _array_constants(module)
    env: dict = {}
    entry_ops = []
    instrs = reader.instructions(entry.group(1))
    by_name = {ins.name: ins for ins in instrs}
    for ins in instrs:
        node_ids = reader.visit(ins, env, "", None)
        if ins.opcode not in _NO_LAUNCH:
            entry_ops.append(EntryOp(ins.name, ins.opcode, ins.attrs.get("kind", ""), node_ids,
                                     reader.source_text(ins), _custom_kind(ins), *reader.io_bytes(ins, by_name)))
    root = env[instrs[-1].name] if instrs else []
    outputs = root if isinstance(root, list) else [root]
    return HloView(Graph(name, frontend, stage, "composite", reader.inputs, reader.nodes, outputs), entry_ops)


def _array_constants(module) -> dict[str, str]:
    """Array constant -> the values in its text; `to_string()` elides large ones (`{...}`)."""
    from jaxlib import _hlo

    options = _hlo.HloPrintOptions()
    options.print_large_constants = True
    found = re.finditer(r"^\s*(?:ROOT\s+)?%?(\S+) = \S+\[[\d,]+\]\S* constant\((\{.*?\})\)", module.to_string(options),
                        re.M)
    return {m.group(1): m.group(2) for m in found}


def hlo_to_graph(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo", level: str = "composite") -> Graph:
    graph = read_hlo(module, name=name, frontend=frontend, stage=stage).graph
    return at_level(graph, level)


def _custom_kind(ins: Instruction) -> str:
    if ins.opcode == "custom-call":
        return ins.attrs.get("custom_call_target", "").strip('"')
    found = re.search(r'"kind":"(\w+)"', ins.attrs.get("backend_config", ""))
    return found.group(1) if found else ""
