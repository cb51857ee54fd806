"""`minigpt`: a small GPT language model: token + learned position embeddings, N pre-LN
blocks (`layers.Block`), final LayerNorm and a bias-free LM head; returns the logits."""
from __future__ import annotations

import torch
from torch import nn

from irlens.workloads.builtin import layers
from irlens.workloads.workload import Workload, register

# bench, fp32 forward+backward without activation checkpointing, estimated
# (N = batch*seq = 8192 tokens, d = 1536, 4 bytes a float):
#   parameters ~442M (12 blocks x 12d² = 340M, token embedding and LM head 50M each): 1.8 GB,
#     their gradients another 1.8 GB;
#   saved activations per block ~17 floats of d per token (LN in/out 2x2, q k v 3, attention
#     out 1, its reshaped copy 1, MLP hidden before and after GELU 4+4): 0.86 GB, x12 = 10.3 GB;
#   where attention is not fused (XLA's default, decomposed SDPA) the [B, H, T, T] scores and
#     probabilities add 2 x 0.4 GB per block: up to 9.7 GB;
#   logits [N, vocab] 1.1 GB, kept as the output, saved for the loss, and their gradient: ~3.3 GB.
# Peak ~18 GB with fused attention, ~28 GB without. Measured on an H200 (torch 2.11, jax 0.11.2):
# eager torch 15.9 GB, jitted JAX (jax_run.results_fn) 28.6 GB. Not larger, so that the float64
# reference (twice that) and a compiler's extra buffers still fit on one 141 GB H200.
PRESETS = {
    "tiny": {"vocab": 128, "d_model": 64, "n_heads": 4, "n_layers": 2, "batch": 2, "seq": 16},
    "bench": {"vocab": 32768, "d_model": 1536, "n_heads": 12, "n_layers": 12, "batch": 8, "seq": 1024},
}


class MiniGPT(nn.Module):
    def __init__(self, vocab: int, d_model: int, n_heads: int, n_layers: int, max_seq: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(max_seq, d_model)
        self.blocks = nn.ModuleList(layers.Block(d_model, n_heads) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model, eps=layers.LAYER_NORM_EPS)
        self.lm_head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok_emb(tokens) + self.pos_emb(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


def _module(cfg):
    return MiniGPT(cfg["vocab"], cfg["d_model"], cfg["n_heads"], cfg["n_layers"], max_seq=cfg["seq"])


def _inputs(cfg, dtype, gen):
    # token ids stay int64 whatever the compute dtype
    return (torch.randint(cfg["vocab"], (cfg["batch"], cfg["seq"]), generator=gen),)


def _jax(cfg):
    def minigpt(params, tokens):
        x = params["tok_emb.weight"][tokens] + params["pos_emb.weight"][: tokens.shape[1]]
        for i in range(cfg["n_layers"]):
            x = layers.block(layers.scope(params, f"blocks.{i}"), x, cfg["n_heads"])
        return layers.linear(layers.scope(params, "lm_head"), layers.layer_norm(layers.scope(params, "ln_f"), x), bias=False)

    return minigpt


register(Workload("minigpt", _module, _inputs, PRESETS, jax=_jax,
                  description="small GPT LM: token + position embeddings, pre-LN blocks, final LN, LM head (logits)"))
