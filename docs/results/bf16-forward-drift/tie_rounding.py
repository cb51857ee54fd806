"""Why torch.compile's bfloat16 ResNet-50 (random weights, eval mode) is biased: the residual add of
two BatchNorms at their initial statistics (mean 0, variance 1: a scale of 1/sqrt(1 + 1e-5), just
under 1). The sum of two bfloat16 values often lies exactly halfway between two bfloat16 numbers.
Eager rounds each BatchNorm's output back to the same bfloat16 value, then rounds the sum: ties go
to even, up as often as down. A fused kernel rounds (a + b) * s once, s just under 1: every tie is
now just under halfway and rounds toward zero, correctly, but always the same way (after the ReLU:
down). Per element both are
as close to float64; the fused kernel's error does not average out over a pooling. CPU or GPU:

    python docs/results/bf16-forward-drift/tie_rounding.py
"""
import torch

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
gen = torch.Generator(device=DEVICE).manual_seed(0)
a = torch.randn(8, 256, 56, 56, device=DEVICE, generator=gen).to(torch.bfloat16)
b = torch.randn(8, 256, 56, 56, device=DEVICE, generator=gen).to(torch.bfloat16)
s = 1 / (1 + 1e-5) ** 0.5  # an eval-mode BatchNorm at its initial statistics, weight 1, bias 0

exact = a.float() + b.float()  # exact in float32
halfway = (exact - exact.to(torch.bfloat16).float()).abs() == (exact.to(torch.bfloat16).float().nextafter(
    torch.tensor(float("inf"), device=DEVICE)).to(torch.bfloat16).float() - exact.to(torch.bfloat16).float()).abs() / 2
print(f"sums exactly halfway between two bfloat16 numbers: {halfway.float().mean().item():.1%}")


def residual(x, y):
    return torch.relu(x * s + y * s)  # two such BatchNorms, the residual add, the ReLU


want = residual(a.double(), b.double())
for name, got in (("eager (each op rounds)", residual(a, b)), ("torch.compile (one rounding)", torch.compile(residual)(a, b))):
    d = got.double() - want
    live = want > 0
    print(f"{name}: rel err {(d.norm() / want.norm()).item():.2e}, mean relative error where positive "
          f"{(d[live] / want[live]).mean().item():+.2e}, pooled over 56x56: rel err "
          f"{(d.mean((2, 3)).norm() / want.mean((2, 3)).norm()).item():.2e}")
