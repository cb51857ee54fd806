"""Which stage of the zoo's eval-mode ResNet-50 loses accuracy under torch.compile in bfloat16?
Each stage (the stem, layer1-layer4, the head) alone, eager and compiled (Inductor by default and
with eager's roundings), fed the same bfloat16 input: the float64 model's input to that stage,
rounded to bfloat16. Its output's error against the float64 stage on that input. Bench size
(batch 64, 224 px), one input draw, on a GPU; run from the repository root:

    python docs/results/bf16-forward-drift/resnet50_stage_drift.py
"""
import torch

import irlens  # noqa: F401  (its import shim for timm in this environment)
from irlens.workloads.builtin import get_workload
from initial_statistics import initial_statistics  # this folder's

DEVICE = "cuda"
PRESET = "bench"


def rel(a, b) -> float:
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


base = get_workload("timm_resnet50").instantiate(PRESET, "bfloat16", DEVICE)
initial_statistics(base.module)
low, high = base.module.eval(), base.cast("float64").module.eval()


def stages(m):
    return {"stem": torch.nn.Sequential(m.conv1, m.bn1, m.act1, m.maxpool), "layer1": m.layer1,
            "layer2": m.layer2, "layer3": m.layer3, "layer4": m.layer4,
            "head": torch.nn.Sequential(m.global_pool, m.fc)}


x = torch.randn(base.inputs[0].shape, generator=torch.Generator().manual_seed(500)).to(DEVICE, torch.float64)
with torch.no_grad():
    for (name, s16), s64 in zip(stages(low).items(), stages(high).values()):
        want = s64(x)
        h = x.to(torch.bfloat16)
        line = [f"eager {rel(s16(h), want):.2e}"]
        for variant, patch in (("compiled", {}), ("eager's roundings", {"emulate_precision_casts": True})):
            torch._dynamo.reset()
            with torch._inductor.config.patch(patch):
                line.append(f"{variant} {rel(torch.compile(s16)(h), want):.2e}")
        print(f"{name}: out rel err vs float64: " + ", ".join(line), flush=True)
        x = want
