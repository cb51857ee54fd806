"""Where does torch.compile lose accuracy in the zoo's eval-mode bfloat16 CNNs? On the H200 page,
timm_resnet50's and timm_gernet's Inductor (and thunder+torchcompile) rows have an output error
against float64 of 9.5e-3 to 1.0e-2 where eager's is 2.7e-3, forward and fwd+bwd alike, while
nvFuser's and XLA's are at eager's; judged over five input draws the fwd+bwd rows stay mismatches
(irlens.matrix.draws). Forward only, at the zoo's bench size (batch 64, 224 px, bfloat16, eval
mode, random weights from irlens' zoo entry), on a GPU, two input draws: the output's error against
float64 for eager (also channels-last), and for torch.compile (Inductor) by default, with eager's
roundings (`emulate_precision_casts`) and without its layout optimization (channels-last
convolutions), each with gradients off and on. Run from the repository root with torch, timm and
a GPU:

    python docs/results/bf16-forward-drift/resnet50_forward_drift.py [timm_resnet50|timm_gernet]
"""
import contextlib
import sys

import torch

import irlens  # noqa: F401  (its import shim for timm in this environment)
from irlens.workloads.builtin import get_workload
from initial_statistics import initial_statistics  # this folder's

DEVICE = "cuda"
PRESET = "bench"


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


base = get_workload(sys.argv[1] if len(sys.argv) > 1 else "timm_resnet50").instantiate(PRESET, "bfloat16", DEVICE)
initial_statistics(base.module)
model = base.module.eval()
reference = base.cast("float64").module.eval()
draws = [torch.randn(base.inputs[0].shape, generator=torch.Generator().manual_seed(500 + d)).to(DEVICE, torch.bfloat16)
         for d in range(2)]
with torch.no_grad():
    wants = [reference(x.double()) for x in draws]
    channels_last = base.cast("bfloat16").module.eval().to(memory_format=torch.channels_last)
    errors = {"eager": [rel(model(x), w) for x, w in zip(draws, wants)],
              "eager channels-last": [rel(channels_last(x.to(memory_format=torch.channels_last)), w)
                                      for x, w in zip(draws, wants)]}
variants = {"compiled": {}, "compiled, eager's roundings": {"emulate_precision_casts": True},
            "compiled, no layout optimization": {"layout_optimization": False}}
for grad in (False, True):
    for name, patch in variants.items():
        torch._dynamo.reset()  # each variant compiles afresh, under its patch, and runs before the next reset
        with torch._inductor.config.patch(patch), contextlib.nullcontext() if grad else torch.no_grad():
            fn = torch.compile(model)
            errors[f"{name}{', grad on' if grad else ''}"] = [
                rel(fn(x.requires_grad_(grad)).detach(), w) for x, w in zip(draws, wants)]
for name, errs in errors.items():
    print(f"{base.name} eval, {name}: out0 rel err vs float64 on draws 0, 1: "
          + ", ".join(f"{e:.2e}" for e in errs), flush=True)
