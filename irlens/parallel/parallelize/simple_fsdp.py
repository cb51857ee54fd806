"""SimpleFSDP: fully sharded data parallelism written as plain DTensor ops.

Every parameter is stored as a DTensor sharded on dim 0 over the data-parallel mesh dimension
(and keeps its tensor-parallel placement on the TP dimension). Reading `module.weight` goes
through a parametrization that redistributes the shard to a replica: an all-gather in the
forward, and -- because the replica's gradient is declared `Partial` -- a reduce-scatter of
the gradient in the backward. Both are ordinary collectives in the traced graph, so graph
passes can bucket, reorder and reshard them; nothing is hidden in hooks.

The parametrization is a property on a per-class subclass (as torch's parametrize does, but
without its caching): `named_parameters()` still yields the sharded DTensors, so optimizers,
checkpoints and `torch.func.functional_call` see the shards.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
from torch.distributed.tensor.placement_types import _StridedShard

DP_DIM = "dp_shard"
TP_DIM = "tp"


@dataclass(frozen=True)
class MixedPrecision:
    """Compute dtype of the gathered parameters and dtype the gradients are reduced in."""

    param_dtype: torch.dtype | None = None
    reduce_dtype: torch.dtype | None = None


class GatherForCompute:
    """DP shard -> replica for compute (all-gather); its gradient Partial -> shard (reduce-scatter)."""

    def __init__(self, mesh: DeviceMesh, mp: MixedPrecision, tp_compute: bool):
        self.mesh = mesh
        self.mp = mp
        # the module computes with DTensors on the tp mesh (the TP plan distributed its parameters,
        # replicated ones too: sequence-parallel norms); else with plain tensors
        self.tp_mesh = mesh[TP_DIM] if tp_compute else None

    def __call__(self, param: DTensor) -> torch.Tensor:
        # placements are (dp,) or (dp, tp): gather the dp dim, keep the tp placement
        tp_placements = tuple(param.placements[1:])
        replica = param.redistribute(
            placements=(Replicate(), *tp_placements),
            forward_dtype=self.mp.param_dtype,
            backward_dtype=self.mp.reduce_dtype,
        )
        # The gradient arrives as per-rank partial sums: the backward reduce-scatters it.
        local = replica.to_local(grad_placements=(Partial("avg"), *tp_placements))
        if self.tp_mesh is None:
            return local  # not tensor-parallel: the module computes with plain tensors
        return DTensor.from_local(local, self.tp_mesh, tp_placements, run_check=False,
                                  shape=replica.shape, stride=replica.stride())


def _dp_placement(tp_placement, tp_size: int):
    """Dim-0 sharding over dp. A weight already sharded on dim 0 by TP is split by TP first, then
    by dp (right-to-left), which DTensor spells `_StridedShard` so a dp all-gather yields the
    TP shard."""
    if isinstance(tp_placement, Shard) and tp_placement.dim == 0:
        return _StridedShard(0, split_factor=tp_size)
    return Shard(0)


def _shard_param(param: torch.Tensor, mesh: DeviceMesh) -> nn.Parameter:
    tp = TP_DIM in (mesh.mesh_dim_names or ())
    if isinstance(param, DTensor):  # already distributed by the TP plan over the tp mesh
        (tp_placement,) = param.placements
        full = param.full_tensor()
    else:
        tp_placement, full = Replicate(), param.data
    placements = (_dp_placement(tp_placement, mesh[TP_DIM].size()), tp_placement) if tp else (Shard(0),)
    # Every rank holds the same full tensor (same seed): slice locally, no broadcast.
    return nn.Parameter(distribute_tensor(full.detach(), mesh, placements, src_data_rank=None),
                        requires_grad=param.requires_grad)


_PARAMETRIZED_CLASSES: dict[type, type] = {}


def parametrized_class(cls: type, names: tuple[str, ...]) -> type:
    """A subclass of `cls` whose parameter attributes read through the module's gather."""
    key = (cls, names)
    if key not in _PARAMETRIZED_CLASSES:
        def make_property(name):
            return property(lambda self: self._fsdp_gather(self._parameters[name]))

        attrs = {name: make_property(name) for name in names}
        _PARAMETRIZED_CLASSES[key] = type(f"SimpleFSDP{cls.__name__}", (cls,), attrs)
    return _PARAMETRIZED_CLASSES[key]


def data_parallel(model: nn.Module, mesh: DeviceMesh, mp: MixedPrecision | None = None) -> nn.Module:
    """Shard every parameter of `model` over the mesh's dp dimension, in place.

    `mesh` is 1-D (dp) or 2-D (dp, tp); with TP, apply the TP plan first: its DTensors on the
    tp mesh become DTensors on the 2-D mesh.
    """
    mp = mp or MixedPrecision()
    for module in model.modules():
        names = tuple(n for n, p in module._parameters.items() if p is not None)
        if not names or hasattr(module, "_fsdp_gather"):  # none, or sharded already (expert_parallel)
            continue
        tp_compute = any(isinstance(module._parameters[n], DTensor) for n in names)
        for n in names:
            module._parameters[n] = _shard_param(module._parameters[n], mesh)
        module.__class__ = parametrized_class(type(module), names)
        # a plain attribute, not a submodule: module paths (and the graph's module stack) stay the model's
        object.__setattr__(module, "_fsdp_gather", GatherForCompute(mesh, mp, tp_compute))
    return model
