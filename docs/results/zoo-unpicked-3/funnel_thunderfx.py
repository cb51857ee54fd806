"""Funnel's Thunder fwd+bwd failure with upstream code only: ThunderFX (`thunder.dynamo.ThunderCompiler`)
over this set's `funnel` (models.py, CPU), one forward and backward, with Thunder's default executors
and with the torch.compile executor first (as irlens's `thunder+torchcompile` asks). The second fails
inside a fusion region the torch.compile executor made: Dynamo, compiling that region's generated
Python (`thunder.to_be_compiled_N`), finds it reading a name the region never defines
(`Attempted to read undefined local variable tNNN`). In irlens's zoo cell the same step surfaced as
`Unsupported: failed to find name in frame builtins`.

    python docs/results/zoo-unpicked-3/funnel_thunderfx.py
(output: funnel_thunderfx-cpu.txt)
"""
import importlib.util
import pathlib
import traceback

import torch

from irlens._compat import import_thunder, import_torchvision

import_torchvision()  # timm (imported by models.py) needs torchvision's operators registered first
thunder = import_thunder()
from thunder.dynamo import ThunderCompiler  # noqa: E402
from thunder.executors.torch_compile import torch_compile_ex  # noqa: E402

spec = importlib.util.spec_from_file_location("models", pathlib.Path(__file__).with_name("models.py"))
models = importlib.util.module_from_spec(spec)
spec.loader.exec_module(models)

for label, options in (("default executors", {}),
                       ("torch.compile executor first", {"executors": [torch_compile_ex, *thunder.get_default_executors()]})):
    inst = models.funnel.instantiate("tiny", None, "cpu")
    compiled = torch.compile(inst.module, backend=ThunderCompiler(**options))
    try:
        out = compiled(*inst.inputs)
        (out[0] if isinstance(out, (tuple, list)) else out).float().square().mean().backward()
        print(f"{label}: ok")
    except Exception as e:  # the finding: print its first lines and the region's line it names
        lines = [s for s in traceback.format_exception_only(e)[-1].splitlines() + str(e).splitlines() if s.strip()]
        where = [s.strip() for s in str(e).splitlines() if "to_be_compiled" in s or "torch.add" in s]
        print(f"{label}: {type(e).__name__}: {lines[0][:200]}")
        for s in dict.fromkeys(lines[1:3] + where):
            print(f"    {s[:200]}")
