"""The model families the parallel path trains, by `<family>:<preset>` (llama3:debug).

A family gives a config per preset (with `vocab_size`, `seq_len`, `doc_len` and
`flops_per_token()`), the module built from it (its one output: logits) and its tensor-parallel
plan. Adding a family (deepseek_v3 with expert parallelism) is one entry here.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed.device_mesh import DeviceMesh

from irlens.parallel import llama3
from irlens.parallel.tensor_parallel import tensor_parallel as llama3_tensor_parallel
from irlens.registry import Registry

DEFAULT_PRESET = "debug"


@dataclass(frozen=True)
class ModelFamily:
    name: str
    config: Callable[..., Any]  # (preset, flex=bool, seq_len=int | None) -> config
    module: Callable[[Any], nn.Module]  # config -> module, weights drawn from the global RNG
    tensor_parallel: Callable[[nn.Module, DeviceMesh], nn.Module]  # shards the module in place


FAMILIES: Registry[ModelFamily] = Registry("parallel model family")
FAMILIES.register(ModelFamily("llama3", llama3.get_config, llama3.Llama3, llama3_tensor_parallel))


def resolve(model: str, flex: bool = False, seq_len: int | None = None) -> tuple[ModelFamily, Any]:
    """`llama3` or `llama3:<preset>` -> the family and the preset's config."""
    name, _, preset = model.partition(":")
    family = FAMILIES.get(name)
    return family, family.config(preset or DEFAULT_PRESET, flex=flex, seq_len=seq_len)


def cross_entropy_loss(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, 1).float(), labels.flatten(0, 1))


class TrainStep(nn.Module):
    """Model plus loss: the module the joint graph is captured from (its one output is the loss)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        return cross_entropy_loss(self.model(tokens), labels)
