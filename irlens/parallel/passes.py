"""Graph passes of the joint-graph path: a named list, validated before anything runs.

Joint passes rewrite the joint forward+backward graph before the partition:
  inductor_decomposition            Inductor's decomposition table, applied by retracing
  selective_activation_checkpoint   save matmuls/attention/collectives, recompute the rest per layer
  fsdp_reshard_after_forward        free the gathered parameters after the forward, re-gather in backward

Forward/backward passes run on each partitioned graph, in the order given, in phases:
  1. collective-matmul fusion:       async_tensor_parallel (TP with sequence parallelism, CUDA)
  2. graph transforms (at most one): autobucketing_reordering, transformer_block_bucketing
  3. compilation (at most one):      regional_inductor, full_inductor_compilation
  4. cudagraph                       (must be last)
A pass that may change numerics (decompositions, bucketed reductions, Inductor) warns when it
is asked for and is listed in the run's summary, never silent. Each pass is summarized before
and after (nodes, collectives, bucket sizes): `PassRecord`.
"""
from __future__ import annotations

import contextlib
import inspect
import operator
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch import fx

from irlens.parallel.async_tp import FUSED_OPS
from irlens.parallel.llama3 import MODULE_KEY, REGION_KEY
from irlens.parallel.simple_fsdp import TP_DIM
from irlens.registry import Registry

# --- summaries ---------------------------------------------------------------------

COLLECTIVE_KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", *FUSED_OPS.values(), "wait")


def collective_kind(node: fx.Node) -> str | None:
    """all_gather / reduce_scatter / all_reduce / all_to_all / wait for functional collectives,
    all_gather_matmul / matmul_reduce_scatter for async TP's fused ops, else None."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return None
    if target.namespace == "symm_mem":
        return FUSED_OPS.get(target._opname)
    if target.namespace not in ("_c10d_functional", "c10d_functional", "_c10d_functional_autograd"):
        return None
    name = target._opname
    if name == "wait_tensor":
        return "wait"
    for kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        if name.startswith(kind):
            return kind
    return None


def _nbytes(val: Any) -> int:
    vals = val if isinstance(val, (list, tuple)) else [val]
    return sum(v.numel() * v.element_size() for v in vals if isinstance(v, torch.Tensor))


def _bucket_bytes(node: fx.Node, kind: str) -> int:
    """The full bucket a collective moves: the gathered output, the reduced input."""
    if kind == "reduce_scatter":
        return _nbytes(node.args[0].meta.get("val")) if isinstance(node.args[0], fx.Node) else 0
    return _nbytes(node.meta.get("val"))


@dataclass
class GraphSummary:
    nodes: int
    collectives: dict[str, int]  # kind -> count (waits included)
    bucket_bytes: dict[str, list[int]]  # kind -> bytes of each collective, in graph order

    @classmethod
    def of(cls, gm: fx.GraphModule) -> "GraphSummary":
        counts: Counter = Counter()
        sizes: dict[str, list[int]] = {}
        n = 0
        for node in gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            n += 1
            kind = collective_kind(node)
            if kind is None:
                continue
            counts[kind] += 1
            if kind not in ("wait", *FUSED_OPS.values()):
                sizes.setdefault(kind, []).append(_bucket_bytes(node, kind))
        return cls(n, {k: counts[k] for k in COLLECTIVE_KINDS if counts[k]}, sizes)

    def to_json(self) -> dict:
        return {"nodes": self.nodes, "collectives": dict(self.collectives),
                "bucket_bytes": {k: list(v) for k, v in self.bucket_bytes.items()}}

    def line(self) -> str:
        colls = ", ".join(f"{k} {v}" for k, v in self.collectives.items()) or "no collectives"
        buckets = "; ".join(f"{k} max {max(v) / 2**20:.2f} MiB" for k, v in self.bucket_bytes.items() if v)
        return f"{self.nodes} nodes, {colls}" + (f" ({buckets})" if buckets else "")


@dataclass
class PassRecord:
    stage: str  # joint | forward | backward
    name: str
    before: GraphSummary
    after: GraphSummary | None  # None once the pass made the graph an opaque compiled callable
    note: str = ""

    def to_json(self) -> dict:
        return {"stage": self.stage, "pass": self.name, "before": self.before.to_json(),
                "after": self.after.to_json() if self.after else None, "note": self.note}

    def line(self) -> str:
        if self.after == self.before:  # capture, partition, or a pass that only tags nodes
            return f"[{self.stage}] {self.name}: {self.after.line()}" + (f"  # {self.note}" if self.note else "")
        after = self.after.line() if self.after else "compiled (opaque)"
        return f"[{self.stage}] {self.name}: {self.before.line()} -> {after}" + (f"  # {self.note}" if self.note else "")


@dataclass
class PassContext:
    stage: str
    example_inputs: list  # fake tensors of the graph's placeholders
    records: list[PassRecord] = field(default_factory=list)
    graphs: dict[str, fx.GraphModule] = field(default_factory=dict)  # stage -> graph after graph passes
    note: str = ""  # what the running pass wants its record to say (e.g. which cost model it used)
    shared: dict[str, Any] = field(default_factory=dict)  # state the forward's and backward's passes share
    partitioner: str = ""  # how the joint graph was split (the partition record's note)
    groups: dict[str, str] = field(default_factory=dict)  # mesh dim name (dp_shard, tp) -> process group name


# --- the registry ------------------------------------------------------------------

FUSE, TRANSFORM, COMPILE, CUDAGRAPH = 1, 2, 3, 4
PHASE_NAMES = {FUSE: "collective-matmul fusion", TRANSFORM: "graph transform (bucketing)", COMPILE: "compilation",
               CUDAGRAPH: "cudagraph"}


@dataclass(frozen=True)
class GraphPass:
    name: str
    fn: Callable[..., Any]  # joint/transform: (gm, ctx) -> gm; compile/cudagraph: (gm or callable, ctx) -> callable
    description: str
    phase: int = 0  # 0 for joint passes
    changes_numerics: bool = False
    needs_gpu: str = ""  # why it needs a CUDA GPU, if it does
    requires_joint: tuple[str, ...] = ()
    fuses_graph: bool = False  # compiles the whole graph into fused kernels (recomputation then costs little)
    # pipelines TP's collectives through symmetric memory: needs --tp > 1 with sequence parallelism,
    # and CUDA ranks where symmetric memory works (probed at run time: async_tp.require_symmetric_memory)
    needs_symmetric_memory: bool = False


class PassError(ValueError):
    """An unknown, ill-ordered or unsatisfiable pass list (a user error: the CLI exits 2)."""


class NeedsGPU(PassError):
    """A pass that only works on a CUDA device was asked for on the CPU."""


def require_gpu(p: GraphPass) -> None:
    if p.needs_gpu and not torch.cuda.is_available():
        raise NeedsGPU(f"pass {p.name!r} needs a CUDA GPU: {p.needs_gpu}. This machine has none; drop it from --passes.")


JOINT_PASSES: Registry[GraphPass] = Registry("joint pass")
GRAPH_PASSES: Registry[GraphPass] = Registry("graph pass")


def validate_passes(joint_passes: list[str], passes: list[str], tp: int | None = None,
                    sequence_parallel: bool = True) -> None:
    """Reject unknown names, duplicates, phases out of order and unmet requirements, before any work
    (with `tp`, also the mesh a pass needs)."""
    for names, table, flag in ((joint_passes, JOINT_PASSES, "--joint-passes"), (passes, GRAPH_PASSES, "--passes")):
        unknown = [n for n in names if n not in table]
        if unknown:
            raise PassError(f"unknown {flag} {', '.join(map(repr, unknown))}; valid: {', '.join(table)}")
        dup = sorted(n for n, c in Counter(names).items() if c > 1)
        if dup:
            raise PassError(f"{flag} lists {', '.join(dup)} more than once")
    if "inductor_decomposition" in joint_passes and joint_passes[0] != "inductor_decomposition":
        raise PassError("inductor_decomposition must be the first joint pass: it retraces the graph, "
                        "dropping the tags earlier passes set")
    order = "; then ".join(f"{PHASE_NAMES[ph]}: {', '.join(p.name for p in GRAPH_PASSES.values() if p.phase == ph)}"
                           for ph in PHASE_NAMES)
    phases = [GRAPH_PASSES[n].phase for n in passes]
    if phases != sorted(phases):
        raise PassError(f"--passes {' '.join(passes)} are out of order; the order is {order}")
    for ph in (TRANSFORM, COMPILE):
        same = [n for n in passes if GRAPH_PASSES[n].phase == ph]
        if len(same) > 1:
            raise PassError(f"--passes lists {' and '.join(same)}: choose one {PHASE_NAMES[ph]} pass")
    for n in passes:
        missing = [j for j in GRAPH_PASSES[n].requires_joint if j not in joint_passes]
        if missing:
            raise PassError(f"pass {n!r} requires --joint-passes {' '.join(missing)}")
        require_gpu(GRAPH_PASSES[n])
    for n in symmetric_memory_passes(passes):
        if tp is not None and tp < 2:
            raise PassError(f"pass {n!r} pipelines tensor parallelism's collectives: it needs --tp 2 or more")
        if not sequence_parallel:
            raise PassError(f"pass {n!r} needs sequence parallelism: without it TP all-reduces activations, which "
                            f"it cannot pipeline with the matmuls (drop --no-sequence-parallel)")


def symmetric_memory_passes(passes: list[str]) -> list[str]:
    """The passes of the list that need symmetric memory on the tp group."""
    return [n for n in passes if GRAPH_PASSES[n].needs_symmetric_memory]


def numerics_changing(joint_passes: list[str], passes: list[str]) -> list[str]:
    """The passes of the lists that may change numerics."""
    return ([n for n in joint_passes if JOINT_PASSES[n].changes_numerics]
            + [n for n in passes if GRAPH_PASSES[n].changes_numerics])


def warn_numerics(joint_passes: list[str], passes: list[str]) -> None:
    for name in numerics_changing(joint_passes, passes):
        warnings.warn(f"pass {name!r} may change numerics: results match eager only within a tolerance", stacklevel=3)


def _record_start(gm: fx.GraphModule, ctx: PassContext, what: str, note: str = "") -> None:
    s = GraphSummary.of(gm)
    ctx.records.append(PassRecord(ctx.stage, what, s, s, note))


def run_joint_passes(gm: fx.GraphModule, names: list[str], ctx: PassContext) -> fx.GraphModule:
    _record_start(gm, ctx, "capture")
    for name in names:
        before, tagged = GraphSummary.of(gm), recompute_tags(gm)
        gm = JOINT_PASSES[name].fn(gm, ctx)
        after = recompute_tags(gm)
        note = f"recompute tags: {tagged} -> {after}" if after != tagged else ""
        ctx.records.append(PassRecord("joint", name, before, GraphSummary.of(gm), note))
    return gm


def recompute_tags(gm: fx.GraphModule) -> dict[str, int]:
    """How many nodes carry each activation-checkpoint policy (what the tagging passes change)."""
    return dict(Counter(n.meta["recompute"].name for n in gm.graph.nodes if "recompute" in n.meta))


def choose_partitioner(joint: fx.GraphModule, passes: list[str]) -> tuple[Callable, str]:
    """The min-cut partitioner where a pass compiles the whole graph (Inductor fuses what it
    recomputes in the backward into kernels it launches anyway) or joint passes tagged what to
    recompute (activation checkpointing, resharding: only the min-cut honours the tags). Else the
    default partition: it saves what eager autograd saves, where the min-cut would recompute
    casts, norms and activations as separate unfused kernels (slower than eager)."""
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

    if any(GRAPH_PASSES[n].fuses_graph for n in passes) or recompute_tags(joint):
        return min_cut_rematerialization_partition, "min-cut partitioner: recomputes cheap ops in the backward"
    return default_partition, "default partitioner: saves what eager saves, recomputes nothing"


def run_graph_passes(gm: fx.GraphModule, names: list[str], ctx: PassContext) -> Callable:
    """Apply `names` to a forward or backward graph; returns the boxed callable AOTAutograd runs.
    A pass returns a graph (it stays inspectable: summaries, dumps) or an opaque compiled callable."""
    compiled = None
    _record_start(gm, ctx, "partition", ctx.partitioner)
    for name in names:
        p = GRAPH_PASSES[name]
        before = GraphSummary.of(gm)
        ctx.note = ""
        out = p.fn(compiled or gm, ctx)
        if isinstance(out, fx.GraphModule):
            gm = out
            ctx.records.append(PassRecord(ctx.stage, name, before, GraphSummary.of(gm), ctx.note))
        else:
            compiled = out
            ctx.records.append(PassRecord(ctx.stage, name, before, None, ctx.note or p.description))
    ctx.graphs[ctx.stage] = gm
    return compiled or run_graph(gm)


def run_graph(gm: fx.GraphModule) -> Callable:
    """Run the graph's generated Python code (not fx.Interpreter: no per-node Python dispatch),
    with AOTAutograd's boxed calling convention."""
    from torch._functorch.aot_autograd import make_boxed_func
    from torch.fx.graph import _BoxedCodeGen

    if not isinstance(gm.graph._codegen, _BoxedCodeGen):
        return make_boxed_func(gm.forward)

    def run(args: list):  # regional_inductor's graphs already take the one list
        return gm(args)

    run._boxed_call = True
    return run


# --- joint passes --------------------------------------------------------------------


def inductor_decomposition(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Retrace the joint graph through Inductor's decomposition table (as a full Inductor compile
    would at its start), keeping each node's annotations and the placeholders' descriptors."""
    from torch._inductor.decomposition import select_decomp_table
    from torch.fx.experimental.proxy_tensor import make_fx

    old_placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    old_output = gm.graph.output_node()

    def run(*args):
        with torch.fx.traceback.preserve_node_meta():
            return fx.Interpreter(gm).run(*args)

    new = make_fx(run, decomposition_table=select_decomp_table())(*ctx.example_inputs)
    for old, ph in zip(old_placeholders, (n for n in new.graph.nodes if n.op == "placeholder")):
        ph.meta.update({k: v for k, v in old.meta.items() if k not in ("val", "tensor_meta")})
        ph.name = ph.target = old.name  # keep primals_/tangents_ names: the partitioner reads them
    new.graph.output_node().meta.update({k: v for k, v in old_output.meta.items() if k != "val"})
    new.recompile()
    return new


_SAVE_TARGETS = {
    "aten.mm.default", "aten.addmm.default", "aten.bmm.default",
    "aten._scaled_dot_product_flash_attention_for_cpu.default",
    "aten._scaled_dot_product_flash_attention.default", "aten._scaled_dot_product_efficient_attention.default",
    "aten._scaled_dot_product_cudnn_attention.default", "flex_attention",
}


def _is_saved_op(node: fx.Node) -> bool:
    return str(node.target) in _SAVE_TARGETS or collective_kind(node) is not None


def _forward_nodes(gm: fx.GraphModule) -> list[fx.Node]:
    """Nodes of the joint graph that do not depend on a tangent (the forward part)."""
    backward: set[fx.Node] = set()
    for n in gm.graph.nodes:
        if (n.op == "placeholder" and "tangents" in n.name) or any(a in backward for a in n.all_input_nodes):
            backward.add(n)
    return [n for n in gm.graph.nodes if n.op == "call_function" and n not in backward]


def _layer_id(node: fx.Node) -> int | None:
    scope = (node.meta.get("custom") or {}).get(MODULE_KEY, "")
    return int(scope.split(".")[1]) if scope.startswith("layers.") else None


def selective_activation_checkpoint(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Per transformer block, keep the outputs of matmuls, attention and collectives; mark every
    other forward op to be recomputed in the backward (op-level SAC, as torchtitan's policy)."""
    from torch.utils.checkpoint import CheckpointPolicy

    for node in _forward_nodes(gm):
        layer = _layer_id(node)
        if layer is None or "recompute" in node.meta:
            continue
        save = _is_saved_op(node) or (node.target is operator.getitem and _is_saved_op(node.args[0]))
        node.meta["recompute"] = CheckpointPolicy.MUST_SAVE if save else CheckpointPolicy.PREFER_RECOMPUTE
        node.meta["ac_graph_id"] = layer
    return gm


_VIEW_OR_CAST = {"aten.view.default", "aten.t.default", "aten.permute.default", "aten.transpose.int",
                 "aten._unsafe_view.default", "aten.reshape.default", "aten.slice.Tensor", "aten.split.Tensor",
                 "aten.split_with_sizes.default", "aten.cat.default", "aten._to_copy.default",
                 "prims.convert_element_type.default", "aten.clone.default", "aten.contiguous.default",
                 "aten.expand.default", "aten.unsqueeze.default", "aten.squeeze.dim", "aten.alias.default"}


def fsdp_reshard_after_forward(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Mark each forward parameter all-gather, its wait and the views and casts that lead to the
    compute as must-recompute: the partitioner then saves the shard, not the gathered tensor,
    and the backward gathers again (FSDP's reshard_after_forward=True)."""
    from torch.utils.checkpoint import CheckpointPolicy

    # one graph-wide id keeps cleanup_recompute_tags from pinning the chain's last node as saved
    for node in _forward_nodes(gm):
        if collective_kind(node) != "all_gather" or not _gathers_parameter(node):
            continue
        chain, frontier = [node], [node]
        while frontier:
            for user in frontier.pop().users:
                if collective_kind(user) == "wait" or str(user.target) in _VIEW_OR_CAST or user.target is operator.getitem:
                    chain.append(user)
                    frontier.append(user)
        for n in chain:
            n.meta["recompute"] = CheckpointPolicy.MUST_RECOMPUTE
            n.meta["ac_graph_id"] = 0
    return gm


def _gathers_parameter(node: fx.Node) -> bool:
    """The all-gather's input comes from a parameter placeholder through views and casts only."""
    x = node.args[0]
    while isinstance(x, fx.Node) and x.op == "call_function" and str(x.target) in _VIEW_OR_CAST:
        x = x.args[0]
    desc = getattr(x, "meta", {}).get("desc") if isinstance(x, fx.Node) else None
    return x.op == "placeholder" and "Param" in type(getattr(desc, "base", desc)).__name__


# --- forward/backward passes ----------------------------------------------------------------


def _module_stack(node: fx.Node) -> list[tuple[str, type]]:
    scope = (node.meta.get("custom") or {}).get(MODULE_KEY)
    return [(scope, torch.nn.Module)] if scope else []


def block_plans(gm: fx.GraphModule) -> list[str]:
    """The module scopes of the graph, in first-appearance order: one bucket each."""
    seen: dict[str, None] = {}
    for node in gm.graph.nodes:
        for scope, _ in _module_stack(node):
            seen.setdefault(scope)
    return list(seen)


# On a CPU-only torch, Inductor's overlap scheduler cannot estimate costs (its roofline asks
# Triton for the GPU's bandwidth: ModuleNotFoundError: triton). There it gets this stated
# analytical model instead: enough to decide buckets and order for a dump, not a measurement.
CPU_MATMUL_FLOPS = 1e11  # FLOP/s
CPU_COLLECTIVE_BYTES_PER_S = 1e10
_MATMULS = {"aten.mm.default": 0, "aten.bmm.default": 0, "aten.addmm.default": 1}  # target -> lhs arg index


def cpu_runtime_estimate(node: fx.Node, override_size: int | None = None) -> float:
    """Milliseconds: matmuls and collectives by size, everything else free."""
    kind = collective_kind(node)
    if kind is not None and kind != "wait":
        size = override_size if override_size is not None else _bucket_bytes(node, kind)
        return 1e3 * size / CPU_COLLECTIVE_BYTES_PER_S
    lhs = _MATMULS.get(str(node.target))
    if lhs is None or "val" not in node.meta:
        return 0.0
    k = node.args[lhs].meta["val"].shape[-1]
    return 1e3 * 2 * node.meta["val"].numel() * k / CPU_MATMUL_FLOPS


@contextlib.contextmanager
def _cost_model():
    """Yields the scheduler's cost-estimate arguments: none (its own) on a GPU, the CPU model above else."""
    if torch.cuda.is_available():
        yield {}
        return
    from unittest import mock

    from torch._inductor.fx_passes import overlap_scheduling

    with mock.patch.object(overlap_scheduling, "estimate_roofline_runtime_ms", cpu_runtime_estimate):
        yield {"custom_runtime_estimation": cpu_runtime_estimate, "compute_estimator": "analytical"}


def transformer_block_bucketing(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """One all-gather and one reduce-scatter bucket per transformer block (and per embedding, norm
    and output), each prefetched one block ahead (overlap_manual_scheduling)."""
    from torch._inductor.fx_passes.overlap_manual_scheduling import manual_overlap_bucketing

    plans = block_plans(gm)
    kwargs = {"module_stack_fn": _module_stack}
    if "module_stack_fn" not in inspect.signature(manual_overlap_bucketing).parameters:
        # older torch reads the module path from nn_module_stack meta only: write ours there
        # (our annotation; the joint export itself records none)
        kwargs = {}
        for node in gm.graph.nodes:
            for scope, cls in _module_stack(node):
                node.meta["nn_module_stack"] = {scope: (scope, cls)}
    # the manual plan ignores cost estimates, but the scheduler's constructor still computes them
    with _cost_model():
        return manual_overlap_bucketing(gm, plans, **kwargs)


def autobucketing_reordering(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Inductor's overlap scheduler: buckets collectives and reorders them against compute, from
    cost estimates of both (on the CPU from `cpu_runtime_estimate`)."""
    from torch._inductor.fx_passes.overlap_scheduling import schedule_overlap_bucketing

    if not torch.cuda.is_available():
        ctx.note = (f"CPU: analytical costs (matmul {CPU_MATMUL_FLOPS:.0e} FLOP/s, "
                    f"collectives {CPU_COLLECTIVE_BYTES_PER_S:.0e} B/s), not GPU estimates")
    with _cost_model() as estimates:
        return schedule_overlap_bucketing(gm, collective_bucketing=True, **estimates)


def async_tensor_parallel(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Inductor's micro-pipeline TP on the tp group (irlens.parallel.async_tp), on the graph in the
    form Inductor's post-grad passes see it (views as reshapes, which its patterns match)."""
    from torch._inductor.fx_passes.post_grad import view_to_reshape

    from irlens.parallel.async_tp import micro_pipeline

    if TP_DIM not in ctx.groups:
        ctx.note = "no tp mesh dimension: nothing to pipeline"
        return gm
    view_to_reshape(gm)
    gm, ctx.note = micro_pipeline(gm, ctx.groups[TP_DIM])
    return gm


def regional_inductor(gm: fx.GraphModule, ctx: PassContext) -> fx.GraphModule:
    """Compile only the regions annotated `compile_with_inductor` (FlexAttention, RoPE) with Inductor;
    each becomes one call_module node of the graph."""
    from torch.fx.passes.regional_inductor import regional_inductor as compile_regions

    if not any(REGION_KEY in (n.meta.get("custom") or {}) for n in gm.graph.nodes):
        warnings.warn(f"regional_inductor: no node of the {ctx.stage} graph is annotated {REGION_KEY!r}; nothing compiled",
                      stacklevel=2)
    return compile_regions(gm, *ctx.example_inputs)


def full_inductor_compilation(gm: fx.GraphModule, ctx: PassContext) -> Callable:
    """Inductor's whole-graph compile (compile_fx_inner): fused kernels, different rounding."""
    from torch._inductor.compile_fx import compile_fx_inner

    return compile_fx_inner(gm, ctx.example_inputs, is_backward=ctx.stage == "backward")


def cudagraph(compiled: Callable, ctx: PassContext) -> Callable:
    require_gpu(GRAPH_PASSES["cudagraph"])
    from irlens.parallel.cudagraph import CUDAGraphGroup, CUDAGraphWrapper

    if "cudagraph" not in ctx.shared:  # the forward's and the backward's graphs share one
        ctx.shared["cudagraph"] = CUDAGraphGroup()
    fn = run_graph(compiled) if isinstance(compiled, fx.GraphModule) else compiled
    return CUDAGraphWrapper(fn, ctx.stage, ctx.shared["cudagraph"])


for _p in (
    GraphPass("inductor_decomposition", inductor_decomposition, "Inductor's decomposition table", changes_numerics=True),
    GraphPass("selective_activation_checkpoint", selective_activation_checkpoint, "op-level SAC tags per block"),
    GraphPass("fsdp_reshard_after_forward", fsdp_reshard_after_forward, "re-gather parameters in the backward"),
):
    JOINT_PASSES.register(_p)

for _p in (
    GraphPass("async_tensor_parallel", async_tensor_parallel,
              "all-gather+matmul and matmul+reduce-scatter micro-pipelined over symmetric memory", FUSE,
              changes_numerics=True, requires_joint=("inductor_decomposition",), needs_symmetric_memory=True),
    GraphPass("autobucketing_reordering", autobucketing_reordering, "cost-model bucketing and reordering",
              TRANSFORM, changes_numerics=True),
    GraphPass("transformer_block_bucketing", transformer_block_bucketing, "one bucket per block, prefetched",
              TRANSFORM, changes_numerics=True),
    GraphPass("regional_inductor", regional_inductor, "Inductor on annotated regions", COMPILE, changes_numerics=True),
    GraphPass("full_inductor_compilation", full_inductor_compilation, "Inductor on the whole graph", COMPILE,
              changes_numerics=True, requires_joint=("inductor_decomposition",), fuses_graph=True),
    GraphPass("cudagraph", cudagraph, "CUDA graph replay", CUDAGRAPH,
              needs_gpu="it records the compiled graph's kernels into a CUDA graph"),
):
    GRAPH_PASSES.register(_p)
