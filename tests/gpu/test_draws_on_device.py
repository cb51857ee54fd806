"""On a GPU a workload is drawn there: its parameters from the device's seeded generator and its
inputs from a generator on it, the same numbers each time (every cell and its reference compute on
one draw), and the zoo's own draws (a timm head, BatchNorm statistics) on the device it was built on."""
from __future__ import annotations

import pytest
import torch

from irlens.workloads.builtin import resolve_workload

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["minigpt", "block", "gelu"])
def test_a_workload_is_drawn_on_the_gpu_the_same_each_time(name):
    wl = resolve_workload(name)
    one, two = (wl.instantiate("tiny", "float32", "cuda") for _ in range(2))
    for a, b in zip([*one.module.state_dict().values(), *one.inputs], [*two.module.state_dict().values(), *two.inputs]):
        assert a.device.type == "cuda" and torch.equal(a, b)
    other = wl.instantiate("tiny", "float32", "cuda", seed=1)
    assert not all(torch.equal(a, b) for a, b in zip([*one.module.state_dict().values(), *one.inputs],
                                                      [*other.module.state_dict().values(), *other.inputs])
                   if a.is_floating_point())


def test_the_zoos_head_and_statistics_are_drawn_on_the_gpu():
    pytest.importorskip("timm")
    module = resolve_workload("timm_resnet50").instantiate("tiny", "float32", "cuda").module  # eval: drawn statistics
    bns = [m for m in module.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert bns and all(bn.running_var.device.type == "cuda" for bn in bns)
    assert any(bool((bn.running_var != 1).any()) for bn in bns)
    assert all(p.device.type == "cuda" for p in module.get_classifier().parameters())
    assert module.get_classifier().weight.any()
