"""Thunder's fusing executors as backends: `thunder+torchcompile` and `nvfuser`.

Both run `thunder.jit(module, executors=[<fusion executor>, *defaults])` and read the
execution traces that ran (the final forward trace, and in fwdbwd the final backward one).
Each top-level bound symbol of those traces is what ran: a fusion region (`TorchCompileN`,
`nvFusionN`) is a fused kernel covering the common-view nodes of the ops it fused; an op
outside any region is one library/extern call covering its own nodes.

What happens inside a region is the fusion executor's business, and each says as much as it can:
- torchcompile hands the region to torch.compile; Inductor may split it into several kernels
  (C++ on the CPU, Triton on CUDA) and calls extern GEMMs. Their names, and the generated
  code, are recorded per region (`notes["inductor_kernels"]`, `Kernel.source`); which region
  ops each Inductor kernel holds is not mapped.
- nvFuser may run a region as several segments; each segment is one Kernel, with the time
  and bytes nvFuser's profiler reports (`irlens.backends.thunder.nvfuser`). Which of the region's
  ops a segment holds is not exposed, so the region's nodes are listed once, on its first
  segment with a generated kernel (each node stays in exactly one kernel), and
  `notes["nvfuser_segments"]` says which regions were split and into how many.

Where thunder.jit cannot trace the workload (or `--thunder-capture thunderfx` says so), both run
it through ThunderFX (irlens.frontends.thunder.capture): each Thunder region's execution traces
are read as above, and the regions Thunder did not take are Inductor's kernels (`fallback.py`),
counted in the launches; `notes["capture"]` and `notes["splits"]` say so in the row.
"""
from __future__ import annotations

import os

import torch

from irlens.backends.base import BACKENDS, Backend, Compiled, KernelRead
from irlens.backends.repro_path import ReproPath
from irlens.frontends.base import Availability, Stage, Unavailable
from irlens.backends.thunder.fallback import fallback_graph, fallback_kernels, fallback_launches
from irlens.frontends.thunder.frontend import executor_names, final_traces, import_thunder_or_raise
from irlens.frontends.thunder.capture import Attempts, capture
from irlens.frontends.thunder.thunderfx import Region as FxRegion, ThunderFX, split_line, split_summary, split_table
from irlens.core.ir import Graph, Kernel
from irlens.frontends.thunder.trace import ExecutionGroup, trace_to_graph, trace_to_graph_and_groups
from irlens.backends.thunder import kernel_db, lower as nvfuser_lowering
from irlens.backends.thunder.repro_source import thunder_source
from irlens.backends.thunder.recorders import InductorRecorder, NvFuserRecorder, Region, RegionRecorder, io_bytes
from irlens.core.ops import COMPOSITE, category
from irlens.workloads.workload import Instance, eager_step, run_eager

# Fusion executors: a backend uses one and keeps the others out of its executor list, so
# the fusions it reports are its own. Thunder's CUDA defaults also hold `torchcompile_xentropy`
# (cross-entropy and its backward through torch.compile); it stays, as Thunder runs it, and its
# `TorchCompileN` regions are reported as one fused kernel each.
_FUSION_EXECUTORS = {"torchcompile", "nvfuser"}


class ThunderBackend(Backend):
    """thunder.jit with one fusion executor in front of Thunder's default executors."""

    frontend = "thunder"
    executor: str  # the fusion executor's name in thunder.extend
    compile_options: dict = {}
    recorder = RegionRecorder

    def executors(self, thunder) -> list:
        fusion = thunder.get_executor(self.executor)
        if fusion is None:
            raise Unavailable(f"Thunder has no {self.executor!r} executor here")
        defaults = [ex for ex in thunder.get_default_executors() if ex.name not in _FUSION_EXECUTORS]
        return [fusion, *defaults]

    def _jit(self, inst: Instance):
        """(thunder, the jitted module, a fresh recorder) for `inst`; `Unavailable` if it cannot run here."""
        available = self.availability(inst.device)
        if not available:
            raise Unavailable(f"{self.name}: {available.reason}")
        thunder = import_thunder_or_raise()
        jfn = thunder.jit(inst.module, executors=self.executors(thunder), **self.compile_options)
        return thunder, jfn, self.recorder(self.name)

    def compile(self, inst: Instance, mode: str) -> Compiled:
        """thunder.jit, or ThunderFX where it fails (or where the capture says so): thunder.jit fails as
        it traces, in the step's first call, so ThunderFX is the step's fallback."""
        attempts = Attempts(inst, mode)

        def thunderfx(why: str, jit_error: BaseException | None) -> Compiled:
            try:
                compiled = self._compile_thunderfx(inst, mode, why, jit_error)
            except Exception as e:  # noqa: BLE001  (ThunderFX's failure is the capture's to word)
                attempts.thunderfx_failed(e)
            compiled.fallback = attempts.thunderfx_failed
            return compiled

        chosen = attempts.first()
        if chosen is not None:
            return thunderfx(*chosen)
        try:
            compiled = self._compile_jit(inst, mode)
        except Exception as e:  # noqa: BLE001  (any failure of thunder.jit sends auto to ThunderFX)
            return thunderfx(*attempts.jit_failed(e))
        compiled.fallback = lambda e: thunderfx(*attempts.jit_failed(e))
        return compiled

    def _compile_jit(self, inst: Instance, mode: str) -> Compiled:
        thunder, jfn, recorder = self._jit(inst)

        def read(cupti_taken: bool) -> KernelRead:
            graphs, kernels, regions, outside_launches = map_traces(self.name, recorder, final_traces(thunder, jfn, mode),
                                                                    inst.name, cupti_taken)
            return KernelRead(kernels, graphs, {"executors": executor_names(thunder, jfn), **recorder.notes()},
                              launches=recorder.launches(regions) + outside_launches)

        return Compiled(eager_step(jfn, inst, mode).wrapped(recorder.watch_first_call), read, reruns=True)

    def _thunderfx(self, inst: Instance, jit_error: BaseException | None) -> tuple[object, ThunderFX, RegionRecorder]:
        """(thunder, ThunderFX over the module with this backend's executors, a fresh recorder)."""
        available = self.availability(inst.device)
        if not available:
            raise Unavailable(f"{self.name}: {available.reason}")
        thunder = import_thunder_or_raise()
        fx = ThunderFX(inst.module, jit_error, executors=self.executors(thunder), **self.compile_options)
        return thunder, fx, self.recorder(self.name)

    def _compile_thunderfx(self, inst: Instance, mode: str, why: str, jit_error: BaseException | None) -> Compiled:
        thunder, fx, recorder = self._thunderfx(inst, jit_error)

        def read(cupti_taken: bool) -> KernelRead:
            regions = fx.regions()
            recorder.use_codes(fx.thunder_codes)
            traces = [(name, trace) for _, name, trace in _region_traces(thunder, regions, mode)]
            graphs, kernels, fused, outside_launches = map_traces(self.name, recorder, traces, inst.name, cupti_taken)
            fallbacks = {}
            for region in regions:
                if not region.thunder:
                    graph = fallback_graph(region, inst.name)
                    graphs.append(graph)
                    mine = fallback_kernels(region, graph)
                    kernels += mine
                    fallbacks[region.key] = [k.name.split("/", 1)[-1] for k in mine]
            summary = split_summary(regions, fx.graph_breaks)
            jitted = next((r.jitted for r in regions if r.thunder), None)
            notes = {"capture": why, "splits": split_line(summary), "thunderfx": summary,
                     "executors": executor_names(thunder, jitted) if jitted is not None else
                     [ex.name for ex in self.executors(thunder)],
                     "inductor_fallback_kernels": fallbacks, **fx.graph_breaks, **recorder.notes()}
            return KernelRead(kernels, graphs, notes,
                              launches=recorder.launches(fused) + outside_launches + fallback_launches(fx.fallback_modules))

        return Compiled(fx.calls(lambda compiled: run_eager(compiled, inst, mode)), read, reruns=True)

    def stages(self, inst: Instance, mode: str) -> dict[str, Stage]:
        """The execution traces that ran (where the fusion regions are), then each region's IRs;
        through ThunderFX, its split summary first and each fallback region's Inductor modules."""
        return capture(inst, mode, lambda: self._jit_stages(inst, mode),
                       lambda why, jit_error: self._thunderfx_stages(inst, mode, why, jit_error))

    def _jit_stages(self, inst: Instance, mode: str) -> dict[str, Stage]:
        thunder, jfn, recorder = self._jit(inst)
        recorder.watch_first_call(lambda: run_eager(jfn, inst, mode))()
        return self._trace_stages(recorder, [(name, trace, "") for name, trace in final_traces(thunder, jfn, mode)],
                                  inst.name)

    def _thunderfx_stages(self, inst: Instance, mode: str, why: str,
                          jit_error: BaseException | None) -> dict[str, Stage]:
        thunder, fx, recorder = self._thunderfx(inst, jit_error)
        fx.calls(lambda compiled: run_eager(compiled, inst, mode))()
        regions = fx.regions()
        recorder.use_codes(fx.thunder_codes)
        summary = split_summary(regions, fx.graph_breaks)
        stages = {"thunderfx.splits": Stage("thunderfx.splits", f"capture: {why}; which regions Thunder took, and why "
                                            "the others fell back to Inductor", split_table(summary, inst.name))}
        traced = [(name, trace, f"{region.key}.") for region, name, trace in _region_traces(thunder, regions, mode)]
        stages.update(self._trace_stages(recorder, traced, inst.name))
        for region in regions:
            for i, code in enumerate(region.codes or []):
                name = f"inductor.output_code.{region.key}[{i}]"
                stages[name] = Stage(name, f"the module Inductor generated for fallback region {region.key} "
                                     f"({'forward' if i == 0 else 'backward'})", code, backward=i > 0)
        return stages

    def _trace_stages(self, recorder: RegionRecorder, traced: list[tuple[str, object, str]],
                      workload: str) -> dict[str, Stage]:
        """Each execution trace (stage name, trace, its region's key + "." or "") as a stage,
        then the fusion executor's IRs of its fusion regions."""
        stages: dict[str, Stage] = {}
        regions: list[Region] = []
        for name, trace, key in traced:
            backward = ".backward[" in name
            stages[name] = Stage(
                name, f"the {'backward' if backward else 'forward'} execution trace that ran: its fusion regions "
                "and the calls outside them", str(trace),
                lambda level, trace=trace, name=name: trace_to_graph(trace, name=workload, stage=name, level=level),
                trace, backward)
            _, groups = trace_to_graph_and_groups(trace, name=workload, stage=name)
            regions += [Region(key + ("backward" if backward else "forward"), g) for g in groups if g.fusion]
        stages.update(recorder.region_stages(regions))
        return stages


def map_traces(backend: str, recorder: RegionRecorder, traces: list[tuple[str, object]],
               workload: str, cupti_taken: bool) -> tuple[list[Graph], list[Kernel], list[Kernel], int]:
    """(graphs, kernels, the fusion regions' kernels, launches outside the regions) of execution
    traces that ran, in the order their fusion regions compiled. `cupti_taken`: whether torch.profiler
    holds CUPTI in this process (a recorder must not start nvFuser's profiler then)."""
    graphs: list[Graph] = []
    kernels: list[Kernel] = []
    regions: list[Kernel] = []
    outside_launches = 0
    for stage, trace in traces:
        graph, groups = trace_to_graph_and_groups(trace, name=workload, stage=stage)
        graphs.append(graph)
        for group in groups:
            if group.fusion:
                mine = recorder.region_kernels(group, graph, cupti_taken)
                regions += mine
                kernels += mine
            else:
                kernels.append(outside_kernel(backend, group, graph))
                outside_launches += not is_view(group, graph)
    return graphs, kernels, regions, outside_launches


def _region_traces(thunder, regions: list[FxRegion], mode: str) -> list[tuple[FxRegion, str, object]]:
    """(region, stage name, execution trace) of ThunderFX's Thunder regions in the order their
    fusions compiled: the forward traces in region order, then the backward ones in reverse
    (autograd runs the last region's backward first)."""
    forward, backward = [], []
    for region in (r for r in regions if r.thunder):
        for name, trace in final_traces(thunder, region.jitted, mode, region.stage_prefix):
            (backward if ".backward[" in name else forward).append((region, name, trace))
    return forward + backward[::-1]


def outside_kernel(backend: str, group: ExecutionGroup, graph: Graph) -> Kernel:
    """An op the trace runs outside any fusion region: one call into torch (or another library).
    Its bytes are its tensor arguments and results; a view (reshape, permute, ...) moves none
    that can be told, and gets no byte count."""
    ids = set(group.node_ids)
    ops = {n.op for n in graph.nodes if n.id in ids}
    if ops & {"matmul", "linear"}:
        kind = "matmul"
    elif any(category(op) == COMPOSITE for op in ops):
        kind = "library"  # sdpa, layer_norm, ... as one library call
    else:
        kind = "extern"
    kernel = Kernel(backend, group.name, kind, list(group.node_ids), stage=graph.stage)
    if not is_view(group, graph):
        kernel.set_io(*io_bytes(group.bsym))
    return kernel


_VIEWS = {"reshape", "permute", "broadcast", "slice"}  # torch returns views for these where it can


def is_view(group: ExecutionGroup, graph: Graph) -> bool:
    """An op outside the regions that only views its input (it launches no kernel)."""
    ids = set(group.node_ids)
    return {n.op for n in graph.nodes if n.id in ids} <= _VIEWS


# --- thunder+torchcompile ------------------------------------------------------------------------

class ThunderTorchCompileBackend(ThunderBackend):
    name = "thunder+torchcompile"
    executor = "torchcompile"
    description = ("Thunder with its torchcompile fusion executor: each fusion region is compiled by "
                   "torch.compile (Inductor: C++ on the CPU, Triton on CUDA)")
    recorder = InductorRecorder
    main_stage = "inductor.output_code"
    repro_path = ReproPath(name, "torch",
                           "thunder.jit with its torchcompile fusion executor first (ThunderFX where it fails)",
                           thunder_source(executor))

    def availability(self, device: str) -> Availability:
        if device.startswith("cuda") and not torch.cuda.is_available():
            return Availability(False, "no CUDA device visible to torch")
        try:
            import_thunder_or_raise()
        except Unavailable as e:
            return Availability(False, str(e))
        return Availability(True)


# --- nvFuser --------------------------------------------------------------------------------------

class NvFuserBackend(ThunderBackend):
    name = "nvfuser"

    def worker_env(self) -> dict[str, str]:
        """Its own copy of nvFuser's kernel database, where the run keeps one (kernel_db)."""
        return kernel_db.worker_env(dict(os.environ))
    executor = "nvfuser"
    description = "Thunder with its nvFuser executor (CUDA): fusion regions become nvFuser fusions, segmented by nvFuser"
    devices = ("cuda",)
    compile_options = {"nv_store_fusion_inputs": True}  # the profiler reruns each region on its inputs
    recorder = NvFuserRecorder
    main_stage = "nvfuser.cuda"
    repro_path = ReproPath(name, "torch", "thunder.jit with its nvFuser executor first (ThunderFX where it fails)",
                           thunder_source(executor), lowering="nvfuser", program="fusions")

    def lower(self, graph: Graph, device: str, name: str) -> nvfuser_lowering.NvFuserLowered:
        return nvfuser_lowering.lower(graph, device, name)

    def availability(self, device: str) -> Availability:
        if not device.startswith("cuda"):
            return Availability(False, f"nvFuser needs CUDA; asked for device {device!r}")
        if not torch.cuda.is_available():
            return Availability(False, "nvFuser needs CUDA; no GPU here")
        try:
            import nvfuser_direct  # noqa: F401
        except ImportError as e:
            return Availability(False, f"nvFuser is not importable: {e}")
        try:
            thunder = import_thunder_or_raise()
        except Unavailable as e:
            return Availability(False, str(e))
        if thunder.get_executor("nvfuser") is None:
            return Availability(False, "Thunder did not register its nvFuser executor (nvFuser older than it needs?)")
        return Availability(True)


BACKENDS.register(ThunderTorchCompileBackend())
BACKENDS.register(NvFuserBackend())
