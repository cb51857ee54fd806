"""What a frontend is: something that acquires a workload's native IR, stage by stage."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.ir import Graph
from irlens.registry import Registry, UnknownName
from irlens.workload import Instance


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""  # why not, when not ok (e.g. "lightning-thunder is not installed: ...")

    def __bool__(self) -> bool:
        return self.ok


class Unavailable(RuntimeError):
    """A frontend or backend that cannot run here; the message says why."""


@dataclass
class Stage:
    """One IR a frontend keeps: its native text, and (where an adapter exists) the common view."""

    name: str  # e.g. dynamo.fx, aot.forward, thunder.trace[0], jax.jaxpr
    description: str  # one line: what this stage is (shown by `irlens dump --stages`)
    native_text: str
    to_common: Callable[[str], Graph] | None = None  # level -> Graph; None if no adapter applies
    native: Any = None  # the native object (FX GraphModule, TraceCtx, ClosedJaxpr, ...)
    backward: bool = False  # a backward-pass stage
    _views: dict[str, Graph] = field(default_factory=dict, init=False, repr=False, compare=False)

    def common(self, level: str = "composite") -> Graph:
        """The common view at `level`, made once: bindings, sweeps, reports and tests read a
        stage's view repeatedly (callers never modify it)."""
        if self.to_common is None:
            raise Unavailable(f"stage {self.name} has no common view")
        if level not in self._views:
            self._views[level] = self.to_common(level)
        return self._views[level]


@dataclass
class Acquisition:
    frontend: str
    workload: str
    mode: str
    stages: dict[str, Stage]
    notes: dict[str, Any] = field(default_factory=dict)  # e.g. {"graph_breaks": 0, "graphs": 1}
    default_stage: str | None = None  # where it differs from the frontend's (`irlens dump` shows it)
    # where the workload was split (ThunderFX's regions): the stages whose forward common views,
    # in order, make the whole forward; None: the frontend's fwd default stage is the whole
    parts: list[str] | None = None

    def stage(self, name: str) -> Stage:
        if name not in self.stages:
            raise UnknownName("stage", name, list(self.stages))
        return self.stages[name]


class Frontend(ABC):
    name: str
    description: str

    @abstractmethod
    def availability(self) -> Availability: ...

    @abstractmethod
    def acquire(self, inst: Instance, mode: str) -> Acquisition:
        """Trace `inst` in `mode` (fwd | fwdbwd) and return every stage this frontend keeps."""

    @abstractmethod
    def default_stage(self, mode: str) -> str:
        """The stage `irlens dump` shows when none is asked for."""


FRONTENDS: Registry[Frontend] = Registry("frontend")  # filled by importing irlens.frontends
