"""Eight more models irlens's zoo does not hold, declared as a user would: transformers and timm
classes built from small configs with random weights, nothing downloaded, eval mode. Each is
`models.py:NAME` on the command line. Picked for ops the zoo and the two earlier unpicked sets do
not stress: recurrences (RWKV's WKV loop, an LSTM), Mamba2's chunked scan, sequence pooling,
dynamic convolutions, split attention, 2-D rotary embeddings, unfold/fold patches."""
import timm
import torch
import transformers

import irlens

torch.manual_seed(0)
IDS = torch.randint(3, 120, (2, 12))


class Logits(torch.nn.Module):
    """A transformers model's logits (or last hidden state) as the one output."""

    def __init__(self, model):
        super().__init__()
        self.model = model.eval()

    def forward(self, ids):
        out = self.model(input_ids=ids)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


def hf(name, model, inputs=(IDS,), wrapper=Logits):
    return irlens.Workload.from_module(name, wrapper(model).eval(), example_inputs=inputs,
                                       description=f"transformers {type(model).__name__}, 2 layers, width 32")


def vision(name, model, img=32, **kwargs):
    module = timm.create_model(model, pretrained=False, num_classes=10, **kwargs).eval()
    return irlens.Workload.from_module(name, module, example_inputs=((2, 3, img, img),),
                                       description=f"timm {model}, random weights, {img}x{img}")


TOK = dict(vocab_size=128, bos_token_id=1, eos_token_id=2, pad_token_id=0)

# RWKV (v4): no attention; the WKV time-mixing recurrence is a Python loop over the 12 tokens
# (exp, maximum for a running log-sum-exp state), token shift by ZeroPad2d, squared-ReLU channel mix.
# use_cache=False: with the cache on, its state is written in place and backward fails in eager.
rwkv = hf("rwkv", transformers.RwkvForCausalLM(transformers.RwkvConfig(
    hidden_size=32, num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64,
    context_length=64, use_cache=False, **TOK)))
# Mamba2: the SSD chunked scan in plain torch (segment sums by cumsum + tril masks, exp of
# decays, einsum across chunks), grouped RMSNorm gated by SiLU, causal depthwise conv1d.
mamba2 = hf("mamba2", transformers.Mamba2ForCausalLM(transformers.Mamba2Config(
    hidden_size=32, num_hidden_layers=2, state_size=16, expand=2, head_dim=16, num_heads=4,
    n_groups=1, conv_kernel=4, chunk_size=8, **TOK)))
# Funnel Transformer: the sequence is mean-pooled (avg_pool2d over tokens) between blocks, then
# upsampled back (repeat_interleave) by a decoder; relative-position attention with
# shift/gather of position scores, token-type biases.
funnel = hf("funnel", transformers.FunnelModel(transformers.FunnelConfig(
    block_sizes=[1, 1], num_decoder_layers=1, d_model=32, n_head=4, d_head=8, d_inner=64,
    max_position_embeddings=64, **TOK)))
# ConvBERT: span-based dynamic convolution heads beside self-attention (kernels predicted per
# token, softmax over kernel taps, unfold of the value sequence), grouped linear in the FFN.
convbert = hf("convbert", transformers.ConvBertModel(transformers.ConvBertConfig(
    hidden_size=32, embedding_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
    head_ratio=2, conv_kernel_size=3, num_groups=2, max_position_embeddings=64, **TOK)))

# Sequencer2D: bidirectional LSTMs run along rows and along columns of the feature map
# (nn.LSTM, aten's _lstm path), no attention; depths cut to one block per stage, widths to 32.
# Caveat found in the run: timm zero-initializes this model's classifier head, so every output and
# gradient is exactly zero and irlens's check of it "cannot fail"; redraw head.weight to compare.
sequencer = vision("sequencer", "sequencer2d_s", img=32, layers=[1, 1, 1, 1], patch_sizes=[4, 2, 1, 1],
                   embed_dims=[32, 32, 32, 32], hidden_sizes=[16, 16, 16, 16])
# ResNeSt: split attention (radix-2 grouped conv, softmax across the radix, weighted sum),
# average-pool downsampling in the shortcut, deep stem.
resnest = vision("resnest", "resnest14d")
# EVA-02: 2-D rotary position embeddings applied to q and k (interleaved sin/cos), SwiGLU MLP
# with a sub-LayerNorm, class token; 2 blocks, width 32, patch 4 at 32x32.
eva02 = vision("eva02", "eva02_tiny_patch14_224", img=32, img_size=32, patch_size=4, depth=2,
               embed_dim=32, num_heads=4)
# MobileViT: convolutions interleaved with transformers over unfolded 2x2 patches
# (reshape/transpose unfold and fold of the feature map), inverted residuals, SiLU.
mobilevit = vision("mobilevit", "mobilevit_xxs", img=64)

NAMES = ["rwkv", "mamba2", "funnel", "convbert", "sequencer", "resnest", "eva02", "mobilevit"]
