"""The zoo's timm_resnet18 at bench size (train mode, bfloat16, batch 64 at 224x224) on a GPU: one
forward through thunder.jit with nvFuser in front (as irlens's `nvfuser` backend runs it), with the
torch.compile executor in front (irlens's `thunder+torchcompile`, ok on the page), and eager; each
BatchNorm's running statistics after it against a float64 eager forward of the same weights.

For each BatchNorm it prints the running mean's and variance's relative error against float64,
and the batch variance each run folded in, (running_var - (1 - momentum) * before) / momentum,
beside float64's unbiased (n / (n - 1)) and biased batch variances: which variance nvFuser's
update used (or whether it updated twice). The GPU page's nvFuser forward row is a mismatch on the
running variances alone (bn1 rel err 0.45), its means equal to eager's.

    python docs/results/zoo-h200-bench/resnet18_nvfuser_running_var.py [batch]
"""
import copy
import sys

import torch

from irlens._compat import import_thunder, import_timm
from irlens.workloads.zoo.timm_models import LIVE_BRANCHES

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU: a check of the script (no nvFuser)


def batchnorms(model):
    return [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.BatchNorm2d)]


def run_forward(model, x, jit=None, grad=False):
    fn = jit(model) if jit else model
    with torch.set_grad_enabled(grad):
        fn(x)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return {name: (m.running_mean.double().clone(), m.running_var.double().clone()) for name, m in batchnorms(model)}


def batch_stats(model, x):
    """float64 batch variance (biased and unbiased) of each BatchNorm's input, by hooks."""
    stats = {}

    def hook(name):
        def record(_, args):
            a = args[0]
            n = a.numel() // a.shape[1]
            var = a.var(dim=(0, 2, 3), unbiased=False)
            stats[name] = (var, var * n / (n - 1))
        return record

    handles = [m.register_forward_pre_hook(hook(name)) for name, m in batchnorms(model)]
    with torch.no_grad():
        model(x)
    for h in handles:
        h.remove()
    return stats


def rel(a, b):
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def main():
    batch = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    thunder = import_thunder()
    timm = import_timm()
    torch.manual_seed(0)
    base = timm.create_model("resnet18", pretrained=False, num_classes=1000, **LIVE_BRANCHES).train().to(DEVICE)
    x = torch.randn(batch, 3, 224, 224, device=DEVICE)

    ref64 = copy.deepcopy(base).double()
    before = {name: m.running_var.double().clone() for name, m in batchnorms(ref64)}
    momentum = {name: m.momentum for name, m in batchnorms(ref64)}
    stats = batch_stats(copy.deepcopy(ref64), x.double())
    runs = {"float64": run_forward(ref64, x.double())}
    bf16 = base.to(torch.bfloat16)
    xb = x.to(torch.bfloat16)
    runs["eager bf16"] = run_forward(copy.deepcopy(bf16), xb)
    from thunder.executors.torch_compile import torch_compile_ex

    fusers = [("thunder torchcompile", torch_compile_ex)]
    if DEVICE == "cuda":
        from thunder.executors.nvfuserex import nvfuserex

        fusers.insert(0, ("thunder nvfuser", nvfuserex))
    others = [ex for ex in thunder.get_default_executors() if ex.name not in ("nvfuser", "torchcompile")]
    for label, ex in fusers:
        for grad in (False, True):
            key = f"{label}{' (grad on)' if grad else ''}"
            try:
                runs[key] = run_forward(copy.deepcopy(bf16), xb,
                                        jit=lambda m, ex=ex: thunder.jit(m, executors=[ex, *others]), grad=grad)
            except Exception as e:  # a failing run is a finding too: print it, go on
                print(f"{key}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    ref = runs["float64"]
    print(f"batch {batch}; rel err against float64 of running_mean / running_var; 'folded' = the batch variance "
          "the update used, (rv - (1-m) rv0) / m, over float64's unbiased one")
    for name, _ in batchnorms(ref64)[:6] + batchnorms(ref64)[-2:]:
        biased, unbiased = stats[name]
        print(f"{name}: biased/unbiased = {rel(biased, unbiased):.2e} apart")
        for key, r in runs.items():
            mean, var = r[name]
            folded = (var - (1 - momentum[name]) * before[name]) / momentum[name]
            ratio = (folded / unbiased).median().item()
            print(f"  {key:32s} mean {rel(mean, ref[name][0]):.2e}  var {rel(var, ref[name][1]):.2e}  "
                  f"folded/unbiased median {ratio:.4f}")


if __name__ == "__main__":
    main()
