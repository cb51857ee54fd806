"""`eager`: the workload's own torch module, run op by op. The baseline row of every comparison.

It has no kernel records, but it does launch kernels: its launch count per step is the ATen
operators the step calls below autograd (seen by a `TorchDispatchMode`, backward included),
less views and bare allocations, which launch nothing: each one left is one kernel call (an
op may launch more than one kernel on a GPU; there `irlens bench` counts the profiler's).
"""
from __future__ import annotations

from typing import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from irlens.backends.base import BACKENDS, Backend, Compiled, KernelRead
from irlens.backends.repro_path import ReproPath
from irlens.frontends.base import Availability
from irlens.workloads.workload import Instance, eager_step

_ALLOCATIONS = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided", "resize_"}


class _AtenCalls(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if not func.is_view and func._schema.name.split("::")[-1] not in _ALLOCATIONS:
            self.calls += 1
        return func(*args, **(kwargs or {}))


def aten_launches(step: Callable[[], object]) -> int:
    """The kernel-calling ATen operators one call of `step` makes (see the module docstring)."""
    with _AtenCalls() as counter:
        step()
    return counter.calls


class EagerBackend(Backend):
    name = "eager"
    frontend = None
    description = "eager PyTorch, op by op (the baseline; no compiler, no kernel records)"
    repro_path = ReproPath(name, "torch", "eager PyTorch, op by op", "def compile_fn(fn):\n    return fn\n")

    def availability(self, device: str) -> Availability:
        if device.startswith("cuda") and not torch.cuda.is_available():
            return Availability(False, "no CUDA device visible to torch")
        return Availability(True)

    def compile(self, inst: Instance, mode: str) -> Compiled:
        step = eager_step(inst.module, inst, mode)

        def read(cupti_taken: bool) -> KernelRead:
            args = step.prepare()
            return KernelRead([], launches=aten_launches(lambda: step.call(args)))

        return Compiled(step, read)


BACKENDS.register(EagerBackend())
