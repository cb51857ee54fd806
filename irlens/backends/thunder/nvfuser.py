"""nvFuser's view of a Thunder fusion region: the segments (kernels) it ran the region as.

Thunder's nvFuser executor turns each fusion region (`nvFusionN`) into an nvFuser
`FusionDefinition`, held by a `FusionDefinitionWrapper` in the region's call context. nvFuser
may segment one definition into several kernels (a reduction and the pointwise work around
it, say). Its profiler reports them: `nvfuser_direct.PythonProfiler`, entered around an
execution, gives `profile.segments` (how many) and `profile.kernel_profiles` (one per kernel:
`name`, `segment_id`, `scheduler`, `time_ms`, `input_bytes`, `output_bytes`). A segment
nvFuser generates no kernel for (its expression evaluator runs it: an ATen call, or only
aliasing) comes with an empty name and zero time and bytes.

Which of the region's ops each segment holds is not exposed; `irlens.backends.thunder.recorders` says
how segments are mapped onto the region's nodes.

For `irlens dump --backend nvfuser`, the definition's `FusionExecutorCache` (`fd.fec`, made on
its first execution) gives, for the inputs the region last ran with, the fusion IR after
scheduling (`get_scheduled_ir`) and the generated CUDA source (`get_cuda_kernel`), every
segment's. That source is one `__global__` function per generated kernel, one after another;
`kernel_sources` splits it, and a profiled segment finds its own by the kernel name (CUPTI
reports it demangled: `CudaCodeGen::nvfuser_pointwise_f0_c1_r0_g0(...)`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Segment:
    """One segment nvFuser ran a fusion region as."""

    index: int  # position among the region's segments
    name: str  # the CUDA kernel's name; for a segment without one, segment<index>[:<scheduler>]
    scheduler: str  # pointwise, reduction, inner_persistent, matmul, expr_eval, ...
    generated: bool  # nvFuser generated a kernel for it (else its expression evaluator ran it:
    #                  an ATen call or only aliasing, which the profiler does not time)
    time_us: float | None
    bytes_read: int | None  # the segment's inputs, as the profiler counts them
    bytes_written: int | None  # its outputs

    @property
    def bytes(self) -> int | None:
        return None if self.bytes_read is None else self.bytes_read + self.bytes_written


def is_nvfuser_region(bsym) -> bool:
    """Whether a Thunder fusion region is nvFuser's: its call context holds a
    `FusionDefinitionWrapper`. Thunder's default executors on CUDA include another fusion
    executor, `torchcompile_xentropy` (cross-entropy and its backward through torch.compile),
    whose `TorchCompileN` regions call a plain function."""
    return hasattr(bsym._call_ctx.get(bsym.sym.name), "last_used")


def fusion_wrapper(bsym) -> Any:
    """The `FusionDefinitionWrapper` a Thunder nvFusion bound symbol calls (ValueError for a
    region another fusion executor made)."""
    if not is_nvfuser_region(bsym):
        raise ValueError(f"{bsym.sym.name} is not an nvFuser region (its executor: "
                         f"{getattr(bsym.sym.executor, 'name', None)})")
    return bsym._call_ctx[bsym.sym.name]


def definition_text(bsym) -> str:
    """The nvFuser definition of the region as nvFuser prints it (its Python frontend form)."""
    fd = fusion_wrapper(bsym).last_used
    return "" if fd is None else repr(fd)


class NotProfiled(RuntimeError):
    """nvFuser's profiler reported nothing for a region; the message says why."""


def profile_segments(bsym, cupti_taken: bool) -> list[Segment]:
    """Run the region's fusion once more under nvFuser's profiler and read its segments.

    The inputs are the region's last ones, which Thunder keeps when the compile option
    `nv_store_fusion_inputs=True` is set. The run goes through Thunder's own wrapper, so the
    definition, device and options are the ones the workload ran with. `cupti_taken`: whether
    torch.profiler holds CUPTI in this process (the runner knows; irlens.matrix.backend_run).
    """
    import nvfuser_direct

    if cupti_taken:
        # Both subscribe to CUPTI, which allows one subscriber: nvFuser would end the process.
        raise NotProfiled("torch.profiler holds CUPTI in this process (device timing), "
                          "and nvFuser's profiler cannot share it")
    wrapper = fusion_wrapper(bsym)
    if wrapper.last_inputs is None:
        raise NotProfiled("Thunder kept no inputs for the region (compile option nv_store_fusion_inputs)")
    try:
        with nvfuser_direct.PythonProfiler() as prof:
            wrapper(*wrapper.last_inputs)
        kernel_profiles = list(prof.profile.kernel_profiles)
    except Exception as e:
        # nvFuser leaves its profiler running when an execution throws; the next one would fail.
        reset = getattr(nvfuser_direct, "reset_profiler", None)
        if reset is not None:
            reset()
        raise NotProfiled(f"nvFuser's profiler failed: {type(e).__name__}: {e}") from e
    if not kernel_profiles:
        raise NotProfiled("nvFuser's profiler recorded no kernels")
    return [profiled_segment(index, kp) for index, kp in enumerate(kernel_profiles)]


def profiled_segment(index: int, kp) -> Segment:
    # Profiles come in segment order; a segment without a kernel reports segment_id 0, so the
    # position is the index.
    scheduler = str(kp.scheduler or "")
    if not kp.name:  # no generated kernel: reported with an empty name and zero time and bytes
        return Segment(index, f"segment{index}" + (f":{scheduler}" if scheduler else ""), scheduler, False, None, None,
                       None)
    return Segment(index, str(kp.name), scheduler, True, float(kp.time_ms) * 1e3, int(kp.input_bytes),
                   int(kp.output_bytes))


class NotKept(RuntimeError):
    """What an IR is read from was not kept for a region; the message says what."""


def _last_execution(bsym) -> tuple[Any, list, int]:
    """The region's FusionDefinition, the inputs it last ran with and their CUDA device index."""
    wrapper = fusion_wrapper(bsym)
    fd = wrapper.last_used
    if fd is None or not hasattr(fd, "fec"):
        raise NotKept("the region's FusionDefinition has not run through a FusionExecutorCache")
    if wrapper.last_inputs is None:
        raise NotKept("Thunder kept no inputs for the region (compile option nv_store_fusion_inputs)")
    inputs = list(wrapper.last_inputs)
    device = next((a.device.index or 0 for a in inputs if getattr(a, "is_cuda", False)), 0)
    return fd, inputs, device


def scheduled_ir(bsym) -> str:
    """nvFuser's fusion IR of the region after scheduling (every segment), for its last inputs."""
    fd, inputs, device = _last_execution(bsym)
    return fd.fec.get_scheduled_ir(inputs, tensor_transforms=False, device=device)


def cuda_source(bsym) -> str:
    """The CUDA source nvFuser generated for the region (every segment's kernel), for its last inputs."""
    fd, inputs, device = _last_execution(bsym)
    return fd.fec.get_cuda_kernel(inputs, device=device)


def generated_code(fd, inputs: list, device: int = 0) -> str:
    """The CUDA source of every kernel a run of `fd` on `inputs` used; "" where nvFuser gives none
    (not run yet, or it raises): the kernel records then go without."""
    if fd is None or not hasattr(fd, "fec"):
        return ""
    try:
        return fd.fec.get_cuda_kernel(inputs, device=device) or ""
    except RuntimeError:  # nvFuser's errors (c10::Error) arrive as RuntimeError
        return ""


def region_code(bsym) -> str:
    """`cuda_source` of a Thunder region, "" where it cannot be had."""
    try:
        fd, inputs, device = _last_execution(bsym)
    except NotKept:
        return ""
    return generated_code(fd, inputs, device)


# `__global__ void [__cluster_dims__(...)] [__launch_bounds__(...)] <name>(`: where each kernel starts
_KERNEL_DECL = re.compile(r"^.*?__global__\s+void\s+(?:__\w+__\([^)]*\)\s*)*(\w+)\s*\(", re.M)


def kernel_sources(code: str) -> dict[str, str]:
    """nvFuser's generated CUDA (every kernel of a fusion, one after another) per kernel:
    {kernel name: its source}, each from its declaration's line to the next one's."""
    found = list(_KERNEL_DECL.finditer(code))
    ends = [m.start() for m in found[1:]] + [len(code)]
    return {m[1]: code[m.start():end].strip() + "\n" for m, end in zip(found, ends)}


def segment_source(sources: dict[str, str], segment_name: str) -> str | None:
    """The source of the kernel a profiled segment ran: the one whose name the segment's (as the
    profiler reports it) contains as a whole word; None if no kernel matches."""
    for name, text in sources.items():
        if re.search(rf"\b{re.escape(name)}\b", segment_name):
            return text
    return None


def segment_sources(code: str, segments: list[Segment], fallback: str) -> list[str]:
    """One source per segment: a generated segment's own kernel (the whole `code` if none matches
    its name), `fallback` for a segment nvFuser generated no kernel for, or for all without `code`."""
    sources = kernel_sources(code) if code else {}
    return [(segment_source(sources, s.name) or code) if code and s.generated else fallback for s in segments]
