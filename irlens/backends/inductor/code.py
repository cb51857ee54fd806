"""Inductor's kernels mapped onto the common view of its post-grad graph.

Per compiled graph, Inductor's provenance tracking (`config.trace.provenance_tracking_level`)
records, for every kernel it emits, the post-grad FX nodes the kernel was generated from
(`torch._inductor.debug._inductor_triton_kernel_to_post_grad_node_info`, keyed
`<kernel>:<handle>`); the wrapper code marks each launch with the same key in a
`# [Provenance debug handles] <kernel>:<handle>` comment. Those two records, the generated
code and the post-grad graph are all this module needs; it does not read kernel bodies.

Bytes: each launch's own buffers (`read_launches`). The wrapper's `call()` is Python, read
with `ast`: graph inputs (sized by the post-grad graph's placeholders), buffers from their
`empty_strided_*` declarations, views from `reinterpret_tensor`, aliases from reuse lines. A
generated kernel's arguments are read or written as its own signature says: Triton's
`triton_meta["signature"]` and `inductor_meta["mutated_arg_names"]`, the C++ kernel's
parameter list (`in_ptr`/`out_ptr`/`in_out_ptr`, `const`); an extern kernel writes its `out=`;
an ATen fallback reads its tensor arguments, writes what its schema marks written, and its
results are sized by the post-grad node it was made for. Each buffer counts once per launch
(its distinct views, at most the buffer's size, where only views of it are used); an
in-place buffer is read and written.

Ownership: every node is covered by at most one kernel's `node_ids`. Library calls (extern
kernels, ATen fallbacks) own the nodes they were made for. A fused kernel that lists a
compute node a library call owns only moves that call's data (a layout copy of its inputs
or outputs) and does not cover it. Fused kernels own the remaining nodes in launch order;
a node an earlier kernel owns goes to the later kernel's `recompute` (a pointwise op
recomputed inside a consumer, a view re-indexed, one concat written piecewise by several
launches). A kernel with no compute node among either list is a `copy` kernel.
"""
from __future__ import annotations

import ast
import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Callable

from irlens.backends.inductor.accesses import touch_bounds
from irlens.core.ir import Graph, Kernel, TensorMeta, canonical_dtype, dtype_size
from irlens.core.ops import REDUCTION, category, is_compute

_HANDLE = re.compile(r"^\s*# \[Provenance debug handles\] (\S+)$", re.M)
_MATMULS = {"mm", "addmm", "bmm", "baddbmm", "_mm_plus_mm", "_int_mm", "convolution"}


@dataclass
class CompiledGraph:
    """One `compile_fx_inner` call: the post-grad graph, its wrapper code and provenance."""

    graph: Graph  # common view of the post-grad FX graph
    source_code: str  # Inductor's generated wrapper module (kernel definitions + call())
    provenance: dict[str, list[str]]  # "<kernel>:<handle>" -> post-grad FX node names
    backward: bool = False


def kernel_kind(name: str) -> str:
    """fused (cpp_fused_* / triton_*), matmul (extern GEMMs) or library (other ATen calls)."""
    if name.startswith(("cpp_fused", "triton_", "cpp_CppMicro")):
        return "fused"
    if name.startswith("extern_kernels.") and name.split(".", 1)[1] in _MATMULS:
        return "matmul"
    return "library"


def profiler_name(name: str) -> str:
    """The name a kernel's launch has in torch.profiler's events, of a kernel's name or an event's:
    the kernel itself for fused kernels (the device kernel on CUDA; on CPU the record function of
    `config.cpp.enable_kernel_profile`, less the `graph_<id>_` prefix the event's name carries),
    `aten::<op>` for extern kernels and ATen fallbacks."""
    name = re.sub(r"^graph_\d+_", "", name)
    if name.startswith("extern_kernels."):
        return "aten::" + name.split(".", 1)[1]
    m = re.match(r"(?:torch\.ops\.)?aten\.(\w+)", name)
    return f"aten::{m.group(1)}" if m else name


def launches(source_code: str) -> list[tuple[str, str]]:
    """(provenance key, launch statement) for each launch in the wrapper's call(), in order."""
    out = []
    for m in _HANDLE.finditer(source_code):
        end = source_code.find("\n", m.end() + 1)
        out.append((m.group(1), source_code[m.end() + 1:end].strip()))
    return out


def kernel_definition(source_code: str, name: str) -> str | None:
    """The `name = async_compile.cpp_pybinding(...)` / `.triton(...)` block that defines a kernel."""
    start = source_code.find(f"\n{name} = async_compile.")
    if start < 0:
        return None
    end = re.compile(r"^'''.*\)$", re.M).search(source_code, start)
    return source_code[start + 1:end.end() if end else len(source_code)]


def node_ids_of(graph: Graph, fx_names: list[str]) -> list[str]:
    """Common-view ids derived from FX nodes: the node `n` itself and its expansion `n.<k>`."""
    wanted = set(fx_names)
    return [n.id for n in graph.nodes if n.id.split(".", 1)[0] in wanted]


def map_kernels(compiled: CompiledGraph, backend: str = "inductor") -> list[Kernel]:
    """One Kernel per launch, with the common-view nodes it owns (see the module docstring)
    and the bytes of the buffers it reads and writes."""
    code, graph = compiled.source_code, compiled.graph
    line_of = {key: line for line, key in handle_lines(code).items()}
    ios = {io.line: io for io in read_launches(code, graph, fallback_outputs(compiled))}
    records = []
    for key, statement in launches(code) or [(k, "") for k in compiled.provenance]:
        name = key.rsplit(":", 1)[0]
        kind = kernel_kind(name)
        ids = node_ids_of(graph, compiled.provenance.get(key, []))
        source = kernel_definition(code, name) if kind == "fused" else statement
        record = Kernel(backend, name, kind, ids, stage=graph.stage, source=source or statement)
        io = _launch_io(ios, line_of.get(key), name)
        if io is not None:
            record.set_io(io.bytes_read, io.bytes_written)
        records.append(record)
    # launches the wrapper makes without a provenance record (a buffer zeroed before an atomic
    # reduction, say): no nodes, but a launch with its bytes all the same
    for io in ios.values():
        record = Kernel(backend, io.callee, "copy", [], stage=graph.stage, source=io.statement)
        record.set_io(io.bytes_read, io.bytes_written)
        records.append(record)

    compute = {n.id for n in graph.nodes if is_compute(n.op)}
    owner: dict[str, Kernel] = {}
    for k in records:  # library calls first: each owns what it was made for
        if k.kind != "fused":
            k.node_ids = [i for i in k.node_ids if owner.setdefault(i, k) is k]
    library_compute = {i for i in owner if i in compute}
    for k in records:
        if k.kind != "fused":
            continue
        ids = [i for i in k.node_ids if i not in library_compute]
        k.node_ids = [i for i in ids if owner.setdefault(i, k) is k]
        k.recompute = [i for i in ids if owner[i] is not k]
        if not any(i in compute for i in ids):
            k.kind = "copy"
    mark_combining_stages(records, graph)
    return records


def mark_combining_stages(records: list[Kernel], graph: Graph) -> None:
    """The second kernel of a split reduction owns no node, and lists the reduction the first
    one owns (with the pointwise nodes fused into it): it adds up the first kernel's partial
    results, so it `combines` that reduction and recomputes nothing."""
    reductions = {n.id for n in graph.nodes if category(n.op) == REDUCTION}
    owned = {i for k in records for i in k.node_ids}
    for k in records:
        combined = [i for i in k.recompute if i in reductions and i in owned]
        if k.kind == "fused" and not k.node_ids and combined:
            k.combines, k.recompute = combined, []


def _launch_io(ios: dict[int, "LaunchIO"], line: int | None, name: str) -> "LaunchIO | None":
    """The launch a provenance handle stands before, taken from `ios`: the statement right after
    it, or, where the wrapper puts other statements between (on CUDA, `stream0 =
    get_raw_stream(0)` before a Triton kernel's `.run`), the next launch of the same kernel."""
    if line is None:
        return None
    if line in ios:
        return ios.pop(line)
    after = sorted(at for at, io in ios.items() if at > line and io.callee == name)
    return ios.pop(after[0]) if after else None


# --- what each launch reads and writes ---------------------------------------------------------

@dataclass(frozen=True)
class Region:
    """A tensor a launch touches: a whole buffer (`view` None), or a view of one."""

    storage: str  # the buffer (graph input or allocation) the memory belongs to
    nbytes: int  # the bytes it spans: distinct elements x item size
    storage_nbytes: int  # the whole buffer's
    view: tuple | None = None  # (shape, stride, offset) of a reinterpret_tensor view


@dataclass
class LaunchIO:
    """One launch in the wrapper's call(): what it reads and writes."""

    line: int  # 1-based line of the call statement in the module
    callee: str  # the kernel, extern or op it calls
    statement: str
    reads: list[Region] = field(default_factory=list)
    writes: list[Region] = field(default_factory=list)
    known: bool = True  # False: an argument's or result's size could not be read

    @property
    def bytes_read(self) -> int | None:
        return region_bytes(self.reads) if self.known else None

    @property
    def bytes_written(self) -> int | None:
        return region_bytes(self.writes) if self.known else None


def region_bytes(regions: list[Region]) -> int:
    """Each buffer once: whole where it is used whole, else the sum of its distinct views, at
    most the buffer's size (q, k and v as three views of one qkv buffer are the whole of it)."""
    whole: dict[str, int] = {}
    views: dict[str, dict[tuple, Region]] = {}
    for r in regions:
        if r.view is None:
            whole[r.storage] = max(whole.get(r.storage, 0), r.nbytes)
        else:
            views.setdefault(r.storage, {})[r.view] = r
    total = sum(whole.values())
    for storage, vs in views.items():
        if storage not in whole:
            total += min(sum(v.nbytes for v in vs.values()), next(iter(vs.values())).storage_nbytes)
    return total


def _elements(shape, stride) -> int:
    """The distinct elements a strided tensor holds (a broadcast dim, stride 0, counts once)."""
    return math.prod(s for s, st in zip(shape, stride) if st != 0)


READ, WRITE, READ_WRITE = "r", "w", "rw"


def _access_of(param: str, pointer: bool, const: bool = False, mutated: frozenset = frozenset()) -> str | None:
    """How a generated kernel uses a parameter, by Inductor's naming (in_ptr, out_ptr, in_out_ptr)."""
    if not pointer or param.startswith("ws_ptr"):  # sizes, scalars; a workspace is scratch
        return None
    if param.startswith("in_out_ptr"):
        return READ_WRITE
    if const:
        return READ
    if param.startswith("out_ptr"):
        return WRITE
    return READ_WRITE if param in mutated else READ


def _module_assigns(tree: ast.Module) -> dict[str, ast.Call]:
    """Module-level `name = async_compile.<kind>(...)` definitions of the generated kernels."""
    found = {}
    for stmt in tree.body:
        if (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and isinstance(stmt.value, ast.Call) and isinstance(stmt.value.func, ast.Attribute)
                and isinstance(stmt.value.func.value, ast.Name) and stmt.value.func.value.id == "async_compile"):
            found[stmt.targets[0].id] = stmt.value
    return found


@dataclass(frozen=True)
class Param:
    """How a generated kernel uses one positional argument."""

    access: str | None  # READ, WRITE, READ_WRITE, or None for a non-tensor argument
    most_bytes: int | None = None  # the most of its buffer the kernel can touch (accesses.touch_bounds)


def kernel_params(definition: ast.Call) -> list[Param] | None:
    """Per positional argument of a generated kernel, how it uses it; None where the
    definition cannot be read."""
    kind = definition.func.attr
    try:
        if kind == "triton":
            return _triton_params(ast.literal_eval(definition.args[1]))
        if kind.startswith("cpp"):
            return _cpp_params(ast.literal_eval(definition.args[0]), ast.literal_eval(definition.args[1]))
    except (ValueError, IndexError, SyntaxError):
        return None
    return None


def _triton_params(source: str) -> list[Param] | None:
    """From the kernel's decorator: `triton_meta["signature"]` (name -> type, pointers `*fp32`)
    and `inductor_meta["mutated_arg_names"]`; from its body, how much of each buffer it can touch."""
    meta: dict[str, dict] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in ("triton_meta", "inductor_meta") and isinstance(kw.value, ast.Dict):
                    meta[kw.arg] = {ast.literal_eval(k): v for k, v in zip(kw.value.keys, kw.value.values)
                                    if isinstance(k, ast.Constant)}
    if "signature" not in meta.get("triton_meta", {}):
        return None
    signature = ast.literal_eval(meta["triton_meta"]["signature"])
    mutated_node = meta.get("inductor_meta", {}).get("mutated_arg_names")
    mutated = frozenset(ast.literal_eval(mutated_node)) if mutated_node is not None else frozenset()
    bounds = touch_bounds(source)
    params = []
    for name, ty in signature.items():
        if ty == "constexpr":
            continue
        pointer = str(ty).startswith("*")
        elements = bounds.get(str(name)) if pointer else None
        params.append(Param(_access_of(str(name), pointer, mutated=mutated),
                            None if elements is None else elements * dtype_size(canonical_dtype(str(ty)[1:]))))
    return params


_CPP_KERNEL = re.compile(r'extern\s+"C"[^(]*\bkernel\s*\(([^)]*)\)')


def _cpp_params(types: list[str], source: str) -> list[Param] | None:
    """From `cpp_pybinding([arg types], source)`: the types, and the names in the C++ signature."""
    found = _CPP_KERNEL.search(source)
    if found is None:
        return None
    names = [p.strip().split()[-1].lstrip("*") for p in found.group(1).split(",") if p.strip()]
    if len(names) != len(types):
        return None
    return [Param(_access_of(name, "*" in ty, const=ty.strip().startswith("const"))) for name, ty in zip(names, types)]


def handle_lines(source_code: str) -> dict[int, str]:
    """{line of a launch: its provenance key}: the statement right after each handle comment."""
    lines = source_code.splitlines()
    found = {}
    for i, line in enumerate(lines):
        m = _HANDLE.match(line)
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            found[j + 1] = m.group(1)
    return found


def fallback_outputs(compiled: CompiledGraph) -> Callable[[int, str], list[TensorMeta] | None]:
    """For an ATen fallback whose results the wrapper assigns (`buf3 = torch.ops.aten.x.default(...)`):
    the results of the post-grad node it was made for, found through the launch's provenance."""
    handles = handle_lines(compiled.source_code)
    graph = compiled.graph

    def outputs(line: int, callee: str) -> list[TensorMeta] | None:
        key = handles.get(line)
        if key is None:
            return None
        native = callee.removeprefix("torch.ops.")
        ids = set(node_ids_of(graph, compiled.provenance.get(key, [])))
        made_for = [n for n in graph.nodes if n.id in ids and n.native == native]
        return list(made_for[0].outputs) if len(made_for) == 1 else None

    return outputs


def _op_overload(callee: str):
    """The OpOverload `torch.ops.ns.op.overload` / `aten.op.overload` names, or None."""
    import torch

    parts = callee.removeprefix("torch.ops.").split(".")
    if len(parts) != 3:
        return None
    try:
        return getattr(getattr(getattr(torch.ops, parts[0]), parts[1]), parts[2])
    except AttributeError:
        return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


_IN_PLACE_METHODS = {"zero_": (WRITE,), "fill_": (WRITE,), "copy_": (WRITE, READ)}


class _WrapperReader:
    """Walks `call()` in order, keeping what each name holds, and records each launch's IO."""

    def __init__(self, tree: ast.Module, source: str, inputs: dict[str, TensorMeta],
                 fallback_outputs: Callable[[int, str], list[TensorMeta] | None]):
        self.lines = source.splitlines()
        self.kernels = {name: kernel_params(call) for name, call in _module_assigns(tree).items()}
        self.inputs = inputs
        self.fallback_outputs = fallback_outputs
        self.values: dict[str, Region | list[Region]] = {}
        self.dtypes: dict[str, str] = {}  # storage -> its dtype
        self.launches: list[LaunchIO] = []

    # what an expression refers to
    def region(self, node: ast.AST) -> Region | None:
        if isinstance(node, ast.Name):
            value = self.values.get(node.id)
            return value if isinstance(value, Region) else None
        if isinstance(node, ast.Call) and _dotted(node.func) == "reinterpret_tensor" and len(node.args) >= 4:
            base = self.region(node.args[0])
            try:
                shape, stride, offset = (ast.literal_eval(a) for a in node.args[1:4])
            except ValueError:
                return None
            if base is None:
                return None
            itemsize = dtype_size(self.dtypes[base.storage])
            return Region(base.storage, _elements(shape, stride) * itemsize, base.storage_nbytes,
                          (tuple(shape), tuple(stride), offset))
        return None

    def allocate(self, name: str, shape, stride, dtype: str) -> Region:
        nbytes = _elements(shape, stride) * dtype_size(dtype)
        self.dtypes[name] = dtype
        return Region(name, nbytes, nbytes)

    def walk(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, ast.With):
                self.walk(stmt.body)
            elif isinstance(stmt, ast.Assign):
                self.assign(stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.launch(stmt, stmt.value, None)

    def assign(self, stmt: ast.Assign) -> None:
        target, value = stmt.targets[0], stmt.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Name) and value.id == "args":
            for elt in target.elts:  # the graph's inputs
                meta = self.inputs.get(getattr(elt, "id", ""))
                if meta is not None:
                    self.dtypes[meta.name] = meta.dtype
                    self.values[meta.name] = Region(meta.name, meta.nbytes, meta.nbytes)
            return
        if not isinstance(target, ast.Name):
            return
        name = target.id
        if isinstance(value, ast.Name):  # `buf2 = buf1  # reuse`
            if value.id in self.values:
                self.values[name] = self.values[value.id]
            return
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):  # `buf1 = buf0[0]`
            results = self.values.get(value.value.id)
            try:
                index = ast.literal_eval(value.slice)
            except ValueError:
                return
            if isinstance(results, list) and isinstance(index, int) and index < len(results):
                self.values[name] = results[index]
            return
        if not isinstance(value, ast.Call):
            return
        callee = _dotted(value.func)
        if callee.startswith("empty_strided"):
            try:
                shape, stride = ast.literal_eval(value.args[0]), ast.literal_eval(value.args[1])
            except (ValueError, IndexError):
                return
            self.values[name] = self.allocate(name, shape, stride, canonical_dtype(_dotted(value.args[2])))
        elif callee == "reinterpret_tensor":  # a buffer reused with another layout
            region = self.region(value)
            if region is not None:
                self.values[name] = region
        elif callee == "copy_misaligned" and value.args and isinstance(value.args[0], ast.Name):
            if value.args[0].id in self.values:
                self.values[name] = self.values[value.args[0].id]
        else:
            self.launch(stmt, value, name)

    def launch(self, stmt: ast.stmt, call: ast.Call, result: str | None) -> None:
        callee = _dotted(call.func)
        io = LaunchIO(stmt.lineno, callee, "\n".join(self.lines[stmt.lineno - 1: stmt.end_lineno]).strip())
        kernel = callee.removesuffix(".run")
        if kernel in self.kernels:  # a generated kernel: its signature says what it reads and writes
            io.callee = kernel
            params = self.kernels[kernel]
            if params is None or len(call.args) > len(params):
                io.known = False
            else:
                for arg, param in zip(call.args, params):
                    self.touch(io, arg, param.access, param.most_bytes)
        elif callee.startswith("extern_kernels."):
            for arg in call.args:
                self.touch(io, arg, READ)
            for kw in call.keywords:
                self.touch(io, kw.value, WRITE if kw.arg == "out" else READ)
            io.known = io.known and result is None  # a result it returns is not sized here
        elif callee.startswith(("torch.ops.", "aten.")):
            self.fallback(io, call, callee, result)
        elif isinstance(call.func, ast.Attribute) and call.func.attr in _IN_PLACE_METHODS:
            io.callee = f"aten.{call.func.attr}"
            accesses = _IN_PLACE_METHODS[call.func.attr]
            for arg, access in zip([call.func.value, *call.args], accesses):
                self.touch(io, arg, access)
        else:
            return  # not a launch: streams, devices, guards
        self.launches.append(io)

    def fallback(self, io: LaunchIO, call: ast.Call, callee: str, result: str | None) -> None:
        op = _op_overload(callee)
        schema = op._schema.arguments if op is not None else []
        written = {a.name for a in schema if a.alias_info is not None and a.alias_info.is_write}
        for i, arg in enumerate(call.args):
            self.touch(io, arg, READ_WRITE if i < len(schema) and schema[i].name in written else READ)
        for kw in call.keywords:
            self.touch(io, kw.value, WRITE if kw.arg == "out" else READ_WRITE if kw.arg in written else READ)
        if result is not None:
            outputs = self.fallback_outputs(io.line, callee)
            if outputs is None:
                io.known = False
                return
            regions = [Region(f"{result}[{i}]", m.nbytes, m.nbytes) for i, m in enumerate(outputs)]
            for region, meta in zip(regions, outputs):
                self.dtypes[region.storage] = meta.dtype
            io.writes += regions
            self.values[result] = regions if len(regions) > 1 or _returns_tuple(op) else regions[0]

    def touch(self, io: LaunchIO, arg: ast.AST, access: str | None, most_bytes: int | None = None) -> None:
        if access is None:
            return
        region = self.region(arg)
        if region is None:
            if isinstance(arg, (ast.Name, ast.Call)) and not _scalar_name(arg):
                io.known = False  # a tensor whose size is not known here
            return
        if most_bytes is not None and most_bytes < region.nbytes:  # a scatter, a gather of a few rows
            region = dataclasses.replace(region, nbytes=most_bytes)
        if access in (READ, READ_WRITE):
            io.reads.append(region)
        if access in (WRITE, READ_WRITE):
            io.writes.append(region)


def _returns_tuple(op) -> bool:
    return op is not None and len(op._schema.returns) > 1


def _scalar_name(arg: ast.AST) -> bool:
    """Names of sizes and streams the wrapper passes along (s0, ks0, stream0, raw_stream0)."""
    return isinstance(arg, ast.Name) and re.fullmatch(r"(?:raw_)?stream\d+|k?s\d+|u\d+", arg.id) is not None


def read_launches(source_code: str, graph: Graph,
                  fallback_outputs: Callable[[int, str], list[TensorMeta] | None] = lambda line, callee: None
                  ) -> list[LaunchIO]:
    """Every launch in the wrapper's call(), in order, with the buffers it reads and writes;
    [] where the module cannot be read (its kernels then have no byte counts)."""
    try:
        tree = ast.parse(source_code)
    except SyntaxError:
        return []
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef) and node.name == "call"]
    if not calls:
        return []
    reader = _WrapperReader(tree, source_code, {t.name: t for t in graph.inputs}, fallback_outputs)
    reader.walk(calls[0].body)
    return reader.launches
