"""The compare matrix survives broken backends: a crash, a hang or an exception is a failed row
(with the reason and the tail of stderr), a wrong answer a mismatch, and the rest goes on.

The broken backends below are test-only: they reach the compare workers through
IRLENS_EXTRA_BACKENDS, which names them by this file's path.
"""
import ctypes
import json
import time
from types import SimpleNamespace

import pytest
import torch

import irlens.compare as cmp
from irlens.backends.base import Backend, BackendRun
from irlens.frontends.base import Availability
from irlens.workload import Workload, run_eager


class BrokenBackend(Backend):
    """Runs eager, except in `broken_mode`, where it does `how`."""

    frontend = None
    description = "test-only: deliberately broken"

    def __init__(self, name: str, how: str, broken_mode: str = "fwd", frontend: str | None = None):
        self.name, self.how, self.broken_mode, self.frontend = name, how, broken_mode, frontend

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def run(self, inst, mode: str) -> BackendRun:
        results = run_eager(inst.module, inst, mode)
        if mode == self.broken_mode:
            if self.how == "segfault":
                ctypes.string_at(0)
            elif self.how == "hang":
                time.sleep(3600)
            elif self.how == "raise":
                raise RuntimeError("deliberately broken backend")
            elif self.how == "wrong":
                results = {k: v * 1.01 for k, v in results.items()}
        return BackendRun(results=results, compile_s=0.0, run_us=1.0, kernels=[])


SEGFAULT = BrokenBackend("test-segfault", "segfault")
HANG = BrokenBackend("test-hang", "hang")
RAISE = BrokenBackend("test-raise", "raise")
WRONG = BrokenBackend("test-wrong", "wrong", broken_mode="fwdbwd")
FAKE_XLA = BrokenBackend("test-jax", "none", frontend="jax")
BROKEN = ["test-segfault", "test-hang", "test-raise", "test-wrong"]


@pytest.fixture
def broken_backends(monkeypatch):
    names = ["SEGFAULT", "HANG", "RAISE", "WRONG", "FAKE_XLA"]
    monkeypatch.setenv(cmp.EXTRA_BACKENDS_ENV, ",".join(f"{__file__}:{n}" for n in names))


def _args(tmp_path, **kw):
    base = dict(workloads=["gelu"], backends=["eager"], device="cpu", modes=["fwd"], preset="tiny", dtype=None,
                json=str(tmp_path / "out.json"), timeout=60.0, jobs=1)
    return SimpleNamespace(**{**base, **kw})


def test_compare_isolation_broken_backends_fail_and_the_matrix_goes_on(broken_backends, tmp_path, capsys):
    args = _args(tmp_path, backends=["eager", *BROKEN], modes=["fwd", "fwdbwd"], timeout=15.0, jobs=2)
    assert cmp.compare_main(args) == 1
    doc = json.loads((tmp_path / "out.json").read_text())
    check_schema(doc)
    rows = {(r["backend"], r["mode"]): r for r in doc["rows"]}
    assert len(rows) == 10

    segv = rows["test-segfault", "fwd"]
    assert segv["status"] == "failed" and "SIGSEGV" in segv["reason"]
    assert "[irlens] gelu test-segfault fwd" in segv["detail"]  # the tail of the worker's stderr
    hang = rows["test-hang", "fwd"]
    assert hang["status"] == "failed" and "timed out after 15 s" in hang["reason"]
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


def test_compare_jax_backend_is_unavailable_without_a_twin(broken_backends):
    doc = cmp.run_matrix(["gelu", NO_TWIN], ["eager", "test-jax"], ["fwd"], progress=False, isolate=False)
    statuses = {(r["workload"], r["backend"]): r["status"] for r in doc["rows"]}
    assert statuses == {("gelu", "eager"): "ok", ("gelu", "test-jax"): "ok",
                        ("no_twin", "eager"): "ok", ("no_twin", "test-jax"): "unavailable"}
    assert doc["rows"][-1]["reason"] == "workload 'no_twin' has no JAX twin"


def test_compare_exit_0_when_every_row_is_ok(tmp_path):
    assert cmp.compare_main(_args(tmp_path)) == 0


@pytest.mark.parametrize("field,value,valid", [
    ("workloads", ["nope"], "gelu"),
    ("backends", ["nope"], "eager"),
    ("modes", ["sideways"], "fwdbwd"),
    ("preset", "huge", "tiny"),
    ("device", "tpu", "cuda"),
    ("dtype", "int3", "bfloat16"),
])
def test_compare_bad_arguments_exit_2_listing_the_choices(tmp_path, capsys, field, value, valid):
    assert cmp.compare_main(_args(tmp_path, **{field: value})) == 2
    err = capsys.readouterr().err
    assert repr(value if isinstance(value, str) else value[0]) in err and valid in err
    assert not (tmp_path / "out.json").exists()


def test_compare_reference_is_computed_once_per_workload_and_mode(broken_backends, monkeypatch):
    calls = []
    real = cmp.compute_reference
    monkeypatch.setattr(cmp, "compute_reference", lambda wl, mode, *a: calls.append((wl.name, mode)) or real(wl, mode, *a))
    doc = cmp.run_matrix(["gelu"], ["eager", "test-wrong", "test-raise"], ["fwd", "fwdbwd"], progress=False,
                         isolate=False)
    assert sorted(calls) == [("gelu", "fwd"), ("gelu", "fwdbwd")]
    assert [r["status"] for r in doc["rows"]] == ["ok", "ok", "failed", "ok", "mismatch", "ok"]
