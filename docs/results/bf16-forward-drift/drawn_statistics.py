"""The zoo's eval-mode ResNet-50 in bfloat16 with its BatchNorms' running statistics drawn (mean
N(0, 0.1^2), variance U(0.5, 2), as a trained model's are: not 0 and 1) instead of at their
initial values: torch.compile's output error against float64 beside eager's, one input draw of
batch 8 at 224 px, on the CPU (where the initial statistics give 1.02e-02 against 2.70e-03,
README.md). Run from the repository root:

    python docs/results/bf16-forward-drift/drawn_statistics.py
"""
import torch

import irlens  # noqa: F401  (its import shim for timm in this environment)
from irlens.models import get_workload

base = get_workload("timm_resnet50").instantiate("bench", "bfloat16", "cpu")
gen = torch.Generator().manual_seed(1)
with torch.no_grad():
    for bn in (m for m in base.module.modules() if isinstance(m, torch.nn.BatchNorm2d)):
        bn.running_mean.copy_(0.1 * torch.randn(bn.num_features, generator=gen))
        bn.running_var.copy_(0.5 + 1.5 * torch.rand(bn.num_features, generator=gen))
model, reference = base.module.eval(), base.cast("float64").module.eval()
x = torch.randn(8, 3, 224, 224, generator=torch.Generator().manual_seed(500))
with torch.no_grad():
    want = reference(x.double())
    for name, fn in (("eager", model), ("torch.compile", torch.compile(model))):
        got = fn(x.to(torch.bfloat16))
        print(f"drawn statistics, {name}: out0 rel err vs float64 {((got.double() - want).norm() / want.norm()).item():.2e}")
