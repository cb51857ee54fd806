"""On a GPU a workload is drawn there: its parameters from the device's seeded generator and its
inputs from a generator on it, the same numbers each time (every cell and its reference compute on
one draw), and the zoo's own draws (a timm head, BatchNorm statistics) on the device it was built on."""
from __future__ import annotations

import importlib.util

import pytest
import torch

from irlens.workloads.builtin import resolve_workload
from irlens.workloads.workload import _drawn

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", ["minigpt", "block"])
def test_a_module_is_built_on_the_gpu_the_same_each_time(name):
    wl = resolve_workload(name)
    one, two = (_drawn(lambda at: wl.torch(wl.cfg("tiny")), "cuda", 0) for _ in range(2))
    for a, b in zip(one.state_dict().values(), two.state_dict().values()):
        assert a.device.type == "cuda" and torch.equal(a, b)
    other = _drawn(lambda at: wl.torch(wl.cfg("tiny")), "cuda", 1)
    assert not all(torch.equal(a, b) for a, b in zip(one.state_dict().values(), other.state_dict().values())
                   if a.is_floating_point())


def test_inputs_come_from_a_generator_on_the_gpu():
    wl = resolve_workload("gelu")
    inst = wl.instantiate("tiny", "bfloat16", "cuda", seed=2)
    expected = torch.randn(wl.cfg("tiny")["shape"], generator=torch.Generator("cuda").manual_seed(3), device="cuda")
    assert torch.equal(inst.inputs[0], expected.to(torch.bfloat16))


def _zoo_module(name: str) -> torch.nn.Module:
    if importlib.util.find_spec("timm") is None:
        pytest.skip("timm is not installed (pip install 'irlens[zoo]')")
    return resolve_workload(name).instantiate("tiny", "float32", "cuda").module


def test_the_zoos_batchnorm_statistics_are_drawn_on_the_gpu():
    module = _zoo_module("timm_resnet50")  # eval mode: its statistics drawn
    bns = [m for m in module.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert bns and all(bn.running_var.device.type == "cuda" for bn in bns)
    assert any(bool((bn.running_var != 1).any()) for bn in bns)


def test_the_zoos_zero_head_is_drawn_on_the_gpu():
    from irlens.workloads.zoo.timm_models import HEAD_SEED, HEAD_STD

    weight = _zoo_module("timm_mixer").get_classifier().weight  # timm's zero head, redrawn
    expected = torch.empty_like(weight).normal_(0.0, HEAD_STD, generator=torch.Generator("cuda").manual_seed(HEAD_SEED))
    assert weight.device.type == "cuda" and torch.equal(weight, expected)
