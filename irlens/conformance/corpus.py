"""What a conformance corpus is: a list of cases, each made runnable as a `Subject`.

A `Case` names one op of an external corpus (an OpInfo entry, a lax function, a jax.numpy
function), one dtype and one sample: a small JSON-able record that the parent lists and a
worker rebuilds. `Corpus.subject(case)` builds it deterministically (seeded), as a plain
function of its tensor inputs: every other argument of the sample is fixed inside the function,
and its results are flattened to a tuple of tensors (torch) or arrays (JAX). That function is
an irlens `Workload`, so the frontends acquire it the way they acquire any user workload.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Any, Callable

import torch

from irlens.core.registry import Registry
from irlens.workloads.workload import Workload


@dataclass(frozen=True)
class Case:
    corpus: str
    op: str  # the op's name in its corpus: OpInfo name[.variant], lax function, jax.numpy function
    dtype: str  # the dtype the sample is drawn in (float32; int64/int32/bool for bitwise and logical ops)
    sample: int = 0  # which of the op's samples

    @property
    def id(self) -> str:
        return f"{self.corpus}:{self.op}:{self.dtype}#{self.sample}"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Case":
        return cls(**d)


@dataclass
class Subject:
    """A case made runnable: the workload the frontends acquire (a function of the case's
    tensors, which are its example inputs) and the same function run eagerly by its own library."""

    workload: Workload
    eager: Callable[[tuple, bool], list[torch.Tensor]]  # (inputs, float64) -> the flat outputs, as torch tensors
    undefined_values: bool = False  # its outputs are uninitialized memory (torch.empty and kin)
    random: str = ""  # why the corpus itself says the case is random, if it does


class Corpus(ABC):
    name: str
    description: str
    frontends: tuple[str, ...]  # the frontends that take its functions

    @abstractmethod
    def cases(self, samples: int) -> list[Case]:
        """Every case, up to `samples` samples per op and dtype."""

    @abstractmethod
    def subject(self, case: Case) -> Subject:
        """The case, runnable; the same case always gives the same inputs."""


CORPORA: Registry[Corpus] = Registry("corpus")


# --- functions of tensors ----------------------------------------------------------------------

def torch_subject(name: str, op: Callable, args: tuple, kwargs: dict, undefined_values: bool = False,
                  random: str = "") -> Subject:
    """`op(*args, **kwargs)` as a function of the tensors in `args` and `kwargs`, returning the
    tensors of its result as a flat tuple (other values in the result are left out)."""
    source, constants, tensors = _call_source(args, kwargs)
    try:
        with torch.no_grad():
            result = op(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
    except Exception:  # noqa: BLE001  (the sweep's eager run fails the same way and says so)
        result = None
    outputs = ", ".join(f"r{path}" for path in _tensor_paths(result))
    params = ", ".join(f"t{i}" for i in range(len(tensors)))
    # Generated rather than a generic function that rebuilds the arguments: Thunder interprets
    # every Python frame of the function it traces, which made each case 4x slower.
    code = f"def fn({params}):\n    r = op({source})\n    return ({outputs}{',' if outputs else ''})\n"
    namespace = {"op": op, **constants}
    exec(compile(code, f"<conformance case {name}>", "exec"), namespace)
    fn = namespace["fn"]

    def eager(inputs: tuple, float64: bool) -> list[torch.Tensor]:
        fresh = [t.detach().clone() for t in inputs]  # an in-place op must not change the case's inputs
        if float64:
            fresh = [t.double() if t.is_floating_point() else t for t in fresh]
        with torch.no_grad():
            return list(fn(*fresh))

    workload = Workload.from_module(name, fn, tuple(tensors), description=f"conformance case {name}")
    return Subject(workload, eager, undefined_values, random)


def _call_source(args: tuple, kwargs: dict) -> tuple[str, dict, list]:
    """The argument list of a call as source: tensors become parameters t0, t1, ...; lists,
    tuples and dicts stay literals; any other value is a constant c0, c1, ... of the namespace."""
    constants: dict[str, Any] = {}
    tensors: list[torch.Tensor] = []

    def expr(x) -> str:
        if isinstance(x, torch.Tensor):
            tensors.append(x)
            return f"t{len(tensors) - 1}"
        if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
            items = ", ".join(expr(v) for v in x)
            return f"[{items}]" if isinstance(x, list) else f"({items}{',' if len(x) == 1 else ''})"
        if isinstance(x, dict):
            return "{" + ", ".join(f"{expr(k)}: {expr(v)}" for k, v in x.items()) + "}"
        constants[f"c{len(constants)}"] = x
        return f"c{len(constants) - 1}"

    parts = [expr(a) for a in args] + [f"{k}={expr(v)}" for k, v in kwargs.items()]
    return ", ".join(parts), constants, tensors


def _tensor_paths(result: Any, path: str = "") -> list[str]:
    """Index paths ("", "[0]", "[1][0]") to the tensors in an op's result."""
    if isinstance(result, torch.Tensor):
        return [path]
    if isinstance(result, (tuple, list)):
        return [p for i, item in enumerate(result) for p in _tensor_paths(item, f"{path}[{i}]")]
    return []


def jax_subject(name: str, fn: Callable, args: list, fn64: Callable | None = None) -> Subject:
    """`fn(*args)` as a function of its array arguments (numpy arrays or scalars); its
    results flattened to a tuple of arrays. The torch side is the inputs only: the jax
    frontend traces the twin, and the eager runs are JAX's own. `fn64`: the same function
    for the float64 reference, where `fn` holds floating constants of the case's dtype that
    JAX will not mix with float64 operands (a reduction's init value)."""
    import jax
    import numpy as np

    inputs = tuple(_torch_tensor(a) for a in args)

    def flat(*xs, fn=fn):
        return tuple(jax.tree_util.tree_leaves(fn(*xs)))

    def eager(inputs: tuple, float64: bool) -> list[torch.Tensor]:
        arrays = [t.numpy() for t in inputs]  # the instance's: floating ones are float32 (Workload.instantiate)
        if float64:
            arrays = [a.astype(np.float64) if np.issubdtype(a.dtype, np.floating) else a for a in arrays]
        with jax.enable_x64(float64):
            return [_torch_tensor(o) for o in flat(*arrays, fn=fn64 if float64 and fn64 else fn)]

    def torch_side(*_):
        raise NotImplementedError(f"{name} is a JAX function; it has no torch side")

    workload = Workload.from_module(name, torch_side, inputs, jax=lambda params, *xs: flat(*xs),
                                    description=f"conformance case {name}")
    return Subject(workload, eager)


def _torch_tensor(value) -> torch.Tensor:
    """A JAX or numpy array (or scalar) as a torch tensor of the same dtype; numpy has no
    bfloat16 of its own (JAX's is ml_dtypes'), so that one goes through float32, exactly."""
    import numpy as np

    array = np.array(value)
    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(array)
