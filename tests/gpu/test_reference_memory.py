"""On a GPU: a float64 reference's results wait for the checks on the host, in pinned memory, equal to
what was computed; a reference out of memory waits for memory only where the device could hold it."""
from __future__ import annotations

import threading
import time

import pytest
import torch

from irlens.matrix import references
from irlens.matrix.references import compute_reference, release_memory, wait_for_memory
from irlens.workloads.builtin import resolve_workload

pytestmark = pytest.mark.gpu


def test_a_references_results_wait_on_the_host_in_pinned_memory():
    reference = compute_reference(resolve_workload("minigpt"), "fwdbwd", "cuda", "tiny", None)
    on_host = reference.results_on_host()
    for name, t in on_host.results.items():
        if isinstance(t, torch.Tensor):
            assert t.device.type == "cpu" and t.is_pinned() and torch.equal(t, reference.results[name].cpu()), name
    release_memory("cuda")


def test_a_reference_waits_for_memory_only_where_the_device_could_hold_it():
    free, total = torch.cuda.mem_get_info("cuda")
    start = time.monotonic()
    assert not wait_for_memory("cuda", total + 1, wait_s=30.0)
    assert wait_for_memory("cuda", 1, wait_s=30.0)
    assert time.monotonic() - start < 5.0


def test_a_reference_waits_until_the_memory_it_needs_is_given_back():
    free, _ = torch.cuda.mem_get_info("cuda")
    held = [torch.empty(free // 2, dtype=torch.uint8, device="cuda")]  # another cell's memory, for a second

    def give_back():
        time.sleep(1.0)
        held.clear()
        torch.cuda.empty_cache()

    threading.Thread(target=give_back).start()
    start = time.monotonic()
    assert wait_for_memory("cuda", free - (free // 8), wait_s=30.0)
    assert 0.9 < time.monotonic() - start < 10.0


def test_a_worker_keeps_no_more_pinned_memory_than_its_share(monkeypatch):
    reference = compute_reference(resolve_workload("gelu"), "fwd", "cuda", "tiny", None).results_on_host()
    del reference
    monkeypatch.setattr(references, "HOST_PINNED_SHARE", 0.0)
    release_memory("cuda")
    assert torch.cuda.host_memory_stats()["allocated_bytes.current"] == 0
