"""What a frontend is: something that acquires a workload's native IR, stage by stage, and
says how its common views run the workload (its `Program`: irlens.frontends.bindings)."""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from irlens.core.ir import Graph
from irlens.core.registry import Registry, UnknownName
from irlens.errors import Unavailable  # noqa: F401  (the frontends' and backends' name for it; declared without torch)
from irlens.workloads.workload import Instance, Workload


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""  # why not, when not ok (e.g. "lightning-thunder is not installed: ...")

    def __bool__(self) -> bool:
        return self.ok


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


@dataclass(frozen=True)
class Setting:
    """A choice a frontend offers (the CLI's `--<frontend>-<name>`), made before anything is
    acquired, for this process and the workers it starts."""

    name: str
    metavar: str
    help: str
    apply: Callable[[str], None]  # a bad value: UsageError


class NoProgram(RuntimeError):
    """An acquisition whose common views make no one program (ThunderFX's regions, each with its
    own traces, glued by Dynamo's split graph): the cross grid's cell is unavailable, saying so."""


@dataclass
class Step:
    """One graph of a program: the environment key each of its inputs reads and each of its
    outputs writes (irlens.frontends.bindings names the keys)."""

    stage: Stage
    inputs: list[str]  # environment key per graph input
    outputs: list[str | None]  # environment key per graph output (None: not kept, e.g. a gradient that is None)

    def graph(self, level: str) -> Graph:
        graph = self.stage.common(level)
        if len(graph.inputs) != len(self.inputs) or len(graph.outputs) != len(self.outputs):
            raise ValueError(f"{self.stage.name} ({level}) has {len(graph.inputs)} inputs and {len(graph.outputs)} "
                             f"outputs; its binding says {len(self.inputs)} and {len(self.outputs)}")
        return graph


@dataclass
class Program:
    frontend: str
    mode: str
    forward: Step
    backward: Step | None = None  # runs after the loss and the outputs' cotangents are known
    # values the program supplies itself, by environment key (Dynamo's effect tokens)
    values: dict[str, torch.Tensor] = field(default_factory=dict)
    # A program of several graphs with code between them that no graph holds (Dynamo's graph
    # breaks): the steps of the graphs after the first, as acquired, and how it runs,
    # `runs(inst, execute) -> results`: the workload itself, each graph's step run by `execute`
    # where the workload reaches it (irlens.frontends.bindings.run_program calls it). None: the
    # steps chain over the environment.
    more: list[Step] = field(default_factory=list)
    runs: Callable[[Instance, Callable], dict] | None = None
    notes: dict[str, Any] = field(default_factory=dict)  # what its rows say of it (Dynamo's graph breaks)

    @property
    def steps(self) -> list[Step]:
        return [self.forward] + ([self.backward] if self.backward else []) + self.more


class Frontend(ABC):
    """A frontend owns everything about its own stack: how it acquires, the settings it offers,
    how its graphs bind to the workload's values, and what the conformance sweep checks of it.
    Code outside its folder calls these hooks and never branches on its name."""

    name: str
    description: str
    settings: tuple[Setting, ...] = ()

    @abstractmethod
    def availability(self) -> Availability: ...

    @abstractmethod
    def acquire(self, inst: Instance, mode: str) -> Acquisition:
        """Trace `inst` in `mode` (fwd | fwdbwd) and return every stage this frontend keeps."""

    @abstractmethod
    def default_stage(self, mode: str) -> str:
        """The stage `irlens dump` shows when none is asked for."""

    def stage_parts(self, acq: Acquisition, stage: str, view: str) -> list[str]:
        """The stages `irlens dump` shows for `stage` in `view` (native | common), in the order
        the workload runs them: where the frontend split the workload (Dynamo's graph breaks,
        ThunderFX's regions), that stage of every part; [stage] where it is whole."""
        return [stage]

    def refuses(self, workload: Workload) -> str | None:
        """Why this frontend cannot take `workload` at all, known without acquiring it (a JAX
        frontend: no JAX twin); None where it may."""
        return None

    # --- its programs (irlens.frontends.bindings) ------------------------------------------

    @abstractmethod
    def program(self, acq: Acquisition, inst: Instance) -> Program:
        """The program `acq` runs for its mode: which workload value feeds each graph input,
        which result each output is, how the forward feeds the backward. Raises NoProgram (or
        Unavailable) where its common views make none."""

    def stage_programs(self, acq: Acquisition, inst: Instance, program: Program) -> dict[str, Program]:
        """Programs of other stages that compute the mode's results as `program` does, by stage
        name (faithfulness tests and the conformance sweep run each); none by default."""
        return {}

    # --- the work a step must do (irlens.bench.run: counted once per workload, from one frontend) ---

    counts_work: bool = False  # a step's work is counted from its graphs (`work_frontend`: one frontend does)

    def work_graphs(self, acq: Acquisition) -> list[Graph]:
        """The graphs of one step of `acq`'s mode, forward and backward, at the composite level
        (causal attention counts its unmasked half), that irlens.core.cost counts a step's flops from."""
        raise NotImplementedError(f"frontend {self.name} does not count a step's work")

    # --- the conformance sweep (irlens.conformance) -----------------------------------------

    # the stages swept, by label: what it captured at the user's level and at its lowest level
    conformance_stages: tuple[str, ...] = ()

    def conformance_acquire(self, inst: Instance) -> Acquisition:
        """One op's function acquired for the sweep (fwd)."""
        return self.acquire(inst, "fwd")

    def conformance_stage(self, acq: Acquisition, label: str) -> str:
        """The name of the stage a label of `conformance_stages` stands for in `acq`."""
        return label

    def conformance_gap(self, acq: Acquisition, results: int) -> str | None:
        """Why `acq`'s graphs cannot account for the function's `results` results (then there
        is nothing of them to check); None where they can."""
        return None


FRONTENDS: Registry[Frontend] = Registry("frontend")  # filled by importing irlens.frontends
