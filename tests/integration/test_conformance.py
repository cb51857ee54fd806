"""The conformance sweep (irlens/conformance): its classifications on cases whose verdict is
known, its worker isolation, and `irlens conformance`'s exit codes and bad-input handling.

Verdicts that must not depend on the vocabulary of the day come from a planted corpus: a case
whose eager side is told another function than the one the frontend traces is a wrong meaning
however the adapters change, and a custom torch op stays unknown."""
from __future__ import annotations

import gzip
import json
import math

import pytest
import torch

from irlens import cli
from irlens.conformance import SweepConfig, run
from irlens.conformance.check import compare_outputs, dtype_verdict
from irlens.conformance.corpus import CORPORA, Case, Corpus, Subject, jax_subject, torch_subject
from irlens.conformance.runner import _Runner
from irlens.conformance.summary import markdown, table_text
from irlens.runtime.isolation import CallFailed


@torch.library.custom_op("irlens_test::mystery", mutates_args=())
def mystery(x: torch.Tensor) -> torch.Tensor:
    # computed outside torch (NumPy): its implementation does not trace, so no decomposition
    return torch.from_numpy(x.detach().numpy() * 3.0)


@mystery.register_fake
def _(x):
    return torch.empty_like(x)


class Planted(Corpus):
    name = "planted"
    description = "cases with a known verdict"
    frontends = ("dynamo",)

    def cases(self, samples):
        return [Case(self.name, op, "float32") for op in ("tanh", "tanh_told_sin", "mystery")]

    def subject(self, case):
        x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
        if case.op == "tanh_told_sin":  # the frontend traces tanh, eager computes sin
            return Subject(torch_subject(case.id, torch.tanh, (x,), {}).workload,
                           torch_subject(case.id, torch.sin, (x,), {}).eager)
        return torch_subject(case.id, {"tanh": torch.tanh, "mystery": mystery}[case.op], (x,), {})


@pytest.fixture
def planted(monkeypatch):
    monkeypatch.setitem(CORPORA._entries, Planted.name, Planted())


def _ulp(x):
    """The gap to the next float up: XLA's optimized HLO writes nextafter as integer arithmetic
    on the float's bits, at the dtype's width (jnp.spacing, written out)."""
    import jax.numpy as jnp

    return jnp.nextafter(x, jnp.inf) - x


class PlantedJax(Corpus):
    """JAX cases whose graph reads a float's bits or carries a small error, told the truth or not."""
    name = "planted_jax"
    description = "JAX cases with a known verdict"
    frontends = ("jax",)
    TOLD = {  # op -> (what the frontend traces, what eager computes)
        "ulp": ("ulp", "ulp"),  # format-dependent in HLO, and true: faithful in its dtype there
        "ulp_told_scaled": ("ulp", "scaled"),  # format-dependent in HLO, off by far: wrong
        "scaled_told_identity": ("scaled", "identity"),  # 0.2 off: wrong
        "nudged_told_identity": ("nudged", "identity"),  # 1e-3 off, eager's own error 0: wrong
    }

    def cases(self, samples):
        return [Case(self.name, op, "float32") for op in self.TOLD]

    def subject(self, case):
        import numpy as np

        fns = {"ulp": _ulp, "scaled": lambda x: x * 1.2, "identity": lambda x: x + 0.0,
               "nudged": lambda x: x * (1 + 1e-3)}
        x = np.random.RandomState(0).uniform(0.5, 2.0, (3, 4)).astype(np.float32)
        traced, told = self.TOLD[case.op]
        return Subject(jax_subject(case.id, fns[traced], [x]).workload, jax_subject(case.id, fns[told], [x]).eager)


@pytest.fixture
def planted_jax(monkeypatch):
    monkeypatch.setitem(CORPORA._entries, PlantedJax.name, PlantedJax())


def _records(doc) -> dict:
    return {(r["case"], r["frontend"]): r for r in doc["records"]}


def _statuses(record) -> set:
    return {res["status"] for levels in record["stages"].values() for res in levels.values()}


def test_known_ops_are_faithful_at_every_stage_and_level():
    doc = run(SweepConfig(corpora=["opinfo", "lax"], patterns=["^opinfo:add:float32#0$", "^lax:exp:float32#0$"],
                          isolate=False))
    records = _records(doc)
    assert set(records) == {("opinfo:add:float32#0", "dynamo"), ("opinfo:add:float32#0", "thunder"),
                            ("lax:exp:float32#0", "jax")}
    expected_stages = {"dynamo": {"dynamo.fx", "aot.forward"}, "thunder": {"thunder.trace[0]", "thunder.trace[-1]"},
                       "jax": {"jax.jaxpr", "jax.stablehlo", "jax.hlo"}}
    for (case, fe), r in records.items():
        assert r["status"] == "captured", r
        assert set(r["stages"]) == expected_stages[fe]
        assert _statuses(r) == {"faithful"}, r
    assert {row["faithful_pct"] for row in doc["summary"]["rows"]} == {100.0}


def test_the_limit_is_per_corpus_and_a_corpus_with_no_case_says_so():
    doc = run(SweepConfig(corpora=["opinfo", "lax"], patterns=["^opinfo:(add|sub):float32#0$", "^lax:(exp|log):float32#0$"],
                          limit=1, isolate=False))
    assert sorted({r["case"] for r in doc["records"]}) == ["lax:exp:float32#0", "opinfo:add:float32#0"]
    assert {row["frontend"] for row in doc["summary"]["rows"]} == {"dynamo", "thunder", "jax"}
    doc = run(SweepConfig(corpora=["opinfo", "lax"], frontends=["dynamo", "jax"], patterns=["^opinfo:add:float32#0$"],
                          isolate=False))
    line = "corpus lax: no case (-k ^opinfo:add:float32#0$ matches none of its cases), so no row of jax from it"
    assert line in table_text(doc) and line in markdown(doc)


def test_out_of_scope_random_and_data_dependent_cases_are_classified_not_compared():
    doc = run(SweepConfig(corpora=["opinfo"], frontends=["dynamo"], isolate=False,
                          patterns=["^opinfo:(fft.fft|nn.functional.dropout|empty_like|nonzero):float32#0$"]))
    got = {r["case"].split(":")[1]: (r["status"], r["class"]) for r in doc["records"]}
    assert got == {"fft.fft": ("excluded", "complex"), "nn.functional.dropout": ("random", "random"),
                   "empty_like": ("random", "undefined values"), "nonzero": ("failed", "data-dependent shape")}
    (row, *_) = doc["summary"]["rows"]
    assert (row["cases"], row["excluded"], row["random"], row["failed"], row["captured"]) == (4, 1, 2, 1, 0)
    assert row["wrong"] == 0 and row["faithful_pct"] is None


def test_a_wrong_meaning_is_reported_as_one_and_fails_the_run(planted, tmp_path, capsys):
    out = tmp_path / "planted.json"
    status = cli.main(["conformance", "--in-process", "--corpus", "planted", "--json", str(out)])
    assert status == 1
    stdout = capsys.readouterr().out
    assert "wrong meanings" in stdout and "planted:tanh_told_sin:float32#0" in stdout
    doc = json.loads(out.read_text())
    records = _records(doc)
    assert _statuses(records[("planted:tanh:float32#0", "dynamo")]) == {"faithful"}
    told = records[("planted:tanh_told_sin:float32#0", "dynamo")]
    assert _statuses(told) == {"wrong"}
    result = told["stages"]["aot.forward"]["primitive"]
    assert result["error"].startswith("out0: rel err") and result["rel_err"] > 0.01
    mystery_record = records[("planted:mystery:float32#0", "dynamo")]
    assert _statuses(mystery_record) == {"unknown"}
    natives = [n for n in doc["summary"]["unknown"]["dynamo aot.forward primitive"] if "irlens_test" in n[0]]
    assert [n[1:] for n in natives] == [[1, 1]]  # in one case, and the only unknown there
    row = next(r for r in doc["summary"]["rows"] if r["stage"] == "aot.forward" and r["level"] == "primitive")
    assert (row["captured"], row["faithful"], row["unknown"], row["wrong"], row["faithful_pct"]) == (3, 1, 1, 1, 33.3)
    assert doc["command"] == f"irlens conformance --corpus planted --json {out} --in-process"


def test_cli_exits_0_and_writes_the_json_and_the_page(tmp_path, capsys):
    json_path, md_path = tmp_path / "lax.json.gz", tmp_path / "lax.md"
    status = cli.main(["conformance", "--in-process", "--corpus", "lax", "-k", "^lax:(neg|exp):float32#0$",
                       "--json", str(json_path), "--md", str(md_path)])
    assert status == 0
    assert "faithful%" in capsys.readouterr().out
    doc = json.loads(gzip.decompress(json_path.read_bytes()))
    assert sorted(r["case"] for r in doc["records"]) == ["lax:exp:float32#0", "lax:neg:float32#0"]
    assert doc["corpora"]["lax"]["cases"] == 2 and doc["versions"]["torch"] == torch.__version__
    page = md_path.read_text()
    assert "| jax | jax.jaxpr | composite | 2 | 0 | 0 | 0 | 2 | 2 | 0 | 0 | 0 | 0 | 100.0 |" in page
    assert "irlens conformance --corpus lax -k '^lax:(neg|exp):float32#0$'" in page


@pytest.mark.parametrize("argv, message", [
    (["--corpus", "nope"], "unknown corpus 'nope'; choose from: opinfo, lax, lax_harness, jnp"),
    (["--frontends", "inductor"], "unknown frontend 'inductor'; choose from: dynamo, thunder, jax"),
    (["--corpus", "lax", "--frontends", "dynamo"], "unknown frontend 'dynamo'; choose from: jax"),
    (["--corpus", "lax", "-k", "no-such-op"], "no case matches -k no-such-op"),
    (["--corpus", "lax,opinfo", "--frontends", "thunder", "-k", "^lax:exp:float32"],
     "none of the 1 cases chosen goes to thunder"),
    (["-k", "("], "-k '(' is not a regular expression"),
    (["--jobs", "0"], "argument --jobs: '0' is not a positive whole number"),
    (["--timeout", "0"], "argument --timeout: '0' is not a positive number"),
    (["--jobs", "two"], "argument --jobs: 'two' is not a positive whole number"),
])
def test_bad_input_exits_2_and_says_what_is_valid(argv, message, capsys):
    assert cli.main(["conformance", "--in-process", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_frontend_or_corpus_that_cannot_run_here_says_why(planted, monkeypatch, capsys):
    from irlens.frontends import get_frontend
    from irlens.frontends.base import Availability

    monkeypatch.setattr(type(get_frontend("dynamo")), "availability", lambda self: Availability(False, "no Dynamo here"))
    assert cli.main(["conformance", "--in-process", "--corpus", "planted", "-k", ":tanh:"]) == 0
    assert "frontend dynamo: unavailable (no Dynamo here)" in capsys.readouterr().out

    def missing(self, samples):
        raise ModuleNotFoundError("No module named 'expecttest'")

    monkeypatch.setattr(Planted, "cases", missing)
    assert cli.main(["conformance", "--in-process", "--corpus", "planted"]) == 2
    assert ("corpus planted is unavailable here: ModuleNotFoundError: No module named 'expecttest' "
            "(pip install 'irlens[test]')") in capsys.readouterr().err


@pytest.mark.slow
def test_cases_run_in_worker_processes():
    doc = run(SweepConfig(corpora=["lax"], patterns=["^lax:(exp|log):float32#0$"], jobs=2))
    assert sorted(r["case"] for r in doc["records"]) == ["lax:exp:float32#0", "lax:log:float32#0"]
    assert all(_statuses(r) == {"faithful"} for r in doc["records"])


@pytest.mark.parametrize("served, replies, calls, expect", [
    # a worker that served earlier cases may be wedged: the case runs again in a fresh worker
    (1, [CallFailed("timed out after 30 s", timed_out=True), {"status": "captured"}], 2, "captured"),
    (1, [CallFailed("timed out after 30 s", timed_out=True), CallFailed("timed out after 30 s", timed_out=True)], 2,
     "timeout"),
    (1, [CallFailed("worker process crashed (SIGSEGV)"), CallFailed("worker process crashed (SIGSEGV)")], 2,
     "worker crashed"),
    # a fresh worker's failure is the case's own; an exception inside the worker is not retried
    (0, [CallFailed("timed out after 30 s", timed_out=True)], 1, "timeout"),
    (1, [CallFailed("KeyError: 'x'", raised="KeyError")], 1, "sweep error"),
])
def test_a_case_that_kills_a_used_worker_runs_again_in_a_fresh_one(served, replies, calls, expect, monkeypatch):
    from irlens.runtime import pool

    replies, started = [{"status": "captured"}] * served + list(replies), []

    class FakeWorker:  # its calls answer in turn from `replies`, raising the failures
        def __init__(self, *args, **kwargs):
            self.alive = True
            started.append(self)

        def call(self, *args):
            reply = replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply

        def close(self):
            self.alive = False

    monkeypatch.setattr(pool, "Worker", FakeWorker)
    runner = _Runner(SweepConfig(jobs=1))
    case = Case("lax", "exp", "float32")
    for _ in range(served):  # the earlier cases the worker served
        runner._one(case, "jax", 1e-7)
    record = runner._one(case, "jax", 1e-7)
    runner.close()
    assert record.get("class", record["status"]) == expect
    assert len(replies) == 0 and len(started) == calls  # each failure left its worker closed, the next call a new one
    assert not any(w.alive for w in started)


def test_outputs_compare_with_nans_in_place_and_by_the_reference_dtype():
    ref = torch.tensor([1.0, float("nan"), float("inf"), 2.0], dtype=torch.float64)
    assert compare_outputs([ref.clone()], [ref], 1e-7) == (0.0, None)
    moved = torch.tensor([float("nan"), 1.0, float("inf"), 2.0], dtype=torch.float64)
    err, problem = compare_outputs([moved], [ref], 1e-7)
    assert math.isinf(err) and "NaN or Inf" in problem
    err, problem = compare_outputs([ref * (1 + 1e-5)], [ref], 1e-7)
    assert "rel err 1.00e-05 > tol 1e-07" in problem
    # eager rounding to float16 (an explicit cast) is judged at float16's tolerance
    x = torch.randn(100, dtype=torch.float64)
    assert compare_outputs([x], [x.half()], 1e-7)[1] is None
    assert "tol 2e-03" in compare_outputs([x * 1.01], [x.half()], 1e-7)[1]
    assert compare_outputs([torch.tensor([1, 2])], [torch.tensor([1.0, 2.0])], 1e-7)[1] == \
        "out0: dtype int64, eager float32"
    assert compare_outputs([torch.tensor([1, 3])], [torch.tensor([1, 2])], 1e-7)[1] == "out0: 1 of 2 values differ"
    assert compare_outputs([], [ref], 1e-7)[1] == "0 outputs, eager has 1"


def test_faithful_in_its_dtype_is_told_apart_from_a_wrong_meaning(planted_jax):
    """A graph reading a float32's bits is judged against eager float32 (the float64 reference
    is another number's bits); a wrong meaning is wrong whether or not it reads bits."""
    doc = run(SweepConfig(corpora=["planted_jax"], isolate=False))
    records = _records(doc)
    ulp = records[("planted_jax:ulp:float32#0", "jax")]["stages"]
    assert ulp["jax.jaxpr"]["primitive"]["status"] == "faithful"  # nextafter itself, in float64
    hlo = ulp["jax.hlo"]["primitive"]
    assert hlo["status"] == "in_dtype" and "bitcast float32 -> int32" in hlo["why"]
    assert hlo["rel_err"] > 1e6  # float32's gaps, not float64's
    for op in ("ulp_told_scaled", "scaled_told_identity", "nudged_told_identity"):
        assert _statuses(records[(f"planted_jax:{op}:float32#0", "jax")]) == {"wrong"}, op
    row = next(r for r in doc["summary"]["rows"] if r["stage"] == "jax.hlo" and r["level"] == "primitive")
    assert (row["captured"], row["faithful"], row["in_dtype"], row["wrong"]) == (4, 0, 1, 3)
    assert row["faithful_pct"] == 0.0  # in_dtype is a column of its own, not counted as faithful


def test_dtype_verdict_allows_the_dtype_own_error_and_nothing_like_a_wrong_meaning():
    ref = torch.linspace(0.5, 3.0, 64, dtype=torch.float64)
    eager = (ref * (1 + 2e-6)).float()  # eager float32's own error vs float64: 2e-6
    within = dtype_verdict([ref * (1 + 4e-6)], [ref], [eager], 1e-6, [])
    assert within.startswith("rel err 4.00e-06 <= 2 x eager's own 2.00e-06 + 1e-06")
    for wrong in (ref * 1.2, ref * 21, ref * (1 + 6e-6), torch.where(ref > 2, float("nan"), ref)):
        assert dtype_verdict([wrong], [ref], [eager], 1e-6, []) is None
    assert dtype_verdict([torch.tensor([1, 3])], [torch.tensor([1, 2])], [torch.tensor([1, 2])], 1e-6, []) is None
    bits = ["bitcast float32 -> int32"]  # format-dependent: against eager in its own dtype
    assert dtype_verdict([eager.double()], [ref * 1e9], [eager], 1e-6, bits).startswith("reads a float's bits")
    assert dtype_verdict([eager.double() * 1.2], [ref], [eager], 1e-6, bits) is None


def test_dtype_verdict_is_capped_where_eager_itself_is_far_off():
    """An eager float32 result 15 % off (a cancelling result) excuses no 20 % error: the allowance
    is capped by float32's flat tolerance (1e-4), as irlens.numerics.verdicts caps it."""
    ref = torch.linspace(0.5, 3.0, 64, dtype=torch.float64)
    eager = (ref * 1.15).float()
    assert dtype_verdict([ref * 1.2], [ref], [eager], 1e-6, []) is None
    near = (ref * (1 + 2e-4)).float()  # eager 2e-4 off: 4e-4 would be allowed uncapped, 5e-5 stays within
    assert dtype_verdict([ref * (1 + 4e-4)], [ref], [near], 1e-6, []) is None
    assert dtype_verdict([ref * (1 + 5e-5)], [ref], [near], 1e-6, []).startswith("rel err 5.00e-05")


def test_format_dependent_ops_are_found_in_loop_bodies():
    from irlens.conformance.check import format_dependent
    from irlens.core.ir import Graph, Node, TensorMeta

    x, i = TensorMeta("x", (), "float32"), TensorMeta("i", (), "int32")
    body = Graph("body", "jax", "jax.hlo", "composite", [x], [
        Node("b0", "bitcast", ["x"], [i], {"dtype": "int32", "from_dtype": "float32"}),
        Node("b1", "bitcast", ["i"], [TensorMeta("y", (), "float32")], {"dtype": "float32", "from_dtype": "int32"})],
        ["y"])
    cond = Graph("cond", "jax", "jax.hlo", "composite", [x], [
        Node("c0", "lt", ["x", 1.0], [TensorMeta("p", (), "bool")])], ["p"])
    loop = Node("w", "while", ["x"], [TensorMeta("out", (), "float32")], subgraphs={"cond": cond, "body": body})
    graph = Graph("g", "jax", "jax.hlo", "composite", [x], [loop], ["out"])
    assert format_dependent(graph) == ["bitcast float32 -> int32", "bitcast int32 -> float32"]


def test_xla_float32_expansions_are_faithful_in_their_dtype():
    """XLA's optimized HLO writes lgamma as a float32 Lanczos approximation (as accurate as eager
    float32) and jnp.spacing as integer arithmetic on float32 bits: faithful in float32, while
    the jaxpr and StableHLO, holding the ops themselves, reproduce float64."""
    doc = run(SweepConfig(corpora=["lax", "jnp"], patterns=["^lax:lgamma:float32#0$", "^jnp:spacing:float32#0$"],
                          isolate=False))
    for r in doc["records"]:
        assert {s: r["stages"][s]["primitive"]["status"] for s in r["stages"]} == \
            {"jax.jaxpr": "faithful", "jax.stablehlo": "faithful", "jax.hlo": "in_dtype"}, r["case"]
    assert "## Faithful in its dtype" in markdown(doc) and "Lanczos" not in markdown(doc)
