"""timm models of the zoo: `timm.create_model(name, pretrained=False, ...)`, random weights.

`bench` is the named model as published, at its own image size; `tiny` the same architecture
with narrow, shallow stages at 32x32 (its constructor's own arguments), timm's own small test
model of the same class (`test_*`) where the published name fixes its sizes, or, where timm has
no such test model, the model class itself at small sizes (`tiny_class`). Dropout and drop
path are off (p=0): the train-mode entries (BatchNorm updating its running statistics) stay
deterministic.

A classifier head timm initializes to zeros (MLP-Mixer's) is redrawn (`live_head`): with it the
output is the head's bias whatever the input, and no check could fail. Residual branches timm
starts at zero are started live: ResNet's last norm scale (`zero_init_last=False`, LIVE_BRANCHES)
and NFNet's last convolution's gain and skipinit gain (`live_gains`); at zero every gradient inside
the branch is exactly zero on every stack, a check that cannot fail.
"""
from __future__ import annotations

import torch

from irlens.workloads.zoo.entry import ZooModel

HEAD_SEED = 2027  # the redrawn head's generator (`live_head`)
HEAD_STD = 0.02  # its weights' standard deviation: timm's own for a ViT's head (trunc_normal_, std .02)
SKIPINIT_GAIN = 0.5  # NFNet's skipinit gains' live start (`live_gains`), exact in every float dtype


def build(cfg: dict):
    from irlens._compat import import_timm

    timm = import_timm()
    args = {"num_classes": cfg["classes"], "drop_rate": 0.0, "drop_path_rate": 0.0, **cfg.get("kwargs", {})}
    if cfg.get("class"):  # every registered name of the architecture fixes its sizes
        model = getattr(timm.models, cfg["model"])(**args)
    else:
        model = timm.create_model(cfg["model"], pretrained=False, **args)
    return live_gains(live_head(model))


def live_gains(model: torch.nn.Module) -> torch.nn.Module:
    """The model, each residual branch NFNet starts at zero started live. At zero the branch's
    output and every gradient inside it are exactly zero (ResNet's counterpart: `zero_init_last=False`).
    - Each scaled weight-standardized convolution's all-zero gain (`gain_init=0`, the branch's last
      convolution) set to 1, the layer's own default.
    - Each block's zero `skipinit_gain` (timm's skipinit NFNets, the dm_nfnet_* models, multiply the
      branch's output by it in place) set to SKIPINIT_GAIN: not 1, under which the in-place multiply
      leaves its operand as it was and a backward that reads the product for it goes unseen."""
    from timm.layers import ScaledStdConv2d, ScaledStdConv2dSame

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (ScaledStdConv2d, ScaledStdConv2dSame)) and not m.gain.any():
                m.gain.fill_(1.0)
            gain = getattr(m, "skipinit_gain", None)
            if isinstance(gain, torch.nn.Parameter) and not gain.any():
                gain.fill_(SKIPINIT_GAIN)
    return model


def live_head(model: torch.nn.Module) -> torch.nn.Module:
    """The model, its classifier head's all-zero weight matrices (timm's `get_classifier()`) redrawn
    from N(0, HEAD_STD^2) with a generator seeded HEAD_SEED. A zero head makes the output its bias
    (zero) for every input, and the loss and every gradient but the head's exactly zero: each check
    passes whatever a backend computed before the head. Only the head, and only an all-zero matrix:
    a zero elsewhere (BEiT's relative position bias tables) is the architecture's own starting
    point and leaves the output live; a zero bias is kept."""
    heads = model.get_classifier()
    gen = None  # on the device the model was built on
    with torch.no_grad():
        for head in heads if isinstance(heads, tuple) else (heads,):
            for weight in head.parameters():
                if weight.ndim >= 2 and not weight.any():
                    gen = gen or torch.Generator(weight.device).manual_seed(HEAD_SEED)
                    weight.normal_(0.0, HEAD_STD, generator=gen)
    return model


def timm_model(name: str, kind: str, tiny: tuple[str, dict], bench: tuple[str, dict], description: str, *,
               training: bool = False, tiny_img: int = 32, bench_img: int = 224, bench_batch: int = 64,
               tiny_class: bool = False) -> ZooModel:
    """An entry: (model name, constructor arguments) at each size; with `tiny_class`, the tiny
    model's name is a class of `timm.models`."""
    presets = {"tiny": {"model": tiny[0], "kwargs": tiny[1], "classes": 10, "batch": 4, "img": tiny_img,
                        **({"class": True} if tiny_class else {})},
               "bench": {"model": bench[0], "kwargs": bench[1], "classes": 1000, "batch": bench_batch,
                         "img": bench_img}}
    return ZooModel(name, "timm", kind, build, "pixels", presets, training=training, description=description)


# zero_init_last=False: timm zeroes each residual branch's last norm scale, which zeroes every
# gradient inside the branch at initialization (no backward left to compare)
LIVE_BRANCHES = {"zero_init_last": False}
SMALL_RESNET = {"layers": (1, 1, 1, 1), "channels": (8, 16, 16, 32), "stem_width": 8, **LIVE_BRANCHES}
SMALL_VIT = {"img_size": 32, "patch_size": 8, "embed_dim": 32, "depth": 2, "num_heads": 4}

MODELS = [
    timm_model("timm_resnet18", "vision", ("resnet18", SMALL_RESNET), ("resnet18", LIVE_BRANCHES),
               "ResNet-18 in train mode: BatchNorm normalizes by the batch and updates its running statistics",
               training=True),
    timm_model("timm_resnet50", "vision", ("resnet50", SMALL_RESNET), ("resnet50", LIVE_BRANCHES),
               "ResNet-50: bottleneck blocks, BatchNorm folded in eval mode"),
    timm_model("timm_efficientnet", "vision", ("test_efficientnet", {}), ("efficientnet_b0", {}),
               "EfficientNet-B0 in train mode: depthwise convolutions, squeeze-excite, SiLU, BatchNorm statistics",
               training=True),
    timm_model("timm_mobilenetv3", "vision", ("mobilenetv3_small_050", {}), ("mobilenetv3_large_100", {}),
               "MobileNetV3 large (tiny: small x0.5): hard-swish, squeeze-excite"),
    timm_model("timm_convnext", "vision", ("convnext_tiny", {"depths": (1, 1, 1, 1), "dims": (8, 16, 24, 32)}),
               ("convnext_tiny", {}), "ConvNeXt tiny: 7x7 depthwise convolutions, LayerNorm over channels"),
    timm_model("timm_vit", "vision", ("vit_base_patch16_224", SMALL_VIT), ("vit_base_patch16_224", {}),
               "ViT base/16: patch embedding, class token, pre-LN blocks", bench_batch=32),
    timm_model("timm_deit", "vision", ("deit_tiny_distilled_patch16_224", SMALL_VIT),
               ("deit_tiny_distilled_patch16_224", {}), "DeiT tiny distilled: class and distillation tokens, two heads"),
    timm_model("timm_vit_relpos", "vision", ("test_vit_relpos", {"img_size": 32}),
               ("vit_relpos_base_patch16_224", {}), "ViT with relative position biases (timm's relpos ViT)",
               bench_batch=32),
    timm_model("timm_beit", "vision", ("beit_base_patch16_224", SMALL_VIT), ("beit_base_patch16_224", {}),
               "BEiT base/16: relative position bias tables, layer scale", bench_batch=32),
    timm_model("timm_swin", "vision", ("swin_tiny_patch4_window7_224", {
        "img_size": 32, "patch_size": 2, "window_size": 4, "embed_dim": 16, "depths": (1, 1), "num_heads": (2, 4)}),
        ("swin_tiny_patch4_window7_224", {}), "Swin tiny: shifted windows with a relative position bias, patch merging"),
    timm_model("timm_coatnet", "vision", ("test_coatnet", {"img_size": 32}), ("coatnet_0_rw_224", {}),
               "CoAtNet 0: MBConv stages, then relative-attention stages"),
    timm_model("timm_maxvit", "vision", ("test_maxvit", {"img_size": 32}), ("maxvit_tiny_rw_224", {}),
               "MaxViT tiny: block and grid attention over windows"),
    # the tiny model skipinit as F0 is: its in-place gain on each residual branch
    timm_model("timm_nfnet", "vision", ("test_nfnet", {"skipinit": True}), ("dm_nfnet_f0", {}),
               "NFNet F0: normalization-free, scaled weight standardization, skipinit gains; its residual "
               "branches' zero gains started live (docs/zoo.md)", bench_img=192),
    timm_model("timm_gernet", "vision", ("test_byobnet", LIVE_BRANCHES), ("gernet_s", LIVE_BRANCHES),
               "GENet small (timm's ByobNet): block-by-block configured stages"),
    timm_model("timm_mambaout", "vision", ("test_mambaout", {}), ("mambaout_femto", {}),
               "MambaOut femto: gated CNN blocks, no state-space mixing"),
    timm_model("timm_mixer", "vision", ("MlpMixer", {"img_size": 32, "patch_size": 8, "embed_dim": 32, "num_blocks": 2}),
               ("mixer_b16_224", {}), "MLP-Mixer B/16: token- and channel-mixing MLPs, no attention; timm's zero "
               f"classifier head redrawn from N(0, {HEAD_STD}^2), seed {HEAD_SEED} (docs/zoo.md)", tiny_class=True),
]
