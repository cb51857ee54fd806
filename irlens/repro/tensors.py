"""Tensors as source: what a standalone file writes to rebuild its inputs and weights.

A tensor of at most `embed_max` elements (and a graph's constant, whatever its size) is embedded
exactly (its bytes, base64); a larger one is regenerated from a seed with the same shape, dtype
and layout: floating values drawn from a normal with the original's mean and standard deviation
(of its finite values), integers and bools uniformly between the original's smallest and largest
value (token ids stay valid ids). A tensor that comes with a description of how it was drawn (a
GraphNet sample's meta: `Draw`) is drawn again from that instead: normal(mean, std) clamped to
its range, integers uniformly in the meta's range, as irlens drew it (seeded: the same
distribution and range, not the same numbers).
A tensor with a layout other than contiguous (an nvFuser region's input) keeps its strides.
"""
from __future__ import annotations

import base64
import math
from dataclasses import dataclass

from irlens.wording import plural

EMBED_MAX = 4096
CONST_PREFIX = "const:"  # the key of a value a graph reads as an attribute: `const:<function>.<attribute>`

# The helpers a file defines once; `tensor_source` writes calls to them.
HELPERS = '''\
def embedded(data, dtype, shape, stride=None, device="cpu"):
    """A tensor from its bytes (base64), exactly."""
    flat = torch.frombuffer(bytearray(base64.b64decode(data)), dtype=torch.uint8).view(dtype).clone()
    return _laid_out(flat, shape, stride, device)


def regenerated(seed, dtype, shape, mean, std, stride=None, device="cpu"):
    """A floating tensor drawn again: normal with the original's mean and standard deviation."""
    gen = torch.Generator().manual_seed(seed)
    flat = (torch.randn(_extent(shape, stride), generator=gen, dtype=torch.float64) * std + mean).to(dtype)
    return _laid_out(flat, shape, stride, device)


def integers(seed, dtype, shape, low, high, stride=None, device="cpu"):
    """An integer (or bool) tensor drawn again, uniformly in [low, high]."""
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randint(low, high + 1, (_extent(shape, stride),), generator=gen).to(dtype)
    return _laid_out(flat, shape, stride, device)


def _laid_out(flat, shape, stride, device):
    """The elements moved to the device, then viewed with the shape and strides (a broadcast
    stride of 0 survives: moving the strided view would copy it dense)."""
    flat = flat.to(device)
    return flat.reshape(shape) if stride is None else flat.as_strided(shape, stride)


def _extent(shape, stride):
    """Elements behind a tensor of this shape and stride (all of them when it is contiguous)."""
    if stride is None:
        return math.prod(shape)
    return 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))
'''


# The function a file defines where a value is drawn from its description (`Draw`).
DRAWN = '''\
def drawn(seed, dtype, shape, mean, std, low, high, stride=None, device="cpu"):
    """A floating tensor drawn as irlens draws it from a GraphNet sample's meta: normal(mean, std)
    in float64, clamped to [low, high]."""
    gen = torch.Generator().manual_seed(seed)
    flat = (torch.randn(_extent(shape, stride), generator=gen, dtype=torch.float64) * std + mean).clamp(low, high)
    return _laid_out(flat.to(dtype), shape, stride, device)
'''


@dataclass(frozen=True)
class Draw:
    """How a value was drawn (a GraphNet sample's meta, as irlens.workloads.graphnet.module.draw reads
    it): a floating one from normal(mean, std) clamped to [low, high], an integer one uniformly in [low, high]."""

    low: float
    high: float
    mean: float = 0.0
    std: float = 0.0


def _dtype_source(dtype) -> str:
    return str(dtype)  # torch.float32, torch.bfloat16, torch.int64, torch.bool


def _layout(t: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    shape = tuple(t.shape)
    return shape, (None if t.is_contiguous() else tuple(t.stride()))


def _storage(t: torch.Tensor, stride) -> torch.Tensor:
    """The elements a tensor spans, flat, where it is: itself when contiguous, else its strided extent."""
    import torch

    t = t.detach()
    if stride is None:
        return t.reshape(-1)
    extent = 0 if 0 in t.shape else 1 + sum((n - 1) * s for n, s in zip(t.shape, stride))
    return torch.as_strided(t, (extent,), (1,), t.storage_offset())


def tensor_source(t: torch.Tensor, seed: int, embed_max: float = EMBED_MAX, draw: Draw | None = None) -> str:
    """A Python expression, a call of one of HELPERS (or DRAWN, for a large tensor with a
    `draw`), that rebuilds `t` on the CPU. Only an embedded tensor is copied to the CPU; a large
    one's statistics are taken where it is."""
    import torch

    shape, stride = _layout(t)
    tail = "" if stride is None else f", stride={stride}"
    flat = _storage(t, stride)
    if flat.numel() <= embed_max:
        data = base64.b64encode(flat.cpu().contiguous().view(torch.uint8).numpy().tobytes()).decode()
        return f"embedded({data!r}, {_dtype_source(t.dtype)}, {shape}{tail})"
    if _drawn(t, draw) and t.is_floating_point():
        return (f"drawn({seed}, {_dtype_source(t.dtype)}, {shape}, {_num(draw.mean)}, {_num(draw.std)}, "
                f"{_num(draw.low)}, {_num(draw.high)}{tail})")
    if _drawn(t, draw):
        return f"integers({seed}, {_dtype_source(t.dtype)}, {shape}, {int(draw.low)}, {int(draw.high)}{tail})"
    if t.is_floating_point():
        values = flat.double()
        finite = values[torch.isfinite(values)]
        mean = finite.mean().item() if finite.numel() else 0.0
        std = finite.std().item() if finite.numel() > 1 else 0.0
        return f"regenerated({seed}, {_dtype_source(t.dtype)}, {shape}, {_num(mean)}, {_num(std)}{tail})"
    low, high = (int(flat.min().item()), int(flat.max().item())) if flat.numel() else (0, 0)
    return f"integers({seed}, {_dtype_source(t.dtype)}, {shape}, {low}, {high}{tail})"


def on_device(expr: str, device: str) -> str:
    """`tensor_source`'s expression building the tensor on `device` (its strides kept)."""
    return f"{expr[:-1]}, device={device!r})"


def _num(x: float) -> str:
    return repr(x) if math.isfinite(x) else "0.0"


def embed_limit(key: str, embed_max: int) -> float:
    """The most elements `key`'s tensor may have to be embedded: a graph's constant always is (it is
    part of the code; regenerated, a float32 and a float64 copy of it would differ)."""
    return math.inf if key.startswith(CONST_PREFIX) else embed_max


def how_rebuilt(values: dict[str, torch.Tensor], embed_max: int = EMBED_MAX, draws: dict[str, Draw] | None = None
                ) -> str:
    """One line for a file's header: how many tensors are embedded, how many drawn from their
    description, how many regenerated."""
    large = [k for k, t in values.items() if _storage(t, _layout(t)[1]).numel() > embed_limit(k, embed_max)]
    drawn = sum(1 for k in large if _drawn(values[k], (draws or {}).get(k)))
    line = (f"{plural(len(values) - len(large), 'tensor')} embedded exactly (those of at most {embed_max} elements, and the "
            f"graphs' constants)")
    if drawn:
        line += (f"; {plural(drawn, 'larger one')} drawn from the GraphNet sample's meta as irlens draws them (seeded: the "
                 "same distribution and range, not the same numbers)")
    if len(large) > drawn or not drawn:
        line += (f"; {plural(len(large) - drawn, 'larger one')} regenerated from a seed (same shape and dtype; floating ones "
                 "with the original's mean and standard deviation, integers within the original's range)")
    return line


def _drawn(t: torch.Tensor, draw: Draw | None) -> bool:
    """Whether a large `t` is drawn from its description: floating and integer ones (a bool or complex
    one is regenerated from its own values)."""
    return draw is not None and not t.is_complex() and str(t.dtype) != "torch.bool"
