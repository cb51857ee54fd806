"""deepseek_v3's parallelisms (torchtitan keeps its own in models/deepseek_v3/infra/parallelize.py):
llama3's tensor-parallel plan with its MoE blocks' own, and expert parallelism of the routed
experts (irlens.parallel.parallelize.expert_parallel: how a grouped-experts module is sharded)."""
from __future__ import annotations

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, PrepareModuleInputOutput, RowwiseParallel

from irlens.parallel.models.deepseek_v3.model import DeepSeekV3, MoE
from irlens.parallel.models.llama3 import parallelize as llama3
from irlens.parallel.parallelize.expert_parallel import EP_DIM, shard_experts
from irlens.parallel.parallelize.simple_fsdp import MixedPrecision
from irlens.parallel.parallelize.tensor_parallel import SEQUENCE, prepared_input

MOE_BLOCK_PLAN = {
    **{k: v for k, v in llama3.BLOCK_PLAN.items() if k.startswith("attention.")},
    "feed_forward.shared_expert.w1": ColwiseParallel(),
    "feed_forward.shared_expert.w3": ColwiseParallel(),
    "feed_forward.shared_expert.w2": RowwiseParallel(),
    # the MoE hands the shared expert its tokens plain (with or without SP): w1's and w3's input
    # gradients then add up before one all-reduce
    "feed_forward.shared_expert": prepared_input(1, sequence_parallel=False),
}

# Sequence parallelism around the MoE: the router and routed experts need every token of the
# sequence (each TP rank routes the same tokens), so the MoE takes the gathered sequence and
# gives back its rank's shard of the output (a slice: no communication; its backward all-gathers)
MOE_SEQUENCE_PARALLEL = {
    **{k: v for k, v in llama3.SEQUENCE_PARALLEL_BLOCK.items() if not k.startswith("feed_forward")},
    "feed_forward": PrepareModuleInputOutput(input_layouts=(SEQUENCE,), desired_input_layouts=(Replicate(),),
                                             use_local_input=True, output_layouts=(Replicate(),),
                                             desired_output_layouts=(SEQUENCE,)),
}


def block_plan(block: nn.Module, sequence_parallel: bool) -> dict:
    if not isinstance(block.feed_forward, MoE):
        return llama3.block_plan(block, sequence_parallel)
    attention = {"attention": prepared_input(llama3.ATTENTION_INPUTS, sequence_parallel)}
    return {**MOE_BLOCK_PLAN, **attention, **(MOE_SEQUENCE_PARALLEL if sequence_parallel else {})}


def tensor_parallel(model: DeepSeekV3, tp_mesh: DeviceMesh, sequence_parallel: bool = True,
                    loss_parallel: bool = True) -> DeepSeekV3:
    """llama3's plan for attention, the dense FFNs, embedding and output; the shared expert as a
    column/row-wise pair. The router and the routed experts stay whole on every TP rank (each TP
    rank routes the same tokens: experts are not tensor-parallel)."""
    if (model.cfg.moe_hidden * model.cfg.n_shared_experts) % tp_mesh.size():
        raise ValueError(f"tensor parallelism {tp_mesh.size()} does not divide the shared expert's hidden size")
    return llama3.tensor_parallel(model, tp_mesh, sequence_parallel, loss_parallel, block_plan)


def expert_parallel(model: DeepSeekV3, mesh: DeviceMesh, mp: MixedPrecision | None = None) -> DeepSeekV3:
    """Shard every MoE layer's routed experts over `mesh` ((dp_shard_mod_ep, ep[, tp])) in place and
    route its tokens by all-to-all over ep (`MoE.ep_mesh`). Run before SimpleFSDP, which then leaves
    the experts alone."""
    mp = mp or MixedPrecision()
    ep = mesh[EP_DIM].size()
    if model.cfg.n_experts % ep:
        raise ValueError(f"expert parallelism {ep} does not divide n_experts={model.cfg.n_experts}")
    for moe in model.moe_layers():
        shard_experts(moe.experts, mesh, mp)
        moe.ep_mesh = mesh[EP_DIM]
    return model
