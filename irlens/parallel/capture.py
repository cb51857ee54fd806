"""Capture the joint forward+backward graph of a train step, run the passes, compile it.

    aot_export_joint_with_descriptors   the joint graph; placeholders and outputs carry descriptors
      -> joint passes                    (passes.JOINT_PASSES)
      -> partition                       forward graph + backward graph (passes.choose_partitioner:
                                         min-cut, honouring recompute tags, or eager's saving)
      -> forward / backward passes       (passes.GRAPH_PASSES), as the fw/bw compilers
      -> aot_compile_joint_with_descriptors: an autograd-aware callable over (params, buffers, inputs)

The compile must happen inside the ExitStack the export entered (its fake mode and contexts
live there); the compiled callable runs outside it.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import fx, nn

from irlens.parallel.passes.catalog import validate_passes, warn_numerics
from irlens.parallel.passes.run import choose_partitioner, run_graph_passes, run_joint_passes
from irlens.parallel.passes.summary import PassContext, PassRecord


@dataclass
class CompiledStep:
    """The compiled train step: call it like the module; `loss.backward()` runs the compiled backward."""

    module: nn.Module
    fn: Callable
    params_spec: list[str]
    buffers_spec: list[str]
    records: list[PassRecord] = field(default_factory=list)
    graphs: dict[str, fx.GraphModule] = field(default_factory=dict)  # joint, forward, backward
    groups: dict[str, str] = field(default_factory=dict)  # mesh dim name -> process group name

    def __call__(self, *args: torch.Tensor) -> torch.Tensor:
        params = dict(self.module.named_parameters())
        buffers = dict(self.module.named_buffers())
        return self.fn(*(params[n] for n in self.params_spec), *(buffers[n] for n in self.buffers_spec), *args)


def _placeholder_values(gm: fx.GraphModule) -> list:
    return [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]


def _set_joint_graph(jd, gm: fx.GraphModule) -> None:
    try:
        jd.graph_module = gm
    except AttributeError:  # torch without the JointWithDescriptors.graph_module setter
        jd._aot_graph_capture.graph_module = gm


def compile_joint(module: nn.Module, example_args: tuple, joint_passes: list[str] = (),
                  passes: list[str] = (), groups: dict[str, str] | None = None) -> CompiledStep:
    """Capture `module(*example_args)` (a scalar loss) as a joint graph and compile it through the
    passes; `groups` names the process group of each mesh dimension (the passes that act on one
    group's collectives look it up). Under a fake process group this still yields every graph and
    pass summary (for dumps), though the callable's values would be meaningless."""
    from torch._functorch.aot_autograd import (
        aot_compile_joint_with_descriptors,
        aot_export_joint_with_descriptors,
    )
    from torch._guards import detect_fake_mode

    joint_passes, passes = list(joint_passes), list(passes)
    validate_passes(joint_passes, passes)
    warn_numerics(joint_passes, passes)
    records: list[PassRecord] = []
    graphs: dict[str, fx.GraphModule] = {}
    shared: dict = {}  # the forward's and backward's passes' common state (one CUDA graph pool)
    partitioner = ""

    def compiler(stage: str):
        def compile_stage(gm: fx.GraphModule, example_inputs) -> Callable:
            ctx = PassContext(stage, list(example_inputs), records, graphs, shared=shared, partitioner=partitioner,
                              groups=dict(groups or {}))
            return run_graph_passes(gm, passes, ctx)

        return compile_stage

    with contextlib.ExitStack() as stack:
        # keeps fx.traceback.annotate()'s meta ("custom") on the traced nodes
        stack.enter_context(torch.fx.traceback.preserve_node_meta())
        jd = aot_export_joint_with_descriptors(stack, module, example_args)
        example = _placeholder_values(jd.graph_module)
        joint_ctx = PassContext("joint", example, records, graphs)
        with detect_fake_mode(example):
            _set_joint_graph(jd, run_joint_passes(jd.graph_module, joint_passes, joint_ctx))
        graphs["joint"] = jd.graph_module
        partition_fn, partitioner = choose_partitioner(jd.graph_module, passes)
        fn = aot_compile_joint_with_descriptors(
            jd, partition_fn=partition_fn,
            fw_compiler=compiler("forward"), bw_compiler=compiler("backward"),
        )
    return CompiledStep(module, fn, list(jd.params_spec), list(jd.buffers_spec), records, graphs, dict(groups or {}))
