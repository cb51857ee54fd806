"""Thunder's gradient through `silu(inplace=True)` on an eval-mode BatchNorm's output, with upstream code
only: each double conv of GraphNet's others/pigu_hybrid is conv -> batch_norm -> silu(inplace=True), and
Dynamo breaks its graph at every `.item()` (the BatchNorms' eps and momentum are tensors there), so a
ThunderFX region starts at the BatchNorm. The in-place SiLU writes over the BatchNorm's output, which
SiLU's backward reads back: thunder.jit's gradients are then far from eager's. Without `inplace` they
agree; with a convolution before the BatchNorm in the same region, the torchcompile executor fuses the
chain and gets it right, the others do not.

    python docs/results/repro-thunder-inplace-op/silu_inplace_after_batchnorm.py
(output: silu_inplace_after_batchnorm-cpu.txt)
"""
import torch
import torch.nn.functional as F

from irlens._compat import import_thunder

thunder = import_thunder()
from thunder.executors.torch_compile import torch_compile_ex  # noqa: E402
from thunder.executors.torchex import ex as torch_ex  # noqa: E402

C = 8


def region(x, w0, b0, mean, var, weight, bias, w1, inplace: bool, conv_first: bool):
    if conv_first:
        x = F.conv2d(x, w0, b0, 1, 1)
    y = F.batch_norm(x, mean, var, weight, bias, False, 0.1, 1e-5)
    y = F.silu(y, inplace=inplace)
    return F.conv2d(y, w1, None, 1, 1)


def values():
    torch.manual_seed(0)
    return [torch.randn(1, C, 16, 16), torch.randn(C, C, 3, 3) * 0.2, torch.randn(C), torch.randn(C) * 0.1,
            torch.rand(C) + 0.5, torch.rand(C) + 0.5, torch.randn(C) * 0.1, torch.randn(C, C, 3, 3) * 0.2]


NAMES = ["x", "w0", "b0", "mean", "var", "bn.weight", "bn.bias", "w1"]
LEARNED = ["x", "w0", "b0", "bn.weight", "bn.bias", "w1"]


def grads(fn, dtype, inplace, conv_first):
    args = [v.to(dtype).requires_grad_(n in LEARNED) for n, v in zip(NAMES, values())]
    out = fn(*args, inplace, conv_first)
    wanted = [a for n, a in zip(NAMES, args) if n in LEARNED and (conv_first or n not in ("w0", "b0"))]
    cot = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64).to(dtype)
    return torch.autograd.grad(out, wanted, cot)


def worst(got, ref):
    return max(((g.double() - r).norm() / r.norm()).item() for g, r in zip(got, ref))


def main():
    executors = {"default executors": None, "torch executor only": [torch_ex],
                 "torchcompile first": [torch_compile_ex, *thunder.get_default_executors()]}
    print(f"thunder {thunder.__version__}, torch {torch.__version__}, float32 on the CPU; "
          "largest gradient rel err against float64 eager")
    for conv_first in (False, True):
        for inplace in (False, True):
            ref = grads(region, torch.float64, inplace, conv_first)
            line = [f"eager {worst(grads(region, torch.float32, inplace, conv_first), ref):.1e}"]
            for label, ex in executors.items():
                jitted = thunder.jit(region) if ex is None else thunder.jit(region, executors=ex)
                line.append(f"{label} {worst(grads(jitted, torch.float32, inplace, conv_first), ref):.1e}")
            start = "conv -> " if conv_first else ""
            print(f"{start}batch_norm -> silu(inplace={inplace}) -> conv: " + "; ".join(line))


if __name__ == "__main__":
    main()
