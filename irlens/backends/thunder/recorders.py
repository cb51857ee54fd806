"""What each fusion region of Thunder's execution traces ran as, per fusion executor: a recorder
watches the compiling call and turns each region into Kernels (`RegionRecorder`: one fused kernel;
`InductorRecorder`: the modules Inductor generated for thunder+torchcompile; `NvFuserRecorder`:
nvFuser's segments, with its profiler's times and bytes), with its notes and the regions' own IRs."""
from __future__ import annotations

import math
from dataclasses import dataclass

from irlens.backends.thunder.fallback import inductor_kernel_names
from irlens.frontends.base import Stage
from irlens.frontends.thunder.trace import ExecutionGroup
from irlens.core.ir import Graph, Kernel, canonical_dtype, dtype_size
from irlens.wording import plural


class RegionRecorder:
    """Per run: wraps the first (compiling) call to watch it, and says which kernels each fusion
    region ran as. This default reports each region as one fused kernel."""

    def __init__(self, backend: str):
        self.backend = backend

    def watch_first_call(self, call):
        return call

    def use_codes(self, codes: list[str]) -> None:
        """The Inductor modules the regions' compilation made, where the caller captured them
        (ThunderFX); this recorder reads none."""

    def region_kernels(self, group: ExecutionGroup, graph: Graph, cupti_taken: bool) -> list[Kernel]:
        """`cupti_taken`: whether torch.profiler holds CUPTI in this process (see `backend.map_traces`)."""
        kernel = Kernel(self.backend, group.name, "fused", list(group.node_ids), stage=graph.stage)
        kernel.set_io(*io_bytes(group.bsym))
        return [kernel]

    def notes(self) -> dict:
        return {}

    def launches(self, region_kernels: list[Kernel]) -> int:
        """Kernel launches the fusion regions make per step: one per region kernel record."""
        return len(region_kernels)

    def region_stages(self, regions: list[Region]) -> dict[str, Stage]:
        """The fusion executor's own IRs of each region, after the first call."""
        return {}


@dataclass(frozen=True)
class Region:
    """A fusion region of an execution trace, for `irlens dump --backend`."""

    part: str  # forward | backward
    group: ExecutionGroup

    def stage(self, prefix: str, what: str, text: str) -> Stage:
        return Stage(f"{prefix}.{self.part}.{self.group.name}", f"{what} of fusion region {self.group.name}", text,
                     backward=self.part == "backward")


def io_bytes(bsym) -> tuple[int, int]:
    """(bytes read, bytes written) by a bound symbol: its tensor arguments and its tensor
    results, each once, at their shapes and dtypes. For a fusion region that is the region's
    inputs and outputs (what passes between its kernels, where the executor splits it, is not
    in it)."""
    from thunder.core.proxies import TensorProxy

    def total(proxies) -> int:
        unique = {p.name: p for p in proxies if isinstance(p, TensorProxy)}
        return sum(math.prod(p.shape) * dtype_size(canonical_dtype(p.dtype)) for p in unique.values())

    return total(bsym.flat_proxy_args), total(bsym.flat_proxy_outs)


class InductorRecorder(RegionRecorder):
    """Captures the modules Inductor generates while the first call compiles the regions.

    Regions compile in the order they first run (the forward trace's order, then the
    backward's), one module each; modules are attributed to regions only when the counts
    agree (identical modules are reported once, which breaks the correspondence)."""

    def __init__(self, backend: str):
        super().__init__(backend)
        self.codes: list[str] = []
        self.regions: list[tuple[str, Kernel]] = []

    def use_codes(self, codes: list[str]) -> None:
        self.codes = list(codes)

    def watch_first_call(self, call):
        from torch._inductor.utils import run_and_get_code

        first = [True]

        def watched(*args):
            # Only the first call: run_and_get_code resets Dynamo, and a cache hit captures no
            # code, so "no code yet" must not mean "watch again" (every call would recompile).
            if not first[0]:
                return call(*args)
            first[0] = False
            result, self.codes = run_and_get_code(call, *args)
            return result

        return watched

    def region_kernels(self, group: ExecutionGroup, graph: Graph, cupti_taken: bool) -> list[Kernel]:
        kernels = super().region_kernels(group, graph, cupti_taken)
        self.regions.append((f"{graph.stage}/{group.name}", kernels[0]))
        return kernels

    def launches(self, region_kernels: list[Kernel]) -> int:
        """The launches of the modules Inductor generated for the regions (their kernels and
        extern calls), where they are attributed to the regions; else one per region."""
        if len(self.codes) != len(self.regions):
            return len(region_kernels)
        return sum(len(inductor_kernel_names(code)) for code in self.codes)

    def notes(self) -> dict:
        if len(self.codes) != len(self.regions):
            return {"inductor_kernels": None,
                    "inductor_note": f"{plural(len(self.codes), 'Inductor module')} for "
                                     f"{plural(len(self.regions), 'region')}: not attributed"}
        per_region = {}
        for (key, kernel), code in zip(self.regions, self.codes):
            kernel.source = code
            per_region[key] = inductor_kernel_names(code)
        return {"inductor_kernels": per_region}

    def region_stages(self, regions: list[Region]) -> dict[str, Stage]:
        what = "the module Inductor generated (kernels and call())"
        if len(self.codes) == len(regions):
            stages = [r.stage("inductor.output_code", what, code) for r, code in zip(regions, self.codes)]
        else:  # not attributable to regions (see the class docstring): in compile order
            stages = [Stage(f"inductor.output_code[{i}]", f"{what}, module {i} in compile order", code)
                      for i, code in enumerate(self.codes)]
        return {s.name: s for s in stages}


class NvFuserRecorder(RegionRecorder):
    """One kernel per nvFuser segment of a region, with the time and bytes nvFuser's profiler
    reports. nvFuser does not say which of the region's ops each segment holds: the first
    segment with a generated kernel lists the region's nodes, the others none. A segment's
    source is the CUDA nvFuser generated for it (the definition for one it generated none for)."""

    def __init__(self, backend: str):
        super().__init__(backend)
        self.segmented: dict[str, int] = {}
        self.not_profiled: dict[str, str] = {}
        self.others: dict[str, str] = {}  # regions another fusion executor made -> its name

    def region_kernels(self, group: ExecutionGroup, graph: Graph, cupti_taken: bool) -> list[Kernel]:
        from irlens.backends.thunder.nvfuser import (NotProfiled, definition_text, is_nvfuser_region, profile_segments,
                                                region_code, segment_sources)

        region = f"{graph.stage}/{group.name}"
        if not is_nvfuser_region(group.bsym):
            # a region of another of Thunder's default fusion executors (torchcompile_xentropy on
            # CUDA): one fused kernel, as any region, and nothing nvFuser could say about it
            self.others[region] = getattr(group.bsym.sym.executor, "name", "?")
            return super().region_kernels(group, graph, cupti_taken)
        definition = definition_text(group.bsym)
        try:
            segments = profile_segments(group.bsym, cupti_taken)
        except NotProfiled as e:  # the region as one fused kernel, and why no more is known
            self.not_profiled[region] = str(e)
            # its source: the CUDA of all its kernels where nvFuser gives it, else the definition
            kernel = Kernel(self.backend, group.name, "fused", list(group.node_ids), stage=graph.stage,
                            source=region_code(group.bsym) or definition)
            kernel.set_io(*io_bytes(group.bsym))  # the region's inputs and outputs
            return [kernel]
        if len(segments) > 1:
            self.segmented[region] = len(segments)
        owner = next((s for s in segments if s.generated), segments[0])
        sources = segment_sources(region_code(group.bsym), segments, definition)
        kernels = []
        for s, source in zip(segments, sources):
            kernel = Kernel(self.backend, f"{group.name}/{s.name}", _segment_kind(s),
                            list(group.node_ids) if s is owner else [], stage=graph.stage, time_us=s.time_us,
                            source=source)
            kernel.set_io(s.bytes_read, s.bytes_written)  # the segment's inputs and outputs, as nvFuser counts them
            kernels.append(kernel)
        return kernels

    def region_stages(self, regions: list[Region]) -> dict[str, Stage]:
        from irlens.backends.thunder.nvfuser import NotKept, cuda_source, definition_text, is_nvfuser_region, scheduled_ir

        stages = []
        for r in regions:
            if not is_nvfuser_region(r.group.bsym):  # another executor's region keeps no nvFuser IR
                continue
            stages.append(r.stage("nvfuser.definition", "the nvFuser FusionDefinition Thunder built",
                                  definition_text(r.group.bsym)))
            for prefix, what, read in (("nvfuser.fusion_ir", "nvFuser's fusion IR after scheduling", scheduled_ir),
                                       ("nvfuser.cuda", "the CUDA source nvFuser generated", cuda_source)):
                try:
                    text = read(r.group.bsym)
                except NotKept as e:
                    text = f"# not available: {e}"
                stages.append(r.stage(prefix, what, text))
        return {s.name: s for s in stages}

    def notes(self) -> dict:
        notes = {"nvfuser_segments": self.segmented}
        if self.not_profiled:
            notes["nvfuser_not_profiled"] = self.not_profiled
        if self.others:
            notes["regions_of_other_executors"] = self.others
        return notes


def _segment_kind(segment) -> str:
    if not segment.generated:
        return "extern"  # run by nvFuser's expression evaluator (an ATen call, or aliasing only)
    return "matmul" if segment.scheduler == "matmul" else "fused"
