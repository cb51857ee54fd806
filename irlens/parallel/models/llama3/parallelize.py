"""llama3's tensor-parallel plan (torchtitan keeps its own in models/llama3/infra/parallelize.py),
with sequence parallelism (on by default) or without, over the pieces every plan shares
(irlens.parallel.parallelize.tensor_parallel).

Each attention and feed-forward pair is one column-wise (output dim sharded, no communication)
followed by one row-wise linear (input dim sharded, partial outputs). The embedding is sharded
by vocabulary rows, the output projection by vocabulary columns. With loss parallelism (on by
default, as torchtitan) the logits stay sharded over the vocabulary and the cross-entropy is
computed there (`loss_context`), instead of all-gathering [tokens, vocab] logits to every rank
and computing the same loss on each. Under sequence parallelism the norms compute their rank's
tokens, each pair's input is all-gathered over the sequence and each row-wise output
reduce-scattered back to it (as torchtitan's llama3 plan).
"""
from __future__ import annotations

from typing import Callable

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate, Shard
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, SequenceParallel, parallelize_module

from irlens.parallel.parallelize.tensor_parallel import SEQUENCE, prepared_input

BLOCK_PLAN = {
    "attention.wq": ColwiseParallel(),
    "attention.wk": ColwiseParallel(),
    "attention.wv": ColwiseParallel(),
    "attention.wo": RowwiseParallel(),
    "feed_forward.w1": ColwiseParallel(),
    "feed_forward.w3": ColwiseParallel(),
    "feed_forward.w2": RowwiseParallel(),
}

ATTENTION_INPUTS = 3  # x, the rotary embedding, the block mask (irlens.workloads.builtin.common.decoder)

# What sequence parallelism changes in a block besides its inputs: norms over the sequence shard,
# the row-wise outputs reduce-scattered to it
SEQUENCE_PARALLEL_BLOCK = {
    "attention_norm": SequenceParallel(),
    "attention.wo": RowwiseParallel(output_layouts=SEQUENCE),
    "ffn_norm": SequenceParallel(),
    "feed_forward.w2": RowwiseParallel(output_layouts=SEQUENCE),
}


def block_plan(block: nn.Module, sequence_parallel: bool) -> dict:
    return {**BLOCK_PLAN, "attention": prepared_input(ATTENTION_INPUTS, sequence_parallel),
            "feed_forward": prepared_input(1, sequence_parallel),
            **(SEQUENCE_PARALLEL_BLOCK if sequence_parallel else {})}


def _model_plan(sequence_parallel: bool, loss_parallel: bool) -> dict:
    # loss parallel: the logits stay sharded over the vocabulary (a DTensor) for the loss
    output = dict(output_layouts=Shard(-1), use_local_output=False) if loss_parallel else \
        dict(output_layouts=Replicate())
    if not sequence_parallel:
        return {"tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Replicate()),
                "output": ColwiseParallel(**output)}
    return {"tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=SEQUENCE),
            "norm": SequenceParallel(),
            "output": ColwiseParallel(input_layouts=SEQUENCE, **output)}


def check_divisible(cfg, tp: int, sequence_parallel: bool) -> None:
    """A ValueError naming the size tp does not divide (a llama3 config, or one built on it)."""
    sizes = [("n_heads", cfg.n_heads), ("n_kv_heads", cfg.kv_heads), ("ffn_hidden", cfg.ffn_hidden),
             ("vocab_size", cfg.vocab_size)] + ([("seq_len", cfg.seq_len)] if sequence_parallel else [])
    for what, n in sizes:
        if n % tp:
            raise ValueError(f"tensor parallelism {tp} does not divide {what}={n}"
                             + (" (sequence parallelism shards the sequence; --no-sequence-parallel does not)"
                                if what == "seq_len" else ""))


def tensor_parallel(model: nn.Module, tp_mesh: DeviceMesh, sequence_parallel: bool = True, loss_parallel: bool = True,
                    plan_of_block: Callable[[nn.Module, bool], dict] = block_plan) -> nn.Module:
    """Shard `model` (a Llama3, or a model built on it) over `tp_mesh` in place; n_heads,
    n_kv_heads, ffn_hidden and vocab_size must divide by tp, and with sequence parallelism
    seq_len too. With loss parallelism the model's logits are a DTensor sharded over the
    vocabulary: its loss must be computed and differentiated in `loss_context(True)`.
    `plan_of_block(block, sequence_parallel)` gives each block's plan (deepseek_v3: MoE blocks')."""
    check_divisible(model.cfg, tp_mesh.size(), sequence_parallel)
    parallelize_module(model, tp_mesh, _model_plan(sequence_parallel, loss_parallel))
    for block in model.layers.values():
        parallelize_module(block, tp_mesh, plan_of_block(block, sequence_parallel))
    return model
