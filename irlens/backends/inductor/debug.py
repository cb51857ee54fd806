"""Inductor's own IRs for one compiled graph, as `irlens dump --backend` shows them.

- The scheduler's IR before and after fusion: Inductor writes it, with `config.trace.enabled`,
  as `ir_pre_fusion.txt` / `ir_post_fusion.txt` into a debug folder per compiled graph (what
  TORCH_COMPILE_DEBUG=1 produces). `debug_trace` points that folder at a temporary directory
  for one `compile_fx_inner` call and reads the two files back.
- Triton's TTIR, TTGIR and PTX (CUDA): every Triton kernel of the generated module is a
  `CachingAutotuner`; the launcher it settled on records `cache_hash`, the folder of the Triton
  cache where Triton wrote `<kernel>.ttir`, `.ttgir`, `.ptx` when it compiled the kernel.
"""
from __future__ import annotations

import contextlib
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from irlens.frontends.base import Stage
from irlens.backends.inductor.code import CompiledGraph
from irlens.frontends.jax.jaxpr.walk import at_level
from irlens.logs import quiet_logger

TRITON_ASM = ("ttir", "ttgir", "ptx")  # Triton's stages, in compile order


@dataclass
class GraphDebug:
    """What `irlens dump --backend inductor` shows of one compiled graph."""

    compiled: CompiledGraph
    post_grad_text: str  # the post-grad FX graph, printed
    pre_fusion: str = ""  # scheduler nodes before fusion (ir_pre_fusion.txt)
    post_fusion: str = ""  # after fusion (ir_post_fusion.txt)
    module_key: str = ""  # PyCodeCache key of the generated module (CompiledFxGraph.cache_key)
    triton: dict[str, dict[str, str]] = field(default_factory=dict)  # kernel -> {ttir, ttgir, ptx}


@dataclass
class SchedulerIr:
    pre_fusion: str = ""
    post_fusion: str = ""


@contextlib.contextmanager
def debug_trace() -> Iterator[SchedulerIr]:
    """Around one `compile_fx_inner` call: Inductor's scheduler IR before and after fusion,
    filled in when the block exits. Only those two debug files are written."""
    from torch._inductor import config

    ir = SchedulerIr()
    with tempfile.TemporaryDirectory(prefix="irlens-inductor-") as tmp:
        patches = {"trace.enabled": True, "trace.debug_dir": tmp, "trace.fx_graph": False,
                   "trace.fx_graph_transformed": False, "trace.output_code": False}
        # Inductor logs a warning naming each debug folder; the folder is temporary.
        with quiet_logger("torch._inductor.debug"), config.patch(patches):
            yield ir
        ir.pre_fusion = _read_one(Path(tmp), "ir_pre_fusion.txt")
        ir.post_fusion = _read_one(Path(tmp), "ir_post_fusion.txt")


def _read_one(root: Path, name: str) -> str:
    found = sorted(root.rglob(name))
    return found[0].read_text() if found else ""


def triton_asm(module_key: str) -> dict[str, dict[str, str]]:
    """{kernel name: {ttir, ttgir, ptx}} for the Triton kernels of the generated module with
    this key, read from the Triton cache. Call after the module has run: Triton kernels
    compile (and autotune) on their first launch. Empty for CPU (C++) modules."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.cache_dir_utils import triton_cache_dir
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    module = next((m for m in PyCodeCache.modules if getattr(m, "key", None) == module_key), None)
    if module is None:
        return {}
    asm = {}
    for name, kernel in vars(module).items():
        if not isinstance(kernel, CachingAutotuner) or not kernel.launchers:
            continue
        cache_hash = getattr(kernel.launchers[0], "cache_hash", None)
        if cache_hash is None:
            continue
        folder = Path(triton_cache_dir(kernel.triton_meta.get("device", 0))) / cache_hash
        files = {ext: next(iter(sorted(folder.glob(f"*.{ext}"))), None) for ext in TRITON_ASM}
        asm[name] = {ext: path.read_text() for ext, path in files.items() if path is not None}
    return asm


def graph_stages(debug: GraphDebug) -> dict[str, Stage]:
    """One compiled graph's stages: post-grad FX graph, scheduler IR before and after fusion,
    output code and, on CUDA, each Triton kernel's TTIR/TTGIR/PTX."""
    compiled = debug.compiled
    graph = compiled.graph
    part = graph.stage.removeprefix("inductor.post_grad.")  # forward, backward, forward[1] ...
    backward = compiled.backward
    stages = [
        Stage(graph.stage, "the post-grad FX graph Inductor lowers (its kernels map onto this common view)",
              debug.post_grad_text, lambda level: at_level(graph, level), backward=backward),
        Stage(f"inductor.pre_fusion.{part}", "Inductor's scheduler nodes before fusion (ir_pre_fusion.txt)",
              debug.pre_fusion, backward=backward),
        Stage(f"inductor.post_fusion.{part}",
              "Inductor's scheduler nodes after fusion: one (Fused)SchedulerNode per kernel (ir_post_fusion.txt)",
              debug.post_fusion, backward=backward),
        Stage(f"inductor.output_code.{part}", "the module Inductor generated: its kernels and the call() launching them",
              compiled.source_code, backward=backward),
    ]
    for kernel, asm in debug.triton.items():
        stages += [Stage(f"triton.{ext}.{part}.{kernel}", f"Triton {ext.upper()} of {kernel}", text, backward=backward)
                   for ext, text in asm.items()]
    return {s.name: s for s in stages if s.native_text}
