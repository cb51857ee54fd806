"""The model families the parallel path trains, by `<family>:<preset>` (llama3:debug).

A family gives a config per preset (with `vocab_size`, `seq_len`, `doc_len`, `batch_size` (the
default sequences per data-parallel rank) and `flops_per_token()`), the module built from it (its one output: logits) and its tensor-parallel
plan (the model's parallelize.py); a mixture-of-experts family also its expert parallelism and its router's load counters.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor

from irlens.parallel.models.deepseek_v3 import model as deepseek_v3, parallelize as deepseek_v3_plan
from irlens.parallel.models.llama3 import model as llama3, parallelize as llama3_plan
from irlens.parallel.names import DEFAULT_PRESET
from irlens.core.registry import Registry


@dataclass(frozen=True)
class ModelFamily:
    name: str
    config: Callable[..., Any]  # (preset, flex=bool, seq_len=int | None, n_layers=int | None) -> config
    module: Callable[[Any], nn.Module]  # config -> module, weights drawn from the global RNG
    # (module, tp mesh, sequence_parallel, loss_parallel) -> module: shards the module in place
    tensor_parallel: Callable[[nn.Module, DeviceMesh, bool, bool], nn.Module]
    # (module, expert mesh, MixedPrecision) -> module: shards the experts in place; None: no experts
    expert_parallel: Callable[..., nn.Module] | None = None
    # module -> [2, n_experts] routed and kept assignments since the last call (then reset)
    expert_load: Callable[[nn.Module], torch.Tensor] | None = None


FAMILIES: Registry[ModelFamily] = Registry("parallel model family")
FAMILIES.register(ModelFamily("llama3", llama3.get_config, llama3.Llama3, llama3_plan.tensor_parallel))
FAMILIES.register(ModelFamily("deepseek_v3", deepseek_v3.get_config, deepseek_v3.DeepSeekV3,
                              deepseek_v3_plan.tensor_parallel, deepseek_v3_plan.expert_parallel,
                              deepseek_v3.expert_load))


def resolve(model: str, flex: bool = False, seq_len: int | None = None,
            n_layers: int | None = None) -> tuple[ModelFamily, Any]:
    """`llama3`, `deepseek_v3` or `<family>:<preset>` -> the family and the preset's config."""
    name, _, preset = model.partition(":")
    family = FAMILIES.get(name)
    return family, family.config(preset or DEFAULT_PRESET, flex=flex, seq_len=seq_len, n_layers=n_layers)


def cross_entropy_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    loss = F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))
    # logits sharded over the vocabulary (loss parallel): the loss is a DTensor replicated over tp
    return loss.to_local() if isinstance(loss, DTensor) else loss


class TrainStep(nn.Module):
    """Model plus loss: the module the joint graph is captured from (its one output is the loss)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return cross_entropy_loss(self.model(tokens), labels)
