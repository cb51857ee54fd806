"""A linear layer and F.cross_entropy against int64 targets: the smallest loss-shaped workload.

In bfloat16 through Thunder + nvFuser on a GPU, its fwd+bwd hits an nvFuser INTERNAL ASSERT
and Thunder's default executors take the cross-entropy into a torch.compile
region, not an nvFuser one:

    irlens compare --workloads examples/cross_entropy.py:cross_entropy --backends eager,nvfuser \\
        --dtype bfloat16 --device cuda
    irlens repro examples/cross_entropy.py:cross_entropy --backend nvfuser --mode fwdbwd \\
        --dtype bfloat16 --device cuda --reduce
"""
import torch
import torch.nn.functional as F

import irlens

TOKENS, DIM, CLASSES = 256, 64, 1000


class LinearCrossEntropy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(DIM, CLASSES)

    def forward(self, x, targets):
        return F.cross_entropy(self.proj(x), targets)


with torch.random.fork_rng():
    torch.manual_seed(0)  # the same weights and targets in every process that loads this file
    cross_entropy = irlens.Workload.from_module(
        "cross_entropy", LinearCrossEntropy(), example_inputs=((TOKENS, DIM), torch.randint(CLASSES, (TOKENS,))),
        description="Linear(64, 1000) then F.cross_entropy against int64 targets")


if __name__ == "__main__":
    print(irlens.compare_table(irlens.compare(cross_entropy, backends=["eager", "inductor"])))
