"""Tensor parallelism's pieces every model's plan shares (a model's own plan lives beside it:
irlens.parallel.models.<name>.parallelize): Megatron-style column/row-wise pairs over the tp mesh,
with sequence parallelism or without, and loss parallelism.

Without sequence parallelism every rank holds the whole sequence between the pairs: each
row-wise output is all-reduced (two all-reduces per block forward, two backward) and the norms
compute the whole sequence on every rank with replicated weights.

With sequence parallelism (Korthikanti et al. 2022, as torchtitan's llama3 plan) the residual
stream between the pairs holds 1/tp of the sequence (dim 1) on each rank: the norms compute
only their rank's tokens (`SequenceParallel`: weights replicated as DTensors, their gradient an
all-reduce of per-rank partial sums), each pair's input is all-gathered over the sequence
(`PrepareModuleInput`: Shard(1) -> Replicate) and each row-wise output reduce-scattered back to
it (`output_layouts=Shard(1)`). The same bytes move as with all-reduces (an all-reduce is a
reduce-scatter plus an all-gather), but norms, residual adds and their saved activations shrink
tp-fold, and an all-gather feeding a matmul or a matmul feeding a reduce-scatter is what async TP
(passes.async_tensor_parallel) pipelines.

With loss parallelism the logits stay sharded over the vocabulary and torch's `loss_parallel`
computes the cross-entropy there: each rank's max and sum of exponentials all-reduced, a
[tokens] vector each.
"""
from __future__ import annotations

import contextlib

from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import PrepareModuleInput, loss_parallel

SEQUENCE = Shard(1)  # activations [batch, sequence, dim] between the column/row-wise pairs under SP


def prepared_input(module_inputs: int, sequence_parallel: bool) -> PrepareModuleInput:
    """A module whose first input feeds several column-wise linears (attention: x, rope,
    block_mask; feed-forward, shared expert: x) takes it as one DTensor, replicated over tp: all-
    gathered from the sequence shards under SP. The linears' partial input gradients then add up
    as one DTensor and are reduced once (a reduce-scatter under SP; else one all-reduce, not one
    per linear: 2 per block in the backward instead of 5)."""
    rest = (None,) * (module_inputs - 1)
    return PrepareModuleInput(input_layouts=(SEQUENCE if sequence_parallel else Replicate(), *rest),
                              desired_input_layouts=(Replicate(), *rest))


def loss_context(enabled: bool):
    """Where the loss of vocabulary-sharded logits is computed and differentiated: torch's
    loss_parallel (cross-entropy from per-rank max and sum-exp all-reduced over tp), or nothing."""
    return loss_parallel() if enabled else contextlib.nullcontext()
