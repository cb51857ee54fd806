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
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from irlens.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype, dtype_size
from irlens.ir_adapters.jaxpr import at_level, full_attrs, is_row_gather, is_row_scatter_add, matmul_attrs, source_span
from irlens.ops import check_vocabulary, conform

# HLO opcode (as printed in HLO text) -> canonical op. StableHLO names map onto these
# through `_stablehlo_opcode`.
OPCODES: dict[str, str] = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "negate": "neg",
    "maximum": "maximum", "minimum": "minimum", "power": "pow", "remainder": "remainder", "atan2": "atan2",
    "exponential": "exp", "log": "log", "log-plus-one": "log1p", "exponential-minus-one": "expm1",
    "tanh": "tanh", "logistic": "sigmoid", "sqrt": "sqrt", "rsqrt": "rsqrt", "sine": "sin", "cosine": "cos",
    "erf": "erf", "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil", "round-nearest-afz": "round",
    "and": "logical_and", "or": "logical_or", "not": "logical_not", "select": "where",
    "dot": "matmul", "broadcast": "broadcast", "reshape": "reshape", "bitcast": "reshape",
    "transpose": "permute", "slice": "slice", "concatenate": "concat", "pad": "pad", "gather": "take",
    "copy": "copy", "convert": "convert", "iota": "iota",
}
check_vocabulary(OPCODES)

_COMPARE = {"EQ": "eq", "NE": "ne", "LT": "lt", "LE": "le", "GT": "gt", "GE": "ge"}
# reduce / reduce-window / scatter: the op their body applies
_REDUCE_BY_BODY = {"add": "sum", "maximum": "amax", "minimum": "amin", "multiply": "prod"}
_SCATTER_BY_BODY = {"add": "index_add"}
check_vocabulary({**_COMPARE, **_REDUCE_BY_BODY, **_SCATTER_BY_BODY})

# StableHLO names that differ from the HLO opcode beyond `_` -> `-`
_STABLEHLO_RENAMES = {"broadcast_in_dim": "broadcast", "dot_general": "dot", "round_nearest_afz": "round-nearest-afz"}


def _stablehlo_opcode(op_name: str) -> str:
    """`stablehlo.dot_general` -> `dot`, `chlo.erf` -> `erf`, `stablehlo.log_plus_one` -> `log-plus-one`."""
    short = op_name.split(".", 1)[1] if "." in op_name else op_name
    return _STABLEHLO_RENAMES.get(short, short.replace("_", "-"))


def _canonical(opcode: str, body_opcode: str | None = None, direction: str | None = None) -> str:
    if opcode == "compare" and direction in _COMPARE:
        return _COMPARE[direction]
    if opcode in ("reduce", "reduce-window") and body_opcode in _REDUCE_BY_BODY:
        return _REDUCE_BY_BODY[body_opcode]
    if opcode == "scatter" and body_opcode in _SCATTER_BY_BODY:
        return _SCATTER_BY_BODY[body_opcode]
    return OPCODES.get(opcode, UNKNOWN_PREFIX + opcode)


# --- optimized HLO ----------------------------------------------------------------------

_ARRAY_SHAPE = re.compile(r"(\w+)\[([\d,]*)\]")
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
        """file:line:column-end_line:end_column, as `irlens.ir_adapters.jaxpr.source_span` writes it."""
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

    @property
    def is_tuple(self) -> bool:
        return self.text.split("=", 1)[1].lstrip().startswith("(")


def parse_instruction(ins) -> Instruction:
    """An `HloInstruction` (jaxlib._hlo) as an `Instruction`."""
    text = ins.to_string()
    head = _HEAD.match(text)
    if head is None:
        raise ValueError(f"unrecognized HLO instruction text: {text[:200]}")
    shapes = [(canonical_dtype(dt), tuple(int(d) for d in dims.split(",") if d))
              for dt, dims in _ARRAY_SHAPE.findall(head.group("shape"))]
    rest = text[head.end():]
    close = _matching_paren(rest)
    return Instruction(ins.name, head.group("opcode"), [o.name for o in ins.operands()], shapes,
                       _split_attrs(rest[close + 1:]), text, rest[:close])


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

    def root(self, comp_name: str) -> Instruction:
        """The instruction no other one uses (HLO's ROOT; the API does not mark it)."""
        instrs = self.instructions(comp_name)
        used = {o for ins in instrs for o in ins.operands}
        return [ins for ins in instrs if ins.name not in used][-1]

    def body_opcode(self, ins: Instruction) -> str | None:
        comp = ins.attrs.get("to_apply", "").lstrip("%")
        return self.root(comp).opcode if comp in self.computations else None

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
        if ins.opcode == "parameter":
            if params is None:
                meta = self.meta(ins.name, ins.shapes[0])
                self.inputs.append(meta)
                env[ins.name] = meta.name
            else:
                env[ins.name] = params[int(ins.args_text)]
            return []
        if ins.opcode == "constant":
            env[ins.name] = self.constant(ins)
            return []
        if ins.opcode == "tuple":
            env[ins.name] = args
            return []
        if ins.opcode == "get-tuple-element":
            env[ins.name] = args[0][int(ins.attrs["index"])]
            return []
        called = ins.attrs.get("calls", "").lstrip("%")
        if ins.opcode in ("fusion", "call") and called in self.computations:
            start = len(self.nodes)
            env[ins.name] = self.walk(called, {}, scope or ins.name, args)
            return [n.id for n in self.nodes[start:]]
        return [self.emit(ins, args, env, scope)]

    def constant(self, ins: Instruction) -> Arg:
        """Scalar constants become literals; array constants graph inputs (named as the instruction)."""
        if ins.shapes and ins.shapes[0][1] == ():
            return _literal(ins.args_text)
        meta = self.meta(ins.name, ins.shapes[0])
        self.inputs.append(meta)
        return meta.name

    def io_bytes(self, ins: Instruction, entry: dict[str, Instruction]) -> tuple[int, int]:
        """(bytes read, bytes written) by an ENTRY instruction: its operands, each once, and its
        results, at the shapes the instructions declare. A fusion reads of an operand only the
        part its computation uses (`_demand`: q, k and v sliced out of one qkv buffer by three
        fusions are a third of it each); a fusion whose root updates an operand in place
        (dynamic-update-slice) reads and writes only the update. A library GEMM's trailing
        s8/u8 result is its scratch workspace and does not count."""
        called = ins.attrs.get("calls", "").lstrip("%")
        body = self.instructions(called) if ins.opcode == "fusion" and called in self.computations else []
        root = self.root(called) if body else None
        in_place = root.operands[0] if root is not None and root.opcode == "dynamic-update-slice" else None
        demand = _demand(body, root) if body else {}
        params = {int(i.args_text): i.name for i in body if i.opcode == "parameter"}

        read, seen = 0.0, set()
        for index, name in enumerate(ins.operands):
            if name in seen or name not in entry:
                continue
            seen.add(name)
            param = params.get(index)
            if param is not None and param == in_place:
                continue  # updated in place: only the update (another operand) is read
            read += _shape_bytes(entry[name].shapes) * (demand.get(param, 1.0) if param is not None else 1.0)
        results = ins.shapes
        if ins.opcode == "custom-call" and len(results) > 1 and results[-1][0] in ("int8", "uint8"):
            results = results[:-1]
        written = _shape_bytes(results)
        if in_place is not None:
            written = _shape_bytes(next(i for i in body if i.name == root.operands[1]).shapes)
        return round(read), written

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

    def emit(self, ins: Instruction, args: list, env: dict, scope: str) -> str:
        direction = ins.attrs.get("direction")
        op = _canonical(ins.opcode, self.body_opcode(ins), direction)
        if ins.opcode == "custom-call":
            target = ins.attrs.get("custom_call_target", "").strip('"')
            op = "matmul" if ("gemm" in target or "matmul" in target) else UNKNOWN_PREFIX + "custom-call"
        if ins.is_tuple:
            outputs = [self.meta(f"{ins.name}.{i}", s) for i, s in enumerate(ins.shapes)]
            env[ins.name] = [o.name for o in outputs]
        else:
            outputs = [self.meta(ins.name, ins.shapes[0])]
            env[ins.name] = ins.name
        flat = [a for arg in args for a in (arg if isinstance(arg, list) else [arg])]
        node = Node(ins.name, op, flat, outputs, self.attrs(ins, op), native=ins.opcode, scope=scope)
        self.nodes += map(conform, normalize(node, ins.opcode, [self.shapes[o] for o in ins.operands], ins.text))
        return ins.name

    def attrs(self, ins: Instruction, op: str) -> dict:
        a = ins.attrs
        attrs: dict[str, Any] = {}
        if op in _REDUCE_BY_BODY.values() and "dimensions" in a:
            attrs.update(dims=sorted(_int_list(a["dimensions"])), keepdim=False)
        elif ins.opcode == "broadcast":
            attrs.update(shape=list(ins.shapes[0][1]), broadcast_dims=_int_list(a.get("dimensions", "")))
        elif op == "reshape":
            attrs["shape"] = list(ins.shapes[0][1])
        elif op == "permute":
            attrs["perm"] = _int_list(a["dimensions"])
        elif op == "concat":
            attrs["dim"] = _int_list(a["dimensions"])[0]
        elif op == "convert":
            attrs["dtype"] = ins.shapes[0][0]
        elif op == "iota":
            attrs.update(shape=list(ins.shapes[0][1]), dim=_int_list(a["iota_dimension"])[0], dtype=ins.shapes[0][0])
        elif ins.opcode == "dot":
            ranks = [len(self.shapes[o][1]) for o in ins.operands]
            attrs.update(matmul_attrs(*ranks, _int_list(a.get("lhs_contracting_dims", "")),
                                      _int_list(a.get("rhs_contracting_dims", "")),
                                      _int_list(a.get("lhs_batch_dims", "")), _int_list(a.get("rhs_batch_dims", ""))))
        elif ins.opcode == "slice":
            ranges = [_int_list(r) for r in re.findall(r"\[([^\]]*)\]", a["slice"])]
            attrs.update(start=[r[0] for r in ranges], limit=[r[1] for r in ranges],
                         step=[r[2] if len(r) > 2 else 1 for r in ranges])
        elif ins.opcode == "pad":  # padding=lo_hi[_interior]x... per dim
            attrs["padding"] = [[int(v) for v in dim.split("_")] + [0] * (3 - len(dim.split("_")))
                                for dim in a["padding"].split("x")]
        elif ins.opcode == "custom-call":
            attrs["target"] = a.get("custom_call_target", "").strip('"')
        meta = _metadata(a.get("metadata", ""))
        if "op_name" in meta:
            attrs["op_name"] = meta["op_name"].strip('"')
        if "stack_frame_id" in meta and int(meta["stack_frame_id"]) in self.frames:
            attrs["source"] = str(self.frames[int(meta["stack_frame_id"])])
        return attrs



def _provenance(attrs: dict) -> dict:
    return {k: attrs[k] for k in ("op_name", "source") if k in attrs}


def _literal(text: str) -> Arg:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return float(text)  # also parses inf, -inf, nan


# --- forms shared by HLO and StableHLO ----------------------------------------------------


def normalize(node: Node, opcode: str, operands: list[tuple[str, tuple[int, ...]]], spec: str) -> list[Node]:
    """The node(s) `node` becomes under the common view's conventions. `spec` is the text its
    dimension numbers / window are read from (the HLO instruction, or StableHLO's attributes);
    `operands` holds each operand's (dtype, dims)."""
    inputs = node.inputs
    if opcode in ("reduce", "reduce-window"):
        node.inputs = inputs = inputs[: len(inputs) // 2]  # the reduced operands; their init values follow
    if opcode in ("broadcast", "convert") and inputs and not isinstance(inputs[0], str):
        out = node.outputs[0]
        node.op, node.attrs, node.inputs = "full", {**full_attrs(out.shape, inputs[0], out.dtype), **_provenance(node.attrs)}, []
    elif opcode == "reduce-window":
        return _reduce_window(node, operands[0][1], spec)
    elif opcode in ("gather", "scatter"):
        return _row_indexing(node, opcode, operands, spec)
    return [node]


def _spec_ints(spec: str, key: str) -> list[int] | None:
    """`key={1,2}`, `key = [1, 2]`, `key = array<i64: 1, 2>` or `key=2` in `spec`."""
    found = re.search(rf"\b{key}\s*=\s*(\{{[^}}]*\}}|\[[^\]]*\]|array<i64(?::[^>]*)?>|-?\d+)", spec)
    if found is None:
        return None
    return _int_list(found.group(1).replace("i64", ""))


def _row_indexing(node: Node, opcode: str, operands: list[tuple[str, tuple[int, ...]]], spec: str) -> list[Node]:
    """gather / scatter(add) along dim 0 as canonical `take` / `index_add` (attrs dim=0, indices
    without a trailing index-vector dim); any other form stays `unknown:`."""
    (_, operand), (index_dtype, indices) = operands[0], operands[1]
    vector_dim = _spec_ints(spec, "index_vector_dim")
    vector_dim = len(indices) if vector_dim is None else vector_dim[0]
    if opcode == "gather":
        rows = node.op == "take" and is_row_gather(
            operand, indices, _spec_ints(spec, "offset_dims") or [], _spec_ints(spec, "collapsed_slice_dims") or [],
            _spec_ints(spec, "start_index_map") or [], _spec_ints(spec, "slice_sizes") or [], vector_dim)
    else:
        rows = node.op == "index_add" and is_row_scatter_add(
            operand, indices, _spec_ints(spec, "update_window_dims") or [],
            _spec_ints(spec, "inserted_window_dims") or [], _spec_ints(spec, "scatter_dims_to_operand_dims") or [],
            vector_dim)
    if not rows:
        node.op = UNKNOWN_PREFIX + opcode
        return [node]
    node.attrs = {"dim": 0, **_provenance(node.attrs)}
    nodes = [node]
    if vector_dim < len(indices):
        index = TensorMeta(f"{node.outputs[0].name}.index", tuple(indices[:vector_dim]), index_dtype)
        nodes.insert(0, Node(f"{node.id}.index", "reshape", [node.inputs[1]], [index], {"shape": list(index.shape)},
                             native=node.native, scope=node.scope))
        node.inputs = [node.inputs[0], index.name, *node.inputs[2:]]
    out = node.outputs[0]
    rows = (*indices[:vector_dim], *operand[1:])
    if opcode == "gather" and out.shape != rows:  # XLA kept the size-1 row dim: gather rows, then reshape
        node.outputs = [TensorMeta(f"{out.name}.rows", rows, out.dtype)]
        nodes.append(Node(f"{node.id}.rows", "reshape", [node.outputs[0].name], [out], {"shape": list(out.shape)},
                          native=node.native, scope=node.scope))
    return nodes


def _reduce_window(node: Node, operand: tuple[int, ...], spec: str) -> list[Node]:
    """XLA's CPU backend splits reductions into reduce-window + reduce. A window that tiles the
    operand exactly (stride = size, no padding) is a reshape into (outer, window) pairs and a
    reduction over the window dims; any other window stays `unknown:reduce-window`."""
    window = re.search(r"size=([\dx]+)(?:\s+stride=([\dx]+))?", spec)
    sizes = [int(x) for x in window.group(1).split("x")] if window else (_spec_ints(spec, "window_dimensions") or [])
    strides = ([int(x) for x in window.group(2).split("x")] if window and window.group(2)
               else (_spec_ints(spec, "window_strides") or sizes))
    tiles = (len(sizes) == len(operand) and sizes == strides and "pad=" not in spec and "padding" not in spec
             and all(d % w == 0 for d, w in zip(operand, sizes)))
    if not tiles or node.op not in _REDUCE_BY_BODY.values():
        node.op = UNKNOWN_PREFIX + "reduce-window"
        return [node]
    split = [x for d, w in zip(operand, sizes) for x in (d // w, w)]
    value = TensorMeta(f"{node.outputs[0].name}.windows", tuple(split), node.outputs[0].dtype)
    reshape = Node(f"{node.id}.windows", "reshape", node.inputs, [value], {"shape": split},
                   native=node.native, scope=node.scope)
    node.inputs = [value.name]
    node.attrs = {"dims": list(range(1, len(split), 2)), "keepdim": False, **_provenance(node.attrs)}
    return [reshape, node]


# --- StableHLO ----------------------------------------------------------------------------


def stablehlo_to_graph(module, *, name: str, frontend: str = "jax", stage: str = "jax.stablehlo",
                       level: str = "composite") -> Graph:
    """A StableHLO `ir.Module` (e.g. `lowered.compiler_ir("stablehlo")`), from its `main` function."""
    funcs = {str(op.attributes["sym_name"]).strip('"'): op for op in module.body.operations
             if op.operation.name == "func.func"}
    if "main" not in funcs:
        raise ValueError("StableHLO module has no main function")
    reader = _MlirReader(funcs)
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


def _mlir_ints(attr) -> list[int]:
    return [int(x) for x in attr]


@dataclass
class _MlirReader:
    funcs: dict[str, Any]  # symbol name -> func.func op
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)

    calls: int = 0

    def walk(self, block, env: dict, scope: str) -> list[Arg]:
        """Emit a block's ops; returns the values its terminator returns. MLIR value names are
        per function, so values of an inlined call are prefixed with the call's scope."""
        for op in block.operations:
            op = op.operation
            args = [env[v.get_name()] for v in op.operands]
            if op.name in ("func.return", "stablehlo.return"):
                return args
            if op.name == "func.call":
                callee = str(op.attributes["callee"]).lstrip("@")
                body = self.funcs[callee].regions[0].blocks[0]
                inner = {a.get_name(): v for a, v in zip(body.arguments, args)}
                self.calls += 1
                inner_scope = f"{scope}/{callee}#{self.calls}" if scope else f"{callee}#{self.calls}"
                for res, val in zip(op.results, self.walk(body, inner, inner_scope)):
                    env[res.get_name()] = val
            elif op.name == "stablehlo.constant" and self.splat_scalar(op) is not None:
                env[op.results[0].get_name()] = self.splat_scalar(op)
            else:
                self.emit(op, args, env, scope)
        return []

    @staticmethod
    def splat_scalar(op) -> Arg:
        attr = op.attributes["value"]
        if not getattr(attr, "is_splat", False) or tuple(op.results[0].type.shape) != ():
            return None
        value = attr.get_splat_value()
        return getattr(value, "value", None)

    def emit(self, op, args: list, env: dict, scope: str) -> None:
        opcode = _stablehlo_opcode(op.name)
        attrs_in = {a: op.attributes[a] for a in op.attributes}
        direction = None
        if "comparison_direction" in attrs_in:
            direction = str(attrs_in["comparison_direction"]).split()[-1].rstrip(">")
        body = None
        if op.regions and op.regions[0].blocks:
            body_ops = [o.operation.name for o in op.regions[0].blocks[0].operations]
            body = _stablehlo_opcode(body_ops[0]) if body_ops else None
        canonical = _canonical(opcode, body, direction)
        node_id = f"s{len(self.nodes)}"
        outputs = []
        for res in op.results:
            value = f"{scope}{res.get_name()}" if scope else res.get_name()
            outputs.append(_mlir_meta(value, res.type))
            env[res.get_name()] = value
        node = Node(node_id, canonical, args, outputs, self.attrs(opcode, canonical, attrs_in, op, outputs),
                    native=op.name, scope=scope)
        spec = ", ".join(f"{k} = {v}" for k, v in attrs_in.items())
        operands = [(m.dtype, m.shape) for m in (_mlir_meta("", v.type) for v in op.operands)]
        self.nodes += map(conform, normalize(node, opcode, operands, spec))

    @staticmethod
    def attrs(opcode: str, op: str, a: dict, mlir_op, outputs: list[TensorMeta]) -> dict:
        out = outputs[0] if outputs else None
        if op in _REDUCE_BY_BODY.values() and "dimensions" in a:
            return {"dims": sorted(_mlir_ints(a["dimensions"])), "keepdim": False}
        if opcode == "broadcast":
            return {"shape": list(out.shape), "broadcast_dims": _mlir_ints(a["broadcast_dimensions"])}
        if op == "reshape":
            return {"shape": list(out.shape)}
        if op == "permute":
            return {"perm": _mlir_ints(a["permutation"])}
        if op == "concat":
            return {"dim": int(str(a["dimension"]).split(":")[0])}
        if op in ("convert", "iota"):
            extra = {"shape": list(out.shape), "dim": int(str(a["iota_dimension"]).split(":")[0])} if op == "iota" else {}
            return {**extra, "dtype": out.dtype}
        if op == "slice":
            return {"start": _mlir_ints(a["start_indices"]), "limit": _mlir_ints(a["limit_indices"]),
                    "step": _mlir_ints(a["strides"])}
        if opcode == "dot" and "dot_dimension_numbers" in a:
            dn = str(a["dot_dimension_numbers"])
            field_ = lambda key: _int_list(re.search(key + r"\s*=\s*\[([^\]]*)\]", dn).group(1)) if key in dn else []
            ranks = [len(v.type.shape) for v in mlir_op.operands]
            return matmul_attrs(*ranks, field_("lhs_contracting_dimensions"), field_("rhs_contracting_dimensions"),
                                field_("lhs_batching_dimensions"), field_("rhs_batching_dimensions"))
        if opcode == "pad":
            edges = zip(*(_mlir_ints(a[k]) for k in ("edge_padding_low", "edge_padding_high", "interior_padding")))
            return {"padding": [list(e) for e in edges]}
        if opcode == "custom-call":
            return {"target": str(a.get("call_target_name", "")).strip('"')}
        return {}


# opcodes whose every result element depends on operand elements at other positions, or on all of them
_READS_WHOLE = {"reduce", "dot", "convolution", "gather", "scatter", "sort", "reduce-window", "select-and-scatter",
                "custom-call", "fusion", "call", "while", "conditional", "concatenate", "pad", "broadcast", "iota",
                "reduce-precision", "rng", "cholesky", "triangular-solve", "fft", "all-reduce", "all-gather"}


def _demand(body: list[Instruction], root: Instruction) -> dict[str, float]:
    """Per instruction of a fused computation, the fraction of its value the computation needs,
    from the root (all of it) backwards: a slice needs its share of its operand; an op that maps
    elements one to one (elementwise, bitcast, copy, transpose, convert) passes its own fraction
    on; any other op needs all of its operands. Several users' needs add up, to at most all."""
    need = {root.name: 1.0}
    size = {i.name: math.prod(i.shapes[0][1]) if i.shapes else 1 for i in body}
    for ins in reversed(body):
        mine = min(need.get(ins.name, 0.0), 1.0)
        for o in ins.operands:
            if ins.opcode in ("slice", "dynamic-slice"):
                share = mine * size[ins.name] / max(size.get(o, 1), 1) if ins.operands[0] == o else 1.0
            elif ins.opcode == "tuple" or ins.opcode in _READS_WHOLE or size.get(o) != size[ins.name]:
                share = 1.0 if mine > 0 or ins.opcode == "tuple" else 0.0
            else:
                share = mine
            need[o] = need.get(o, 0.0) + share
    return {name: min(v, 1.0) for name, v in need.items()}


def _shape_bytes(shapes: list[tuple[str, tuple[int, ...]]]) -> int:
    return sum(math.prod(dims) * dtype_size(dtype) for dtype, dims in shapes)


def read_hlo(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo") -> HloView:
    """An optimized `HloModule` (e.g. `compiled.runtime_executable().hlo_modules()[0]`)."""
    text = module.to_string()
    entry = re.search(r"^ENTRY %?(\S+)", text, re.M)
    if entry is None:
        raise ValueError(f"HLO module {module.name} has no ENTRY computation")
    reader = _HloReader({c.name: c for c in module.computations()}, parse_stack_frames(text))
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


def hlo_to_graph(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo", level: str = "composite") -> Graph:
    graph = read_hlo(module, name=name, frontend=frontend, stage=stage).graph
    return at_level(graph, level)


def _custom_kind(ins: Instruction) -> str:
    if ins.opcode == "custom-call":
        return ins.attrs.get("custom_call_target", "").strip('"')
    found = re.search(r'"kind":"(\w+)"', ins.attrs.get("backend_config", ""))
    return found.group(1) if found else ""
