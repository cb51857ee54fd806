"""A small, deterministic token data set generated on the fly (no downloads).

Each sequence packs documents of `doc_len` tokens. A document starts with BOS and continues
an arithmetic progression modulo the vocabulary, with a start and stride drawn per document
and occasional noise tokens: learnable (the loss falls within tens of steps) and never the
same twice. A batch is a pure function of (seed, step, data-parallel rank), so runs, restarts
from a checkpoint and eager-vs-compiled comparisons see identical data; TP ranks of one
data-parallel group read the same batch.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

BOS = 0
MAX_STRIDE = 7
NOISE = 0.05  # share of tokens replaced by random ones


@dataclass(frozen=True)
class TokenDataset:
    vocab_size: int
    seq_len: int
    doc_len: int
    batch_size: int  # sequences per data-parallel rank
    seed: int = 0

    def batch(self, step: int, dp_rank: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(tokens, labels), both int64 [batch_size, seq_len]; labels are the next tokens."""
        gen = torch.Generator().manual_seed(hash((self.seed, step, dp_rank)) & 0x7FFF_FFFF_FFFF)
        n_docs = -(-(self.seq_len + 1) // self.doc_len)
        shape = (self.batch_size, n_docs, 1)
        start = torch.randint(1, self.vocab_size, shape, generator=gen)
        stride = torch.randint(1, MAX_STRIDE + 1, shape, generator=gen)
        pos = torch.arange(self.doc_len)
        docs = 1 + (start + stride * pos) % (self.vocab_size - 1)  # never BOS inside a document
        docs[..., 0] = BOS
        noise = torch.rand(docs.shape, generator=gen) < NOISE
        docs = torch.where(noise, torch.randint(1, self.vocab_size, docs.shape, generator=gen), docs)
        seq = docs.flatten(1)[:, : self.seq_len + 1]
        return seq[:, :-1].contiguous(), seq[:, 1:].contiguous()
