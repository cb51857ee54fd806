"""What a zoo entry is, and what every entry shares: the wrapper that makes a library's model
return a tuple of tensors, the inputs of each kind (token ids, pixels, audio), the loss.

An entry (`ZooModel`) names a model of a library (transformers, timm) built from a config with
random weights, nothing downloaded, at two sizes: `tiny` (CPU, tests: under a million
parameters, a few tokens or a 32x32 image) and `bench` (the published configuration of the
checkpoint its description names; fewer layers where it says so). `zoo_workload` makes it an
ordinary registered `Workload`, tagged `zoo`, its family and its kind, so every command takes
it by name.

The loss (`projection_loss`): the mean square of a fixed random projection of each output's
last dimension. A plain mean of squares of a normalized output (the last hidden state of an
encoder ends in a LayerNorm) is nearly constant, so its true gradient is about zero and float32
noise gets judged against it; a random projection mixes the features so that no normalization
cancels it. The projections are drawn once from a fixed seed (by the output's index and width),
the same on every backend, for torch tensors and JAX arrays alike.

An eval-mode entry's BatchNorms get running statistics as a trained model's are (`trained_statistics`):
built, they hold their initial ones (mean 0, variance 1), so each normalizes by 1/sqrt(1 + eps),
just under one. The residual sum of two such BatchNorms then falls exactly halfway between two
bfloat16 numbers for nearly half its elements, and a fused kernel that rounds the sum once breaks
those ties the same way every time where eager's rounding of each term breaks them to even: a bias
that pooling does not average out, an artifact of the initialization, not of either stack
(docs/results/bf16-forward-drift). Train-mode entries normalize by the batch; theirs are only
updated, and stay as built.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
from torch import nn

from irlens.workloads.workload import ZOO, Workload, register

FAMILIES = ("hf", "timm")
INSTALL = "pip install 'irlens[zoo]'"
PROJECTION_DIM = 4  # columns of each output's projection
PROJECTION_SEED = 2026
STATISTICS_SEED = 2028  # the eval-mode BatchNorms' drawn running statistics (`trained_statistics`)
STATISTICS_MEAN_STD = 0.1  # running mean ~ N(0, STATISTICS_MEAN_STD^2)
STATISTICS_VAR_RANGE = (0.5, 2.0)  # running variance ~ U(STATISTICS_VAR_RANGE)


@functools.cache
def _projection(width: int, index: int) -> np.ndarray:
    """[width, PROJECTION_DIM], entries N(0, 1/width): a projection keeps its input's scale."""
    rng = np.random.default_rng([PROJECTION_SEED, index, width])
    return rng.standard_normal((width, PROJECTION_DIM)) / np.sqrt(width)


@functools.lru_cache(maxsize=64)
def _cached_projection(width: int, index: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.from_numpy(_projection(width, index)).to(device=device, dtype=dtype)  # made once per step's device


@torch.compiler.assume_constant_result
def _torch_projection(width: int, index: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The projection as a constant to Dynamo: numpy's generator would break a traced loss into
    several graphs (`irlens repro` writes a fwd+bwd cell's loss as one); the result depends only
    on the arguments, which Dynamo sees as constants."""
    return _cached_projection(width, index, dtype, device)


def _projected(o, index: int):
    if isinstance(o, torch.Tensor):
        return o @ _torch_projection(o.shape[-1], index, o.dtype, o.device)
    import jax.numpy as jnp

    return o @ jnp.asarray(_projection(o.shape[-1], index), dtype=o.dtype)


def _floating(o) -> bool:
    if isinstance(o, torch.Tensor):
        return o.is_floating_point()
    import jax.numpy as jnp

    return bool(jnp.issubdtype(o.dtype, jnp.floating))


def projection_loss(outputs):
    """sum over floating outputs o of mean((o @ P_o)^2), P_o a fixed random [width, 4] projection
    (see the module docstring); a 0-d output counts as its square."""
    total = 0.0
    for i, o in enumerate(outputs):
        if not _floating(o):
            continue
        y = _projected(o, i) if o.ndim else o
        total = total + (y * y).mean()
    return total


class Outputs(nn.Module):
    """A library model as a module of positional tensors that returns a tuple of tensors: its
    arguments by name (`inputs`), and the fields of its output object it returns (`outputs`)."""

    def __init__(self, model: nn.Module, inputs: tuple[str, ...], outputs: tuple[str, ...] | None = None):
        super().__init__()
        self.model, self.input_names, self.output_names = model, inputs, outputs

    def forward(self, *args):
        out = self.model(**dict(zip(self.input_names, args)))
        if self.output_names is None:  # a plain tensor (timm)
            return out
        return tuple(out[k] for k in self.output_names)


# --- inputs by kind ---------------------------------------------------------------------------

def token_inputs(cfg: dict, dtype: torch.dtype, gen: torch.Generator) -> tuple:
    """Token ids [batch, seq] and an attention mask (int64) whose last sequence is padded at its
    end by a quarter of its length; with `decoder_seq`, the decoder's token ids too."""
    batch, seq, vocab = cfg["batch"], cfg["seq"], cfg["vocab"]
    ids = torch.randint(0, vocab, (batch, seq), generator=gen)
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[-1, seq - seq // 4:] = 0
    if "decoder_seq" in cfg:
        return ids, mask, torch.randint(0, vocab, (batch, cfg["decoder_seq"]), generator=gen)
    return (ids,) if cfg.get("no_mask") else (ids, mask)


def pixel_inputs(cfg: dict, dtype: torch.dtype, gen: torch.Generator) -> tuple:
    """Images [batch, channels, size, size], standard normal (what normalized pixels look like)."""
    return (torch.randn(cfg["batch"], cfg.get("channels", 3), cfg["img"], cfg["img"], generator=gen).to(dtype),)


def audio_inputs(cfg: dict, dtype: torch.dtype, gen: torch.Generator) -> tuple:
    """Log-mel features [batch, mels, frames] (`mels`) or raw samples [batch, samples]."""
    shape = (cfg["batch"], cfg["mels"], cfg["frames"]) if "mels" in cfg else (cfg["batch"], cfg["samples"])
    return (torch.randn(*shape, generator=gen).to(dtype),)


INPUTS = {"tokens": token_inputs, "pixels": pixel_inputs, "audio": audio_inputs}


@dataclass(frozen=True)
class ZooModel:
    """One entry of the zoo (see the module docstring)."""

    name: str  # hf_llama, timm_resnet18, ...
    family: str  # hf | timm
    kind: str  # decoder, encoder, encoder-decoder, ssm, moe, vision, audio
    build: Callable[[dict], nn.Module]  # cfg -> module returning a tuple of tensors (imports its library)
    inputs: str  # a key of INPUTS
    presets: dict[str, dict] = field(default_factory=dict)  # tiny, bench -> cfg (the build's and the inputs')
    training: bool = False  # train mode: only entries without dropout (or with p=0), which would be random
    description: str = ""


def trained_statistics(model: nn.Module) -> nn.Module:
    """The model, each BatchNorm's running mean drawn from N(0, STATISTICS_MEAN_STD^2) and its
    running variance from U(STATISTICS_VAR_RANGE), with a generator seeded STATISTICS_SEED (see the
    module docstring); the same on every backend and dtype (drawn in float32, then cast)."""
    low, high = STATISTICS_VAR_RANGE
    gen = None  # on the device the model was built on
    with torch.no_grad():
        for bn in model.modules():
            if isinstance(bn, nn.modules.batchnorm._BatchNorm) and bn.track_running_stats:
                at = bn.running_mean.device
                gen = gen or torch.Generator(at).manual_seed(STATISTICS_SEED)
                bn.running_mean.copy_(STATISTICS_MEAN_STD * torch.randn(bn.num_features, generator=gen, device=at))
                bn.running_var.copy_(low + (high - low) * torch.rand(bn.num_features, generator=gen, device=at))
    return model


def _built_in_eval(build: Callable[[dict], nn.Module], cfg: dict) -> nn.Module:
    return trained_statistics(build(cfg))


REQUIRES = {"hf": ("transformers",), "timm": ("timm", "torchvision")}


def zoo_workload(m: ZooModel) -> Workload:
    build = m.build if m.training else functools.partial(_built_in_eval, m.build)
    return Workload(m.name, build, INPUTS[m.inputs], m.presets, loss=projection_loss,
                    description=f"{m.description}{' (train mode)' if m.training else ''}",
                    tags=(ZOO, m.family, m.kind), training=m.training, requires=REQUIRES[m.family], install=INSTALL)


def register_all(models: list[ZooModel]) -> None:
    for m in models:
        register(zoo_workload(m))
