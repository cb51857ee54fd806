"""`irlens explain`: what one kernel of one backend does, in terms of the common view.

A kernel covers common-view nodes (Kernel.node_ids, plus the nodes it recomputes). From the
graph's dataflow alone:
  reads       values produced outside the kernel (or graph inputs) that a node inside consumes;
  writes      values its own nodes produce that a node outside consumes, or that the graph returns;
  internal    values produced inside, consumed inside and not written: they never reach memory
              (a value the kernel recomputes counts here: the kernel that owns its node writes it);
  reductions  the reduction ops inside (sum, amax, ... with their dims), composites that
              reduce (softmax, layer_norm, ...) and matmuls (the contracted dimension).
Beside that, the kernel's generated source (Triton, C++, CUDA or HLO) as the backend gave it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from irlens.backends import Backend
from irlens.errors import UsageError
from irlens.core.ir import Graph, Kernel, Node, TensorMeta
from irlens.matrix.spec import ENTRY, CellSpec
from irlens.core.ops import REDUCTION, category
from irlens.workloads.workload import Workload
from irlens.wording import plural

# Composite ops that reduce inside: the dim attribute they reduce over.
REDUCING_COMPOSITES = {"softmax": "dim", "log_softmax": "dim", "mean": "dims", "var": "dims",
                       "layer_norm": "normalized_ndim", "rms_norm": "normalized_ndim",
                       "softmax_backward": "dim", "log_softmax_backward": "dim", "layer_norm_backward": "normalized_ndim"}


class UnknownKernel(UsageError):
    """A --kernel that names no kernel of the run; the message lists them."""


@dataclass
class KernelExplanation:
    kernel: Kernel
    index: int
    graph: Graph | None
    nodes: list[Node] = field(default_factory=list)  # the fused ops, graph order
    recomputed: list[Node] = field(default_factory=list)
    reads: list[TensorMeta] = field(default_factory=list)
    writes: list[TensorMeta] = field(default_factory=list)
    internal: list[TensorMeta] = field(default_factory=list)
    reductions: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # node ids the record names but the graph lacks


def explain_kernel(kernel: Kernel, graph: Graph | None, index: int = 0) -> KernelExplanation:
    expl = KernelExplanation(kernel, index, graph)
    if graph is None:
        return expl
    ids = {n.id for n in graph.nodes}
    expl.missing = [i for i in [*kernel.node_ids, *kernel.recompute] if i not in ids]
    own, again = set(kernel.node_ids), set(kernel.recompute)
    expl.nodes = [n for n in graph.nodes if n.id in own]
    expl.recomputed = [n for n in graph.nodes if n.id in again and n.id not in own]
    inside = expl.nodes + expl.recomputed
    inside_ids = {n.id for n in inside}
    values = graph.values()
    produced = {o.name: o for n in inside for o in n.outputs}
    used_outside = {v for n in graph.nodes if n.id not in inside_ids for v in n.value_inputs()}
    used_inside = {v for n in inside for v in n.value_inputs()}
    returned = {o for o in graph.outputs if isinstance(o, str)}
    expl.reads = [values[v] for v in dict.fromkeys(v for n in inside for v in n.value_inputs())
                  if v not in produced and v in values]
    # A recomputed value is written (if at all) by the kernel that owns its node, not by this one.
    own_values = {o.name for n in expl.nodes for o in n.outputs}
    expl.writes = [m for v, m in produced.items() if v in own_values and (v in used_outside or v in returned)]
    written = {m.name for m in expl.writes}
    expl.internal = [m for v, m in produced.items() if v in used_inside and v not in written]
    expl.reductions = [r for n in inside if (r := describe_reduction(n, values))]
    return expl


def describe_reduction(node: Node, values: dict[str, TensorMeta]) -> str:
    """One line for a node that reduces; "" for one that does not."""
    ins = [values[v] for v in node.value_inputs() if v in values]
    src = f"{ins[0]}" if ins else "?"
    dst = f"{node.outputs[0]}" if node.outputs else "?"
    if category(node.op) == REDUCTION:
        dims = node.attrs.get("dims", node.attrs.get("dim"))
        keep = ", keepdim" if node.attrs.get("keepdim") else ""
        return f"{node.id}: {node.op} over dims {dims} of {src} -> {dst}{keep}"
    if node.op in REDUCING_COMPOSITES:
        key = REDUCING_COMPOSITES[node.op]
        return f"{node.id}: {node.op} reduces over {key}={node.attrs.get(key)} of {src} -> {dst}"
    if node.op == "matmul" and len(ins) >= 2 and ins[0].shape:
        lhs_dims = (node.attrs.get("contract") or [[len(ins[0].shape) - 1]])[0]
        sizes = " x ".join(str(ins[0].shape[d]) for d in lhs_dims if d < len(ins[0].shape))
        noun = "a dimension" if len(lhs_dims) == 1 else "dimensions"
        return f"{node.id}: matmul {ins[0]} @ {ins[1]} contracts {noun} of size {sizes} -> {dst}"
    return ""


def source_language(kernel: Kernel) -> str:
    src = kernel.source
    if "@triton.jit" in src or "tl.program_id" in src:
        return "Triton"
    if "__global__" in src:
        return "CUDA"
    if "HloModule" in src or "ENTRY" in src or " fusion(" in src or "fused_computation" in src:
        return "HLO"
    if "#include" in src or 'extern "C"' in src or "for(" in src:
        return "C++"
    return "source"


# --- text ---------------------------------------------------------------------------------------

def _bytes(n: int) -> str:
    return f"{n:,} B"


def _count(items: list, noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def _tensor_lines(metas: list[TensorMeta], producers: dict[str, Node], note) -> list[str]:
    width = max((len(m.name) for m in metas), default=0)
    return [f"  {m.name:<{width}}  {str(m):<22} {_bytes(m.nbytes):>12}  {note(m, producers.get(m.name))}" for m in metas]


METADATA_ATTRS = ("op_name", "source")  # provenance an adapter keeps (XLA's op_name metadata): shown as a comment


def node_line(node: Node) -> str:
    outs = ", ".join(f"{o.name}: {o}" for o in node.outputs)
    args = ", ".join(a if isinstance(a, str) else repr(a) for a in node.inputs)
    attrs = "".join(f", {k}={v}" for k, v in node.attrs.items() if k not in METADATA_ATTRS)
    comment = [node.native] if node.native and node.native != node.op else []
    comment += [str(node.attrs[k]) for k in METADATA_ATTRS if node.attrs.get(k)]
    return f"  {outs} = {node.op}({args}{attrs})" + (f"   # {' · '.join(comment)}" if comment else "")


def format_explanation(expl: KernelExplanation, context: str = "") -> str:
    k, g = expl.kernel, expl.graph
    head = f"kernel k{expl.index} {k.name} ({k.kind or 'kernel'}) · {k.backend}" + (f" · {context}" if context else "")
    lines = [head, "=" * len(head)]
    facts = [f"stage {k.stage or (g.stage if g else '?')}"]
    facts += [f"{label} {value}" for label, value in (("time", f"{k.time_us:.2f} µs" if k.time_us else None),
                                                     ("bytes (backend)", _bytes(k.bytes) if k.bytes else None)) if value]
    lines.append(" · ".join(facts))
    if g is None:
        lines += ["", "(no common-view graph for this kernel: nothing to annotate)"]
    else:
        producers = g.producers()
        returned = {o for o in g.outputs if isinstance(o, str)}
        lines += ["", f"fuses {_count(expl.nodes, 'common-view op')}: {', '.join(n.op for n in expl.nodes) or '-'}"]
        lines += [node_line(n) for n in expl.nodes]
        if expl.recomputed:
            lines += ["", f"recomputes {plural(len(expl.recomputed), 'op')} also computed elsewhere:"]
            lines += [node_line(n) for n in expl.recomputed]
        lines += ["", f"reads {_count(expl.reads, 'tensor')}, {_bytes(sum(m.nbytes for m in expl.reads))}:"]
        lines += _tensor_lines(expl.reads, producers,
                               lambda m, p: f"from {p.op} ({p.id}) outside the kernel" if p else "graph input")
        lines += ["", f"writes {_count(expl.writes, 'tensor')}, {_bytes(sum(m.nbytes for m in expl.writes))}:"]
        lines += _tensor_lines(expl.writes, producers,
                               lambda m, p: f"{p.op} ({p.id})" + (", returned" if m.name in returned else ", read by a later op"))
        lines += ["", "reduces:" if expl.reductions else "reduces: no (purely elementwise / data movement)"]
        lines += [f"  {r}" for r in expl.reductions]
        lines += ["", f"never reach memory: {_count(expl.internal, 'intermediate')}, "
                      f"{_bytes(sum(m.nbytes for m in expl.internal))}, that no op outside the kernel reads "
                      f"(no buffer is needed; a backend may still spill small ones, see the source):"]
        lines += _tensor_lines(expl.internal, producers, lambda m, p: f"{p.op} ({p.id}), produced and consumed inside")
        if not expl.internal:
            lines.append("  (none)")
        if expl.missing:
            lines += ["", f"note: the record names nodes not in {g.stage}: {', '.join(expl.missing)}"]
    lines += [""]
    if k.source:
        lines += [f"generated source ({source_language(k)}):", "-" * 40, k.source.rstrip(), "-" * 40]
    else:
        lines.append(f"generated source: {k.backend} exposes none for this kernel")
    return "\n".join(lines)


def format_kernel_list(kernels: list[Kernel], graphs: dict[str, Graph]) -> str:
    from irlens.reporting.build import op_summary
    from irlens.reporting.records import kernel_stage

    lines = []
    for i, k in enumerate(kernels):
        stage = kernel_stage(k, graphs)
        lines.append(f"  k{i:<3} {k.name:<36} {k.kind:<10} {op_summary(k, graphs.get(stage) if stage else None)}")
    return "\n".join(lines)


def find_kernel(kernels: list[Kernel], key: str | int) -> int:
    """The index of the kernel named `key`, or at index `key` (3 or k3); raises UnknownKernel."""
    text = str(key)
    for i, k in enumerate(kernels):
        if k.name == text:
            return i
    digits = text[1:] if text[:1] == "k" else text
    if digits.isdigit() and int(digits) < len(kernels):
        return int(digits)
    names = ", ".join(f"k{i} {k.name}" for i, k in enumerate(kernels)) or "none"
    raise UnknownKernel(f"no kernel {text!r}; this run has {len(kernels)}: {names}")


# --- the run: in a worker, as a compare cell runs -------------------------------------------------

@dataclass
class ExplainedRun:
    """What `explain_run` reads of a backend's run (a BackendRun has the same fields)."""

    kernels: list[Kernel]
    graphs: list[Graph]
    unmapped: str | None
    run_us: float
    threads: int


def backend_run_record(spec: CellSpec, wl: Workload, backend: Backend) -> dict:
    """(a worker: irlens.cell_entry's `explain`) One run of the cell, as JSON: its kernels with their source."""
    import torch

    from irlens.matrix.backend_run import run_backend

    run = run_backend(backend, wl.instantiate(spec.preset, spec.dtype, spec.device), spec.mode)
    return {"kernels": [k.to_json(with_source=True) for k in run.kernels], "graphs": [g.to_json() for g in run.graphs],
            "unmapped": run.unmapped, "run_us": run.run_us, "threads": torch.get_num_threads()}


def run_as_compare_does(spec: CellSpec) -> ExplainedRun:
    """The cell's run (within `spec.timeout_s`) in a worker process whose thread pools are sized as
    `irlens compare --jobs 1` sizes its workers' (`isolation.worker_threads`): so a kernel's time here
    is the one compare and its report give, not a reading of this process's pools fighting over the cores."""
    from irlens.runtime.isolation import worker_threads
    from irlens.runtime.pool import WorkerPool
    from irlens.matrix.records import KernelRecord

    with WorkerPool(1, ("irlens.cell_entry", "irlens.backends", "irlens.workloads.builtin"),
                    threads=worker_threads(2)) as worker:
        record = worker.call(ENTRY, {"spec": spec.to_json(), "what": "explain"}, spec.timeout_s)
    return ExplainedRun([KernelRecord.from_json(k, "the explain worker's kernel") for k in record["kernels"]],
                        [Graph.from_json(g) for g in record["graphs"]], record["unmapped"], record["run_us"],
                        record["threads"])


# --- the command ----------------------------------------------------------------------------------

def explain_run(run, backend: str, kernel: str | int | None, context: str) -> str:
    """The text `irlens explain` prints for a finished BackendRun. `kernel` None: the list of kernels,
    then the one that fuses the most ops. Raises UnknownKernel (an unknown name or index, or a
    backend without kernels asked for one)."""
    from irlens.reporting.records import kernel_stage

    graphs = {g.stage: g for g in run.graphs}
    if not run.kernels:
        why = " (eager runs op by op: it fuses nothing and keeps no kernel records)" if backend == "eager" else ""
        if run.unmapped:
            why = f" (kernels unmapped: {run.unmapped})"
        message = f"{backend} reported no kernels for {context}{why}"
        if kernel is not None:
            raise UnknownKernel(f"no kernel {str(kernel)!r}: {message}")
        return message + "."
    head = f"one step: {run.run_us:.1f} µs (median host wall time, timed as irlens compare times a cell)\n\n"
    if kernel is None:
        index = max(range(len(run.kernels)), key=lambda i: len(run.kernels[i].node_ids))
        head += (f"{plural(len(run.kernels), 'kernel')} of {backend} for {context} (pick one with --kernel NAME|INDEX):\n"
                f"{format_kernel_list(run.kernels, graphs)}\n\nthe kernel that fuses the most ops, k{index}:\n\n")
    else:
        index = find_kernel(run.kernels, kernel)
    chosen = run.kernels[index]
    stage = kernel_stage(chosen, graphs)
    return head + format_explanation(explain_kernel(chosen, graphs.get(stage) if stage else None, index), context)
