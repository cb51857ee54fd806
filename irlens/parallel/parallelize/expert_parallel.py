"""Expert parallelism: routed experts sharded over an `ep` mesh dimension, tokens moved by all-to-all
(a model's MoE layers are sharded by its own plan: irlens.parallel.models.deepseek_v3.parallelize).

The ep ranks are borrowed from data parallelism (as torchtitan does): `dp_shard` ranks factor
as `dp_shard_mod_ep x ep`, giving the expert mesh `(dp_shard_mod_ep, ep[, tp])` over the same
ranks as the dense mesh `(dp_shard[, tp])`. Each ep rank holds `n_experts / ep` whole experts
(dim 0, `Shard(0)` over ep). Each MoE layer sends every expert's capacity slots to the rank that
holds the expert and gets the outputs back: two `all_to_all_single` forward, two backward, with
equal splits, so the joint graph's shapes are static.

The experts' own data parallelism is SimpleFSDP over the remaining `dp_shard_mod_ep` ranks
(their dim 1, `Shard(1)`; no collective where that size is 1). An expert's gradient on its ep
rank already sums the losses of all ep ranks' tokens (the all-to-all's backward brings them),
so on top of FSDP's average over dp_shard_mod_ep it is divided by ep: the experts' gradients
then average over all dp_shard ranks, as the dense parameters' do. Experts are replicated over
tp (every TP rank of a group routes the same tokens and computes the same experts).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

from irlens.parallel.parallelize.simple_fsdp import MixedPrecision, parametrized_class

EFSDP_DIM = "dp_shard_mod_ep"
EP_DIM = "ep"


class _ScaleGrad(torch.autograd.Function):
    """Identity forward; the gradient times `factor` (a plain mul in the joint graph's backward)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, factor: float) -> torch.Tensor:
        ctx.factor = factor
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad * ctx.factor, None


class GatherExpertsForCompute:
    """Expert shard (Shard(1) over dp_shard_mod_ep, Shard(0) over ep) -> this ep rank's whole experts:
    an all-gather over dp_shard_mod_ep forward, a reduce-scatter of the gradient backward."""

    def __init__(self, mesh: DeviceMesh, mp: MixedPrecision):
        self.mp = mp
        self.ep = mesh[EP_DIM].size()

    def __call__(self, param: DTensor) -> torch.Tensor:
        rest = tuple(param.placements[1:])  # Shard(0) over ep (and Replicate over tp)
        local = param.redistribute(
            placements=(Replicate(), *rest), forward_dtype=self.mp.param_dtype, backward_dtype=self.mp.reduce_dtype,
        ).to_local(grad_placements=(Partial("avg"), *rest))
        return _ScaleGrad.apply(local, 1.0 / self.ep)


def shard_experts(experts: nn.Module, mesh: DeviceMesh, mp: MixedPrecision) -> None:
    """Shard a grouped-experts module (each parameter [n_experts, ...]) over `mesh`
    ((dp_shard_mod_ep, ep[, tp])) in place: whole experts per ep rank, their dim 1 over
    dp_shard_mod_ep, gathered for compute (`GatherExpertsForCompute`)."""
    placements = (Shard(1), Shard(0), *(Replicate(),) * (mesh.ndim - 2))
    names = tuple(experts._parameters)
    for n in names:
        # every rank holds the same full tensor (same seed): slice locally, no broadcast
        full = experts._parameters[n].detach()
        experts._parameters[n] = nn.Parameter(distribute_tensor(full, mesh, placements, src_data_rank=None))
    experts.__class__ = parametrized_class(type(experts), names)
    object.__setattr__(experts, "_fsdp_gather", GatherExpertsForCompute(mesh, mp))
