"""RWKV's Thunder fwd+bwd with upstream code only: ThunderFX (`thunder.dynamo.ThunderCompiler`,
Thunder's default executors) over this set's `rwkv` (models.py, eval mode, CPU), one forward and
backward, then which parameters got no gradient where eager gives one.

In eval mode transformers' RWKV rescales two weights of every block in place on its first call
(`_rescale_layers`: `block.attention.output.weight.div_(...)` under `torch.no_grad()`), and then
uses them. irlens's `thunder+torchcompile` row of RWKV's fwd+bwd (timeout 1200 s) is a mismatch:
"no value where the reference has one" for exactly those weights.

    python docs/results/zoo-unpicked-3/rwkv_thunderfx_rescale.py
(output: rwkv_thunderfx_rescale-cpu.txt)
"""
import importlib.util
import pathlib

import torch

from irlens._compat import import_thunder, import_torchvision

import_torchvision()  # timm (imported by models.py) needs torchvision's operators registered first
import_thunder()
from thunder.dynamo import ThunderCompiler  # noqa: E402

spec = importlib.util.spec_from_file_location("models", pathlib.Path(__file__).with_name("models.py"))
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)


def grads(compile_with):
    inst = models.rwkv.instantiate("tiny", None, "cpu")
    module = inst.module
    fn = torch.compile(module, backend=compile_with) if compile_with else module
    out = fn(*inst.inputs)
    (out[0] if isinstance(out, (tuple, list)) else out).float().square().mean().backward()
    return {name: p.grad for name, p in module.named_parameters()}


eager, thunderfx = grads(None), grads(ThunderCompiler())
missing = [name for name, g in eager.items() if g is not None and thunderfx[name] is None]
print(f"parameters with a gradient in eager: {sum(g is not None for g in eager.values())}; "
      f"of them none under ThunderFX: {len(missing)}")
for name in missing:
    print(f"  {name}")
