"""The two ends of a language model, as training code writes them: `embedding` (token ids ->
vectors through nn.Embedding) and `lm_cross_entropy` (LM head, then cross-entropy against integer
targets, padding marked -100 and ignored). Part of the corpus of ordinary model code."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from irlens.workloads.workload import CORPUS, Workload, register

IGNORE_INDEX = -100  # F.cross_entropy's default, what tokenizers' collators pad labels with


class LMHeadLoss(nn.Module):
    """Hidden states -> logits over the vocabulary -> mean cross-entropy over the non-padding targets."""

    def __init__(self, dim: int, vocab: int):
        super().__init__()
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, h, targets):
        logits = self.lm_head(h)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=IGNORE_INDEX)


def _lm_head_loss_jax(cfg):
    import jax
    import jax.numpy as jnp

    def lm_cross_entropy(params, h, targets):
        logits = h @ params["lm_head.weight"].T
        logp = jax.nn.log_softmax(logits, axis=-1)
        valid = targets != IGNORE_INDEX
        picked = jnp.take_along_axis(logp, jnp.where(valid, targets, 0)[..., None], axis=-1)[..., 0]
        return -jnp.sum(jnp.where(valid, picked, 0.0)) / jnp.sum(valid)

    return lm_cross_entropy


def _lm_inputs(cfg, dtype, gen):
    B, T = cfg["batch"], cfg["seq"]
    targets = torch.randint(cfg["vocab"], (B, T), generator=gen)
    targets[-1, -T // 4:] = IGNORE_INDEX  # the last sequence is padded
    return torch.randn(B, T, cfg["dim"], generator=gen).to(dtype), targets


def _embedding_jax(cfg):
    def embedding(params, tokens):
        return params["weight"][tokens]

    return embedding


def _token_ids(cfg, dtype, gen):
    return (torch.randint(cfg["vocab"], (cfg["batch"], cfg["seq"]), generator=gen),)


register(Workload(
    "lm_cross_entropy", lambda cfg: LMHeadLoss(cfg["dim"], cfg["vocab"]), _lm_inputs,
    {"tiny": {"batch": 2, "seq": 8, "dim": 32, "vocab": 64},
     "bench": {"batch": 4, "seq": 1024, "dim": 1024, "vocab": 32000}},
    jax=_lm_head_loss_jax, loss=lambda outputs: outputs[0], tags=(CORPUS,),
    description="LM head then F.cross_entropy with int64 targets (-100 = padding, ignored); the loss is the output"))

# tiny: 32 draws from 24 ids, so some repeat and the weight's gradient accumulates
register(Workload(
    "embedding", lambda cfg: nn.Embedding(cfg["vocab"], cfg["dim"]), _token_ids,
    {"tiny": {"batch": 2, "seq": 16, "vocab": 24, "dim": 32},
     "bench": {"batch": 16, "seq": 2048, "vocab": 32000, "dim": 4096}},
    jax=_embedding_jax, tags=(CORPUS,),
    description="nn.Embedding lookup of int64 token ids"))
