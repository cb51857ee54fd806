"""The parallel path's llama3 decoder: embedding, the blocks of irlens.workloads.builtin.common (RMSNorm with
float32 statistics, RoPE on adjacent pairs, SwiGLU, grouped-query attention by SDPA or
FlexAttention), final norm and output; its config and presets.

The shared layers let tensor parallelism shard the model without changes: attention reshapes
with `-1` heads (a TP rank holds `n_heads / tp` of them) and RoPE is applied to whatever heads
the rank holds. Every node traced inside a top-level module is annotated with that module
(`module_scope`); RoPE and FlexAttention are regions `regional_inductor` compiles. The
FlexAttention variant masks block-causally: the sequence packs documents of `doc_len` tokens and
a token attends only to earlier tokens of its own document. That mask does not depend on the
data, so its block tables are built once and kept as buffers (graph inputs of the captured joint
graph, not constants baked into it).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from irlens.workloads.builtin.common.attention import causal_sdpa
from irlens.workloads.builtin.common.decoder import TransformerBlock
from irlens.workloads.builtin.common.norm import RMSNorm
from irlens.workloads.builtin.common.rope import InterleavedRotaryEmbedding, rotate_pairs

REGION_KEY = "compile_with_inductor"  # the annotation torch.fx.passes.regional_inductor looks for
MODULE_KEY = "module"  # our annotation: which top-level module (embedding, layers.<i>, norm, output) a node belongs to


def module_scope(fqn: str):
    """Annotate every node traced inside with the module it belongs to. The joint export keeps
    annotations on forward nodes and copies them to their backward nodes; the bucketing and
    checkpointing passes group collectives and layers by it."""
    return torch.fx.traceback.annotate({MODULE_KEY: fqn})


@dataclass(frozen=True)
class Llama3Config:
    dim: int
    n_layers: int
    n_heads: int
    vocab_size: int
    ffn_hidden: int
    seq_len: int = 128
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    flex: bool = False  # FlexAttention with a block-causal mask instead of causal SDPA
    doc_len: int = 32  # document length of the packed sequence (the flex mask's blocks)
    n_kv_heads: int | None = None  # grouped-query attention: key/value heads (None: n_heads)
    batch_size: int = 2  # sequences per data-parallel rank, unless the run asks for another

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    @property
    def kv_heads(self) -> int:
        return self.n_kv_heads or self.n_heads

    def attention_params(self) -> int:
        """wq and wo (dim x dim), wk and wv (dim x kv_heads * head_dim)."""
        return 2 * self.dim * self.dim + 2 * self.dim * self.kv_heads * self.head_dim

    def layer_params(self, layer: int) -> int:
        """The parameters of layer `layer` a token is computed with: attention, two norms, the feed-forward."""
        return self.attention_params() + 2 * self.dim + 3 * self.dim * self.ffn_hidden

    def num_params(self, exclude_embedding: bool = True) -> int:
        layers = sum(self.layer_params(i) for i in range(self.n_layers))
        n = layers + self.dim + self.vocab_size * self.dim  # + final norm, output
        return n if exclude_embedding else n + self.vocab_size * self.dim

    def flops_per_token(self) -> float:
        """Training FLOPs per token: 6 per matmul weight a token is computed with (the embedding
        lookup is none) plus attention's score and value matmuls over the whole sequence, causal
        mask or not (the PaLM appendix-B count, as torchtitan reports MFU)."""
        return 6 * self.num_params() + 12 * self.n_layers * self.dim * self.seq_len


PRESETS: dict[str, Llama3Config] = {
    "debug": Llama3Config(dim=256, n_layers=6, n_heads=16, vocab_size=2048, ffn_hidden=768, seq_len=128),
    # smaller than debug, for tests that only need the graph's shape; grouped-query attention (2
    # key/value heads for 4 query heads), so the tests cover it under TP, SimpleFSDP and the passes
    "tiny": Llama3Config(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=256, ffn_hidden=192, seq_len=64,
                         doc_len=16),
    "300M": Llama3Config(dim=1024, n_layers=16, n_heads=16, vocab_size=32000, ffn_hidden=4096, seq_len=2048, doc_len=512,
                         batch_size=8),
    # 16k tokens per rank: on one H100 eager makes twice the tokens/s of batch 2
    "1B": Llama3Config(dim=2048, n_layers=16, n_heads=16, vocab_size=32000, ffn_hidden=8192, seq_len=2048, doc_len=512,
                       batch_size=8),
    # Llama 3 8B's shapes (GQA with 8 key/value heads, vocabulary 128256, 8k context); 32 layers need
    # 8 GPUs' memory: `--n-layers 4` fits one H100 (~1.9B parameters, 1.4B of them in matmuls)
    "8B": Llama3Config(dim=4096, n_layers=32, n_heads=32, n_kv_heads=8, vocab_size=128256, ffn_hidden=14336,
                       seq_len=8192, doc_len=2048, batch_size=1),
}


def get_config(preset: str, flex: bool = False, seq_len: int | None = None, n_layers: int | None = None) -> Llama3Config:
    """The preset's config, with the attention variant, sequence length and depth asked for."""
    return resolve_config("llama3", PRESETS, preset, flex, seq_len, n_layers)


def resolve_config(family: str, presets: dict, preset: str, flex: bool, seq_len: int | None,
                   n_layers: int | None = None):
    """A family's preset (a Llama3Config, or one built on it) with the attention variant, sequence
    length and number of layers asked for."""
    if preset not in presets:
        raise ValueError(f"unknown {family} preset {preset!r}; choose from: {', '.join(presets)}")
    cfg = replace(presets[preset], flex=flex)
    if seq_len is not None:
        cfg = replace(cfg, seq_len=seq_len, doc_len=min(cfg.doc_len, seq_len))
    if n_layers is not None:
        if n_layers < 1:
            raise ValueError(f"--n-layers must be >= 1, got {n_layers}")
        cfg = replace(cfg, n_layers=n_layers)
    if cfg.flex and cfg.seq_len % cfg.doc_len:
        raise ValueError(f"seq_len {cfg.seq_len} must be a multiple of doc_len {cfg.doc_len} for the block-causal mask")
    return cfg


class RoPE(InterleavedRotaryEmbedding):
    """Each rotation (a chain of elementwise ops) an annotated region `regional_inductor` fuses,
    on the CPU too, where FlexAttention cannot train."""

    rotate = staticmethod(torch.fx.traceback.annotate_fn({REGION_KEY: "rope"})(rotate_pairs))


def block_causal_mask_mod(doc_len: int):
    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx // doc_len == kv_idx // doc_len)

    return mask_mod


_BLOCK_MASK_FIELDS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices")


class BlockCausalMask(nn.Module):
    """The block-causal BlockMask, its tables held as non-persistent buffers."""

    def __init__(self, cfg: Llama3Config):
        super().__init__()
        from torch.nn.attention.flex_attention import create_block_mask

        self.mask_mod = block_causal_mask_mod(cfg.doc_len)
        bm = create_block_mask(self.mask_mod, None, None, cfg.seq_len, cfg.seq_len,
                               device=torch.get_default_device())
        self.block_size = bm.BLOCK_SIZE
        self.seq_lengths = bm.seq_lengths
        for f in _BLOCK_MASK_FIELDS:
            self.register_buffer(f, getattr(bm, f), persistent=False)

    def forward(self):
        from torch.nn.attention.flex_attention import BlockMask

        return BlockMask.from_kv_blocks(
            self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks, self.full_kv_indices,
            BLOCK_SIZE=self.block_size, mask_mod=self.mask_mod, seq_lengths=self.seq_lengths,
        )


@torch.fx.traceback.annotate_fn({REGION_KEY: "flex_attention"})
def flex_attention_region(q, k, v, block_mask):
    """FlexAttention inside an annotated region: `regional_inductor` compiles exactly this."""
    from torch.nn.attention.flex_attention import flex_attention

    return flex_attention(q, k, v, block_mask=block_mask)


class Llama3(nn.Module):
    def __init__(self, cfg: Llama3Config):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        inner = flex_attention_region if cfg.flex else causal_sdpa
        # norms in float32: bf16 compute keeps their statistics accurate
        self.layers = nn.ModuleDict({str(i): TransformerBlock(cfg.dim, cfg.n_heads, cfg.kv_heads, cfg.ffn_hidden,
                                                              cfg.norm_eps, upcast_norm=True, inner=inner)
                                     for i in range(cfg.n_layers)})
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps, upcast=True)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        self.rope = RoPE(cfg.head_dim, cfg.seq_len, cfg.rope_theta)  # one set of tables for every block
        self.block_mask = BlockCausalMask(cfg) if cfg.flex else None
        self.init_weights()

    def init_weights(self) -> None:
        """Scaled-normal init (residual projections scaled by depth), drawn from the global RNG."""
        std = 0.02
        nn.init.normal_(self.tok_embeddings.weight, std=1.0)
        for layer in self.layers.values():
            for lin in (layer.attention.wq, layer.attention.wk, layer.attention.wv, layer.feed_forward.w1, layer.feed_forward.w3):
                nn.init.trunc_normal_(lin.weight, std=std)
            for lin in (layer.attention.wo, layer.feed_forward.w2):
                nn.init.trunc_normal_(lin.weight, std=std / (2 * self.cfg.n_layers) ** 0.5)
        nn.init.trunc_normal_(self.output.weight, std=self.cfg.dim ** -0.5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        block_mask = self.block_mask() if self.block_mask is not None else None
        with module_scope("tok_embeddings"):
            h = self.tok_embeddings(tokens)
        for name, layer in self.layers.items():
            with module_scope(f"layers.{name}"):
                h = layer(h, self.rope, block_mask)
        with module_scope("norm"):
            h = self.norm(h)
        with module_scope("output"):
            return self.output(h)
