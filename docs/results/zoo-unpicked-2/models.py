"""Eight more models irlens's zoo does not hold, declared as a user would: transformers and timm
classes built from small configs with random weights, nothing downloaded. Each is
`models.py:NAME` on the command line."""
import timm
import torch
import transformers

import irlens

torch.manual_seed(0)
IDS = torch.randint(3, 120, (2, 12))
DEC_IDS = torch.randint(3, 120, (2, 8))


class Logits(torch.nn.Module):
    """A transformers model's logits (or last hidden state) as the one output."""

    def __init__(self, model):
        super().__init__()
        self.model = model.eval()

    def forward(self, ids):
        out = self.model(input_ids=ids)
        return out.logits if hasattr(out, "logits") else out.last_hidden_state


class Seq2SeqLogits(torch.nn.Module):
    """An encoder-decoder's logits for given decoder input ids (teacher forcing)."""

    def __init__(self, model):
        super().__init__()
        self.model = model.eval()

    def forward(self, ids, dec_ids):
        return self.model(input_ids=ids, decoder_input_ids=dec_ids).logits


def hf(name, model, inputs=(IDS,), wrapper=Logits):
    return irlens.Workload.from_module(name, wrapper(model), example_inputs=inputs,
                                       description=f"transformers {type(model).__name__}, 2 layers, width 32")


def vision(name, model, img=32, **kwargs):
    module = timm.create_model(model, pretrained=False, num_classes=10, **kwargs).eval()
    return irlens.Workload.from_module(name, module, example_inputs=((2, 3, img, img),),
                                       description=f"timm {model}, random weights, {img}x{img}")


TOK = dict(vocab_size=128, bos_token_id=1, eos_token_id=2, pad_token_id=0)

# BLOOM: ALiBi position biases, no position embeddings, LayerNorm after the embedding.
bloom = hf("bloom", transformers.BloomForCausalLM(transformers.BloomConfig(
    hidden_size=32, n_layer=2, n_head=4, **TOK)))
# CodeGen: partial rotary (rotary_dim 4 of head dim 8), parallel attention + MLP, fused qkv (mp_num=4).
codegen = hf("codegen", transformers.CodeGenForCausalLM(transformers.CodeGenConfig(
    n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_inner=64, n_positions=64, **TOK)))
# FNet: token mixing by a 2-D FFT (real part), no attention.
fnet = hf("fnet", transformers.FNetForMaskedLM(transformers.FNetConfig(
    hidden_size=32, num_hidden_layers=2, intermediate_size=64, max_position_embeddings=64, **TOK)))
# Marian: encoder-decoder (sinusoidal positions, cross-attention), decoder ids given.
marian = hf("marian", transformers.MarianMTModel(transformers.MarianConfig(
    d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
    encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64, decoder_start_token_id=0,
    decoder_vocab_size=128, **TOK)), inputs=(IDS, DEC_IDS), wrapper=Seq2SeqLogits)

# RepVGG: 3x3 + 1x1 + identity branches (train-time form), BN in each.
repvgg = vision("repvgg", "repvgg_a0")
# PoolFormer: token mixing by avg_pool2d(count_include_pad=False) - x, GroupNorm(1), layer scale.
poolformer = vision("poolformer", "poolformer_s12")
# LeViT: conv stem, attention with learned biases gathered by relative offset, hardswish, BN-Linear.
levit = vision("levit", "levit_128s", img=64, img_size=64)
# CaiT: talking-heads attention, class attention layers, layer scale; 2 blocks.
cait = vision("cait", "cait_xxs24_224", img=32, img_size=32, depth=2)

NAMES = ["bloom", "codegen", "fnet", "marian", "repvgg", "poolformer", "levit", "cait"]
