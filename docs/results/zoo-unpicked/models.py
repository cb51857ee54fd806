"""Models irlens's zoo does not hold, declared as a user would (targets "on models its
developers did not pick"): transformers and timm classes built from small configs with random
weights, nothing downloaded. Each is `models.py:NAME` on the command line."""
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


def text(name, config_class, model_class, **sizes):
    config = config_class(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=64, bos_token_id=1, eos_token_id=2, pad_token_id=0, **sizes)
    return irlens.Workload.from_module(name, Logits(model_class(config)), example_inputs=(IDS,),
                                       description=f"transformers {model_class.__name__}, 2 layers, width 32")


def vision(name, model, img=32, **kwargs):
    module = timm.create_model(model, pretrained=False, num_classes=10, **kwargs).eval()
    return irlens.Workload.from_module(name, module, example_inputs=((2, 3, img, img),),
                                       description=f"timm {model}, random weights, {img}x{img}")


falcon = text("falcon", transformers.FalconConfig, transformers.FalconForCausalLM, ffn_hidden_size=64)
stablelm = text("stablelm", transformers.StableLmConfig, transformers.StableLmForCausalLM, num_key_value_heads=2)
starcoder2 = text("starcoder2", transformers.Starcoder2Config, transformers.Starcoder2ForCausalLM,
                  num_key_value_heads=2)
olmo = text("olmo", transformers.OlmoConfig, transformers.OlmoForCausalLM)
granite = text("granite", transformers.GraniteConfig, transformers.GraniteForCausalLM)
deberta = text("deberta", transformers.DebertaV2Config, transformers.DebertaV2Model)
mpnet = text("mpnet", transformers.MPNetConfig, transformers.MPNetModel)

regnet = vision("regnet", "regnetx_002")
ghostnet = vision("ghostnet", "ghostnet_050")
densenet = vision("densenet", "densenet121", growth_rate=8, block_config=(2, 2, 2, 2))
mixer = vision("mixer", "mixer_s16_224", img=32, img_size=32)

NAMES = ["falcon", "stablelm", "starcoder2", "olmo", "granite", "deberta", "mpnet",
         "regnet", "ghostnet", "densenet", "mixer"]
