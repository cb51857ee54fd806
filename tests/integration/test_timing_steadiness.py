"""CPU timings that hold up: worker thread pools that fit the cores, and a row whose timed steps
spread widely says so (irlens.runtime.timing.HostTiming, UNSTEADY_SPREAD) in the table and the report.
The turns that keep irlens's own work off a timed step are tests/integration/test_gpu_turns.py's."""
import pytest

from irlens.runtime import isolation
from irlens.matrix.backend_run import measure
import irlens.matrix as cmp
from irlens.runtime.isolation import THREAD_COUNTS, Worker, cpu_cores, thread_env, worker_threads
from irlens.matrix.execution import threads_used
from irlens.matrix import Document, format_table
from irlens.matrix.records import ResultCheck
from irlens.matrix.row import Row
from irlens.reporting import build_report, render_markdown
from irlens.runtime.timing import UNSTEADY_SPREAD, HostTiming, recording_host_time, unsteady


def test_workers_thread_pools_fit_the_cores(monkeypatch):
    for key in THREAD_COUNTS:
        monkeypatch.delenv(key, raising=False)
    worker = Worker(threads=1)
    try:
        assert worker.call("torch:get_num_threads", {}, 120) == 1
    finally:
        worker.close()
    monkeypatch.setenv("MKL_NUM_THREADS", "2")  # the user's own setting stays
    worker = Worker(threads=1)
    try:
        assert worker.call("torch:get_num_threads", {}, 120) == 2
    finally:
        worker.close()


@pytest.mark.slow
def test_a_run_sizes_its_workers_pools_to_fit_the_cores_together(monkeypatch):
    for key in THREAD_COUNTS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(isolation, "cpu_cores", lambda: 8)
    # two cell workers and the reference worker compute at once
    assert worker_threads(3) == 2 and worker_threads(9) == 1 and worker_threads(1) == 8
    doc = cmp.run_matrix(["gelu"], ["eager"], ["fwd"], progress=False, jobs=3)
    assert doc.threads == 2 and doc.rows[0].status == "ok"
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert threads_used(2) == 3 and threads_used(None) is None


def test_cpu_cores_follow_a_containers_quota(monkeypatch, tmp_path):
    quota = tmp_path / "cpu.max"
    monkeypatch.setattr(isolation, "CGROUP_CPU_MAX", str(quota))
    quota.write_text("max 100000\n")
    assert cpu_cores() == len(isolation.os.sched_getaffinity(0))
    quota.write_text("100000 100000\n")
    assert cpu_cores() == 1
    assert thread_env(1, {}) == {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    assert thread_env(1, {"MKL_NUM_THREADS": "4"}) == {}  # the user's own count stays


def test_spread_is_the_interquartile_range_over_the_median():
    assert HostTiming([50.0] * 5).spread == 0.0
    fighting = HostTiming([52.0, 4000.0, 55.0, 8000.0, 53.0, 4100.0, 54.0])  # pools fighting: 4 ms slices
    assert fighting.spread > 10 and unsteady(fighting.spread)
    assert not unsteady(HostTiming([50.0, 51.0, 52.0, 53.0, 54.0]).spread) and not unsteady(None)


def test_measure_leaves_its_steps_times():
    with recording_host_time() as host:
        _, _, run_us = measure(lambda: {}, "cpu")
    assert len(host.timing.steps_us) >= 5 and run_us == pytest.approx(sorted(host.timing.steps_us)[len(host.timing.steps_us) // 2], rel=1.0)


def _row(backend: str, run_us: float, spread: float) -> Row:
    return Row("gelu", "fwd", backend, None, "ok", max_rel_err=1e-7, tol=1e-4, results={"out0": ResultCheck(1e-7)},
               run_us=run_us, run_spread=spread, compile_s=0.1, kernel_count=2)


def test_a_steps_second_call_is_a_stage_of_its_own(monkeypatch):
    """A call that compiles again on its second call (transformers' RWKV under Thunder: its first
    call rescales its weights, which the jitted function guards on) is in stage "timing: its second
    call", which a timeout's reason names; the steady calls after it are "timing"."""
    from irlens.matrix import backend_run

    stages, seen = [], []
    monkeypatch.setattr(backend_run.call_progress, "stage", lambda name: stages.append(name))
    measure(lambda: seen.append(stages[-1] if stages else None), "cpu", min_repeats=3, budget_s=0.0)
    assert seen == [None, "timing: its second call", "timing", "timing"]
    assert stages[-1] == "reading kernels"


def test_an_unsteady_row_says_so_in_the_table_and_the_report():
    doc = Document("compare", [_row("eager", 52.0, 0.05), _row("inductor", 31986.0, 3.0)], "cpu", "test CPU",
                   preset="tiny")
    table = format_table(doc)
    assert "31986.0!" in table and "52.0!" not in table and "unsteady timing (1 row)" in table
    assert f"{UNSTEADY_SPREAD:.0%}" in table
    back = Document.from_json(doc.to_json())
    assert [r.run_spread for r in back.rows] == [0.05, 3.0]
    report = render_markdown(build_report(back))
    assert "31986.0!" in report and "inductor: ! unsteady timing" in report
    # a row written before the field reads back without it
    old = {k: v for k, v in _row("eager", 52.0, 0.05).to_json().items() if k != "run_spread"}
    assert Row.from_json(old).run_spread is None
