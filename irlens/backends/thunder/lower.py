"""Common view -> nvFuser FusionDefinitions for the fusible parts, torch ops around them (CUDA only).

The graph is cut into regions: maximal runs of consecutive nodes whose ops declare an nvFuser
lowering in `irlens.core.ops` (elementwise ops, sum/amax/amin, broadcast, reshape, permute,
convert, slice, concat and plain matmuls). Each region becomes one `FusionDefinition` (built
on the first call, for the inputs' shapes and dtypes, as Thunder's nvFuser executor does in
`thunder/executors/nvfuserex_impl.py`); every other node runs as its torch meaning from
`irlens.core.interpret.MEANINGS` (dtype-preserving). So every op of the table is supported but control
flow (a while loop's body is a graph, not one call; `irlens.backends.lowering.straight_line`), and
the nvFuser share is visible in the kernels: one per nvFuser segment of each region (from
`nvfuser_direct.PythonProfiler`, with its time and bytes), one per torch op outside them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch

from irlens.frontends.base import Unavailable
from irlens.core.interpret import MEANINGS, TORCH_DTYPES, all_outputs, output_specs
from irlens.core.ir import Graph, Kernel, Node, canonical_dtype
from irlens.backends.lowering import check_supported, node_attrs, straight_line
from irlens.core.ops import MATMUL, OPS, category
from irlens.core.ops._torch import NV_DTYPES, nv_dtype

SUPPORTED = straight_line(MEANINGS)

def nvfuser_direct():
    try:
        import nvfuser_direct as nv
    except ImportError as e:
        raise Unavailable(f"nvFuser (nvfuser_direct) is not importable: {e}") from e
    return nv


def check_device(device: str) -> None:
    if not device.startswith("cuda"):
        raise Unavailable("nvFuser runs on CUDA devices only")


def fusible(node: Node) -> bool:
    """The op declares an nvFuser lowering that takes this node, in dtypes nvFuser has."""
    op = OPS.get(node.op)
    if op is None or "nvfuser" not in op.lowerings or any(o.dtype not in NV_DTYPES for o in node.outputs):
        return False
    if not node.value_inputs():  # literals only (1.0 / 2048.0): a scalar, computed by torch
        return False
    when = op.lowerable.get("nvfuser")
    return when is None or when(node)


@dataclass
class Region:
    """A run of fusible nodes: what it reads from outside, what later nodes read from it."""

    nodes: list[Node]
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    definition: object = None  # the FusionDefinition, built on the first call

    @property
    def name(self) -> str:
        return f"nvFusion:{self.nodes[0].id}-{self.nodes[-1].id}"


def regions(graph: Graph) -> list[Node | Region]:
    """The graph as an ordered list of torch nodes and nvFuser regions."""
    items: list[Node | Region] = []
    for node in graph.nodes:
        if fusible(node):
            if not (items and isinstance(items[-1], Region)):
                items.append(Region([]))
            items[-1].nodes.append(node)
        else:
            items.append(node)
    used_later: list[set[str]] = []
    later = {o for o in graph.outputs if isinstance(o, str)}
    for item in reversed(items):
        used_later.append(set(later))
        nodes = item.nodes if isinstance(item, Region) else [item]
        later |= {a for n in nodes for a in n.value_inputs()}
    used_later.reverse()
    for item, later in zip(items, used_later):
        if isinstance(item, Region):
            produced = {o.name for n in item.nodes for o in n.outputs}
            item.inputs = list(dict.fromkeys(a for n in item.nodes for a in n.value_inputs() if a not in produced))
            item.outputs = [o.name for n in item.nodes for o in n.outputs if o.name in later]
    return items


def define_region(region: Region, values: list[torch.Tensor], graph: Graph):
    """The region's FusionDefinition for these input values, built and not executed (the
    lowering runs it; `irlens repro` writes it out as nvFuser prints it)."""
    nv = nvfuser_direct()
    metas = {t.name: t for t in graph.inputs} | {o.name: o for n in graph.nodes for o in n.outputs}
    fd = nv.FusionDefinition()
    with fd:
        env = {name: _define_input(fd, nv, value) for name, value in zip(region.inputs, values)}

        def arg(a):
            if a is None or isinstance(a, str):
                return env.get(a)
            kind = "Bool" if isinstance(a, bool) else ("Int" if isinstance(a, int) else "Double")
            return fd.define_scalar(a, getattr(nv.DataType, kind))

        for node in region.nodes:
            env[node.outputs[0].name] = _emit(fd, nv, node, [arg(a) for a in node.inputs], metas)
        for name in region.outputs:
            fd.add_output(env[name])
    return fd


def _define_input(fd, nv, value: torch.Tensor):
    """A fusion input for `value`, with the sizes and strides it has. nvFuser's own descriptor
    (the `sizes, strides` form of `define_tensor`, `compute_tensor_descriptor` inside) makes a
    size-1 dim a broadcast dim, whose contiguity must be None: [True] * rank is refused for one.
    Static sizes: the definition is built for the first call's shapes, and every call has those."""
    return fd.define_tensor(sizes=list(value.shape), strides=list(value.stride()), static_sizes=True,
                            dtype=nv_dtype(nv, canonical_dtype(value.dtype)))


def fusion_input(value: torch.Tensor, device: str) -> torch.Tensor:
    """A region input as nvFuser binds it: dense, and on the fusion's device (nvFuser refuses a
    CPU tensor for a CUDA input; the torch-side ops make theirs there, `node_attrs`)."""
    return value.to(device).contiguous()


def _emit(fd, nv, node: Node, args: list, metas: dict):
    impl = OPS[node.op].lowerings["nvfuser"]
    if isinstance(impl, str):
        # an elementwise op by its fd.ops name; a Python literal is a Double scalar here: cast to
        # the declared dtype, as Thunder does for where
        return fd.ops.cast(getattr(fd.ops, impl)(*args), nv_dtype(nv, node.outputs[0].dtype))
    return impl(fd, nv, node, args, metas)


class NvFuserLowered:
    """Regions through nvFuser, the rest through torch; kernels from nvFuser's profiler."""

    def __init__(self, graph: Graph, device: str, tag: str):
        check_device(device)
        nvfuser_direct()
        check_supported(graph, SUPPORTED, "nvfuser")
        self.graph, self.device, self.tag = graph, device, tag
        self.items = regions(graph)
        self._last_inputs: dict[str, list] = {}

    def __call__(self, inputs: list) -> list:
        env = dict(zip((t.name for t in self.graph.inputs), inputs))
        for item in self.items:
            if isinstance(item, Region):
                if not item.outputs:
                    continue
                values = [fusion_input(env[name], self.device) for name in item.inputs]
                if item.definition is None:
                    item.definition = define_region(item, values, self.graph)
                self._last_inputs[item.name] = values
                env.update(zip(item.outputs, item.definition.execute(values)))
            else:
                result = MEANINGS[item.op](node_attrs(item, self.device),
                                           *[env[a] if isinstance(a, str) else a for a in item.inputs])
                results = all_outputs(result, output_specs(item), self.device)
                env.update(zip((o.name for o in item.outputs), map(_as_declared, results, item.outputs)))
        return [env[o] if isinstance(o, str) else o for o in self.graph.outputs]

    def graphs(self) -> list[Graph]:
        return [self.graph]

    def kernels(self, cupti_taken: bool) -> list[Kernel]:
        from irlens.backends.thunder.nvfuser import generated_code, segment_sources

        stage = self.graph.stage
        kernels = []
        for item in self.items:
            if not isinstance(item, Region):
                kind = "matmul" if category(item.op) == MATMUL else "library"
                kernels.append(Kernel("nvfuser", f"torch.{item.op}:{item.id}", kind, [item.id], stage=stage))
                continue
            if item.definition is None:
                continue
            ids = [n.id for n in item.nodes]
            inputs = self._last_inputs[item.name]
            segments = self._profile(item.definition, inputs, cupti_taken)
            code = generated_code(item.definition, inputs, torch.device(self.device).index or 0)
            first = next((s for s in segments if s.generated), None)
            sources = segment_sources(code, segments, "") if segments else [code]
            for s, source in zip(segments or [None], sources):
                name = f"{item.name}/{s.name}" if s else item.name
                kernels.append(Kernel("nvfuser", name, "fused", ids if s is first or s is None else [], stage=stage,
                                      time_us=s.time_us if s else None, bytes=s.bytes if s else None, source=source))
        return kernels

    @staticmethod
    def _profile(definition, inputs: list, cupti_taken: bool) -> list:
        """The region's segments, from one more run under nvFuser's profiler; none when it cannot
        run: torch.profiler holds CUPTI in this process (nvFuser's profiler would end it), or it fails."""
        from irlens.backends.thunder.nvfuser import profiled_segment

        if cupti_taken:
            return []
        nv = nvfuser_direct()
        try:
            with nv.PythonProfiler() as prof:
                definition.execute(inputs)
            return [profiled_segment(i, kp) for i, kp in enumerate(prof.profile.kernel_profiles)]
        except Exception:  # noqa: BLE001  (the region ran; only its per-segment figures are missing)
            reset = getattr(nv, "reset_profiler", None)  # a failed run leaves nvFuser's profiler running
            if reset is not None:
                reset()
            return []


def _as_declared(value, meta):
    """A floating torch result in the dtype the graph declares (the table computes literal-only ops in float64)."""
    if isinstance(value, torch.Tensor) and value.is_floating_point() and meta.dtype in TORCH_DTYPES:
        return value.to(TORCH_DTYPES[meta.dtype])
    return value


def lower(graph: Graph, device: str, tag: str) -> NvFuserLowered:
    return NvFuserLowered(graph, device, tag)
