"""Does a Triton kernel of torch.compile round float32 to bfloat16 as eager does? One rounding of
x * s (x float32, N(0, 1)), compiled and eager, against float64: the mean signed error relative to
|reference| (over values away from zero: a rounding to nearest has about none, one toward zero about -2^-9) and the norm-wise
relative error; then a chain of 16 per-channel scale-and-shift + ReLU steps on bfloat16 values (the
eval-mode BatchNorm + ReLU of a CNN), eager (each op rounds), compiled by default and with eager's
roundings (`emulate_precision_casts`). Run from the repository root on a GPU:

    python docs/results/bf16-forward-drift/rounding_bias.py
"""
import torch

DEVICE = "cuda"
gen = torch.Generator(device=DEVICE).manual_seed(0)


def errors(got, want):
    d = got.double() - want
    live = want.abs() > 1e-3  # the signed mean over values away from zero (ReLU's zeros have no relative error)
    return (f"mean signed {(d[live] / want[live].abs()).mean().item():+.2e}, "
            f"rel err {(d.norm() / want.norm()).item():.2e}")


x = torch.randn(1 << 22, device=DEVICE, generator=gen)
s = 1.2345678


def scale(t):
    return (t * s).to(torch.bfloat16)


want = x.double() * s
print(f"one rounding, eager: {errors(scale(x), want)}")
torch._dynamo.reset()
print(f"one rounding, compiled: {errors(torch.compile(scale)(x), want)}")

C, LAYERS = 64, 16
h = torch.randn(32, C, 32, 32, device=DEVICE, generator=gen).to(torch.bfloat16)
ws = [(1 + 0.2 * torch.randn(C, 1, 1, device=DEVICE, generator=gen)).to(torch.bfloat16) for _ in range(LAYERS)]
bs = [(0.2 * torch.randn(C, 1, 1, device=DEVICE, generator=gen)).to(torch.bfloat16) for _ in range(LAYERS)]


def chain(t):
    for w, b in zip(ws, bs):
        t = torch.relu(t * w + b)
    return t


want = h.double()
for w, b in zip(ws, bs):
    want = torch.relu(want * w.double() + b.double())
print(f"chain of {LAYERS}, eager: {errors(chain(h), want)}")
for name, patch in (("compiled", {}), ("compiled, eager's roundings", {"emulate_precision_casts": True})):
    torch._dynamo.reset()
    with torch._inductor.config.patch(patch):
        print(f"chain of {LAYERS}, {name}: {errors(torch.compile(chain)(h), want)}")
