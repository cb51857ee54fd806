"""What a float64 reference that ran out of GPU memory waits for (irlens.matrix.references.memory_needed):
the most it held, or what it held then and the allocation it was refused, read from torch's message."""
from __future__ import annotations

import pytest
import torch

from irlens.matrix import references

GiB = 1 << 30


@pytest.fixture
def gpu_that_held(monkeypatch):
    def held(peak: int, now: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: peak)
        monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: now)
    return held


def oom(message: str) -> torch.OutOfMemoryError:
    return torch.OutOfMemoryError(message)


def test_it_needs_what_it_held_and_the_allocation_it_was_refused(gpu_that_held):
    gpu_that_held(peak=3 * GiB, now=2 * GiB)
    refused = "CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.19 GiB"
    assert references.memory_needed(oom(refused), "cuda") == 2 * GiB + int(2.5 * GiB)
    assert references.memory_needed(oom("Tried to allocate 512 bytes."), "cuda") == 3 * GiB  # its peak was more
    assert references.memory_needed(oom("Tried to allocate 20.00 MiB"), "cuda:1") == 3 * GiB


def test_without_the_refused_size_or_a_gpu_it_waits_for_nothing(gpu_that_held, monkeypatch):
    gpu_that_held(peak=GiB, now=GiB)
    assert references.memory_needed(oom("out of memory (simulated)"), "cuda") is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert references.memory_needed(oom("Tried to allocate 2.00 GiB"), "cuda") is None
