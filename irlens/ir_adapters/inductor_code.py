"""Inductor's kernels mapped onto the common view of its post-grad graph.

Per compiled graph, Inductor's provenance tracking (`config.trace.provenance_tracking_level`)
records, for every kernel it emits, the post-grad FX nodes the kernel was generated from
(`torch._inductor.debug._inductor_triton_kernel_to_post_grad_node_info`, keyed
`<kernel>:<handle>`); the wrapper code marks each launch with the same key in a
`# [Provenance debug handles] <kernel>:<handle>` comment. Those two records, the generated
code and the post-grad graph are all this module needs; it does not read kernel bodies.

Ownership: every node is covered by at most one kernel's `node_ids`. Library calls (extern
kernels, ATen fallbacks) own the nodes they were made for. A fused kernel that lists a
compute node a library call owns only moves that call's data (a layout copy of its inputs
or outputs) and does not cover it. Fused kernels own the remaining nodes in launch order;
a node an earlier kernel owns goes to the later kernel's `recompute` (a pointwise op
recomputed inside a consumer, a view re-indexed, one concat written piecewise by several
launches). A kernel with no compute node among either list is a `copy` kernel.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from irlens.ir import Graph, Kernel
from irlens.ops import is_compute

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
    """The name a kernel's launch has in torch.profiler's events: the kernel itself for fused
    kernels (the device kernel on CUDA; on CPU the record function of
    `config.cpp.enable_kernel_profile`, less its `graph_<id>_` prefix), `aten::<op>` for
    extern kernels and ATen fallbacks."""
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
    """One Kernel per launch, with the common-view nodes it owns (see the module docstring)."""
    code, graph = compiled.source_code, compiled.graph
    records = []
    for key, statement in launches(code) or [(k, "") for k in compiled.provenance]:
        name = key.rsplit(":", 1)[0]
        kind = kernel_kind(name)
        ids = node_ids_of(graph, compiled.provenance.get(key, []))
        source = kernel_definition(code, name) if kind == "fused" else statement
        records.append(Kernel(backend, name, kind, ids, stage=graph.stage, source=source or statement))

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
    return records
