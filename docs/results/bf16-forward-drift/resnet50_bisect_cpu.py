"""Where torch.compile's bfloat16 ResNet-50 (the zoo's, eval mode, random weights) drifts from
float64, on the CPU at the bench size (224 px, a batch of 8, one input draw): the whole output, eager
and compiled; the pooled features' signed error (a bias survives the global pooling, noise does not);
then parts of the first bottleneck block, each fed the float64 model's input rounded to bfloat16:
its branches, and the residual add of its two BatchNorms with and without them. Run from the
repository root (a few minutes on 2 cores):

    python docs/results/bf16-forward-drift/resnet50_bisect_cpu.py
"""
import torch

import irlens  # noqa: F401  (its import shim for timm in this environment)
from irlens.workloads.builtin import get_workload
from initial_statistics import initial_statistics  # this folder's

base = get_workload("timm_resnet50").instantiate("bench", "bfloat16", "cpu")
initial_statistics(base.module)
low, high = base.module.eval(), base.cast("float64").module.eval()
x = torch.randn(8, 3, 224, 224, generator=torch.Generator().manual_seed(500)).double()


def compiled(fn):
    torch._dynamo.reset()
    return torch.compile(fn)


def report(name, got, want):
    d = got.double() - want
    live = want.abs() > 1e-2
    print(f"{name}: rel err {(d.norm() / want.norm()).item():.2e}, mean signed rel err "
          f"{(d[live] / want[live].abs()).mean().item():+.2e}, pooled over H x W: rel err "
          f"{(d.mean((2, 3)).norm() / want.mean((2, 3)).norm()).item():.2e}", flush=True)


with torch.no_grad():
    want = high(x)
    for name, fn in (("whole model, eager", low), ("whole model, compiled", compiled(low))):
        print(f"{name}: out0 rel err {((fn(x.bfloat16()).double() - want).norm() / want.norm()).item():.2e}", flush=True)
    want = high.forward_features(x)
    report("features, eager", low.forward_features(x.bfloat16()), want)
    report("features, compiled", compiled(low.forward_features)(x.bfloat16()), want)

    h = high.maxpool(high.act1(high.bn1(high.conv1(x))))  # the first block's input
    b16, b64 = low.layer1[0], high.layer1[0]
    c3 = b64.conv3(b64.act2(b64.bn2(b64.conv2(b64.act1(b64.bn1(b64.conv1(h)))))))  # its main branch's last conv
    cd = b64.downsample[0](h)  # its shortcut's conv
    parts = {
        "block": (lambda b, t: b(t), (h,)),
        "main branch to bn3": (lambda b, t: b.bn3(b.conv3(b.act2(b.bn2(b.conv2(b.act1(b.bn1(b.conv1(t)))))))), (h,)),
        "shortcut (conv + bn)": (lambda b, t: b.downsample(t), (h,)),
        "relu(bn3(c3) + bn_shortcut(cd))": (lambda b, t, u: torch.relu(b.bn3(t) + b.downsample[1](u)), (c3, cd)),
        "bn3(c3) + bn_shortcut(cd)": (lambda b, t, u: b.bn3(t) + b.downsample[1](u), (c3, cd)),
        "relu(c3 + cd), no BatchNorm": (lambda b, t, u: torch.relu(t + u), (c3, cd)),
    }
    for name, (f, args) in parts.items():
        want = f(b64, *args)
        low_args = [a.bfloat16() for a in args]
        report(f"{name}, eager", f(b16, *low_args), want)
        report(f"{name}, compiled", compiled(lambda *a: f(b16, *a))(*low_args), want)
