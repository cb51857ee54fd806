"""The one template that runs what a backend compiled (irlens.matrix.backend_run.run_compiled): an
ahead-of-time compile is the compile time, a step that fails runs the backend's fallback instead,
a failure after capture carries the captured graphs, and a kernel reader that fails leaves the run
standing, unmapped, with the notes the backend keeps."""
import time

import pytest
import torch

from irlens.backends.base import Compiled, KernelRead
from irlens.core.ir import Graph, Kernel
from irlens.matrix.backend_run import run_compiled


def _step(value: float):
    return lambda: {"out0": torch.full((2,), value)}


def test_an_ahead_of_time_compile_is_the_compile_time_and_the_first_call_is_not():
    first = []

    def step():
        if not first:
            first.append(True)
            time.sleep(0.3)  # a first call this slow would be the compile time of a JIT
        return {"out0": torch.ones(2)}

    ahead = Compiled(step, ahead=lambda: time.sleep(0.05))
    run = run_compiled(ahead, "cpu")
    assert 0.05 <= run.compile_s < 0.3 and torch.equal(run.results["out0"], torch.ones(2))
    first.clear()
    jit = run_compiled(Compiled(step), "cpu")
    assert jit.compile_s >= 0.29


def test_a_step_that_fails_runs_the_fallback_and_keeps_its_step():
    seen = []

    def failing():
        raise RuntimeError("cannot trace this")

    def fallback(e: Exception) -> Compiled:
        seen.append(str(e))
        return Compiled(_step(2.0), lambda cupti_taken: KernelRead([Kernel("b", "k0", "fused", [])]), reruns=True)

    run = run_compiled(Compiled(failing, fallback=fallback), "cpu")
    assert seen == ["cannot trace this"]
    assert torch.equal(run.results["out0"], torch.full((2,), 2.0)) and [k.name for k in run.kernels] == ["k0"]
    assert run.again is not None and torch.equal(run.again()["out0"], torch.full((2,), 2.0))
    assert run_compiled(Compiled(_step(1.0)), "cpu").again is None  # a backend that offers no rerun keeps none


def test_a_fallback_that_fails_is_the_run_s_failure():
    def failing():
        raise RuntimeError("jit failed")

    def no_way(e: Exception) -> Compiled:
        raise ValueError(f"neither way: {e}")

    with pytest.raises(ValueError, match="neither way: jit failed"):
        run_compiled(Compiled(failing, fallback=no_way), "cpu")


def test_a_failure_after_capture_carries_the_captured_graphs():
    captured = Graph("w", "dynamo", "aot.forward", "composite", [], [], [])

    def failing():
        raise RuntimeError("backward failed")

    with pytest.raises(RuntimeError) as failure:
        run_compiled(Compiled(failing, acquired=lambda: [captured]), "cpu")
    assert failure.value.irlens_acquired_graphs == [captured]
    with pytest.raises(RuntimeError) as bare:
        run_compiled(Compiled(failing), "cpu")
    assert not hasattr(bare.value, "irlens_acquired_graphs")


def test_a_kernel_reader_that_fails_leaves_the_run_unmapped_with_the_kept_notes():
    def unreadable(cupti_taken: bool) -> KernelRead:
        raise LookupError("no records\nsecond line")

    run = run_compiled(Compiled(_step(3.0), unreadable, notes=lambda: {"lowered_graphs": 1}), "cpu")
    assert torch.equal(run.results["out0"], torch.full((2,), 3.0)) and run.run_us > 0
    assert run.unmapped == "LookupError: no records" and run.kernels == [] and run.launch_count() is None
    assert run.notes["lowered_graphs"] == 1 and "unreadable" in run.notes["kernel_mapping_traceback"]


def test_a_process_under_an_injected_cuda_tool_has_cupti_taken(monkeypatch):
    """Nsight Compute and Nsight Systems inject themselves through CUDA_INJECTION64_PATH and hold
    CUPTI: nvFuser's own profiler must not start beside them."""
    from irlens.runtime import timing

    monkeypatch.setattr(timing, "_CUPTI_TAKEN", False)
    monkeypatch.delenv("CUDA_INJECTION64_PATH", raising=False)
    assert not timing.cupti_taken()
    monkeypatch.setenv("CUDA_INJECTION64_PATH", "/opt/nvidia/nsight-compute/target/linux-desktop-glibc_2_11_3-x64/libTreeLauncherTargetInjection.so")
    assert timing.cupti_taken()
