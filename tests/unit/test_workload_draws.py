"""Where a workload's module and inputs are drawn (irlens.workloads.workload._drawn): on the run's
device from its seeded generators; on the CPU the numbers are those of the CPU's generator seeded as
before; a factory that cannot draw on the device draws on the CPU; out of memory is not retried."""
from __future__ import annotations

import pytest
import torch

from irlens.workloads.builtin import resolve_workload
from irlens.workloads.workload import _drawn


def test_a_cpu_instance_is_drawn_from_the_cpus_generators_seeded_by_its_seed():
    wl = resolve_workload("block")
    inst = wl.instantiate("tiny", "float32", "cpu", seed=3)
    torch.manual_seed(3)
    module = wl.torch(wl.cfg("tiny"))
    inputs = wl.inputs(wl.cfg("tiny"), torch.float32, torch.Generator().manual_seed(4))
    for a, b in zip(inst.module.state_dict().values(), module.state_dict().values()):
        assert torch.equal(a, b)
    assert all(torch.equal(a, b) for a, b in zip(inst.inputs, inputs))
    state = torch.random.get_rng_state()
    wl.instantiate("tiny", "float32", "cpu", seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)  # the caller's generator is left as it was


def test_a_factory_that_cannot_draw_on_the_device_draws_on_the_cpu():
    def needs_values(at):
        weight = torch.randn(3)
        weight.tolist()  # no values on the meta device
        return weight

    assert _drawn(needs_values, "meta", 0).device.type == "cpu"
    assert _drawn(lambda at: torch.randn(3), "meta", 0).device.type == "meta"


def test_running_out_of_memory_is_not_drawn_again():
    calls = []

    def too_big(at):
        calls.append(at)
        raise torch.OutOfMemoryError("out of memory (simulated)")

    with pytest.raises(torch.OutOfMemoryError):
        _drawn(too_big, "meta", 0)
    assert calls == [torch.device("meta")]
