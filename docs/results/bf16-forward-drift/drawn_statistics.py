"""The zoo's eval-mode ResNet-50 in bfloat16, its BatchNorms' running statistics as the zoo draws
them (`irlens.workloads.zoo.entry.trained_statistics`: mean N(0, 0.1^2), variance U(0.5, 2), as a
trained model's are: not 0 and 1) and as the model is built (mean 0, variance 1): torch.compile's
output error against float64 beside eager's, one input draw of batch 8 at 224 px, on the CPU. Run
from the repository root:

    python docs/results/bf16-forward-drift/drawn_statistics.py
"""
import torch

import irlens  # noqa: F401  (its import shim for timm in this environment)
from irlens.workloads.builtin import get_workload
from initial_statistics import initial_statistics  # this folder's

x = torch.randn(8, 3, 224, 224, generator=torch.Generator().manual_seed(500))
for statistics in ("drawn (the zoo's)", "initial"):
    base = get_workload("timm_resnet50").instantiate("bench", "bfloat16", "cpu")
    if statistics == "initial":
        initial_statistics(base.module)
    model, reference = base.module.eval(), base.cast("float64").module.eval()
    torch._dynamo.reset()
    with torch.no_grad():
        want = reference(x.double())
        for name, fn in (("eager", model), ("torch.compile", torch.compile(model))):
            got = fn(x.to(torch.bfloat16))
            print(f"{statistics} statistics, {name}: out0 rel err vs float64 "
                  f"{((got.double() - want).norm() / want.norm()).item():.2e}", flush=True)
