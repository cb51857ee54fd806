"""A DeepSeek-V3-style mixture-of-experts decoder for the parallel path.

llama3's decoder (embedding, RMSNorm, RoPE, SDPA or FlexAttention attention, output) with the
feed-forward of every layer after the first `n_dense_layers` replaced by a mixture of experts:
a sigmoid router picks `top_k` of `n_experts` routed experts per token (weights normalized over
the chosen ones, as DeepSeek-V3), plus a shared expert every token goes through. Attention is
llama3's multi-head attention, not DeepSeek's multi-head latent attention.

Dispatch is capacity-based so every shape is static (one joint graph, equal all-to-all splits):
each expert takes at most `capacity = ceil(capacity_factor * tokens * top_k / n_experts)`
assignments from each rank's tokens, first come first served in token order; assignments past
that are dropped (the token keeps its other experts and the shared expert). The routed and kept
counts per expert accumulate in a buffer, `expert_load`, which training reads (and resets) each
step to report the router's load balance and the dropped share.

Expert parallelism (parallelize.py) sets `MoE.ep_mesh`: the experts' slots then go to the
rank holding the expert by an all-to-all and come back by another.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributed._functional_collectives import all_to_all_single_autograd
from torch.distributed.device_mesh import DeviceMesh

from irlens.workloads.builtin.common.feed_forward import FeedForward
from irlens.parallel.models.llama3 import model as llama3


@dataclass(frozen=True, kw_only=True)
class DeepSeekV3Config(llama3.Llama3Config):
    """llama3's config (the decoder's shape; `ffn_hidden`: the dense layers' feed-forward) plus the experts."""

    moe_hidden: int  # each expert's (routed and shared) hidden size
    n_experts: int = 8
    top_k: int = 3
    n_shared_experts: int = 1
    n_dense_layers: int = 1
    capacity_factor: float = 1.5
    rope_theta: float = 10000.0  # DeepSeek's rotary base (llama3's is 500000)

    def layer_params(self, layer: int) -> int:
        """Parameters a token is computed with (the active ones: top_k routed experts of a MoE layer)."""
        if layer < self.n_dense_layers:
            return super().layer_params(layer)
        experts = 3 * self.dim * self.moe_hidden * (self.top_k + self.n_shared_experts) + self.dim * self.n_experts
        return self.attention_params() + 2 * self.dim + experts


PRESETS: dict[str, DeepSeekV3Config] = {
    "debug": DeepSeekV3Config(dim=256, n_layers=6, n_heads=16, vocab_size=2048, ffn_hidden=768, moe_hidden=256),
    # smaller than debug, for tests: one dense and one MoE layer
    "tiny": DeepSeekV3Config(dim=64, n_layers=2, n_heads=4, vocab_size=256, ffn_hidden=192, moe_hidden=64,
                             seq_len=64, doc_len=16),
    # ~2.1B parameters, ~0.8B active per token: a GPU preset (DeepSeek-V2-Lite-like widths)
    "2B": DeepSeekV3Config(dim=2048, n_layers=12, n_heads=16, vocab_size=32000, ffn_hidden=8192, moe_hidden=1408,
                           n_experts=16, top_k=3, n_shared_experts=2, seq_len=2048, doc_len=512, batch_size=4),
}


def get_config(preset: str, flex: bool = False, seq_len: int | None = None,
               n_layers: int | None = None) -> DeepSeekV3Config:
    cfg = llama3.resolve_config("deepseek_v3", PRESETS, preset, flex, seq_len, n_layers)
    if cfg.n_layers <= cfg.n_dense_layers:
        raise ValueError(f"deepseek_v3:{preset} needs more than its {cfg.n_dense_layers} dense layer(s) "
                         f"for a mixture of experts; got --n-layers {cfg.n_layers}")
    return cfg


class Router(nn.Module):
    def __init__(self, cfg: DeepSeekV3Config):
        super().__init__()
        self.top_k = cfg.top_k
        self.gate = nn.Linear(cfg.dim, cfg.n_experts, bias=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x [N, dim] -> (weights [N, top_k] in x's dtype, experts [N, top_k])."""
        scores = torch.sigmoid(self.gate(x).float())
        top, experts = scores.topk(self.top_k, dim=-1)
        return (top / top.sum(-1, keepdim=True)).type_as(x), experts


class GroupedExperts(nn.Module):
    """The routed experts' SwiGLU weights stacked on dim 0 (the dim expert parallelism shards)."""

    def __init__(self, cfg: DeepSeekV3Config):
        super().__init__()
        self.w1 = nn.Parameter(torch.empty(cfg.n_experts, cfg.dim, cfg.moe_hidden))
        self.w3 = nn.Parameter(torch.empty(cfg.n_experts, cfg.dim, cfg.moe_hidden))
        self.w2 = nn.Parameter(torch.empty(cfg.n_experts, cfg.moe_hidden, cfg.dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x [local experts, slots, dim]: each expert's slots through its own weights."""
        w1, w2, w3 = self.w1, self.w2, self.w3  # each read gathers (SimpleFSDP): once
        return torch.bmm(F.silu(torch.bmm(x, w1)) * torch.bmm(x, w3), w2)


def capacity(cfg: DeepSeekV3Config, n_tokens: int) -> int:
    return math.ceil(cfg.capacity_factor * n_tokens * cfg.top_k / cfg.n_experts)


def dispatch_slots(experts: torch.Tensor, n_experts: int, cap: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Assignments [N, top_k] -> (slot of each assignment in the [n_experts * cap] buffer, with
    n_experts * cap for dropped ones; [2, n_experts] routed and kept counts). Static shapes only."""
    flat = experts.flatten()
    # a comparison, not F.one_hot: one_hot traces to a scatter plus range checks on the indices
    onehot = (flat[:, None] == torch.arange(n_experts, device=flat.device)).long()
    position = onehot.cumsum(0).gather(1, flat[:, None]).squeeze(1) - 1  # arrival order at its expert
    kept = position < cap
    slots = torch.where(kept, flat * cap + position, n_experts * cap)
    load = torch.stack((onehot.sum(0), (onehot * kept[:, None]).sum(0)))
    return slots, load


class MoE(nn.Module):
    def __init__(self, cfg: DeepSeekV3Config):
        super().__init__()
        self.cfg = cfg
        self.router = Router(cfg)
        self.experts = GroupedExperts(cfg)
        self.shared_expert = FeedForward(cfg.dim, cfg.moe_hidden * cfg.n_shared_experts)
        self.register_buffer("expert_load", torch.zeros(2, cfg.n_experts), persistent=False)
        self.ep_mesh: DeviceMesh | None = None  # set by parallelize.expert_parallel

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        cfg, shape = self.cfg, x.shape
        tokens = x.reshape(-1, shape[-1])
        weights, experts = self.router(tokens)
        cap = capacity(cfg, tokens.shape[0])
        slots, load = dispatch_slots(experts, cfg.n_experts, cap)
        with torch.no_grad():
            self.expert_load.add_(load.float())
        # one extra row takes the dropped assignments and is cut off
        buf = tokens.new_zeros(cfg.n_experts * cap + 1, shape[-1])
        buf = buf.index_copy(0, slots, tokens.repeat_interleave(cfg.top_k, dim=0))
        out = self.run_experts(buf[:-1].view(cfg.n_experts, cap, -1)).reshape(cfg.n_experts * cap, -1)
        out = torch.cat((out, out.new_zeros(1, out.shape[-1])))  # dropped assignments read zeros
        routed = (out.index_select(0, slots).view(-1, cfg.top_k, shape[-1]) * weights[..., None]).sum(1)
        return (routed + self.shared_expert(tokens)).view(shape)

    def run_experts(self, slots: torch.Tensor) -> torch.Tensor:
        """slots [n_experts, capacity, dim] of this rank's tokens -> the experts' outputs, same shape.
        Under expert parallelism: all-to-all to the experts' ranks and back (equal splits)."""
        if self.ep_mesh is None:
            return self.experts(slots)
        ep = self.ep_mesh.size()
        n_local, cap, dim = slots.shape[0] // ep, slots.shape[1], slots.shape[2]
        # dim 0 is ordered by expert, so rank r's split is exactly the experts it holds
        received = all_to_all_single_autograd(slots, None, None, self.ep_mesh)  # [source rank * local expert, cap, dim]
        received = received.view(ep, n_local, cap, dim).transpose(0, 1).reshape(n_local, ep * cap, dim)
        out = self.experts(received)
        out = out.view(n_local, ep, cap, dim).transpose(0, 1).reshape(ep * n_local, cap, dim)
        return all_to_all_single_autograd(out, None, None, self.ep_mesh)


class DeepSeekV3(llama3.Llama3):
    """llama3's decoder (its forward, attention, norms, init) with MoE feed-forwards after the dense layers."""

    def __init__(self, cfg: DeepSeekV3Config):
        super().__init__(cfg)
        std = 0.02
        for i, layer in self.layers.items():
            if int(i) < cfg.n_dense_layers:
                continue
            # replaces the dense FFN llama3 built: its (transient) weights are dropped here
            moe = layer.feed_forward = MoE(cfg)
            for w in (moe.router.gate.weight, moe.experts.w1, moe.experts.w3, moe.shared_expert.w1.weight,
                      moe.shared_expert.w3.weight):
                nn.init.trunc_normal_(w, std=std)
            for w in (moe.experts.w2, moe.shared_expert.w2.weight):
                nn.init.trunc_normal_(w, std=std / (2 * cfg.n_layers) ** 0.5)

    def moe_layers(self) -> list[MoE]:
        return [layer.feed_forward for layer in self.layers.values() if isinstance(layer.feed_forward, MoE)]


def expert_load(model: DeepSeekV3) -> torch.Tensor:
    """The routed and kept assignments per expert [2, n_experts] since the last call, summed over
    the MoE layers (rank-local); resets the counters."""
    layers = model.moe_layers()
    total = sum(m.expert_load for m in layers).clone()
    for m in layers:
        m.expert_load.zero_()
    return total
