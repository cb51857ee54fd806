"""What a backend is: something that compiles and runs a workload and reports its kernels."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import torch

from irlens.frontends.base import Availability
from irlens.ir import Graph, Kernel
from irlens.registry import Registry
from irlens.workload import Instance


@dataclass
class BackendRun:
    """What one backend did with one workload in one mode."""

    results: dict[str, torch.Tensor]  # named like irlens.workload.run_eager: out0.., loss, grad:<name>
    compile_s: float  # first call (trace + compile + run) minus one steady-state run
    run_us: float  # median host wall time of a steady-state call, synchronized
    kernels: list[Kernel]
    graphs: list[Graph] = field(default_factory=list)  # common-view graphs that Kernel.stage/node_ids refer to
    notes: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    name: str  # eager, inductor, thunder+torchcompile, nvfuser, xla
    frontend: str | None  # whose graphs the kernels map onto: dynamo | thunder | jax | None (eager)
    description: str
    devices: tuple[str, ...] = ("cpu", "cuda")

    @abstractmethod
    def availability(self, device: str) -> Availability: ...

    @abstractmethod
    def run(self, inst: Instance, mode: str) -> BackendRun: ...


BACKENDS: Registry[Backend] = Registry("backend")


def get_backend(name: str) -> Backend:
    import irlens.backends  # noqa: F401

    return BACKENDS.get(name)
