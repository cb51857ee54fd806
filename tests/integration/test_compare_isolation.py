"""The compare matrix survives broken backends: a crash, a hang or an exception is a failed row
(with the reason and the tail of stderr), a wrong answer a mismatch, and the rest goes on.

The broken backends below are test-only: they reach the compare workers by reference, this
file's path and their name (`path/to/file.py:NAME`, as a user's own backend would). Isolated,
the parent does no workload work at all (on a GPU it would keep memory the workers need), and
workers die with it.
"""
import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import irlens.matrix as cmp
from irlens.runtime import gpu_turns
from irlens.backends.base import Backend, Compiled
from irlens.worker.entry import run_spec
from irlens.cli.compare import run as compare_main
from irlens.frontends.base import Availability
from irlens.runtime.isolation import worker_env
from irlens.matrix import plan_references, references
from irlens.matrix.cell import out_of_memory
from irlens.matrix.spec import ReferenceSpec
from irlens.workloads.builtin import get_workload
from irlens.workloads.workload import Workload, run_eager


class BrokenBackend(Backend):
    """Runs eager, except in `broken_mode`, where it does `how`."""

    frontend = None
    description = "test-only: deliberately broken"

    def __init__(self, name: str, how: str, broken_mode: str = "fwd", frontend: str | None = None,
                 keeps_device_memory: bool = False):
        self.name, self.how, self.broken_mode, self.frontend = name, how, broken_mode, frontend
        self.keeps_device_memory = keeps_device_memory

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def compile(self, inst, mode: str) -> Compiled:
        broken = mode == self.broken_mode
        if broken:
            if self.how == "segfault":
                ctypes.string_at(0)
            elif self.how == "hang":
                time.sleep(3600)
            elif self.how == "raise":
                raise RuntimeError("deliberately broken backend")
            elif self.how == "oom" and gpu_turns.current_turn() != "alone":
                raise torch.OutOfMemoryError("CUDA out of memory (simulated: too many cells on the GPU)")

        def step() -> dict:
            results = run_eager(inst.module, inst, mode)
            return {k: v * 1.01 for k, v in results.items()} if broken and self.how == "wrong" else results

        return Compiled(step, notes=lambda: {"pid": os.getpid()})


SEGFAULT = BrokenBackend("test-segfault", "segfault")
HANG = BrokenBackend("test-hang", "hang")
RAISE = BrokenBackend("test-raise", "raise")
WRONG = BrokenBackend("test-wrong", "wrong", broken_mode="fwdbwd")
FAKE_XLA = BrokenBackend("test-jax", "none", frontend="jax", keeps_device_memory=True)  # as XLA
OOM = BrokenBackend("test-oom", "oom")


def ref(name: str) -> str:
    """A test backend by reference: this file and its name here."""
    return f"{__file__}:{name}"


BROKEN = [ref("SEGFAULT"), ref("HANG"), ref("RAISE"), ref("WRONG")]


def _args(tmp_path, **kw):
    base = dict(workloads=["gelu"], backends=["eager"], device="cpu", modes=["fwd"], preset="tiny", dtype=None,
                json=str(tmp_path / "out.json"), timeout=60.0, jobs=1)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.slow
def test_compare_isolation_broken_backends_fail_and_the_matrix_goes_on(tmp_path, capsys):
    args = _args(tmp_path, backends=["eager", *BROKEN], modes=["fwd", "fwdbwd"], timeout=15.0, jobs=2)
    assert compare_main(args) == 1
    doc = json.loads((tmp_path / "out.json").read_text())
    check_schema(doc)
    rows = {(r["backend"], r["mode"]): r for r in doc["rows"]}
    assert len(rows) == 10

    segv = rows["test-segfault", "fwd"]
    assert segv["status"] == "failed" and "SIGSEGV" in segv["reason"]
    assert "[irlens] gelu test-segfault fwd" in segv["detail"]  # the tail of the worker's stderr
    hang = rows["test-hang", "fwd"]
    assert hang["status"] == "failed" and "timed out after 15 s (compiling, its last" in hang["reason"]
    raised = rows["test-raise", "fwd"]
    assert raised["status"] == "failed" and raised["phase"] == "run"
    assert "RuntimeError: deliberately broken backend" in raised["reason"]
    assert "Traceback" in raised["detail"]
    wrong = rows["test-wrong", "fwdbwd"]
    assert wrong["status"] == "mismatch" and "out0: rel err 1.00e-02" in wrong["reason"]
    assert wrong["max_rel_err"] == pytest.approx(0.01, rel=1e-3)

    # Every other cell ran, the broken backends' other mode in a fresh worker included.
    for key in [("eager", "fwd"), ("eager", "fwdbwd"), ("test-segfault", "fwdbwd"), ("test-hang", "fwdbwd"),
                ("test-raise", "fwdbwd"), ("test-wrong", "fwd")]:
        assert rows[key]["status"] == "ok", rows[key]
    table = capsys.readouterr().out
    assert "test-hang" in table and "timed out" in table


def check_schema(doc: dict) -> None:
    assert {"device", "versions", "rows"} <= set(doc)
    assert doc["device"] == "cpu"
    assert doc["versions"]["torch"] == torch.__version__
    assert {"python", "platform", "jax", "thunder"} <= set(doc["versions"])
    types = {"workload": str, "mode": str, "backend": str, "status": str, "reason": str,
             "max_rel_err": (float, type(None)), "tol": (float, type(None)), "compile_s": (float, type(None)),
             "run_us": (float, type(None)), "kernels": list}
    for row in doc["rows"]:
        for key, t in types.items():
            assert isinstance(row[key], t), (key, row)
        assert row["frontend"] in (None, "dynamo", "thunder", "jax")
        assert row["status"] in cmp.STATUSES


NO_TWIN = Workload.from_module("no_twin", lambda x: torch.tanh(x) * 2.0, example_inputs=((4, 8),))


def test_compare_jax_backend_is_unavailable_without_a_twin():
    doc = cmp.run_matrix(["gelu", NO_TWIN], ["eager", ref("FAKE_XLA")], ["fwd"], progress=False, isolate=False).to_json()
    statuses = {(r["workload"], r["backend"]): r["status"] for r in doc["rows"]}
    assert statuses == {("gelu", "eager"): "ok", ("gelu", "test-jax"): "ok",
                        ("no_twin", "eager"): "ok", ("no_twin", "test-jax"): "unavailable"}
    assert doc["rows"][-1]["reason"] == "workload 'no_twin' has no JAX twin"


def test_compare_exit_0_when_every_row_is_ok(tmp_path):
    assert compare_main(_args(tmp_path)) == 0


@pytest.mark.parametrize("field,value,valid", [
    ("workloads", ["nope"], "gelu"),
    ("backends", ["nope"], "eager"),
    ("modes", ["sideways"], "fwdbwd"),
    ("preset", "huge", "tiny"),
    ("device", "tpu", "cuda"),
    ("dtype", "int3", "bfloat16"),
])
def test_compare_bad_arguments_exit_2_listing_the_choices(tmp_path, capsys, field, value, valid):
    assert compare_main(_args(tmp_path, **{field: value})) == 2
    err = capsys.readouterr().err
    assert repr(value if isinstance(value, str) else value[0]) in err and valid in err
    assert not (tmp_path / "out.json").exists()


def test_compare_reference_is_computed_once_per_workload_and_mode(monkeypatch):
    calls = []
    real = references.compute_reference
    for module in (references, plan_references):  # a plan's references, and the twin check's
        monkeypatch.setattr(module, "compute_reference",
                            lambda wl, mode, *a: calls.append((wl.name, mode)) or real(wl, mode, *a))
    doc = cmp.run_matrix(["gelu"], ["eager", ref("WRONG"), ref("RAISE")], ["fwd", "fwdbwd"], progress=False,
                         isolate=False).to_json()
    # once per mode for the six cells, and once more for the JAX twin check (always at the tiny preset)
    assert sorted(calls) == [("gelu", "fwd"), ("gelu", "fwd"), ("gelu", "fwdbwd")]
    assert [r["status"] for r in doc["rows"]] == ["ok", "ok", "failed", "ok", "mismatch", "ok"]


@pytest.fixture
def instantiated_here(monkeypatch) -> list[str]:
    """Each workload this process instantiates (workers are other processes: they are not seen)."""
    seen = []
    real = Workload.instantiate
    monkeypatch.setattr(Workload, "instantiate", lambda wl, *a, **kw: seen.append(wl.name) or real(wl, *a, **kw))
    return seen


@pytest.mark.slow
def test_compare_isolated_parent_does_no_device_work(instantiated_here, tmp_path):
    # On a GPU, any reference, twin check or cell computed in the parent keeps memory the
    # workers need; every one starts from Workload.instantiate, so none may happen here.
    # The first workload's reference crashes its worker; gelu's are computed in a fresh one.
    path = tmp_path / "crashes.py"
    path.write_text("import ctypes, irlens\n"
                    "wl = irlens.Workload.from_module('crashes', lambda x: ctypes.string_at(0) and x,"
                    " example_inputs=((4, 4),))\n")
    doc = cmp.run_matrix([f"{path}:wl", "gelu"], ["eager", "nvfuser"], ["fwd", "fwdbwd"], progress=False,
                         isolate=True).to_json()
    eager = [r for r in doc["rows"] if r["backend"] == "eager"]
    assert [(r["workload"], r["status"], r["phase"]) for r in eager] == [
        ("crashes", "failed", "reference"), ("crashes", "failed", "reference"), ("gelu", "ok", ""), ("gelu", "ok", "")]
    assert eager[0]["reason"] == "the float64 eager reference failed: worker process crashed (SIGSEGV)"
    # a backend that does not run on the CPU is unavailable there, whatever the reference did
    nvfuser = [r for r in doc["rows"] if r["backend"] == "nvfuser"]
    assert len(nvfuser) == 4 and all(r["status"] == "unavailable" and "CUDA" in r["reason"] for r in nvfuser)
    assert instantiated_here == []
    references.compute_reference(get_workload("gelu"), "fwd", "cpu", "tiny", None)
    assert instantiated_here == ["gelu"]  # the spy sees work done here


def _live_group_members(pgid: int) -> list[int]:
    """Processes of group `pgid` that are not zombies (an orphan's zombie waits for its reaper)."""
    live = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(stat.parent.name))
    return live


def test_worker_dies_with_its_parent_even_mid_call():
    # The parent is killed (as `timeout` does) while its worker is busy with a subprocess.
    script = ("from irlens.runtime.isolation import Worker\n"
              "w = Worker()\n"
              "print(w.call('os:getpid', {}, 60), flush=True)\n"
              "w.call('subprocess:run', {'args': ['sleep', '600']}, 600)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, env=worker_env())
    worker = int(parent.stdout.readline())  # also its process group
    try:
        deadline = time.monotonic() + 30
        while len(_live_group_members(worker)) < 2 and time.monotonic() < deadline:  # the worker and its `sleep`
            time.sleep(0.1)
        assert len(_live_group_members(worker)) == 2
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _live_group_members(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _live_group_members(worker) == []
    finally:  # when it fails, leave nothing behind
        parent.kill()
        if _live_group_members(worker):
            os.killpg(worker, signal.SIGKILL)


@pytest.mark.slow
def test_a_reference_out_of_gpu_memory_is_computed_on_the_cpu(monkeypatch, tmp_path):
    # float64 needs twice float32's memory: a reference that does not fit on the GPU falls back
    # to the CPU, with the weights and inputs the cells will be pinned to
    from irlens.matrix.references import Reference

    real, devices = references.compute_reference, []

    def on_a_full_gpu(wl, mode, device, *args, **kwargs):
        devices.append(device)
        if device != "cpu":
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return real(wl, mode, device, *args, **kwargs)

    monkeypatch.setattr(references, "compute_reference", on_a_full_gpu)
    path = str(tmp_path / "ref.pt")
    on_gpu = ReferenceSpec("tinyhead", device="cuda").to_json()
    run_spec(on_gpu, "reference", path=path)
    assert devices == ["cuda", "cpu"]
    # with GPU turns (a bench run): first beside the other cells, then with the GPU alone, then the CPU
    devices.clear()
    run_spec(on_gpu, "reference", path=path, gpu_lock=str(tmp_path / "gpu.lock"))
    assert devices == ["cuda", "cuda", "cpu"]
    ref = Reference.load(path, "cpu")
    assert ref.results["out0"].dtype == torch.float64 and ref.results["out0"].shape == (16, 600)


@pytest.mark.slow
def test_a_timed_cell_out_of_memory_beside_others_runs_again_alone():
    plan = cmp.plan_matrix(["gelu", "tinyhead"], [ref("OOM")], ["fwd"], "cpu", "tiny", None, device_timing=True)
    doc = cmp.run_plan(plan, timeout=60.0, progress=False, jobs=2).to_json()
    assert [r["status"] for r in doc["rows"]] == ["ok", "ok"]
    assert all("run again alone" in r["notes"]["gpu_alone"] for r in doc["rows"])
    # untimed (a compare run), the same failure stays a failure: nothing else shares a GPU turn
    plan = cmp.plan_matrix(["gelu"], [ref("OOM")], ["fwd"], "cpu", "tiny", None)
    (row,) = cmp.run_plan(plan, timeout=60.0, progress=False).rows
    assert row.status == "failed" and out_of_memory(row)


def test_a_crash_reports_its_first_error_not_only_the_teardown(tmp_path):
    # nvFuser on a GPU: an illegal memory access, then thousands of characters of C++ frames
    # while its destructors abort on the dead context; the row must name the cause
    from irlens.runtime.isolation import CallFailed, Worker

    (tmp_path / "crashy.py").write_text(
        "import os, sys\n"
        "def crash():\n"
        "    print('[irlens] minigpt nvfuser fwdbwd', file=sys.stderr)\n"
        "    print('RuntimeError: CUDA error: an illegal memory access was encountered', file=sys.stderr)\n"
        "    print('frame #3: nvfuser::CompiledKernel::~CompiledKernel()\\n' * 200, file=sys.stderr, flush=True)\n"
        "    os.abort()\n")
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tmp_path), env.get("PYTHONPATH")) if p)
    worker = Worker(env=env)
    try:
        with pytest.raises(CallFailed) as failure:
            worker.call("crashy:crash", {}, 60)
    finally:
        worker.close()
    assert failure.value.reason == ("worker process crashed (SIGABRT), after: "
                                    "RuntimeError: CUDA error: an illegal memory access was encountered")
    head, tail = failure.value.detail.split("\n[...]\n")
    assert head.startswith("RuntimeError: CUDA error") and tail.rstrip().endswith("~CompiledKernel()")


@pytest.mark.slow
def test_on_a_shared_gpu_a_jax_cells_worker_ends_with_it():
    # XLA keeps the device memory it took until its process ends (Backend.keeps_device_memory):
    # timed cells share the GPU, so each of its cells gets a fresh worker; other backends'
    # workers serve cell after cell
    def pids(backend, device_timing):
        plan = cmp.plan_matrix(["gelu", "tinyhead"], [backend], ["fwd"], "cpu", "tiny", None, device_timing=device_timing)
        rows = cmp.run_plan(plan, timeout=60.0, progress=False).to_json()["rows"]
        assert [r["status"] for r in rows] == ["ok", "ok"]
        return {r["notes"]["pid"] for r in rows}

    assert len(pids(ref("FAKE_XLA"), device_timing=True)) == 2
    assert len(pids(ref("WRONG"), device_timing=True)) == 1  # in fwd, eager
    assert len(pids(ref("FAKE_XLA"), device_timing=False)) == 1


def test_first_error_of_a_cpp_exception_that_ended_the_process():
    from irlens.runtime.isolation import first_error

    stderr = ("[irlens] minigpt nvfuser fwdbwd\n"
              "terminate called after throwing an instance of 'nvfuser::nvfError'\n"
              "  what():   INTERNAL ASSERT FAILED at executor_utils.cpp:559. CUDA_ERROR_ILLEGAL_ADDRESS\n"
              "frame #0: nvfuser::nvfCheckFail\n")
    assert first_error(stderr) == "INTERNAL ASSERT FAILED at executor_utils.cpp:559. CUDA_ERROR_ILLEGAL_ADDRESS"
    assert first_error("Traceback (most recent call last):\nValueError: bad\n") == "ValueError: bad"
    assert first_error("UserWarning: nothing wrong\n") is None


def test_closing_the_references_stops_their_worker_before_its_folder_goes(tmp_path):
    """A run that stops early (a JAX twin that disagrees) removes the folder the reference worker
    writes into: `close` kills the worker mid-call and waits for its thread first."""
    from irlens.matrix.plan import plan_matrix
    from irlens.matrix.plan_references import References

    plan = plan_matrix(workloads=["gelu", "block"], backends=["eager"], modes=["fwd", "fwdbwd"])
    refs = References(plan, str(tmp_path), timeout=120)
    refs.start()
    refs.close()
    assert not refs._worker.is_alive()
    written = set(os.listdir(tmp_path))
    assert all(refs._ready[key].is_set() for key in refs._ready)  # nobody waits for a stopped worker
    assert set(os.listdir(tmp_path)) == written  # and nothing writes there any more
