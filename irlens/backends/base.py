"""What a backend is: something that compiles a workload and says how to read its kernels.

A backend compiles (`Backend.compile`, `Backend.compile_program`) and returns a `Compiled`: the
step it made, and how its records become Kernels once that step has run. Running, timing and
keeping the step is the runner's (irlens.matrix.backend_run), the same for every backend: a
backend does no timing, takes no turns on the device and reports no progress of its own.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.frontends.base import Availability, Program, Stage, Unavailable
from irlens.frontends.bindings import run_program
from irlens.core.ir import Graph, Kernel
from irlens.backends.lowering import LEVEL
from irlens.backends.repro_path import ReproPath
from irlens.core.registry import Registry
from irlens.workloads.workload import Instance, Step


@dataclass
class KernelRead:
    """What a backend's records say once its step has run."""

    kernels: list[Kernel]
    graphs: list[Graph] = field(default_factory=list)  # common-view graphs that Kernel.stage/node_ids refer to
    notes: dict[str, Any] = field(default_factory=dict)
    launches: int | None = None  # kernel launches the generated code makes per step; None: one per kernel record


def no_kernels(cupti_taken: bool) -> KernelRead:
    """The kernel reader of a backend that keeps no records."""
    return KernelRead([])


@dataclass
class Compiled:
    """A workload as a backend compiled it, before it runs: what the runner measures
    (irlens.matrix.backend_run)."""

    # one step: `eager_step(compiled, inst, mode)`, or a callable timed whole; its results named
    # as irlens.workloads.workload.run_eager names them. A JIT compiles on its first call.
    step: Step | Callable[[], dict]
    # After the timed steps: the backend's records read into Kernels. Called with whether
    # torch.profiler holds CUPTI in this process (CUPTI allows one subscriber: nvFuser's own
    # profiler must not start then). Where it raises, the run stands without kernels.
    read_kernels: Callable[[bool], KernelRead] = no_kernels
    # what the step needs done before its first call, timed as the compile time (XLA's ahead-of-time
    # compilation); None: the compile time is the first call's, less one steady-state call
    ahead: Callable[[], None] | None = None
    # the graphs the backend has captured so far (Dynamo's): a run that fails keeps them
    acquired: Callable[[], list[Graph]] = list
    # read after the run, and kept whether its kernels are read or not: notes, and (compile_program)
    # the frontend's graphs it compiled
    notes: Callable[[], dict[str, Any]] = dict
    lowered: Callable[[], list[Graph]] = list
    # where set, the runner times each kernel with torch.profiler after reading it: a kernel's
    # launches are the events whose names map to its name's (both through this)
    profiler_name: Callable[[str], str] | None = None
    # the step can run again on the instance's inputs as the caller rebinds them (irlens.matrix.draws);
    # False where it read them once (a JAX twin's arguments) or the backend offers none
    reruns: bool = False
    # where running the step fails, the Compiled to run instead (Thunder's ThunderFX where thunder.jit
    # failed); it raises where there is none
    fallback: Callable[[Exception], "Compiled"] | None = None


class Backend(ABC):
    name: str  # eager, inductor, thunder+torchcompile, nvfuser, xla
    frontend: str | None  # whose graphs the kernels map onto: dynamo | thunder | jax | None (eager)
    description: str
    devices: tuple[str, ...] = ("cpu", "cuda")

    @abstractmethod
    def availability(self, device: str) -> Availability: ...

    @abstractmethod
    def compile(self, inst: Instance, mode: str) -> Compiled:
        """`inst` compiled for `mode` (nothing run yet where the compiler is a JIT)."""

    main_stage: str = ""  # prefix of the stage `irlens dump --backend` shows when none is asked for
    # its allocator keeps the device memory it took until its process ends (XLA's): a worker that
    # ran it on a shared GPU is ended after each cell
    keeps_device_memory: bool = False

    def eager_roundings(self):
        """A context manager in which this backend rounds intermediates to the compute dtype where
        eager does (None where it has none). A half-precision cell that mismatches is run again
        inside it (irlens.matrix.cell): a compiler that keeps float32 inside its fused kernels is more
        accurate in the forward, yet a bfloat16 backward can turn that one-unit difference into
        gradients far from eager's, and irlens' bound starts from eager's own error."""
        return None

    # how `irlens repro` runs it (irlens.backends.repro_path); None: irlens repro cannot
    repro_path: ReproPath | None = None

    def kernel_source_suffix(self, source: str) -> str:
        """The file suffix of one of its kernels' `Kernel.source` (`irlens repro --slow` writes the
        dominant kernel's): CUDA where it defines a CUDA kernel (nvFuser's), else Python (Inductor's
        Triton, or its C++ in a string)."""
        return ".cu" if "__global__" in source else ".py"

    def worker_env(self) -> dict[str, str]:
        """Environment variables a worker process started to run this backend's cells needs
        (read when it starts, so set then); none by default."""
        return {}

    # How this backend compiles one common-view graph of any frontend (its primitive level), for
    # the cross grid (irlens.matrix.cross): `lower(graph, device, name) -> irlens.backends.lowering.LoweredGraph`,
    # a method of the backends that have a lowering; None: it runs only its own frontend's graphs.
    lower: Callable[[Graph, str, str], Any] | None = None
    # The frontend whose program a backend with a lowering runs where its own frontend cannot take
    # the workload (errors.NoNativePath: no JAX twin; Thunder traces none of it): every torch
    # workload goes through Dynamo, and its graphs are the ones Inductor compiles natively.
    via: str = "dynamo"

    def compile_program(self, inst: Instance, program: Program) -> Compiled:
        """A frontend's program (irlens.frontends.bindings: its forward, and backward, common views) with
        each graph compiled by this backend's `lower` at the lowering level, run as one step."""
        if self.lower is None:
            raise Unavailable(f"backend {self.name} has no lowering of the common view")
        graphs: dict[str, Graph] = {}
        lowered: dict[str, Any] = {}

        def lowering(program_step):
            name = program_step.stage.name
            if name not in lowered:
                graphs[name] = program_step.graph(LEVEL)
                lowered[name] = self.lower(graphs[name], inst.device, name)
            return lowered[name]

        if program.runs is None:  # its graphs are known: lowered before its first call
            for program_step in program.steps:
                lowering(program_step)
        # else (several Dynamo graphs) each is lowered on its first call, as the program traces it

        def step(program_step, inputs):
            return lowering(program_step)(inputs)

        def read(cupti_taken: bool) -> KernelRead:
            return KernelRead([k for g in lowered.values() for k in g.kernels(cupti_taken)],
                              graphs=[g for low in lowered.values() for g in low.graphs()])

        return Compiled(lambda: run_program(program, inst, step), read, reruns=True,
                        notes=lambda: {**program.notes, "lowered_graphs": len(lowered)},
                        lowered=lambda: list(graphs.values()))

    def stages(self, inst: Instance, mode: str) -> dict[str, Stage]:
        """The backend's own IRs for `inst` in `mode`, in pipeline order (what it fused, the code
        it generated): `irlens dump --backend`. Compiles and runs once, untimed."""
        raise Unavailable(f"backend {self.name} keeps no IR stages of its own")


BACKENDS: Registry[Backend] = Registry("backend")  # filled by importing irlens.backends
