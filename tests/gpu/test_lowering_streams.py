"""On a GPU, XLA runs each of Dynamo's graphs as its own executable and no host wait separates them:
DLPack's stream handshake orders torch's reads of JAX's outputs, and JAX's reads of torch's tensors.
Matmuls large enough to still run when the next graph is dispatched show a missing order as a
mismatch against float64."""
from __future__ import annotations

import pytest
import torch

from irlens.matrix import run_matrix
from irlens.workloads.workload import MODES, Workload

pytestmark = pytest.mark.gpu


class Chain(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(2048, 2048) for _ in range(3))

    def forward(self, x):
        x = torch.tanh(self.layers[0](x))
        torch._dynamo.graph_break()  # each layer its own lowered graph (a break in a loop skips the frame)
        x = torch.tanh(self.layers[1](x))
        torch._dynamo.graph_break()
        return torch.tanh(self.layers[2](x)).sum(-1)


CHAIN = Workload.from_module("lowered_chain", Chain(), ((4096, 2048),))


def test_graphs_lowered_one_after_another_read_each_others_outputs():
    doc = run_matrix([f"{__file__}:CHAIN"], ["xla"], list(MODES), device="cuda", progress=False, isolate=False)
    for row in doc.rows:
        assert row.status == "ok" and row.via == "dynamo", f"{row.mode}: {row.reason}\n{row.detail}"
        assert row.notes["lowered_graphs"] >= 3
