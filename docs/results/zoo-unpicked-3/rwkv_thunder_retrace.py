"""RWKV under Thunder (thunder.jit, torch.compile executor first) compiles again on its second call:
its first eval call flips layers_are_rescaled, which the jitted function guards on. Prints each of
four fwd+bwd calls' seconds and Thunder's cache misses and hits. From the repository root:
    python docs/results/zoo-unpicked-3/rwkv_thunder_retrace.py"""
import time, torch, sys
from irlens._compat import import_thunder
thunder = import_thunder()
import importlib.util
spec = importlib.util.spec_from_file_location("m", "docs/results/zoo-unpicked-3/models.py"); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
wl = m.rwkv
inst = wl.instantiate()
mod = inst.module
from thunder.executors.torch_compile import torch_compile_ex
j = thunder.jit(mod, executors=[torch_compile_ex] + list(thunder.get_default_executors()))
for i in range(4):
    t = time.time()
    out = j(*inst.inputs)
    (out.float().square().mean()).backward()
    print(i, round(time.time() - t, 2), "cache misses", thunder.cache_misses(j), "hits", thunder.cache_hits(j), flush=True)
