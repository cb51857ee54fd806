"""`inductor`: torch.compile's default backend (C++/OpenMP on CPU, Triton on CUDA).

The Dynamo backend here is Inductor's own `compile_fx` with an inner compiler that wraps
`compile_fx_inner` and keeps, for every graph it compiles (forward, backward, one per Dynamo
graph), the post-grad graph it lowered, the generated wrapper code and the provenance
records that say which post-grad nodes each kernel came from. Compiled-graph caches are
bypassed for this run (see `InductorCapture`): a cache hit skips code generation and with it
the provenance records. Compiled C++/Triton kernels stay cached.
"""
from __future__ import annotations

import contextlib
import shutil

import torch

from irlens.backends.base import BACKENDS, Backend, Compiled, KernelRead
from irlens.backends.repro_path import ReproPath
from irlens.backends.inductor.debug import GraphDebug, debug_trace, graph_stages, triton_asm
from irlens.frontends.base import Availability, Stage
from irlens.frontends.dynamo.capture import indexed
from irlens.frontends.dynamo.frontend import graph_break_notes
from irlens.frontends.dynamo.fx import fx_to_graph
from irlens.core.ir import Graph
from irlens.backends.inductor.code import CompiledGraph, map_kernels, profiler_name
from irlens.backends.inductor import lower as fx_lowering
from irlens.workloads.workload import Instance, eager_step, run_eager


class InductorCapture:
    """A Dynamo backend: Inductor, keeping each compiled graph's records (`compiled`).

    Its post-grad pass records the graph Inductor is about to lower. Being a plain callable
    (no `CustomGraphPass.uuid`), it also makes Inductor bypass its FX-graph cache, whose hits
    would skip code generation and with it the provenance records; it works where
    TORCHINDUCTOR_FX_GRAPH_CACHE=1 forces the cache on, which a config patch does not.

    With `keep_debug`, it also keeps each graph's own IRs (`debug`, for `irlens dump --backend`):
    the printed post-grad graph and the scheduler's IR before and after fusion.

    Reading a graph into the common view runs inside Inductor's compilation; where it fails, the
    compilation goes on without that record and `unmapped` says why (the run stands, unmapped)."""

    def __init__(self, workload: str, keep_debug: bool = False):
        self.workload = workload
        self.keep_debug = keep_debug
        self.compiled: list[CompiledGraph] = []
        self.debug: list[GraphDebug] = []
        self._post_grad = None
        self._post_grad_text = ""
        self.unmapped = ""  # why a compiled graph could not be recorded ("" when all were)

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        patches = {"trace.provenance_tracking_level": 1, "post_grad_custom_post_pass": self._keep_post_grad,
                   "cpp.enable_kernel_profile": True}  # C++ kernels show in torch.profiler by name
        return compile_fx(gm, example_inputs, inner_compile=self._inner, config_patches=patches)

    def _keep_post_grad(self, graph: torch.fx.Graph) -> None:
        try:
            self._post_grad = fx_to_graph(graph.owning_module, name=self.workload, frontend="dynamo", stage="")
        except Exception as e:  # noqa: BLE001  (irlens's reading of the graph must not stop Inductor)
            self._post_grad = None
            self.unmapped = self.unmapped or f"the post-grad graph could not be read: {type(e).__name__}: {e}"
        if self.keep_debug:
            self._post_grad_text = graph.owning_module.print_readable(
                print_output=False, include_stride=False, include_device=False)

    def _inner(self, gm: torch.fx.GraphModule, example_inputs, **kwargs):
        import torch._inductor.debug as inductor_debug
        from torch._inductor.compile_fx import compile_fx_inner

        trace = debug_trace() if self.keep_debug else contextlib.nullcontext()
        with inductor_debug.reset_provenance_globals(), trace as scheduler_ir:  # one graph's records, numbered from 1
            out = compile_fx_inner(gm, example_inputs, **kwargs)
            provenance = dict(inductor_debug._inductor_triton_kernel_to_post_grad_node_info)
        backward = bool(kwargs.get("is_backward"))
        base = "inductor.post_grad.backward" if backward else "inductor.post_grad.forward"
        graph, self._post_grad = self._post_grad, None
        if graph is None:  # not read (`unmapped` says why): compiled all the same, not recorded
            return out
        graph.stage = indexed(base, sum(c.backward == backward for c in self.compiled))
        self.compiled.append(CompiledGraph(graph, getattr(out, "source_code", ""), provenance, backward))
        if self.keep_debug:
            self.debug.append(GraphDebug(self.compiled[-1], self._post_grad_text, scheduler_ir.pre_fusion,
                                         scheduler_ir.post_fusion, getattr(out, "cache_key", "")))
        return out


class InductorBackend(Backend):
    name = "inductor"
    frontend = "dynamo"
    description = "torch.compile(backend='inductor'): C++/OpenMP kernels on CPU, Triton kernels on CUDA"
    main_stage = "inductor.output_code"
    repro_path = ReproPath(name, "torch", "torch.compile with Inductor",
                           'def compile_fn(fn):\n    return torch.compile(fn, backend="inductor", dynamic=False)\n')

    def lower(self, graph: Graph, device: str, name: str) -> fx_lowering.InductorLowered:
        return fx_lowering.lower(graph, device, name, InductorCapture(graph.name))

    def availability(self, device: str) -> Availability:
        if device.startswith("cuda"):
            from torch.utils._triton import has_triton

            if not torch.cuda.is_available():
                return Availability(False, "no CUDA device visible to torch")
            if not has_triton():
                return Availability(False, "Triton is not installed (Inductor's CUDA code generator)")
            return Availability(True)
        if not any(shutil.which(cc) for cc in ("g++", "c++", "clang++")):
            return Availability(False, "no C++ compiler on PATH (Inductor's CPU code generator needs one)")
        return Availability(True)

    def eager_roundings(self):
        # Inductor's own switch: each fused kernel rounds to the graph's low-precision dtype where
        # its conversions say (as eager's separate kernels do) instead of keeping float32
        return torch._inductor.config.patch(emulate_precision_casts=True)

    def compile(self, inst: Instance, mode: str) -> Compiled:
        """Its kernels are timed by torch.profiler after the run (`profiler_name`): on CUDA a fused
        kernel's time is its device kernel's and a library call's the device time of the ATen op that
        made it; on CPU both are host times."""
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        capture = InductorCapture(inst.name)
        compiled = torch.compile(inst.module, backend=capture, dynamic=False)

        def read(cupti_taken: bool) -> KernelRead:
            breaks = graph_break_notes(counters)
            if capture.unmapped:
                raise RuntimeError(capture.unmapped)
            return KernelRead(
                [k for c in capture.compiled for k in map_kernels(c, self.name)], [c.graph for c in capture.compiled],
                {"codegen": "triton" if inst.device.startswith("cuda") else "cpp",
                 "compiled_graphs": len(capture.compiled), **breaks})

        # Dynamo's graphs are there where the step fails after capturing (a backward that fails at run time)
        return Compiled(eager_step(compiled, inst, mode), read, acquired=lambda: [c.graph for c in capture.compiled],
                        profiler_name=profiler_name, reruns=True)

    def stages(self, inst: Instance, mode: str) -> dict[str, Stage]:
        torch._dynamo.reset()
        capture = InductorCapture(inst.name, keep_debug=True)
        compiled = torch.compile(inst.module, backend=capture, dynamic=False)
        run_eager(compiled, inst, mode)  # Triton kernels compile on their first launch
        torch._dynamo.reset()
        stages: dict[str, Stage] = {}
        for debug in capture.debug:
            debug.triton = triton_asm(debug.module_key)
            stages.update(graph_stages(debug))
        return stages


BACKENDS.register(InductorBackend())
