"""GraphNet's mmseg/CGNet, fwd+bwd in float32: its eval-mode BatchNorms' gradients are per-channel sums
over the 64x64 feature map (4,096 terms). Each BatchNorm backward's output gradient is caught in the
float64 step, rounded to float32, and its per-channel sum taken in several orders, each against the
float32 terms summed exactly (in float64): ATen's own (torch.sum), plain accumulation in 16, 8 and 1
lanes (a vectorized loop, or a loop over the channels that adds one position at a time), and Inductor's
compiled sum. The condition, norm over channels of sum|t| / |sum t|, says whether the terms cancel.
irlens only loads the sample.

    python docs/results/graphnet-cgnet-f32-sums/cgnet_sums.py GRAPHNET/samples/mmseg/CGNet
(output: cgnet_sums-cpu.txt)
"""
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from irlens.workloads.builtin import resolve_workload
from irlens.workloads.workload import mean_square_loss


class OutputGradients(TorchDispatchMode):
    """Keeps the output gradient of every BatchNorm backward."""

    def __init__(self):
        super().__init__()
        self.caught = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if "batch_norm_backward" in str(func):
            self.caught.append(args[0].detach().clone())
        return func(*args, **(kwargs or {}))


def in_lanes(t: torch.Tensor, lanes: int) -> torch.Tensor:
    """Each row of `t` summed in float32 by `lanes` running sums, one term at a time each, then the lanes."""
    v = t.reshape(t.shape[0], -1, lanes)
    acc = torch.zeros(t.shape[0], lanes, dtype=t.dtype)
    for i in range(v.shape[1]):
        acc = acc + v[:, i]
    return acc.sum(1)


def main(sample: str, shown: int = 4):
    inst = resolve_workload(f"graphnet:{sample}").instantiate()
    module = inst.module.to(torch.float64)
    out = module(*[t.double() if t.is_floating_point() else t for t in inst.inputs])
    mode = OutputGradients()
    with mode:
        mean_square_loss(out).backward()
    compiled_sum = torch.compile(lambda t: t.sum(1))
    print(f"torch {torch.__version__}; {len(mode.caught)} BatchNorm backwards; the first {shown} in the backward's order")
    for k, g in enumerate(mode.caught[:shown]):
        terms = g[0].reshape(g.shape[1], -1).float()  # channel x positions, in float32
        exact = terms.double().sum(1)
        rel = lambda s: ((s.double() - exact).norm() / exact.norm()).item()  # noqa: E731
        condition = (terms.double().abs().sum(1).norm() / exact.norm()).item()
        print(f"batch norm {k}: {terms.shape[0]} channels x {terms.shape[1]} terms, condition {condition:.2f}; "
              f"rel err of the float32 sum: ATen {rel(terms.sum(1)):.1e}, 16 lanes {rel(in_lanes(terms, 16)):.1e}, "
              f"8 lanes {rel(in_lanes(terms, 8)):.1e}, 1 lane {rel(in_lanes(terms, 1)):.1e}, "
              f"Inductor's sum alone {rel(compiled_sum(terms)):.1e}")


if __name__ == "__main__":
    main(sys.argv[1])
