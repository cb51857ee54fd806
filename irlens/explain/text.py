"""What `irlens explain` prints: the kernels of a run, then one of them as irlens.explain.kernel
reads it, beside its generated source (Triton, C++, CUDA or HLO) as the backend gave it."""
from __future__ import annotations

from irlens.core.ir import Graph, Kernel, Node, TensorMeta
from irlens.errors import UsageError
from irlens.explain.kernel import KernelExplanation, explain_kernel
from irlens.wording import plural


class UnknownKernel(UsageError):
    """A --kernel that names no kernel of the run; the message lists them."""


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


def _bytes(n: int) -> str:
    return f"{n:,} B"


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
        lines += ["", f"fuses {plural(len(expl.nodes), 'common-view op')}: {', '.join(n.op for n in expl.nodes) or '-'}"]
        lines += [node_line(n) for n in expl.nodes]
        if expl.recomputed:
            lines += ["", f"recomputes {plural(len(expl.recomputed), 'op')} also computed elsewhere:"]
            lines += [node_line(n) for n in expl.recomputed]
        lines += ["", f"reads {plural(len(expl.reads), 'tensor')}, {_bytes(sum(m.nbytes for m in expl.reads))}:"]
        lines += _tensor_lines(expl.reads, producers,
                               lambda m, p: f"from {p.op} ({p.id}) outside the kernel" if p else "graph input")
        lines += ["", f"writes {plural(len(expl.writes), 'tensor')}, {_bytes(sum(m.nbytes for m in expl.writes))}:"]
        lines += _tensor_lines(expl.writes, producers,
                               lambda m, p: f"{p.op} ({p.id})" + (", returned" if m.name in returned else ", read by a later op"))
        lines += ["", "reduces:" if expl.reductions else "reduces: no (purely elementwise / data movement)"]
        lines += [f"  {r}" for r in expl.reductions]
        lines += ["", f"never reach memory: {plural(len(expl.internal), 'intermediate')}, "
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
