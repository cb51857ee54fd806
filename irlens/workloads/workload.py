"""Workloads: one computation written for torch and (optionally) for JAX, with the same weights.

A `Workload` is declared once (built-ins in `irlens/workloads/builtin/`, users' own anywhere) and
instantiated for a preset, dtype and device. The torch side is an `nn.Module` factory; the
JAX twin is a factory for a pure function `fn(params, *inputs)` that receives the torch
module's parameters and buffers by their `named_parameters()` / `named_buffers()` names, so
both sides compute with the same numbers (weights, RoPE tables, masks).

Modes: `fwd` (outputs) and `fwdbwd` (a scalar loss, gradients of every floating input and
every parameter).

A module's train/eval mode is part of what it computes (BatchNorm normalizes by the batch's
statistics in train mode and updates its running statistics): a workload declares it
(`training`), and one made from a user's module keeps the mode it was handed in. Buffers a step
updates in place (running statistics, counters) are results like the outputs, `buffer:<name>`:
each step starts from the same state (the buffers are put back after it), so every backend's
first step is compared with eager's.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from irlens.core.dtypes import COMPUTE_DTYPES, TORCH_DTYPES
from irlens.errors import NoNativePath, UsageError
from irlens.names import MODES, PRESETS  # noqa: F401  (declared without torch for the command line)
from irlens.core.registry import Registry

CORPUS = "corpus"  # the tag of the corpus of ordinary model code (irlens/workloads/builtin/, tests/integration/test_corpus.py)
ZOO = "zoo"  # the tag of the zoo of real models (irlens/workloads/zoo/, `irlens zoo`)


def mean_square_loss(outputs):
    """Default loss: works on torch tensors and JAX arrays alike. Not a plain sum, which
    would give constant (and for softmax, zero) gradients."""
    total = 0.0
    for o in outputs:
        total = total + (o * o).mean()
    return total


@dataclass
class Workload:
    name: str
    torch: Callable[[dict], torch.nn.Module]  # cfg -> module (parameters drawn from the global RNG)
    inputs: Callable[[dict, torch.dtype, torch.Generator], tuple]  # cfg, dtype, generator -> example inputs
    presets: dict[str, dict]  # preset name -> cfg
    jax: Callable[[dict], Callable] | None = None  # cfg -> fn(params: dict, *inputs) -> output(s)
    loss: Callable = mean_square_loss  # outputs (tuple) -> scalar; must work on torch and jax arrays
    dtype: str = "float32"  # default compute dtype
    description: str = ""
    tags: tuple[str, ...] = ()
    # the module's mode: False eval(), True train(), None as the factory made it (a user's module: as given)
    training: bool | None = False
    requires: tuple[str, ...] = ()  # modules the factory imports that irlens does not depend on
    install: str = ""  # how to install them (what `missing` says)

    def missing(self) -> str:
        """Why this workload cannot be built here ("" when it can): a module it needs is not installed."""
        absent = [m for m in self.requires if importlib.util.find_spec(m) is None]
        if not absent:
            return ""
        return f"workload {self.name!r} needs {', '.join(absent)}, not installed here" + (
            f" ({self.install})" if self.install else "")

    @classmethod
    def from_module(cls, name: str, module: torch.nn.Module | Callable, example_inputs, *,
                    jax: Callable | None = None, loss: Callable | None = None, dtype: str = "float32",
                    description: str = "") -> "Workload":
        """A workload from a module (with its weights) or a plain torch function, in one call.

        `example_inputs`: a tensor or a tuple of tensors (floating ones are cast to the dtype),
        or of shapes (drawn from a seeded normal). They fix the sizes: every preset uses them.
        `jax`: the twin `fn(params, *inputs)`, given the module's parameters and buffers by their
        `named_parameters()` / `named_buffers()` names. `loss`: outputs (tuple) -> scalar, for fwdbwd.
        """
        module = module if isinstance(module, torch.nn.Module) else _FunctionModule(module)
        specs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        return cls(
            name=name,
            torch=lambda cfg: copy.deepcopy(module),  # a copy: instantiate() casts and moves it
            inputs=lambda cfg, dtype, gen: tuple(_example_input(s, dtype, gen) for s in specs),
            presets={preset: {} for preset in PRESETS},
            jax=None if jax is None else (lambda cfg: jax),
            loss=loss or mean_square_loss,
            dtype=dtype,
            description=description or f"user workload {name}",
            training=None,  # the mode the module was handed in
        )

    def cfg(self, preset: str) -> dict:
        if preset not in self.presets:
            raise UsageError(f"workload {self.name!r} has no preset {preset!r}; choose from: {', '.join(self.presets)}")
        return dict(self.presets[preset])

    def instantiate(self, preset: str = "tiny", dtype: str | None = None, device: str = "cpu", seed: int = 0) -> "Instance":
        dtype = dtype or self.dtype
        if dtype not in COMPUTE_DTYPES:
            raise UsageError(f"unknown dtype {dtype!r}; choose from: {', '.join(COMPUTE_DTYPES)}")
        cfg = self.cfg(preset)
        missing = self.missing()
        if missing:
            raise MissingLibrary(missing)
        module = _drawn(lambda at: self.torch(cfg), device, seed)
        module = module.to(device=device, dtype=TORCH_DTYPES[dtype])
        if self.training is not None:
            module.train(self.training)
        inputs = _drawn(lambda at: tuple(self.inputs(cfg, TORCH_DTYPES[dtype], torch.Generator(at).manual_seed(seed + 1))),
                        device, seed + 1)
        inputs = tuple(t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs)
        return Instance(self, preset, cfg, dtype, device, module, inputs, seed)


def _drawn(draw: Callable[[torch.device], Any], device: str, seed: int) -> Any:
    """`draw(at)` on `device` (its tensors made there, its random numbers from that device's generators
    seeded `seed`, restored after): a bench-size module drawn on the CPU took seconds (minigpt's 442M
    parameters, 3.7 s on two cores), on a GPU milliseconds. The values are the device's, the same for
    every cell on it. A factory that cannot draw there (it moves its tensors to the CPU itself, or
    hands them to numpy) draws on the CPU."""
    where = torch.device(device)
    tries = [where, torch.device("cpu")] if where.type != "cpu" else [where]
    for at in tries:
        gpu = [at.index if at.index is not None else torch.cuda.current_device()] if at.type == "cuda" else []
        with torch.random.fork_rng(devices=gpu), at:
            torch.random.default_generator.manual_seed(seed)
            if gpu:
                with torch.cuda.device(gpu[0]):
                    torch.cuda.manual_seed(seed)
            try:
                return draw(at)
            except torch.OutOfMemoryError:
                raise
            except Exception:
                if at == tries[-1]:
                    raise


class _FunctionModule(torch.nn.Module):
    """A plain torch function as a module without parameters (what Workload.from_module wraps)."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _example_input(spec, dtype: torch.dtype, gen: torch.Generator):
    if isinstance(spec, torch.Tensor):
        return spec.detach().clone().to(dtype) if spec.is_floating_point() else spec.detach().clone()
    if isinstance(spec, (tuple, list, torch.Size)) and all(isinstance(d, int) for d in spec):
        return torch.randn(tuple(spec), generator=gen).to(dtype)
    return spec  # a non-tensor argument, passed as is


@dataclass
class Instance:
    """A workload at one preset, dtype and device: a module with weights and example inputs."""

    workload: Workload
    preset: str
    cfg: dict
    dtype: str
    device: str
    module: torch.nn.Module
    inputs: tuple
    seed: int = 0
    # the buffers a step updates in place, found by the first step (None before it); not copied by cast()
    updated_buffers: list[str] | None = field(default=None, init=False)

    @property
    def name(self) -> str:
        return self.workload.name

    @property
    def module_mode(self) -> str:
        """train, eval, or mixed (submodules in both modes)."""
        modes = {m.training for m in self.module.modules()}
        return "mixed" if len(modes) > 1 else ("train" if modes.pop() else "eval")

    @property
    def torch_dtype(self) -> torch.dtype:
        return TORCH_DTYPES[self.dtype]

    def params(self) -> dict[str, torch.Tensor]:
        """The parameters by name: what fwdbwd takes gradients of."""
        return dict(self.module.named_parameters())

    def buffers(self) -> dict[str, torch.Tensor]:
        """The buffers by name (persistent or not): state that gets no gradient."""
        return dict(self.module.named_buffers())

    def grad_input_indices(self) -> list[int]:
        """Inputs that get gradients in fwdbwd mode: the floating-point tensors."""
        return [i for i, t in enumerate(self.inputs) if isinstance(t, torch.Tensor) and t.is_floating_point()]

    def input_names(self) -> list[str]:
        return [f"input{i}" for i in range(len(self.inputs))]

    def cast(self, dtype: str, device: str | None = None) -> "Instance":
        """The same weights and inputs in another dtype (and device): the float64 reference."""
        device = device or self.device
        module = copy.deepcopy(self.module).to(device=device, dtype=TORCH_DTYPES[dtype])
        inputs = tuple(
            t.to(device=device, dtype=TORCH_DTYPES[dtype]) if isinstance(t, torch.Tensor) and t.is_floating_point()
            else (t.to(device) if isinstance(t, torch.Tensor) else t)
            for t in self.inputs
        )
        return dataclasses.replace(self, dtype=dtype, device=device, module=module, inputs=inputs)

    def fresh_inputs(self, requires_grad: bool) -> tuple:
        """New leaves over the inputs' storage (no copy: a timed step must not pay for one);
        floating ones require grad when asked, so each call gets its own .grad."""
        out = []
        for i, t in enumerate(self.inputs):
            if isinstance(t, torch.Tensor):
                t = t.detach()
                if requires_grad and i in self.grad_input_indices():
                    t.requires_grad_(True)
            out.append(t)
        return tuple(out)

    def loss(self, outputs) -> Any:
        return self.workload.loss(as_tuple(outputs))

    # --- buffers a step updates in place --------------------------------------------
    def buffer_snapshot(self) -> dict[str, torch.Tensor]:
        """Copies of the buffers a step may update, taken before it: all of them until the first
        step has said which it updates, then only those."""
        buffers = self.buffers()
        names = buffers if self.updated_buffers is None else self.updated_buffers
        return {n: buffers[n].detach().clone() for n in names}

    def buffer_results(self, snapshot: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """After a step: `buffer:<name>` -> the value of each buffer it updated, each put back as it
        was in `snapshot` (so the next step starts from the same state). The first step finds which
        buffers change; a later step reports those."""
        buffers = self.buffers()
        if self.updated_buffers is None:
            self.updated_buffers = [n for n, old in snapshot.items() if not torch.equal(buffers[n].detach(), old)]
        results = {}
        with torch.no_grad():
            for name in self.updated_buffers:
                results[f"buffer:{name}"] = buffers[name].detach().clone()
                buffers[name].copy_(snapshot[name])
        return results

    # --- the JAX twin ------------------------------------------------------------
    def jax_fn(self) -> Callable:
        if self.workload.jax is None:
            raise NoJaxTwin(self.workload.name)
        return self.workload.jax(self.cfg)

    def jax_params(self) -> dict:
        """The twin's `params`: every parameter and buffer by its name, as JAX arrays."""
        return {k: to_jax(v) for k, v in {**self.buffers(), **self.params()}.items()}

    def jax_inputs(self) -> tuple:
        return tuple(to_jax(t) if isinstance(t, torch.Tensor) else t for t in self.inputs)


class MissingLibrary(UsageError):
    """A workload needs a library that is not installed here (its `Workload.install` says how)."""


class NoJaxTwin(NoNativePath):
    def __init__(self, name: str):
        super().__init__(f"workload {name!r} has no JAX twin")


def as_tuple(outputs) -> tuple:
    if isinstance(outputs, (tuple, list)):
        return tuple(outputs)
    return (outputs,)


def to_jax(t: torch.Tensor):
    """A torch tensor as a JAX array with the same values and dtype (bf16 included)."""
    import jax.numpy as jnp

    t = t.detach().cpu()
    if t.dtype == torch.bfloat16:
        return jnp.asarray(t.float().numpy(), dtype=jnp.bfloat16)
    return jnp.asarray(t.numpy())


@dataclass(frozen=True)
class Step:
    """One step of a workload through a callable, split as `torch.utils.benchmark.Timer` splits
    setup from statement: `prepare()` makes the arguments once (input leaves), `call(args)` is
    the step itself, the part a timer times and that can be called again on the same arguments,
    and `package(args, raw)` names its results. `step()` does all three once."""

    prepare: Callable[[], Any]
    call: Callable[[Any], Any]
    package: Callable[[Any, Any], dict]

    def __call__(self) -> dict:
        args = self.prepare()
        return self.package(args, self.call(args))

    def wrapped(self, wrap: Callable[[Callable], Callable]) -> "Step":
        """The same step with its call wrapped (e.g. to watch the first one)."""
        return dataclasses.replace(self, call=wrap(self.call))


def eager_step(fn: Callable, inst: Instance, mode: str) -> Step:
    """`fn` (the module, or any compiled callable with its signature) as a Step in `mode`.

    Results are named `out0..`, and in fwdbwd mode also `loss`, `grad:input<i>` and
    `grad:<param name>`; in both, `buffer:<name>` for each buffer the step updated in place (put
    back after the first call, see `Instance.buffer_results`; the timed calls after it update
    them again). Every backend returns the same names, so numerics compare by name.
    Gradients come from `torch.autograd.grad`, not `.backward()`: nothing accumulates into
    `.grad`, so the call can repeat on the same leaves with nothing to reset between calls."""
    if mode not in MODES:
        raise UsageError(f"unknown mode {mode!r}; choose from: {', '.join(MODES)}")
    if mode == "fwd":
        def forward(inputs):
            with torch.no_grad():
                return as_tuple(fn(*inputs))

        def package_outputs(args, outs) -> dict:
            inputs, snapshot = args
            return {**{f"out{i}": o.detach() for i, o in enumerate(outs)}, **inst.buffer_results(snapshot)}

        return Step(lambda: (inst.fresh_inputs(requires_grad=False), inst.buffer_snapshot()),
                    lambda args: forward(args[0]), package_outputs)

    grad_inputs = inst.grad_input_indices()
    params = [(name, p) for name, p in inst.module.named_parameters() if p.requires_grad]

    def prepare():
        inputs = inst.fresh_inputs(requires_grad=True)
        return inputs, [inputs[i] for i in grad_inputs] + [p for _, p in params], inst.buffer_snapshot()

    def forward_backward(args):
        inputs, leaves, _ = args
        outs = as_tuple(fn(*inputs))
        loss = inst.workload.loss(outs)
        return outs, loss, torch.autograd.grad(loss, leaves, allow_unused=True)

    def package(args, raw) -> dict:
        outs, loss, grads = raw
        results = {f"out{i}": o.detach() for i, o in enumerate(outs)}
        results["loss"] = loss.detach()
        names = [f"grad:input{i}" for i in grad_inputs] + [f"grad:{name}" for name, _ in params]
        got = dict(zip(names, grads))
        results.update({name: got[name] for name in names[:len(grad_inputs)]})
        results.update({f"grad:{name}": got.get(f"grad:{name}") for name, _ in inst.module.named_parameters()})
        results.update(inst.buffer_results(args[2]))
        return results

    return Step(prepare, forward_backward, package)


def run_eager(fn: Callable, inst: Instance, mode: str) -> dict[str, torch.Tensor]:
    """Run `fn` once in `mode`: its results named as `eager_step` names them."""
    return eager_step(fn, inst, mode)()


WORKLOADS: Registry[Workload] = Registry("workload")  # the built-ins register on importing irlens.workloads.builtin


def register(workload: Workload) -> Workload:
    return WORKLOADS.register(workload)
