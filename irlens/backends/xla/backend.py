"""`xla`: the workload's JAX twin under `jax.jit`, compiled by XLA for the instance's device.

Kernels are read from the optimized HLO: one per ENTRY-computation instruction that launches
work (a fusion, a dot or custom call, a copy ...), covering the nodes of the `jax.hlo` common
view it computes. Each HLO node keeps XLA's `op_name` / source metadata, which names the jaxpr
equation it came from (primitive, forward or `transpose(...)` backward, source line); through
it `notes["jaxpr"]` records which equations of the `jax.jaxpr` / `jax.grad` graph each kernel
computes, where that is recoverable.
"""
from __future__ import annotations

from collections import defaultdict

import torch

from irlens.backends.base import BACKENDS, Backend, Compiled, KernelRead
from irlens.backends.repro_path import ReproPath
from irlens.backends.xla.dump import compile_with_dump, xla_stages
from irlens.frontends.base import Availability, Stage, Unavailable
from irlens.frontends.jax.frontend import jax_device, jax_program, lower as lower_program
from irlens.core.ir import Graph, Kernel
from irlens.backends.xla.kernels import EntryOp, read_hlo
from irlens.frontends.jax.jaxpr.walk import EqnOrigin, jaxpr_origins, jaxpr_to_graph
from irlens.backends.xla import lower as jax_lowering
from irlens.core.ops import CAST, CREATION, DATA_MOVEMENT, REDUCTION, category, is_compute
from irlens.core import precision
from irlens.workloads.workload import Instance, Step

STAGE = "jax.hlo"


class XlaBackend(Backend):
    name = "xla"
    frontend = "jax"
    description = "jax.jit of the JAX twin: XLA fusions (CPU: LLVM loops + YNNPACK dots; GPU: loop/Triton fusions, cuBLAS)"
    main_stage = "xla.hlo"
    keeps_device_memory = True
    repro_path = ReproPath(name, "jax",
                           "jax.jit of the JAX program (matmul precision highest, as the xla backend runs it)",
                           frontend="jax", lowering="jax", program="jax")

    def kernel_source_suffix(self, source: str) -> str:
        return ".hlo"  # a kernel's source is its fusion's HLO

    def lower(self, graph: Graph, device: str, name: str) -> jax_lowering.XlaLowered:
        return jax_lowering.lower(graph, device, name, _kernel)

    def availability(self, device: str) -> Availability:
        try:
            jax_device(device)
        except ImportError as e:
            return Availability(False, f"jax is not installed: {e}")
        except Unavailable as e:
            return Availability(False, str(e))
        return Availability(True)

    def stages(self, inst: Instance, mode: str) -> dict[str, Stage]:
        compiled, files, missing = compile_with_dump(lower_program(jax_program(inst, mode)), jax_device(inst.device).platform)
        return xla_stages(compiled, files, inst.name, backward=mode == "fwdbwd", missing=missing)

    def compile(self, inst: Instance, mode: str) -> Compiled:
        """jax.jit's program, compiled ahead of its first call (`Compiled.ahead`: the compile time is
        that compilation's); its step reads the program's arguments, made once."""
        import jax

        program = jax_program(inst, mode)  # its args are on the instance's device
        built = {}

        def ahead() -> None:
            built["executable"] = lower_program(program).compile()

        def results(_, outputs) -> dict:
            return {name: _to_torch(outputs[name], inst.device) for name in program.output_names}

        def read(cupti_taken: bool) -> KernelRead:
            executable = built["executable"]
            hlo = read_hlo(executable.runtime_executable().hlo_modules()[0], name=inst.name, stage=STAGE)
            kernels = [_kernel(op, hlo.graph, self.name) for op in hlo.entry_ops]
            closed = jax.make_jaxpr(program.fn)(*program.args)
            jaxpr_stage = "jax.grad" if mode == "fwdbwd" else "jax.jaxpr"
            jaxpr_graph = jaxpr_to_graph(closed, name=inst.name, stage=jaxpr_stage, input_names=program.input_names)
            return KernelRead(kernels, [hlo.graph, jaxpr_graph],
                              {"platform": executable.runtime_executable().local_devices()[0].platform,
                               "matmul_precision": precision.jax_matmul_precision(),
                               "jaxpr": map_to_jaxpr(hlo.graph, kernels, jaxpr_graph, jaxpr_origins(closed)),
                               "cost_analysis": _cost(executable)})

        step = Step(lambda: None, lambda _: jax.block_until_ready(built["executable"](*program.args)), results)
        return Compiled(step, read, ahead=ahead)


def _kernel(op: EntryOp, graph: Graph, backend: str) -> Kernel:
    kernel = Kernel(backend, op.name, _kind(op, graph), list(op.node_ids), stage=STAGE, source=op.text)
    kernel.set_io(op.bytes_read, op.bytes_written)  # its operands and results in the optimized HLO
    return kernel


def _kind(op: EntryOp, graph: Graph) -> str:
    ops = {graph.node(i).op for i in op.node_ids}
    if "matmul" in ops:
        return "matmul"
    if op.opcode == "fusion":
        return "fused"
    if op.opcode == "custom-call":
        return "library"
    categories = {category(o) for o in ops}
    if categories <= {DATA_MOVEMENT, CAST, CREATION}:
        return "copy"
    return "reduction" if REDUCTION in categories else "elementwise"


def map_to_jaxpr(hlo_graph: Graph, kernels: list[Kernel], jaxpr_graph: Graph, origins: dict[str, EqnOrigin]) -> dict:
    """Which jaxpr equations each kernel computes, through the HLO nodes' op_name/source metadata.

    An HLO node names the equations with its (primitive, forward/backward, source position);
    where several share that key, those with the node's output shape are kept. One equation left
    is an exact match. Several left is ambiguous: a function called twice (two layer norms) gives
    its equations the same innermost source position, and the HLO's printed parent frames do not
    follow the call chain, so they cannot tell the calls apart. XLA also rewrites ops (x**3 into
    two multiplies, x/y into x*(1/y)) and keeps the original primitive's name: the mapping is by
    provenance, not by op. Returns {"stage", "kernels": {kernel: exact eqn ids}, "ambiguous":
    {kernel: candidate eqn ids}, "recompute": {kernel: exact eqn ids an earlier kernel computed
    too}, "unmapped": [compute equations no kernel names (folded or simplified away)]}.
    """
    by_key: dict[EqnOrigin, list[str]] = defaultdict(list)
    for node_id, origin in origins.items():
        by_key[origin].append(node_id)
    shapes = {n.id: n.outputs[0].shape if n.outputs else () for n in jaxpr_graph.nodes}
    hlo_nodes = {n.id: n for n in hlo_graph.nodes}
    exact: dict[str, list[str]] = {}
    ambiguous: dict[str, list[str]] = {}
    recompute: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for kernel in kernels:
        found, maybe = [], []
        for node_id in kernel.node_ids:
            node = hlo_nodes[node_id]
            shape = node.outputs[0].shape if node.outputs else ()
            for key in _hlo_origins(node.attrs):
                candidates = by_key.get(key, [])
                candidates = [e for e in candidates if shapes[e] == shape] or candidates
                target = found if len(candidates) == 1 else maybe
                target += [e for e in candidates if e not in target]
        exact[kernel.name] = found
        ambiguous[kernel.name] = [e for e in maybe if e not in found]
        recompute[kernel.name] = [e for e in found if e in owner]
        for e in found:
            owner.setdefault(e, kernel.name)
    named = set(owner) | {e for ids in ambiguous.values() for e in ids}
    return {
        "stage": jaxpr_graph.stage,
        "kernels": exact,
        "ambiguous": {k: v for k, v in ambiguous.items() if v},
        "recompute": {k: v for k, v in recompute.items() if v},
        "unmapped": [n.id for n in jaxpr_graph.nodes if is_compute(n.op) and n.id not in named],
    }


def _hlo_origins(attrs: dict) -> list[EqnOrigin]:
    """`op_name` (`jit(f)/transpose(jvp())/mul`, several joined by `;` when XLA merged ops) and
    `source` of an HLO node as equation origins."""
    source = attrs.get("source", "")
    return [EqnOrigin(part.rsplit("/", 1)[-1], "transpose(" in part, source)
            for part in attrs.get("op_name", "").split(";") if part]


def _to_torch(x, device: str) -> torch.Tensor:
    import numpy as np

    array = np.asarray(x)
    if array.dtype.name == "bfloat16":  # numpy has no bfloat16 torch can read
        return torch.from_numpy(array.astype(np.float32)).to(device=device, dtype=torch.bfloat16)
    return torch.from_numpy(array.copy()).to(device)


def _cost(compiled) -> dict:
    """XLA's whole-program estimate (flops, bytes accessed); per-kernel figures are not exposed."""
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, (list, tuple)) else cost
    return {k: float(v) for k, v in (cost or {}).items() if k in ("flops", "bytes accessed", "transcendentals")}


BACKENDS.register(XlaBackend())
