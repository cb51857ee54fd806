"""One train-mode BatchNorm2d through thunder.jit with nvFuser in front of Thunder's default executors
(irlens's `nvfuser` backend), a single forward with gradients off and on, in bfloat16 and float32, at
the input shapes of timm ResNet-18's BatchNorms at 224x224 and batch 64 (bn1: 64 channels at
112x112; layer1: 56x56; layer2: 28x28). Each line: the running variance's and mean's relative
error against a float64 eager forward of the same input, beside eager's own in that dtype.

The zoo's ResNet-18 (and EfficientNet-B0) nvFuser forward rows are mismatches on the running
variances of their largest BatchNorms alone, with gradients off; with gradients on they match
eager (resnet18_nvfuser_running_var.py in ../zoo-h200-bench and its output).

    python docs/results/repro-nvfuser-running-var/batchnorm_running_var.py
"""
import torch

from irlens._compat import import_thunder

thunder = import_thunder()
from thunder.executors.nvfuserex import nvfuserex  # noqa: E402

EXECUTORS = [nvfuserex, *[ex for ex in thunder.get_default_executors() if ex.name != "nvfuser"]]


def rel(a, b):
    return ((a.double() - b).norm() / b.norm()).item()


def stats(channels, x, jit, grad):
    """A fresh BatchNorm2d's running (mean, variance) after one forward of x."""
    bn = torch.nn.BatchNorm2d(channels).to(x.device, x.dtype).train()
    fn = thunder.jit(bn, executors=EXECUTORS) if jit else bn
    with torch.set_grad_enabled(grad):
        fn(x.requires_grad_(grad))
    torch.cuda.synchronize()
    return bn.running_mean, bn.running_var


def main():
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, thunder {thunder.__version__}, {torch.cuda.get_device_name()}")
    for shape in ((64, 64, 112, 112), (64, 64, 56, 56), (64, 128, 28, 28), (8, 64, 112, 112)):
        x64 = (torch.randn(shape, device="cuda", dtype=torch.float64) * 3 + 1)
        ref_mean, ref_var = stats(shape[1], x64, jit=False, grad=False)
        for dtype in (torch.bfloat16, torch.float32):
            x = x64.to(dtype)
            em, ev = stats(shape[1], x.clone(), jit=False, grad=False)
            for grad in (False, True):
                try:
                    m, v = stats(shape[1], x.clone(), jit=True, grad=grad)
                except Exception as e:  # a failure is a finding too
                    print(f"{str(list(shape)):18s} {str(dtype)[6:]:8s} grad {grad}: {type(e).__name__}: {str(e)[:160]}")
                    continue
                print(f"{str(list(shape)):18s} {str(dtype)[6:]:8s} grad {'on ' if grad else 'off'}: nvFuser var "
                      f"{rel(v, ref_var):.2e} mean {rel(m, ref_mean):.2e} | eager var {rel(ev, ref_var):.2e} "
                      f"mean {rel(em, ref_mean):.2e}")


if __name__ == "__main__":
    main()
