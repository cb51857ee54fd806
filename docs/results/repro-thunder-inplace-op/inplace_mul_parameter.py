"""Thunder loses the gradient of a parameter that multiplies an intermediate in place, with upstream
code only: `out.mul_(gain)`, as each residual branch of timm's skipinit NFNets (dm_nfnet_*,
`NormFreeBlock.forward`) ends. thunder.jit with its default executors gives the gain `gain` times
eager's gradient: its backward reads the product where the multiplied value belongs (zero at
timm's start, gain 0; right only at gain 1, where the two are equal); the rest of the gradients
agree.

The zoo's NFNet (timm_nfnet, built skipinit at both sizes) shows it as a mismatch on exactly its
`skipinit_gain` gradients: nvFuser's fwd+bwd on the H200 (rel err 1.00 each), Thunder's on the CPU.

    python docs/results/repro-thunder-inplace-op/inplace_mul_parameter.py
(output: inplace_mul_parameter-cpu.txt; on a CUDA machine it also runs bfloat16 on the GPU)
"""
import torch

from irlens._compat import import_thunder

thunder = import_thunder()


class Branch(torch.nn.Module):
    def __init__(self, gain: float):
        super().__init__()
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)
        self.gain = torch.nn.Parameter(torch.tensor(gain))

    def forward(self, x):
        out = self.conv(torch.relu(x))
        out.mul_(self.gain)  # as timm's NormFreeBlock: out.mul_(self.skipinit_gain)
        return out * 0.2 + x


def grads(module, fn, x):
    module.zero_grad(set_to_none=True)
    x = x.detach().requires_grad_()
    fn(x).float().square().mean().backward()
    return {"input": x.grad, **{name: p.grad for name, p in module.named_parameters()}}


def main():
    cases = [("cpu", torch.float32)] + ([("cuda", torch.bfloat16)] if torch.cuda.is_available() else [])
    for device, dtype in cases:
        for gain in (0.0, 0.5, 1.0):
            torch.manual_seed(0)
            module = Branch(gain).to(device, dtype)
            x = torch.randn(2, 4, 8, 8, device=device, dtype=dtype)
            eager, jitted = grads(module, module, x), grads(module, thunder.jit(module), x)
            print(f"{device} {dtype} gain {gain}:")
            for name, e in eager.items():
                j = jitted[name]
                err = float("nan") if j is None else ((j.double() - e.double()).norm() / e.double().norm()).item()
                print(f"  {name:12s} eager norm {e.double().norm().item():.4g}  thunder.jit "
                      f"{'None' if j is None else format(j.double().norm().item(), '.4g')}  rel err {err:.2e}")


if __name__ == "__main__":
    main()
