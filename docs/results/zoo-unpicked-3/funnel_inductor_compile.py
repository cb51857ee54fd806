"""Funnel Transformer's fwd+bwd through plain `torch.compile` (Inductor, upstream code only but this
set's model file), CPU, caches off: how long the forward's and the backward's compiles take.

irlens's Inductor fwd+bwd row of Funnel timed out at 300 s and at 1200 s. Here, without irlens, on
the 2-core CPU, the forward compiled in 188 s and the backward had not compiled 1311 s later, at the
1500 s limit (funnel_inductor_compile-cpu.txt). Sampled with `py-spy dump --pid PID` meanwhile, the
process was in Inductor's C++ code generation every time: `TilingSelect._select_tiling_indices` ->
`sizevars.stride_at_vec_range` -> `sympy.simplify` of a kernel's index expressions (Funnel's relative
attention indexes by shifts and gathers).

    TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 timeout 1500 python docs/results/zoo-unpicked-3/funnel_inductor_compile.py
"""
import importlib.util
import pathlib
import time

import torch

from irlens._compat import import_torchvision

import_torchvision()  # timm (imported by models.py) needs torchvision's operators registered first
spec = importlib.util.spec_from_file_location("models", pathlib.Path(__file__).with_name("models.py"))
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


inst = models.funnel.instantiate("tiny", None, "cpu")
compiled = torch.compile(inst.module)
start = time.time()
loss = first(compiled(*inst.inputs)).float().square().mean()
forward = time.time()
print(f"torch {torch.__version__}: forward (compile and run) {forward - start:.1f} s", flush=True)
loss.backward()
print(f"backward (compile and run) {time.time() - forward:.1f} s", flush=True)
