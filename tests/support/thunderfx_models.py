"""Workloads for the ThunderFX tests (tests/integration/test_thunderfx.py): models thunder.jit fails on, built
from tiny random-weight configs (nothing downloaded), and functions with ops ThunderFX leaves to
Inductor. Any command takes them by reference (`irlens compare --workloads
tests/support/thunderfx_models.py:erfcx_between`). Each module is built only when a workload is
instantiated, so naming one does not import transformers or timm."""
from __future__ import annotations

import dataclasses

import torch

from irlens.workloads.workload import Workload


def _workload(name: str, build, inputs, description: str) -> Workload:
    return Workload(name=name, torch=lambda cfg: build(), inputs=lambda cfg, dtype, gen: inputs(dtype, gen),
                    presets={"tiny": {}, "bench": {}}, description=description)


def _randn(*shape):
    return lambda dtype, gen: (torch.randn(shape, generator=gen).to(dtype),)


class ErfcxBetween(torch.nn.Module):
    """Thunder has only an automatic torch fallback for erfcx: ThunderFX sends it to Inductor and
    keeps what is before and after it."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x):
        return torch.special.erfcx(self.proj(x).sin()) * 2


class LogCumSumExp(torch.nn.Module):
    """Nothing here is Thunder's in ThunderFX (logcumsumexp: only an automatic torch fallback)."""

    def forward(self, x):
        return torch.logcumsumexp(x, 0)


class MaxPoolPadded(torch.nn.Module):
    """ResNet's stem pool. Thunder 0.2.6, where it needs the gradient and torchcompile runs the
    region, decomposes it into a -inf pad and a one-hot convolution: 0 x -inf is NaN."""

    def forward(self, x):
        return torch.nn.functional.max_pool2d(x, 3, 2, 1)


class InplaceHardswishGate(torch.nn.Module):
    """An in-place activation of an intermediate, then a squeeze-excite gate of it, as timm's
    MobileNetV3 blocks compute (`BatchNormAct2d` with `Hardswish(inplace=True)`, then `se`;
    EfficientNet, CoAtNet, MaxViT: `SiLU(inplace=True)`). Thunder 0.2.6 writes the activation over its input and
    its backward reads that input back: the gradient is computed from the output (at x ~ 0,
    d/dx reads 1/2 + x/4, not 1/2 + x/3). With the torchcompile executor a plain in-place
    activation comes out right; followed by the gate, it does not."""

    def forward(self, x):
        y = torch.nn.functional.hardswish(x * 2, inplace=True)
        return y * torch.sigmoid(y.mean(-1, keepdim=True))


class InplaceRouterNormalize(torch.nn.Module):
    """transformers' Mixtral router: the top-k probabilities divided in place by their sum
    (`router_top_value /= router_top_value.sum(...)`). The same Thunder 0.2.6 fault as
    InplaceHardswishGate: the division's backward reads its numerator after the division
    overwrote it."""

    def forward(self, x):
        top = torch.topk(torch.softmax(x, -1), 2, dim=-1)[0]
        top /= top.sum(dim=-1, keepdim=True)
        return top


class BatchNormThenNoGradient(torch.nn.Module):
    """A train-mode BatchNorm in a Thunder region that runs before a region thunder.jit fails on
    (adaptive_avg_pool2d has no gradient there): ThunderFX compiles the step again, and the
    statistics the failed run updated must not be updated twice. erfcx (Inductor's) splits them."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, bias=False)  # a bias before BatchNorm has no gradient in truth
        self.bn = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Conv2d(4, 4, 1)

    def forward(self, x):
        y = torch.special.erfcx(self.bn(self.conv(x)).relu())
        return torch.nn.functional.adaptive_avg_pool2d(self.head(y), 1).flatten(1)


class LayerNorm2dThenPool(torch.nn.Module):
    """timm's LayerNorm2d (a layer norm over channels between two permutes, CoAtNet's and ConvNeXt's)
    before a pooling head Thunder has no gradient for: eager leaves the norm's output channels-last,
    Thunder writes it contiguously, and the Inductor region of the pool was compiled for (and
    asserts) the channels-last strides. The Thunder region has one output, which it returns bare."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x):
        y = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return torch.nn.functional.adaptive_avg_pool2d(y, 1).flatten(1)


class VmapScale(torch.nn.Module):
    """A vmapped function between two ops (Mamba's selective scan vmaps its steps)."""

    def forward(self, x):
        return torch.vmap(lambda row: row.sin() * row.sum())(x.exp()).cos()


class LastHidden(torch.nn.Module):
    """A transformers model's last hidden state (its output is a ModelOutput)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids).last_hidden_state


def tiny_llama() -> torch.nn.Module:
    from irlens._compat import import_torchvision

    import_torchvision()  # transformers imports torchvision
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                   num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    return LastHidden(transformers.AutoModel.from_config(cfg))


def tiny_mamba() -> torch.nn.Module:
    from irlens._compat import import_torchvision

    import_torchvision()
    import transformers

    cfg = transformers.MambaConfig(vocab_size=64, hidden_size=16, state_size=4, num_hidden_layers=1, expand=2,
                                   conv_kernel=2, time_step_rank=2)
    return LastHidden(transformers.AutoModel.from_config(cfg))


def tiny_resnet() -> torch.nn.Module:
    from irlens._compat import import_torchvision

    import_torchvision()  # timm imports torchvision
    from timm.models.resnet import BasicBlock, ResNet

    # resnet18's code, one block per stage; the stem's max pool replaced by a strided conv: Thunder
    # 0.2.6 computes a padded max_pool2d's fwd+bwd as NaN with the torchcompile executor (max_pool_padded)
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=4, replace_stem_pool=True)


def _ids(dtype, gen):
    return (torch.randint(0, 64, (1, 8), generator=gen),)


erfcx_between = _workload("erfcx_between", ErfcxBetween, _randn(4, 8), "linear, sin, erfcx (Inductor's), scale")
max_pool_padded = _workload("max_pool_padded", MaxPoolPadded, _randn(1, 2, 6, 6), "F.max_pool2d(x, 3, 2, 1)")
inplace_hardswish_gate = _workload("inplace_hardswish_gate", InplaceHardswishGate, _randn(4, 8),
                                   "y = F.hardswish(x * 2, inplace=True); y * sigmoid(y.mean(-1))")
inplace_router_normalize = _workload("inplace_router_normalize", InplaceRouterNormalize, _randn(8, 4),
                                     "top-2 of softmax(x), divided in place by their sum (Mixtral's router)")
vmap_between = _workload("vmap_between", VmapScale, _randn(3, 5), "exp, a vmapped sin x sum, cos")
logcumsumexp_only = _workload("logcumsumexp_only", LogCumSumExp, _randn(6, 5), "logcumsumexp alone")
batch_norm_then_no_gradient = dataclasses.replace(
    _workload("batch_norm_then_no_gradient", BatchNormThenNoGradient, _randn(2, 3, 8, 8),
              "conv, train-mode BatchNorm, erfcx (Inductor's), conv, adaptive_avg_pool2d (no Thunder gradient)"),
    training=True)
layer_norm_2d_then_pool = _workload("layer_norm_2d_then_pool", LayerNorm2dThenPool, _randn(2, 8, 5, 5),
                                    "permute, layer_norm, permute back, adaptive_avg_pool2d (no Thunder gradient)")
llama = _workload("tiny_llama", tiny_llama, _ids, "a 1-layer LlamaModel of transformers, random weights")
mamba = _workload("tiny_mamba", tiny_mamba, _ids, "a 1-layer MambaModel of transformers (its slow path), random weights")
resnet = _workload("tiny_resnet", tiny_resnet, _randn(2, 3, 32, 32),
                   "timm's ResNet, one basic block per stage, a conv for the stem's pool, random weights")
