"""A bench on the CPU records where its wall time went (irlens.bench.timeline): each step in order,
end to end, and the backends it compiled ahead."""
import pytest

from irlens.bench.run import COMPILE_AHEAD, bench
from irlens.bench.sweep import Sweep
from irlens.bench.timeline import CEILINGS, WAITING
from irlens.runtime.pool import WorkerPool


@pytest.mark.slow
def test_a_bench_records_its_steps_end_to_end(monkeypatch):
    real_call = WorkerPool.call
    sweep = Sweep("stub", {"copy of 256 MiB": 1000.0}, {"float32": {"mm [8x8]@[8x8]": 10.0}})
    monkeypatch.setattr(WorkerPool, "call", lambda self, fn, *args, **kwargs: (
        {"ceilings": sweep.ceilings().to_json(), "source": "from a stub"}  # the ceilings need a GPU
        if fn == "irlens.bench.ceilings_cache:measure_in_worker" else real_call(self, fn, *args, **kwargs)))
    doc = bench(["gelu"], ["eager", "xla"], ["fwd"], ["float32"], device="cpu", preset="tiny",
                compile_jobs=2, timeout=300).to_json()
    assert [(r["backend"], r["status"]) for r in doc["rows"]] == [("eager", "ok"), ("xla", "ok")]
    spans = doc["time_spent"]["spans"]
    assert [s["name"] for s in spans] == [COMPILE_AHEAD, WAITING, CEILINGS, "timed float32"]
    assert all(a["end_s"] == b["start_s"] for a, b in zip(spans, spans[1:]))  # one after the other, no gap
    # the spans' clock starts just after the wall time's, and the last ends just after the wall time was taken
    assert 0 <= spans[0]["start_s"] and spans[-1]["end_s"] == pytest.approx(doc["wall_s"], abs=1.0)
    compiling, timed = spans[0], spans[-1]
    assert (compiling["cells"], compiling["width"], timed["cells"]) == (2, 2, 2)
    assert sorted(compiling["backends"]) == ["eager", "xla"]
    for share in compiling["backends"].values():  # each backend's one cell, within the phase
        assert share["cells"] == 1 and compiling["start_s"] <= share["start_s"] < share["end_s"] <= compiling["end_s"]
        assert share["busy_s"] == share["end_s"] - share["start_s"]
