"""CPU host timing of the call alone: `measure` times a step's call, its arguments prepared and
its results packaged outside the timed region (as `torch.utils.benchmark.Timer` separates setup
from statement), and every built-in CPU row reads what `Timer.blocked_autorange` reads on the
same callable and thread count, within 10 %, or says why it cannot be judged.

A machine loaded by other jobs takes the core away for whole scheduler slices (milliseconds):
Timer's blocks (each ~10 ms of calls) then include that wait, while `measure`'s median of single
calls does not. So each Timer reading also says how much of its wall time the process spent on
a core; a reading that waited more than 10 % of it is no reference, and a row with no such
reading is listed as not judged (busy machine) instead of compared. The figures in the docs
come from an unloaded machine.
"""
from __future__ import annotations

import os
import statistics
import time

import pytest
import torch
from torch.utils.benchmark import Timer

from irlens.backends import get_backend
from irlens.matrix.backend_run import measure, run_backend
from irlens.runtime.isolation import worker_threads
from irlens.workloads.builtin import get_workload, workload_names
from irlens.runtime.timing import recording_host_time, unsteady
from irlens.workloads.workload import Step, eager_step

TOLERANCE = 0.10  # |irlens / Timer - 1|
ON_CORE = 0.9  # a Timer reading whose process was on a core less of its wall time than this is no reference
ROUNDS = 3
CPU_BACKENDS = ("eager", "inductor", "thunder+torchcompile", "xla")


def test_measure_times_the_call_alone():
    """Setup and packaging that take 20 ms each stay outside a call of about 1 ms."""
    step = Step(prepare=lambda: time.sleep(0.02) or "args", call=lambda args: time.sleep(0.001) or args,
                package=lambda args, raw: time.sleep(0.02) or {"raw": raw})
    with recording_host_time() as host:
        results, compile_s, run_us = measure(step, "cpu")
    assert results == {"raw": "args"}
    assert 1000 <= run_us < 10_000 and compile_s < 0.015
    # a step that held a prepare or a package took 20 ms at least; a loaded machine's 1 ms sleep may take several
    assert all(us < 20_000 for us in host.timing.steps_us)
    host.call()  # the timed call itself, for another timer to time


def test_a_plain_callable_is_timed_whole():
    with recording_host_time() as host:
        results, _, run_us = measure(lambda: time.sleep(0.002) or {"x": 1}, "cpu")
    assert results == {"x": 1} and 2000 <= run_us < 20_000 and len(host.timing.steps_us) >= 5


def test_a_step_repeats_on_the_same_leaves_with_the_same_gradients():
    """The fwd+bwd call takes gradients with autograd.grad: nothing accumulates between calls."""
    inst = get_workload("tinyhead").instantiate("tiny")
    step = eager_step(inst.module, inst, "fwdbwd")
    args = step.prepare()
    first = step.package(args, step.call(args))
    again = step.package(args, step.call(args))
    assert set(first) == {"out0", "loss", "grad:input0", "grad:proj.weight", "grad:proj.bias"}
    for name in first:
        torch.testing.assert_close(again[name], first[name], rtol=0, atol=0)
    assert all(p.grad is None for p in inst.module.parameters())


def timer_reading(call, threads: int) -> tuple[float, float]:
    """(Timer.blocked_autorange's median µs, the share of its wall time the process was on a core)."""
    wall, cpu = time.perf_counter(), time.process_time()
    median = Timer("call()", globals={"call": call}, num_threads=threads).blocked_autorange(min_run_time=0.1).median
    on_core = (time.process_time() - cpu) / (time.perf_counter() - wall)
    return median * 1e6, on_core


def judge(call, threads: int, spread: float, reference=None) -> tuple[str, str]:
    """("ok" | "off" | "unsteady" | "not judged", what was read), measure of `call` and Timer of
    `reference` (by default the same call) interleaved."""
    ours, theirs, waited = [], [], []
    with torch.utils.benchmark.utils.common.set_torch_threads(threads):
        for _ in range(ROUNDS):
            with recording_host_time() as host:
                ours.append(measure(call, "cpu")[2])
            spread = max(spread, host.timing.spread)
            us, on_core = timer_reading(reference or call, threads)
            (theirs if on_core >= ON_CORE else waited).append((us, on_core))
    mine = statistics.median(ours)
    if unsteady(spread):
        return "unsteady", f"irlens flags it: its calls spread {spread:.0%} of their median"
    if not theirs:
        worst = min(on for _, on in waited)
        return "not judged", f"busy machine: Timer's process was on a core {worst:.0%} of its run"
    readings = [us for us, _ in theirs]
    if len(readings) > 1 and max(readings) / min(readings) - 1 > TOLERANCE:
        # the reference itself moved more than the tolerance between rounds: it cannot judge 10 %
        return "unsteady", (f"Timer's own rounds read {', '.join(f'{us:.1f}' for us in readings)} µs "
                            f"(irlens {', '.join(f'{us:.1f}' for us in ours)} µs)")
    reference = statistics.median(readings)
    ratio = mine / reference
    verdict = "ok" if abs(ratio - 1) <= TOLERANCE else "off"
    return verdict, f"irlens {mine:.1f} µs, Timer {reference:.1f} µs ({ratio:.2f}x)"


def rows_of(workload: str, threads: int) -> dict[tuple[str, str], tuple[str, str]]:
    inst = get_workload(workload).instantiate("tiny")
    verdicts = {}
    for backend in CPU_BACKENDS:
        chosen = get_backend(backend)
        if not chosen.availability("cpu"):
            continue
        for mode in ("fwd", "fwdbwd"):
            with torch.utils.benchmark.utils.common.set_torch_threads(threads), recording_host_time() as host:
                run_backend(chosen, inst, mode)
            verdicts[(backend, mode)] = judge(host.call, threads, host.timing.spread)
    return verdicts


def check(verdicts: dict) -> None:
    listing = "\n".join(f"  {b} {m}: {v} ({why})" for (b, m), (v, why) in verdicts.items())
    off = [k for k, (v, _) in verdicts.items() if v == "off"]
    assert not off, f"rows off torch.utils.benchmark by more than {TOLERANCE:.0%}:\n{listing}"
    if all(v == "not judged" for v, _ in verdicts.values()):
        pytest.skip(f"the machine was too busy to judge any row:\n{listing}")
    print(listing)


@pytest.mark.slow
def test_tinyhead_rows_read_what_torch_benchmark_reads():
    """Every CPU backend's row of one workload, in both modes, with compare's worker thread count."""
    check(rows_of("tinyhead", worker_threads(2)))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("IRLENS_TIMING_ALL"),
                    reason="every built-in workload's rows (several minutes): set IRLENS_TIMING_ALL=1")
@pytest.mark.parametrize("workload", [w for w in workload_names() if w != "tinyhead"])
def test_every_builtin_row_reads_what_torch_benchmark_reads(workload):
    check(rows_of(workload, worker_threads(2)))


@pytest.mark.slow
def test_eager_fwd_times_the_bare_module_call():
    """The eager row's call is the module's own: a bare `module(*inputs)` under no_grad, timed by
    Timer, reads the same."""
    inst = get_workload("tinyhead").instantiate("tiny")
    threads = worker_threads(2)

    def bare():
        with torch.no_grad():
            return inst.module(*inst.inputs)

    with torch.utils.benchmark.utils.common.set_torch_threads(threads), recording_host_time() as host:
        run_backend(get_backend("eager"), inst, "fwd")
    verdict, why = judge(host.call, threads, host.timing.spread, reference=bare)
    if verdict in ("not judged", "unsteady"):
        pytest.skip(f"busy machine: {why}")
    assert verdict == "ok", f"eager fwd against the bare call: {why}"
