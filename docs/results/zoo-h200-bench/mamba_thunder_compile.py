"""How long irlens's ThunderFX path (thunder+torchcompile's executors) takes to compile and run a first
fwd+bwd step of hf_mamba at the tiny width (2 layers, hidden 32) for a given number of tokens: does
the sequential scan, unrolled once per token and layer, make the compile grow with the length?

    python docs/results/zoo-h200-bench/mamba_thunder_compile.py 64 [--profile]

--profile: the cumulative seconds of Inductor compiling Thunder's fusion regions (its torch.compile
executor), of every Inductor compile, of Thunder's tracing and of its execution passes.
"""
from __future__ import annotations

import cProfile
import pstats
import sys
import time

import torch

from irlens._compat import import_thunder
from irlens.backends import BACKENDS
from irlens.frontends.thunder.thunderfx import ThunderFX
from irlens.workloads.builtin import get_workload


def main(seq: int, profile: bool) -> None:
    thunder = import_thunder()
    inst = get_workload("hf_mamba").instantiate("tiny", None, "cpu")  # its token ids replaced below
    ids = torch.randint(0, 128, (2, seq))
    fx = ThunderFX(inst.module, None, executors=BACKENDS.get("thunder+torchcompile").executors(thunder))

    def body(compiled):
        out = compiled(ids)[0]
        (out.float() ** 2).mean().backward()

    step = fx.calls(body)
    start = time.perf_counter()
    if profile:
        profiler = cProfile.Profile()
        profiler.runcall(step)
    else:
        step()
    print(f"seq {seq}: first fwd+bwd {time.perf_counter() - start:.1f} s", flush=True)
    if profile:  # where the time goes: Inductor compiling Thunder's fusions, Thunder's own tracing and passes
        stats = pstats.Stats(profiler).sort_stats("cumulative")
        for where in WHERE:
            stats.print_stats(where, 1)


WHERE = (
    r"thunder/executors/torch_compile.py:\d+\(compiled_func_wrapper\)",  # Inductor on Thunder's fusion regions
    r"torch/_inductor/compile_fx.py:\d+\(compile_fx\)$",  # every Inductor compile (those and ThunderFX's fallbacks)
    r"thunder/core/jit_ext.py:\d+\(thunder_general_jit\)",  # Thunder tracing each region
    r"thunder/common.py:\d+\(transform_for_execution\)",  # Thunder's execution passes
)


if __name__ == "__main__":
    main(int(sys.argv[1]), "--profile" in sys.argv[2:])
