"""Taking turns on one GPU between worker processes (irlens.runtime.gpu_turns.sharing_gpu / gpu_alone):
sharers overlap, a timing has it alone, and sharers that arrive while a timing waits go after it."""
import multiprocessing as mp
import os
import time

from irlens.runtime.gpu_turns import COMPILES_SHARE_ENV, gpu_alone, reference_place, sharing_gpu, stepped_aside


def _hold(path: str, kind: str, delay: float, hold: float, log, t0: float, env: dict | None = None) -> None:
    os.environ.update(env or {})
    time.sleep(max(0.0, t0 + delay - time.time()))
    if kind == "share-compile-aside":  # a cell that compiles, holding no turn, in the middle of its share
        with sharing_gpu(path):
            with stepped_aside():
                start = time.time()
                time.sleep(hold)
                log.put((kind, start - t0, time.time() - t0))
            log.put(("shared again", time.time() - t0, time.time() - t0))
        return
    if kind == "share-then-alone":  # a cell that is timed in the middle of its share
        with sharing_gpu(path):
            with gpu_alone(path):
                start = time.time()
                time.sleep(hold)
                log.put((kind, start - t0, time.time() - t0))
        return
    if kind == "place":  # a float64 reference: one of two places, then its share
        with reference_place(path, places=2), sharing_gpu(path):
            start = time.time()
            time.sleep(hold)
            log.put((kind, start - t0, time.time() - t0))
        return
    with (sharing_gpu(path) if kind == "share" else gpu_alone(path)):
        start = time.time()
        time.sleep(hold)
        log.put((kind, start - t0, time.time() - t0))


def _run(path: str, plan: list[tuple[str, float, float]], messages: int | None = None,
         env: dict | None = None) -> list[tuple[str, float, float]]:
    ctx = mp.get_context("spawn")
    log, t0 = ctx.Queue(), time.time() + 2.0  # time for the spawned interpreters to start
    procs = [ctx.Process(target=_hold, args=(path, kind, delay, hold, log, t0, env)) for kind, delay, hold in plan]
    for p in procs:
        p.start()
    out = [log.get(timeout=30) for _ in range(messages or len(procs))]
    for p in procs:
        p.join(timeout=30)
    return sorted(out, key=lambda r: r[1])


def _overlap(a, b) -> bool:
    return a[1] < b[2] and b[1] < a[2]


def test_sharers_overlap_and_a_timing_is_alone(tmp_path):
    lock = str(tmp_path / "gpu.lock")
    # two sharers from t=0 (1 s each); a timing asks at 0.2 s; a sharer arrives at 0.4 s, while it waits
    runs = _run(lock, [("share", 0.0, 1.0), ("share", 0.0, 1.0), ("alone", 0.2, 0.5), ("share", 0.4, 0.3)])
    shares = [r for r in runs if r[0] == "share"]
    (alone,) = [r for r in runs if r[0] == "alone"]
    assert _overlap(shares[0], shares[1])
    assert not any(_overlap(alone, s) for s in shares)
    assert [r[0] for r in runs] == ["share", "share", "alone", "share"]  # the late sharer waited for the timing


def test_a_sharer_steps_out_to_be_timed(tmp_path):
    lock = str(tmp_path / "gpu.lock")
    # each process shares, then is timed alone inside its share: no deadlock, and no two timings overlap
    runs = _run(lock, [("share-then-alone", 0.0, 0.4), ("share-then-alone", 0.0, 0.4), ("share", 0.1, 0.2)])
    timed = [r for r in runs if r[0] == "share-then-alone"]
    assert len(timed) == 2 and not _overlap(*timed)


def test_a_timing_runs_beside_a_compile_and_the_compiler_shares_again_after_it(tmp_path):
    lock = str(tmp_path / "gpu.lock")
    # a 1.5 s compile stepped aside from t=0; a timing asks at 0.3 s and gets the device at once
    runs = _run(lock, [("share-compile-aside", 0.0, 1.5), ("alone", 0.3, 1.5)], messages=3)
    compile_, alone, again = (next(r for r in runs if r[0] == k) for k in ("share-compile-aside", "alone",
                                                                           "shared again"))
    assert _overlap(compile_, alone) and alone[1] < 0.3 + 0.5
    assert again[1] >= alone[2]  # sharing again waits for the timing to end


def test_a_benchs_compile_keeps_its_share(tmp_path):
    """Where the workers' environment says compiles share (a bench's device timings), a timing
    waits for the compile."""
    lock = str(tmp_path / "gpu.lock")
    runs = _run(lock, [("share-compile-aside", 0.0, 1.0), ("alone", 0.3, 0.3)], messages=3,
                env={COMPILES_SHARE_ENV: "1"})
    compile_, alone = (next(r for r in runs if r[0] == k) for k in ("share-compile-aside", "alone"))
    assert not _overlap(compile_, alone) and alone[1] >= compile_[2]


def test_a_timed_plans_workers_keep_compiles_shared_unless_they_step_aside():
    """The environment a bench's cell workers start with: compiles keep their share of the GPU's
    turns by default, and step aside with `irlens bench --compiles-aside`."""
    import irlens.matrix as cmp
    from irlens.matrix.execution import IsolatedRunner
    from irlens.matrix.plan_references import References

    plan = cmp.plan_matrix(["gelu"], ["eager"], ["fwd"], "cpu", "tiny", None, device_timing=True)
    cell = plan.cells()[0]
    for share in (True, False):
        runner = IsolatedRunner(plan, References(plan, None, 60.0), 60.0, None, compiles_share=share)
        try:
            assert (COMPILES_SHARE_ENV in runner.worker_env(cell)) is share
        finally:
            runner.close()


def _measure_in_share(path: str, delay: float, log, t0: float) -> None:
    """A cell: shares the device, and `measure` times its steps (each 20 ms) with the device alone."""
    from irlens.matrix.backend_run import measure

    time.sleep(max(0.0, t0 + delay - time.time()))
    starts = []
    with sharing_gpu(path):
        measure(lambda: starts.append(time.time()) or time.sleep(0.02) or {}, "cpu")
        log.put(("timed", starts[1] - t0, time.time() - t0))  # starts[0]: the untimed first call


def test_measure_times_its_steps_with_the_device_alone(tmp_path):
    # a reference (a sharer, 0-1.2 s) and a cell that is timed from 0.2 s: no timed step beside the sharer
    lock = str(tmp_path / "turns.lock")
    ctx = mp.get_context("spawn")
    log, t0 = ctx.Queue(), time.time() + 2.0
    procs = [ctx.Process(target=_hold, args=(lock, "share", 0.0, 1.2, log, t0)),
             ctx.Process(target=_measure_in_share, args=(lock, 0.2, log, t0))]
    for p in procs:
        p.start()
    runs = sorted((log.get(timeout=60) for _ in procs), key=lambda r: r[1])
    for p in procs:
        p.join(timeout=30)
    share, timed = runs
    assert share[0] == "share" and timed[0] == "timed" and not _overlap(share, timed)


def test_a_cpu_reference_shares_the_cpu_like_a_cell(monkeypatch, tmp_path):
    from irlens.runtime import gpu_turns
    from irlens.worker.entry import run_spec
    from irlens.matrix import references
    from irlens.matrix.spec import ReferenceSpec

    turns, real = [], references.compute_reference
    monkeypatch.setattr(references, "compute_reference",
                        lambda *a, **kw: turns.append(gpu_turns.current_turn()) or real(*a, **kw))
    run_spec(ReferenceSpec("gelu").to_json(), "reference", path=str(tmp_path / "ref.pt"),
             gpu_lock=str(tmp_path / "turns.lock"))
    assert turns == ["shared"]


def test_a_worker_starts_sharing_the_device(tmp_path):
    # its imports (torch, a compiler: seconds of CPU) never run beside another worker's timing
    import threading

    from irlens.runtime.isolation import Worker

    lock = str(tmp_path / "turns.lock")
    timing = threading.Event()

    def time_alone():
        with gpu_alone(lock):
            timing.set()
            time.sleep(2.0)

    holder = threading.Thread(target=time_alone)
    holder.start()
    timing.wait()
    start = time.monotonic()
    worker = Worker(preload=("json",), turns=lock)
    try:
        worker.call("os:getpid", {}, 60)
        assert time.monotonic() - start >= 1.9
    finally:
        worker.close()
        holder.join()


def test_a_gpu_reference_builds_its_instance_before_it_takes_a_turn(monkeypatch, tmp_path):
    """On a GPU, building a bench-size module and its inputs is the host's work (seconds of random
    numbers on the CPU): a timing may run beside it; the float64 computing shares the turns. On the
    CPU both hold the turn (a CPU timing would share its cores)."""
    from irlens.runtime import call_progress, gpu_turns
    from irlens.matrix import references
    from irlens.workloads.builtin import resolve_workload
    from irlens.workloads.workload import Workload

    seen, real_instantiate, real_of = [], Workload.instantiate, references.reference_of
    monkeypatch.setattr(Workload, "instantiate", lambda wl, *a, **kw: seen.append(("instance", gpu_turns.current_turn()))
                        or real_instantiate(wl, "tiny", None, "cpu"))
    monkeypatch.setattr(references, "reference_of", lambda *a: seen.append(("float64", gpu_turns.current_turn()))
                        or real_of(*a))
    lock = str(tmp_path / "turns.lock")
    for name in ("_now", "_began", "_spent", "_waited_before"):  # restored after the test: a call begun here only
        monkeypatch.setattr(call_progress, name, getattr(call_progress, name))
    call_progress.begin("loading the workload")
    references.reference_anywhere(resolve_workload("gelu"), "fwd", "cuda", "tiny", None, lock)
    assert seen == [("instance", None), ("float64", "shared")]
    assert {"instantiating", "computing the float64 reference on cuda"} <= set(call_progress.spent())
    seen.clear()
    references.reference_anywhere(resolve_workload("gelu"), "fwd", "cpu", "tiny", None, lock)
    assert seen == [("instance", "shared"), ("float64", "shared")]


def test_at_most_two_float64_references_compute_at_once(tmp_path):
    first, second, third = _run(str(tmp_path / "gpu.lock"), [("place", 0.0, 1.5), ("place", 0.0, 1.5),
                                                                ("place", 0.3, 1.5)])
    assert _overlap(first, second) and third[1] >= min(first[2], second[2]) - 0.05


def test_a_reference_out_of_memory_waits_for_what_it_needed_before_it_tries_alone(monkeypatch, tmp_path):
    """Out of device memory beside other cells, a reference waits (holding no turn) for the memory its
    try needed, then tries with the device alone; the CPU comes last."""
    import contextlib

    import torch

    from irlens.matrix import references
    from irlens.runtime import gpu_turns
    from irlens.workloads.builtin import resolve_workload

    real, events = references.compute_reference, []

    def full_until_alone(wl, mode, device, *a, turn=None, **kw):
        with (turn or contextlib.nullcontext)():
            events.append(("try", device, gpu_turns.current_turn()))
            if gpu_turns.current_turn() == "shared":
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")
        return real(wl, mode, "cpu", *a, **kw)

    monkeypatch.setattr(references, "compute_reference", full_until_alone)
    monkeypatch.setattr(references, "memory_needed", lambda e, device: 3 << 30 if "2.00 GiB" in str(e) else None)
    monkeypatch.setattr(references, "wait_for_memory", lambda device, needed, wait_s: events.append(
        ("wait", needed, gpu_turns.current_turn())) or True)
    monkeypatch.setattr(references, "release_memory", lambda device: None)
    references.reference_anywhere(resolve_workload("gelu"), "fwd", "cuda", "tiny", None, str(tmp_path / "gpu.lock"))
    assert events == [("try", "cuda", "shared"), ("wait", 3 << 30, None), ("try", "cuda", "alone")]
