"""transformers models of the zoo, built from configs (`AutoConfig.for_model`) with random weights.

`tiny` is one small shape per architecture (2 layers, width 32, 128 tokens of vocabulary,
2 x 16 tokens); `bench` the published configuration of the checkpoint each description names,
with fewer layers where it says so (the float64 reference of a 7B model would not fit one GPU).
Dropout is off (p=0) everywhere, and `use_cache=False`: a step returns tensors only.
"""
from __future__ import annotations

import importlib.util

from irlens.workloads.zoo.entry import Outputs, ZooModel

# the heads: transformers' Auto class, the model's argument names, the output fields returned
HEADS = {
    "causal_lm": ("AutoModelForCausalLM", ("input_ids", "attention_mask"), ("logits",)),
    "causal_lm_nomask": ("AutoModelForCausalLM", ("input_ids",), ("logits",)),
    "base": ("AutoModel", ("input_ids", "attention_mask"), ("last_hidden_state",)),
    "seq2seq_lm": ("AutoModelForSeq2SeqLM", ("input_ids", "attention_mask", "decoder_input_ids"), ("logits",)),
    "image_cls": ("AutoModelForImageClassification", ("pixel_values",), ("logits",)),
    "audio_base": ("AutoModel", ("input_values",), ("last_hidden_state",)),
    "encoder": (None, ("input_features",), ("last_hidden_state",)),  # the encoder of an encoder-decoder model
}

TINY_TEXT = {"batch": 2, "seq": 16, "vocab": 128}
BENCH_TEXT = {"batch": 4, "seq": 512}


def _transformers():
    from irlens._compat import import_torchvision

    if importlib.util.find_spec("torchvision") is not None:
        import_torchvision()  # transformers imports it where installed (see _compat)
    import transformers

    return transformers


def build(model_type: str, head: str):
    """cfg -> the module: `cfg["config"]` are the config's arguments."""

    def make(cfg: dict):
        tf = _transformers()
        config = tf.AutoConfig.for_model(model_type, **cfg["config"])
        auto, inputs, outputs = HEADS[head]
        if auto is None:
            model = tf.AutoModel.from_config(config).get_encoder()
        else:
            model = getattr(tf, auto).from_config(config)
        return Outputs(model, inputs, outputs)

    return make


def text(tiny_config: dict, bench_config: dict, *, vocab_key: str = "vocab_size", tiny: dict | None = None,
         bench: dict | None = None) -> dict:
    """The presets of a text model: its config at each size, and the inputs' sizes."""
    tiny_in = {**TINY_TEXT, **(tiny or {})}
    bench_in = {**BENCH_TEXT, **(bench or {})}
    return {"tiny": {**tiny_in, "config": {vocab_key: tiny_in["vocab"], **tiny_config}},
            "bench": {**bench_in, "vocab": bench_config[vocab_key], "config": bench_config}}


def decoder(**overrides) -> dict:
    """A llama-like decoder's tiny config: 2 layers, width 32, 4 heads of 8 (2 key/value heads)."""
    return {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 64, "use_cache": False, **overrides}


def encoder(**overrides) -> dict:
    """A BERT-like encoder's tiny config, dropout off."""
    return {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "max_position_embeddings": 64, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0,
            **overrides}


NO_DROPOUT_BERT = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
# The experts of a tiny MoE as transformers' batched matmuls over each token's gathered expert
# weights: static shapes, ops the common view names. Its default (grouped_mm: torch's grouped GEMM,
# or off bfloat16 a custom op looping over data-dependent offsets) stays at the bench size, where
# gathering weights per token would not fit; there the common view counts that op as unknown.
BATCHED = {"experts_implementation": "batched_mm"}


def hf(name: str, model_type: str, head: str, kind: str, presets: dict, description: str,
       inputs: str = "tokens") -> ZooModel:
    return ZooModel(name, "hf", kind, build(model_type, head), inputs, presets, description=description)


MODELS = [
    # decoders
    hf("hf_llama", "llama", "causal_lm", "decoder", text(decoder(), {
        "vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 4,
        "num_attention_heads": 32, "num_key_value_heads": 8, "rope_theta": 500000.0, "tie_word_embeddings": True,
        "use_cache": False}), "Llama 3.2 1B (4 of 16 layers): RMSNorm, RoPE, GQA, SwiGLU"),
    hf("hf_qwen2", "qwen2", "causal_lm", "decoder", text(decoder(), {
        "vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 4,
        "num_attention_heads": 14, "num_key_value_heads": 2, "tie_word_embeddings": True, "use_cache": False}),
        "Qwen2.5 0.5B (4 of 24 layers): QKV biases, GQA"),
    hf("hf_qwen3", "qwen3", "causal_lm", "decoder", text(decoder(head_dim=8), {
        "vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 4,
        "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "tie_word_embeddings": True,
        "use_cache": False}), "Qwen3 0.6B (4 of 28 layers): q/k RMSNorm"),
    hf("hf_gemma", "gemma", "causal_lm", "decoder", text(decoder(num_key_value_heads=1, head_dim=8), {
        "vocab_size": 256000, "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 4,
        "num_attention_heads": 8, "num_key_value_heads": 1, "head_dim": 256, "use_cache": False}),
        "Gemma 2B (4 of 18 layers): GeGLU, multi-query attention, scaled embeddings"),
    hf("hf_mistral", "mistral", "causal_lm", "decoder", text(decoder(sliding_window=8), {
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 2,
        "num_attention_heads": 32, "num_key_value_heads": 8, "sliding_window": 4096, "use_cache": False}),
        "Mistral 7B v0.1 (2 of 32 layers): sliding-window attention"),
    hf("hf_phi", "phi", "causal_lm", "decoder", text(decoder(num_key_value_heads=4, partial_rotary_factor=0.5,
                                                             resid_pdrop=0.0, embd_pdrop=0.0), {
        "vocab_size": 51200, "hidden_size": 2560, "intermediate_size": 10240, "num_hidden_layers": 2,
        "num_attention_heads": 32, "partial_rotary_factor": 0.4, "use_cache": False}),
        "Phi-2 (2 of 32 layers): parallel attention and MLP, partial rotary"),
    hf("hf_phi3", "phi3", "causal_lm", "decoder", text(decoder(num_key_value_heads=4, pad_token_id=0, bos_token_id=0,
                                                               eos_token_id=0), {
        "vocab_size": 32064, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 2,
        "num_attention_heads": 32, "num_key_value_heads": 32, "pad_token_id": 32000, "use_cache": False}),
        "Phi-3 mini (2 of 32 layers): fused QKV and gate-up projections"),
    hf("hf_gpt2", "gpt2", "causal_lm", "decoder", text(
        {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "resid_pdrop": 0.0, "embd_pdrop": 0.0,
         "attn_pdrop": 0.0, "use_cache": False, "bos_token_id": 0, "eos_token_id": 0},
        {"vocab_size": 50257, "n_embd": 768, "n_layer": 12, "n_head": 12, "n_positions": 1024, "use_cache": False}),
        "GPT-2 124M: learned positions, Conv1D projections, tanh GELU"),
    hf("hf_gpt_neox", "gpt_neox", "causal_lm", "decoder", text(
        {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "max_position_embeddings": 64, "rotary_pct": 0.25, "use_cache": False},
        {"vocab_size": 50304, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
         "num_attention_heads": 12, "rotary_pct": 0.25, "use_cache": False}),
        "Pythia 160M (GPT-NeoX): parallel residual, partial rotary"),
    hf("hf_opt", "opt", "causal_lm", "decoder", text(
        {"hidden_size": 32, "ffn_dim": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "max_position_embeddings": 64, "word_embed_proj_dim": 32, "dropout": 0.0, "use_cache": False},
        {"vocab_size": 50272, "hidden_size": 768, "ffn_dim": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
         "word_embed_proj_dim": 768, "use_cache": False}),
        "OPT 125M: learned positions with an offset, ReLU MLP"),
    # encoders
    hf("hf_bert", "bert", "base", "encoder", text(encoder(), {
        "vocab_size": 30522, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
        "num_attention_heads": 12, **NO_DROPOUT_BERT}), "BERT base: post-LN encoder, GELU"),
    hf("hf_roberta", "roberta", "base", "encoder", text(encoder(pad_token_id=1), {
        "vocab_size": 50265, "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
        "num_attention_heads": 12, "max_position_embeddings": 514, "pad_token_id": 1, **NO_DROPOUT_BERT}),
        "RoBERTa base: positions from the padding mask"),
    hf("hf_distilbert", "distilbert", "base", "encoder", text(
        {"dim": 32, "hidden_dim": 64, "n_layers": 2, "n_heads": 4, "max_position_embeddings": 64, "dropout": 0.0,
         "attention_dropout": 0.0},
        {"vocab_size": 30522, "dim": 768, "hidden_dim": 3072, "n_layers": 6, "n_heads": 12, "dropout": 0.0,
         "attention_dropout": 0.0}), "DistilBERT base: 6 layers"),
    hf("hf_albert", "albert", "base", "encoder", text(encoder(embedding_size=16), {
        "vocab_size": 30000, "embedding_size": 128, "hidden_size": 768, "intermediate_size": 3072,
        "num_hidden_layers": 12, "num_attention_heads": 12, **NO_DROPOUT_BERT}),
        "ALBERT base v2: factorized embeddings, one layer's weights shared by all"),
    hf("hf_electra", "electra", "base", "encoder", text(encoder(embedding_size=16), {
        "vocab_size": 30522, "embedding_size": 128, "hidden_size": 256, "intermediate_size": 1024,
        "num_hidden_layers": 12, "num_attention_heads": 4, **NO_DROPOUT_BERT}),
        "ELECTRA small discriminator: embeddings projected to the hidden width"),
    # encoder-decoders
    hf("hf_t5", "t5", "seq2seq_lm", "encoder-decoder", text(
        {"d_model": 32, "d_ff": 64, "d_kv": 8, "num_layers": 2, "num_heads": 4, "dropout_rate": 0.0,
         "decoder_start_token_id": 0, "use_cache": False},
        {"vocab_size": 32128, "d_model": 512, "d_ff": 2048, "d_kv": 64, "num_layers": 6, "num_heads": 8,
         "dropout_rate": 0.0, "decoder_start_token_id": 0, "use_cache": False},
        tiny={"decoder_seq": 8}, bench={"decoder_seq": 128}), "T5 small: relative position buckets, RMS norm"),
    hf("hf_bart", "bart", "seq2seq_lm", "encoder-decoder", text(
        {"d_model": 32, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "encoder_layers": 2, "decoder_layers": 2,
         "encoder_attention_heads": 4, "decoder_attention_heads": 4, "max_position_embeddings": 64, "dropout": 0.0,
         "attention_dropout": 0.0, "activation_dropout": 0.0, "use_cache": False},
        {"vocab_size": 50265, "d_model": 768, "encoder_ffn_dim": 3072, "decoder_ffn_dim": 3072, "encoder_layers": 6,
         "decoder_layers": 6, "encoder_attention_heads": 12, "decoder_attention_heads": 12, "dropout": 0.0,
         "attention_dropout": 0.0, "activation_dropout": 0.0, "use_cache": False},
        tiny={"decoder_seq": 8}, bench={"decoder_seq": 128}), "BART base: learned positions, post-LN"),
    # a state-space model
    hf("hf_mamba", "mamba", "causal_lm_nomask", "ssm", text(
        {"hidden_size": 32, "state_size": 4, "num_hidden_layers": 2, "expand": 2, "conv_kernel": 4,
         "use_cache": False},
        # the sequential scan unrolls into every graph once per token and layer: at 24 layers of 512
        # tokens no stack compiled it within 170 s on an H200 (docs/results/zoo-h200-bench)
        {"vocab_size": 50280, "hidden_size": 768, "state_size": 16, "num_hidden_layers": 2, "expand": 2,
         "conv_kernel": 4, "use_cache": False}, tiny={"no_mask": True}, bench={"no_mask": True, "seq": 64}),
        "Mamba 130M (2 of 24 layers, 64 tokens): selective scan (the sequential path), causal depthwise conv"),
    # mixtures of experts
    hf("hf_mixtral", "mixtral", "causal_lm", "moe", text(decoder(num_local_experts=4, num_experts_per_tok=2, **BATCHED), {
        "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 1,
        "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8, "num_experts_per_tok": 2,
        "use_cache": False}), "Mixtral 8x7B (1 of 32 layers): top-2 of 8 experts"),
    hf("hf_qwen2_moe", "qwen2_moe", "causal_lm", "moe", text(decoder(
        num_key_value_heads=4, moe_intermediate_size=16, shared_expert_intermediate_size=32, num_experts=4,
        num_experts_per_tok=2, **BATCHED), {
        "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "moe_intermediate_size": 1408,
        "shared_expert_intermediate_size": 5632, "num_hidden_layers": 2, "num_attention_heads": 16,
        "num_key_value_heads": 16, "num_experts": 60, "num_experts_per_tok": 4, "use_cache": False}),
        "Qwen1.5 MoE A2.7B (2 of 24 layers): top-4 of 60 experts and a gated shared expert"),
    # vision
    hf("hf_vit", "vit", "image_cls", "vision", {
        "tiny": {"batch": 2, "img": 32, "config": {**encoder(), "image_size": 32, "patch_size": 8, "num_labels": 10}},
        "bench": {"batch": 32, "img": 224, "config": {"hidden_size": 768, "intermediate_size": 3072,
                                                      "num_hidden_layers": 12, "num_attention_heads": 12,
                                                      "image_size": 224, "patch_size": 16, "num_labels": 1000,
                                                      **NO_DROPOUT_BERT}}},
        "ViT base/16 at 224 (google/vit-base-patch16-224), a classification head", inputs="pixels"),
    # audio encoders
    hf("hf_whisper_encoder", "whisper", "encoder", "audio", {
        "tiny": {"batch": 2, "mels": 8, "frames": 32, "config": {
            "d_model": 32, "encoder_layers": 2, "decoder_layers": 1, "encoder_attention_heads": 4,
            "decoder_attention_heads": 4, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "num_mel_bins": 8,
            "max_source_positions": 16, "vocab_size": 128, "dropout": 0.0, "attention_dropout": 0.0,
            "activation_dropout": 0.0, "pad_token_id": 0, "bos_token_id": 0, "eos_token_id": 0,
            "decoder_start_token_id": 0}},
        "bench": {"batch": 8, "mels": 80, "frames": 3000, "config": {
            "d_model": 512, "encoder_layers": 6, "decoder_layers": 6, "encoder_attention_heads": 8,
            "decoder_attention_heads": 8, "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "num_mel_bins": 80,
            "max_source_positions": 1500, "vocab_size": 51865, "dropout": 0.0, "attention_dropout": 0.0,
            "activation_dropout": 0.0}}},
        "Whisper base's encoder: two convolutions over log-mel frames, sinusoidal positions", inputs="audio"),
    hf("hf_wav2vec2", "wav2vec2", "audio_base", "audio", {
        "tiny": {"batch": 2, "samples": 400, "config": {
            "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "conv_dim": (16, 16), "conv_stride": (5, 2), "conv_kernel": (10, 3), "num_conv_pos_embeddings": 8,
            "num_conv_pos_embedding_groups": 4, "hidden_dropout": 0.0, "attention_dropout": 0.0,
            "activation_dropout": 0.0, "feat_proj_dropout": 0.0, "layerdrop": 0.0, "mask_time_prob": 0.0}},
        "bench": {"batch": 4, "samples": 16000 * 4, "config": {
            "hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12,
            "hidden_dropout": 0.0, "attention_dropout": 0.0, "activation_dropout": 0.0, "feat_proj_dropout": 0.0,
            "layerdrop": 0.0, "mask_time_prob": 0.0}}},
        "wav2vec 2.0 base: a convolutional feature encoder over raw audio, then a transformer", inputs="audio"),
]
