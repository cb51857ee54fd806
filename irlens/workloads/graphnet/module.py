"""A GraphNet graph as a module with weights: `GraphNetModule`, and the tensors drawn from the meta.

GraphNet's `GraphModule.forward` takes every tensor as an argument, inputs and weights alike. The
wrapper holds the weights as its own parameters and buffers, so that fwd+bwd takes gradients of
them and every stack sees them as a module's state, and takes the inputs as its forward's
arguments. Which argument is which comes from the forward's annotations (Dynamo's names:
`torch.nn.parameter.Parameter` a parameter; `torch.Tensor` a buffer where it names a module's
state, `L_self_...`, `..._buffers_...`, `G_...`, else an input; `torch.SymInt` an int, passed as
the constant the meta gives).

Values (`draw`), as GraphNet's own replay draws them (graph_net/torch/utils.py `replay_tensor`),
from irlens's seeded generator: `data` where the meta gives it; integers uniform over [min_val,
max_val] (both ends); bools true where a standard normal is above 0.5; floats normal(mean, std / 5)
(std 0.1 and mean 0 where the meta has none; a NaN std, which older captures recorded for a tensor of
one element, as 0), clamped to [min_val, max_val] where given (BatchNorm's
running variance has min_val 0) and to [-100, 100], `mean` itself where std is 0. With the recorded
spread instead, deep CNNs on such weights overflow float32 (torchvision's mnasnet0_5 ends at 1e81 in
float64), and every stack compares nothing there.
"""
from __future__ import annotations

import functools
import hashlib
import math
import sys
import types
from pathlib import Path

import torch
from torch import nn

from irlens.workloads.graphnet.devices import for_device
from irlens.workloads.graphnet.dtype_gen import HALF, batch_norm_weights, generalize, keeps_float32
from irlens.workloads.graphnet.meta import Argument, BadSample, TensorMeta

PARAMETER, BUFFER, INPUT, CONSTANT = "parameter", "buffer", "input", "constant"
# GraphNet's replay: a fifth of the recorded standard deviation (0.1 where none is recorded), within +-100
REPLAY_SPREAD, REPLAY_STD, REPLAY_BOUND = 0.2, 0.1, 100.0
_STATE_PREFIXES = ("L_self_", "G_")  # Dynamo's names for a module's attributes and for globals


def role(arg: Argument, meta: TensorMeta) -> str:
    """What the wrapper makes of a forward argument (see the module docstring)."""
    if arg.annotation.endswith("SymInt"):
        return CONSTANT
    if arg.annotation.endswith("Parameter"):
        return PARAMETER if meta.dtype.is_floating_point or meta.dtype.is_complex else BUFFER
    if arg.name.startswith(_STATE_PREFIXES) or "_buffers_" in arg.name:
        return BUFFER
    return INPUT


def draw(meta: TensorMeta, gen: torch.Generator | None = None) -> torch.Tensor:
    """A tensor as the meta describes it (see the module docstring); `gen` None: the global generator."""
    if meta.data is not None:
        return torch.tensor(meta.data, dtype=torch.float64 if meta.dtype.is_floating_point else None)\
            .to(meta.dtype).reshape(meta.shape)
    if meta.dtype == torch.bool:
        return torch.randn(meta.shape, generator=gen) > 0.5
    if not (meta.dtype.is_floating_point or meta.dtype.is_complex):
        if meta.min_val is None or meta.max_val is None:
            raise BadSample(f"integer tensor {meta.name} has neither data nor min_val and max_val")
        return torch.randint(int(meta.min_val), int(meta.max_val) + 1, meta.shape, generator=gen, dtype=meta.dtype)
    mean, std, low, high = replay(meta)
    values = torch.randn(meta.shape, generator=gen, dtype=torch.float64) * std + mean
    return values.clamp(low, high).to(meta.dtype)


def replay(meta: TensorMeta) -> tuple[float, float, float, float]:
    """(mean, standard deviation, low, high): the normal `draw` draws a floating tensor from, and the
    range it ends in (its clamps together: a reproducer draws as irlens does)."""
    mean = 0.0 if meta.mean is None else meta.mean
    # a NaN std is torch.std of a one-element tensor, as older captures recorded it (GraphNet now writes 0)
    std = REPLAY_STD if meta.std is None else 0.0 if math.isnan(meta.std) else meta.std
    low = -REPLAY_BOUND if meta.min_val is None else min(max(meta.min_val, -REPLAY_BOUND), REPLAY_BOUND)
    high = REPLAY_BOUND if meta.max_val is None else min(max(meta.max_val, -REPLAY_BOUND), REPLAY_BOUND)
    return mean, std * REPLAY_SPREAD, low, high


def cast_input(t: torch.Tensor, dtype: torch.dtype | None) -> torch.Tensor:
    """A drawn input as a run in `dtype` takes it: a floating-point one cast (None: as drawn)."""
    return t.to(dtype) if dtype is not None and t.is_floating_point() else t


@functools.lru_cache(maxsize=16)
def graph_class(source: str, filename: str, device: str) -> type[nn.Module]:
    """model.py's GraphModule, its device constants naming `device` (compiled once per source and device)."""
    # a module in sys.modules: Dynamo looks the class's module up by name
    name = f"irlens_graphnet_{hashlib.sha1(f'{filename}:{device}'.encode()).hexdigest()[:12]}"
    module = types.ModuleType(name)
    module.__file__ = filename
    exec(compile(for_device(source, torch.device(device)), filename, "exec"), module.__dict__)  # noqa: S102
    sys.modules[name] = module
    return module.GraphModule


class GraphNetModule(nn.Module):
    """The graph with its weights (see the module docstring); forward takes the inputs in the
    forward's order. `to(device)` recompiles the graph for that device; `to(dtype)` casts the
    weights and generalizes the graph to that dtype as GraphNet does (irlens.workloads.graphnet.dtype_gen):
    in a half dtype the weights GraphNet keeps stay float32 and the graph casts float32 arguments
    of its matmuls and convolutions, and so does a copy of it in any dtype (to that dtype); a
    module never cast to a half dtype runs the sample's own graph."""

    def __init__(self, source: str, path: Path, arguments: list[tuple[str, str]], state: dict[str, torch.Tensor],
                 constants: dict[str, int], inputs: list[TensorMeta]):
        super().__init__()
        self._source, self._file = source, str(path)
        self._arguments = arguments  # (name, role) in the forward's order
        for name, r in arguments:
            if r == PARAMETER:
                self.register_parameter(name, nn.Parameter(state[name]))
            elif r == BUFFER:
                self.register_buffer(name, state[name])
        self._constants = constants
        self._inputs = inputs  # the inputs' meta, in the forward's order: what the graph is generalized for
        self._device, self._dtype = torch.device("cpu"), None  # the dtype `to` cast it to (None: as drawn)
        self._generalized = False  # cast to a half dtype once: its graph casts to its dtype from then on
        self._batch_norm_weights = None  # the BatchNorm weights a half run keeps float32, found once
        self.graph = graph_class(source, self._file, "cpu")()

    @property
    def input_names(self) -> list[str]:
        return [n for n, r in self._arguments if r == INPUT]

    @property
    def arguments(self) -> list[tuple[str, str]]:
        """(name, role) of the forward's arguments, in its order."""
        return list(self._arguments)

    @property
    def constants(self) -> dict[str, int]:
        """The int arguments' values, by name (the meta's)."""
        return dict(self._constants)

    def sample_source(self) -> str:
        """model.py's source as this module's graph was compiled from it (its device constants naming
        the module's device); where `to` generalized the graph (an fx GraphModule) its code is fx's."""
        return for_device(self._source, self._device)

    def forward(self, *inputs):
        given = dict(zip(self.input_names, inputs))
        return self.graph(**self._arguments_with(given))

    def _arguments_with(self, inputs: dict) -> dict:
        return {n: inputs[n] if r == INPUT else self._constants[n] if r == CONSTANT else getattr(self, n)
                for n, r in self._arguments}

    def to(self, *args, **kwargs):
        device, dtype = torch._C._nn._parse_to(*args, **kwargs)[:2]
        if dtype in HALF and self._batch_norm_weights is None:
            self._batch_norm_weights = batch_norm_weights(self.graph)
        kept = {n: t.detach() for n, t in self._state().items()
                if keeps_float32(n, t, dtype, self._batch_norm_weights or frozenset())}
        module = super().to(*args, **kwargs)
        self._device, self._dtype = device or self._device, dtype or self._dtype
        self._generalized = self._generalized or self._dtype in HALF
        with torch.no_grad():
            for name, t in kept.items():
                getattr(self, name).data = t.to(self._device)
        if device is not None or dtype is not None:
            self.graph = generalize(graph_class(self._source, self._file, str(self._device))(),
                                    list(self._arguments_with(self._input_shapes()).values()),
                                    self._dtype if self._generalized else None, self._device,
                                    lambda: list(self._arguments_with(self._input_values()).values()))
        return module

    def _state(self) -> dict[str, torch.Tensor]:
        return {**dict(self.named_parameters()), **dict(self.named_buffers())}

    def _input_values(self) -> dict[str, torch.Tensor]:
        """Inputs drawn from the meta (a generator of their own: the run's draws stay as they were),
        cast as the run casts them: what a graph whose generalizing needs values runs on."""
        gen = torch.Generator().manual_seed(0)
        return {m.name: cast_input(draw(m, gen), self._dtype).to(self._device) for m in self._inputs}

    def _input_shapes(self) -> dict[str, torch.Tensor]:
        """Tensors without storage of the inputs' shapes and dtypes as the run casts them (floating
        ones to its dtype): what generalizing the graph runs it on."""
        return {m.name: torch.empty(m.shape, dtype=self._dtype if self._dtype and m.dtype.is_floating_point
                                    else m.dtype, device="meta") for m in self._inputs}
