"""Tensor parallelism for llama3: Megatron-style column/row-wise plans over the tp mesh.

Each attention and feed-forward pair is one column-wise (output dim sharded, no communication)
followed by one row-wise linear (input dim sharded, an all-reduce of the partial outputs), so a
block costs two all-reduces forward and two backward. The embedding is sharded by vocabulary
rows (all-reduce of the looked-up rows), the output projection by vocabulary columns
(all-gather of the logits). Norm weights stay replicated over tp.
"""
from __future__ import annotations

from typing import Callable

from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import Replicate
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

BLOCK_PLAN = {
    "attention.wq": ColwiseParallel(),
    "attention.wk": ColwiseParallel(),
    "attention.wv": ColwiseParallel(),
    "attention.wo": RowwiseParallel(),
    "feed_forward.w1": ColwiseParallel(),
    "feed_forward.w3": ColwiseParallel(),
    "feed_forward.w2": RowwiseParallel(),
}


def tensor_parallel(model: nn.Module, tp_mesh: DeviceMesh,
                    block_plan: Callable[[nn.Module], dict] = lambda block: BLOCK_PLAN) -> nn.Module:
    """Shard `model` (a Llama3, or a model built on it) over `tp_mesh` in place; n_heads,
    n_kv_heads, ffn_hidden and vocab_size must divide by tp. `block_plan` gives each block's plan (deepseek_v3: MoE blocks')."""
    cfg, tp = model.cfg, tp_mesh.size()
    for what, n in (("n_heads", cfg.n_heads), ("n_kv_heads", cfg.kv_heads), ("ffn_hidden", cfg.ffn_hidden),
                    ("vocab_size", cfg.vocab_size)):
        if n % tp:
            raise ValueError(f"tensor parallelism {tp} does not divide {what}={n}")
    parallelize_module(model, tp_mesh, {
        "tok_embeddings": RowwiseParallel(input_layouts=Replicate(), output_layouts=Replicate()),
        "output": ColwiseParallel(output_layouts=Replicate()),
    })
    for block in model.layers.values():
        parallelize_module(block, tp_mesh, block_plan(block))
    return model
