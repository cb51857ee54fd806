"""The common view: one small graph IR that every frontend's native IR is normalized into.

A `Graph` is a list of `Node`s in topological order. Values are named: each node output is
a `TensorMeta` whose `name` other nodes list in their `inputs`. A node input is either such
a value name (a `str`) or a scalar literal (int, float, bool); every other argument (dims,
shapes, flags) lives in `attrs`, keyed by the canonical names documented in `irlens.core.ops`.

A control-flow node (a `while` loop, a `cond`) holds the graphs it runs in `Node.subgraphs`
(a loop's `cond` and `body`, a conditional's `branch<k>`), each a closed `Graph` of its own:
its inputs are the node's operands (a conditional's after its index), its value names its own
(they may repeat the enclosing graph's: a StableHLO branch's inputs keep the MLIR names of the
values its region captures; no value crosses the boundary but through operands and results). Counting unknown ops walks into them
(`Graph.all_nodes`), and a node whose subgraphs hold an unknown op is itself unknown
(`irlens.core.ops.conform`).

`level` is `composite` (ops as written: gelu, layer_norm, sdpa, linear) or `primitive`
(only elementwise, reduction, matmul, data-movement and collective ops; see
`irlens.core.decompose`). Ops the adapters do not know are kept as
`unknown:<native name>` so a graph never silently loses a node.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any, Union

from irlens.wording import plural

LEVELS = ("composite", "primitive")
UNKNOWN_PREFIX = "unknown:"

Arg = Union[str, int, float, bool, None]


@dataclass(frozen=True)
class TensorMeta:
    name: str
    shape: tuple[int, ...]
    dtype: str  # canonical dtype name: float32, bfloat16, float16, float64, int64, int32, bool

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.numel * dtype_size(self.dtype)

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype}

    @classmethod
    def from_json(cls, d: dict) -> "TensorMeta":
        return cls(d["name"], tuple(d["shape"]), d["dtype"])

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.shape))}]"


@dataclass
class Node:
    id: str
    op: str  # canonical op name, or "unknown:<native>"
    inputs: list[Arg]
    outputs: list[TensorMeta]
    attrs: dict[str, Any] = field(default_factory=dict)
    native: str = ""  # the frontend's own name: aten.mul.Tensor, prims.mul, integer_pow
    scope: str = ""  # where it came from: module path, composite parent id, fusion name
    subgraphs: dict[str, "Graph"] = field(default_factory=dict)  # control flow: the graphs it runs, by role

    @property
    def is_unknown(self) -> bool:
        return self.op.startswith(UNKNOWN_PREFIX)

    def value_inputs(self) -> list[str]:
        return [a for a in self.inputs if isinstance(a, str)]

    def to_json(self) -> dict:
        d = {
            "id": self.id,
            "op": self.op,
            "native": self.native,
            "inputs": list(self.inputs),
            "outputs": [{"name": o.name, "shape": list(o.shape), "dtype": o.dtype} for o in self.outputs],
            "attrs": jsonable(self.attrs),
            "scope": self.scope,
        }
        if self.subgraphs:
            d["subgraphs"] = {k: g.to_json() for k, g in self.subgraphs.items()}
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Node":
        return cls(
            id=d["id"],
            op=d["op"],
            inputs=list(d["inputs"]),
            outputs=[TensorMeta.from_json(o) for o in d["outputs"]],
            attrs=dict(d.get("attrs", {})),
            native=d.get("native", ""),
            scope=d.get("scope", ""),
            subgraphs={k: Graph.from_json(g) for k, g in d.get("subgraphs", {}).items()},
        )


@dataclass
class Graph:
    name: str  # workload name
    frontend: str
    stage: str  # dynamo.fx, aot.forward, thunder.trace[0], jax.jaxpr, ...
    level: str  # composite | primitive
    inputs: list[TensorMeta]
    nodes: list[Node]
    outputs: list[Arg]  # value names (or literals) the graph returns
    # an in-place update of a graph input, which the caller sees (a BatchNorm's running statistics
    # and counter): output value -> the input it is the new value of. These outputs come last.
    updates: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, got {self.level!r}")

    # --- queries -------------------------------------------------------------
    def node(self, node_id: str) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def values(self) -> dict[str, TensorMeta]:
        """Every named value: graph inputs and node outputs."""
        vals = {t.name: t for t in self.inputs}
        for n in self.nodes:
            for o in n.outputs:
                vals[o.name] = o
        return vals

    def producers(self) -> dict[str, Node]:
        return {o.name: n for n in self.nodes for o in n.outputs}

    def op_counts(self) -> Counter:
        return Counter(n.op for n in self.nodes)

    def all_nodes(self):
        """Every node, those of the subgraphs it holds (a loop's cond and body) after their node."""
        for n in self.nodes:
            yield n
            for g in n.subgraphs.values():
                yield from g.all_nodes()

    def unknown_ops(self) -> Counter:
        """Unknown ops, those inside subgraphs included: an op unknown in a loop body counts."""
        return Counter(n.op for n in self.all_nodes() if n.is_unknown)

    def compute_op_counts(self) -> Counter:
        """Ops that do arithmetic (elementwise, reduction, matmul, composite), not data movement."""
        from irlens.core.ops import is_compute

        return Counter(n.op for n in self.nodes if is_compute(n.op))

    # --- serialization -----------------------------------------------------------
    def to_json(self) -> dict:
        return {
            "name": self.name,
            "frontend": self.frontend,
            "stage": self.stage,
            "level": self.level,
            "inputs": [t.to_json() for t in self.inputs],
            "nodes": [n.to_json() for n in self.nodes],
            "outputs": list(self.outputs),
            **({"updates": dict(self.updates)} if self.updates else {}),
            "unknown_ops": dict(self.unknown_ops()),
        }

    def _body_lines(self, head: str, indent: str) -> list[str]:
        """The graph's lines under `head`; a node's subgraphs follow it, indented, as `role(...) { }`."""
        params = ", ".join(f"{t.name}: {t}" for t in self.inputs)
        lines = [f"{indent}{head} ({params}) {{"]
        for n in self.nodes:
            outs = ", ".join(f"{o.name}: {o}" for o in n.outputs) or "()"
            args = [_fmt_arg(a) for a in n.inputs] + [f"{k}={_fmt_attr(v)}" for k, v in n.attrs.items()]
            tail = []
            if n.native and n.native != n.op:
                tail.append(n.native)
            if n.scope:
                tail.append(f"in {n.scope}")
            comment = f"  # {'; '.join(tail)}" if tail else ""
            lines.append(f"{indent}  {outs} = {n.op}({', '.join(args)}){comment}")
            for role, g in n.subgraphs.items():
                lines += g._body_lines(role, indent + "    ")
        lines.append(f"{indent}  return {', '.join(_fmt_arg(o) for o in self.outputs)}")
        lines += [f"{indent}  # {value} is the new value of input {name} (updated in place)"
                  for value, name in self.updates.items()]
        lines.append(f"{indent}}}")
        return lines

    @classmethod
    def from_json(cls, d: dict) -> "Graph":
        return cls(
            name=d["name"],
            frontend=d["frontend"],
            stage=d["stage"],
            level=d["level"],
            inputs=[TensorMeta.from_json(t) for t in d["inputs"]],
            nodes=[Node.from_json(n) for n in d["nodes"]],
            outputs=list(d["outputs"]),
            updates=dict(d.get("updates", {})),
        )

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)

    def to_text(self) -> str:
        """The form a person reads: one line per node, value names, types and the native op."""
        lines = self._body_lines(f"graph {self.name} [{self.frontend} {self.stage}, {self.level}]", "")
        counts = self.op_counts()
        lines.append(f"# {plural(len(self.nodes), 'node')}: " + ", ".join(f"{op} {c}" for op, c in sorted(counts.items())))
        unknown = self.unknown_ops()
        if unknown:
            lines.append(f"# {sum(unknown.values())} unknown: " + ", ".join(f"{op} {c}" for op, c in sorted(unknown.items())))
        return "\n".join(lines)


@dataclass
class Kernel:
    """One thing a backend launched (a fused kernel, a library call) and the nodes it covers."""

    backend: str
    name: str
    kind: str  # fused | matmul | library | extern | copy | reduction | ...
    node_ids: list[str]
    stage: str = ""  # the common-view graph (stage name) the node ids refer to
    time_us: float | None = None
    bytes: int | None = None  # bytes_read + bytes_written: the buffers the kernel itself reads and writes
    flops: int | None = None
    recompute: list[str] = field(default_factory=list)  # node ids it recomputes (already covered elsewhere)
    source: str = ""  # generated code (Triton, C++, CUDA, HLO) where the backend exposes it
    bytes_read: int | None = None  # each buffer (or view of one) it reads, counted once
    bytes_written: int | None = None  # each one it writes (an in-place buffer is read and written)
    # reductions whose partial results it adds up (the second kernel of a split reduction): it
    # reads the first kernel's partials, not the reduction's input, and recomputes nothing
    combines: list[str] = field(default_factory=list)
    # the exact part of `flops`: its matrix products' 2·m·n·k (the rest is an estimate: irlens.core.cost);
    # None where not counted apart (documents written before)
    matmul_flops: int | None = None

    def set_io(self, read: int | None, written: int | None) -> None:
        """Set the bytes from what the kernel reads and writes (None: not known)."""
        self.bytes_read, self.bytes_written = read, written
        self.bytes = None if read is None or written is None else read + written

    def to_json(self, with_source: bool = False) -> dict:
        # its fields are numbers, strings and lists of node ids: copied shallow (asdict's deep copy of
        # every value took most of writing a zoo document)
        d = {f.name: list(v) if isinstance(v, list) else v
             for f in fields(self) for v in (getattr(self, f.name),)}
        d["nodes"] = d.pop("node_ids")
        if not with_source:
            d.pop("source")
        return d


# --- helpers -----------------------------------------------------------------------

_DTYPE_SIZES = {
    "float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1, "complex64": 8,
}


def dtype_size(dtype: str) -> int:
    return _DTYPE_SIZES.get(dtype, 4)


_DTYPE_ALIASES = {
    "f64": "float64", "f32": "float32", "f16": "float16", "bf16": "bfloat16",
    "i64": "int64", "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "b8": "bool",
    "s64": "int64", "s32": "int32", "s16": "int16", "s8": "int8", "pred": "bool", "i1": "bool", "i16": "int16",
    "u64": "uint64", "u32": "uint32", "u16": "uint16", "ui64": "uint64", "ui32": "uint32", "ui16": "uint16",
    "ui8": "uint8", "c64": "complex64", "c128": "complex128", "complex<f32>": "complex64", "complex<f64>": "complex128",
    "double": "float64", "float": "float32", "half": "float16", "long": "int64", "int": "int32",
}


def canonical_dtype(dtype: Any) -> str:
    """torch.float32, jnp.float32, 'f32', thunder's dtypes.float32 ... -> 'float32'."""
    s = str(dtype)
    for prefix in ("torch.", "dtypes.", "thunder.dtypes."):
        if s.startswith(prefix):
            s = s[len(prefix):]
    s = s.rstrip("_")  # thunder's strong dtypes print as float32_
    return _DTYPE_ALIASES.get(s, s)


def _fmt_arg(a: Arg) -> str:
    if isinstance(a, str):
        return a
    if a is None or isinstance(a, (bool, int, float, complex, list, tuple)):
        return repr(a)
    # an opaque object the graph passes on (the joint graph's process group, saved for the
    # backward): its class, not its address
    return f"<{(getattr(a, 'script_class_name', None) or type(a).__name__).rsplit('.', 1)[-1]}>"


def _fmt_attr(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(map(str, v)) + "]"
    return str(v)


def jsonable(v: Any, finite: bool = False) -> Any:
    """Plain JSON values: dicts, lists, numbers, strings; any other object becomes its str. With
    `finite`, NaN and Inf become null too (strict JSON, as results documents are written; a
    row's reason says why a number is missing)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x, finite) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x, finite) for x in v]
    if isinstance(v, float) and finite and not math.isfinite(v):
        return None
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)
