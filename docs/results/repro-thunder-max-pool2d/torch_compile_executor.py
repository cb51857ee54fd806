"""Thunder's padded max_pool2d through its torch.compile executor: NaN in its output and gradient.

Upstream code only (torch, thunder). `F.max_pool2d(x, 3, 2, 1)` (ResNet's stem) on an input that
requires grad, through thunder.jit and through ThunderFX (thunder.dynamo.ThunderCompiler), each once
with Thunder's default executors and once with `torch_compile_ex` first (what irlens's
thunder+torchcompile backend uses). On the CPU machine of 2026-11-27 (torch 2.13.0+cpu, thunder
0.2.6) the default executors agree with eager; with torch_compile_ex the pooled output holds NaN and so
does the gradient. It reproduces the NaN gradients near the stem of timm_resnet18's and
timm_resnet50's Thunder fwd+bwd rows (docs/results/zoo-h200-bench, zoo-cpu-tiny); in those full
models the forward output stayed finite, if wrong (how the NaN stayed out of it there was not
traced).

Why: where the input requires grad, Thunder decomposes max_pool2d: it pads the input with -inf
(`prims.pad(x, -inf, ...)`), gathers each window with a convolution whose kernel is one-hot
(`prims.convolution(t16, t32, ...)`, 9 output channels for a 3x3 window), and takes `prims.amax`
over them. A one-hot convolution adds -inf * 0 = NaN wherever a window touches the padding. The
default executors run ltorch.max_pool2d as torch's own kernel and never execute the
decomposition; torch_compile_ex claims the decomposed prims and runs them (print
`thunder.last_traces(jitted)[-1]` to see the region).

    python docs/results/repro-thunder-max-pool2d/torch_compile_executor.py   # exit 1 while the bug is there
"""
import sys

import torch
import torch.nn.functional as F

try:  # irlens's import shim for this environment's optional packages, where it is installed
    from irlens._compat import import_thunder
    import_thunder()
except ImportError:
    pass
import thunder  # noqa: E402
from thunder.dynamo import ThunderCompiler  # noqa: E402
from thunder.executors.torch_compile import torch_compile_ex  # noqa: E402


def pool(x):
    return F.max_pool2d(x, 3, 2, 1)


def check(name: str, compiled) -> bool:
    x = torch.randn(2, 4, 8, 8, requires_grad=True, generator=torch.Generator().manual_seed(0))
    y = compiled(x)
    g = torch.randn_like(y)
    (gx,) = torch.autograd.grad(y, x, g)
    (want,) = torch.autograd.grad(pool(x), x, g)
    ok = bool(torch.equal(y, pool(x)) and torch.equal(gx, want))
    print(f"{name:32s} forward finite: {bool(y.isfinite().all())}, gradient finite: {bool(gx.isfinite().all())}, "
          f"equal to eager: {ok}")
    return ok


executors = [torch_compile_ex, *thunder.get_default_executors()]
results = [
    check("thunder.jit", thunder.jit(pool)),
    check("thunder.jit + torch_compile_ex", thunder.jit(pool, executors=executors)),
    check("ThunderFX", torch.compile(pool, backend=ThunderCompiler())),
    check("ThunderFX + torch_compile_ex", torch.compile(pool, backend=ThunderCompiler(executors=executors))),
]
sys.exit(0 if all(results) else 1)
