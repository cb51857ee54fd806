"""`moe_topk`: a small mixture-of-experts layer with top-k token-choice routing and static shapes,
as compile-friendly MoE code writes it: a softmax router picks k experts per token; each
(token, choice) takes the next free slot of its expert's buffer (capacity-limited, overflow
dropped); tokens are scattered into the buffers, the experts run as one batched matmul, and each
token gathers its outputs back and sums them, weighted (a scatter-add).
Part of the corpus of ordinary model code."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from irlens.workloads.builtin.layers import linear, scope
from irlens.workloads.workload import CORPUS, Workload, register

class MoE(nn.Module):
    def __init__(self, dim: int, hidden_dim: int, n_experts: int, top_k: int, capacity_factor: float):
        super().__init__()
        self.n_experts, self.top_k, self.capacity_factor = n_experts, top_k, capacity_factor
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(n_experts, dim, hidden_dim) * dim**-0.5)
        self.w_out = nn.Parameter(torch.randn(n_experts, hidden_dim, dim) * hidden_dim**-0.5)

    def forward(self, x):
        B, T, D = x.shape
        x = x.view(-1, D)
        N, E, K = x.shape[0], self.n_experts, self.top_k
        capacity = math.ceil(self.capacity_factor * N * K / E)
        probs = self.router(x).softmax(dim=-1)
        weights, experts = probs.topk(K, dim=-1)  # [N, K]
        weights = weights / weights.sum(dim=-1, keepdim=True)
        # each (token, choice) in order takes its expert's next slot; past capacity, the spare last slot
        flat = experts.view(-1)
        onehot = F.one_hot(flat, E)
        position = ((onehot.cumsum(dim=0) - 1) * onehot).sum(dim=-1)
        slot = torch.where(position < capacity, flat * capacity + position, E * capacity)
        buf = torch.zeros(E * capacity + 1, D, dtype=x.dtype, device=x.device)
        buf = buf.scatter(0, slot.view(-1, 1).expand(-1, D), x.repeat_interleave(K, dim=0))  # dispatch
        h = F.silu(torch.bmm(buf[:-1].view(E, capacity, D), self.w_in))
        y = torch.bmm(h, self.w_out).view(E * capacity, D)
        y = torch.cat([y, torch.zeros(1, D, dtype=y.dtype, device=y.device)])  # a dropped choice reads zeros
        routed = y[slot] * weights.view(-1, 1)  # gather
        token = torch.arange(N, device=x.device).repeat_interleave(K)
        out = torch.zeros(N, D, dtype=x.dtype, device=x.device)
        out = out.scatter_add(0, token.view(-1, 1).expand(-1, D), routed)  # combine
        return out.view(B, T, D)


def _jax(cfg):
    import jax
    import jax.numpy as jnp

    E, K, capacity_factor = cfg["n_experts"], cfg["top_k"], cfg["capacity_factor"]

    def moe_topk(params, x):
        B, T, D = x.shape
        x = x.reshape(-1, D)
        N = x.shape[0]
        capacity = math.ceil(capacity_factor * N * K / E)
        probs = jax.nn.softmax(linear(scope(params, "router"), x, bias=False), axis=-1)
        weights, experts = jax.lax.top_k(probs, K)
        weights = weights / weights.sum(axis=-1, keepdims=True)
        flat = experts.reshape(-1)
        onehot = jax.nn.one_hot(flat, E, dtype=jnp.int32)
        position = ((jnp.cumsum(onehot, axis=0) - 1) * onehot).sum(axis=-1)
        slot = jnp.where(position < capacity, flat * capacity + position, E * capacity)
        buf = jnp.zeros((E * capacity + 1, D), x.dtype).at[slot].set(jnp.repeat(x, K, axis=0))
        h = jax.nn.silu(buf[:-1].reshape(E, capacity, D) @ params["w_in"])
        y = (h @ params["w_out"]).reshape(E * capacity, D)
        y = jnp.concatenate([y, jnp.zeros((1, D), y.dtype)])
        routed = y[slot] * weights.reshape(-1, 1)
        out = jnp.zeros((N, D), x.dtype).at[jnp.repeat(jnp.arange(N), K)].add(routed)
        return out.reshape(B, T, D)

    return moe_topk


def _inputs(cfg, dtype, gen):
    return (torch.randn(cfg["batch"], cfg["seq"], cfg["dim"], generator=gen).to(dtype),)


register(Workload(
    "moe_topk", lambda cfg: MoE(cfg["dim"], cfg["hidden_dim"], cfg["n_experts"], cfg["top_k"], cfg["capacity_factor"]),
    _inputs,
    # tiny: 16 tokens x 2 choices over 4 experts of 8 slots; two experts get 9 and 10, so some are dropped
    {"tiny": {"batch": 2, "seq": 8, "dim": 16, "hidden_dim": 32, "n_experts": 4, "top_k": 2, "capacity_factor": 1.0},
     "bench": {"batch": 4, "seq": 2048, "dim": 1024, "hidden_dim": 2048, "n_experts": 8, "top_k": 2,
               "capacity_factor": 1.25}},
    jax=_jax, tags=(CORPUS,),
    description="top-2 of 4/8 experts: softmax router, capacity slots, scatter dispatch, batched experts, gather + scatter-add combine"))
