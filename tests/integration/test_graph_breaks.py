"""A workload Dynamo splits into several graphs (graph breaks): its program runs the workload under
Dynamo, each graph's AOT forward and backward through the executor (the interpreter, a backend's
lowering) and the Python between them as Dynamo runs it (irlens/frontends/dynamo/graph_breaks.py);
`irlens dump` shows every graph; a ThunderFX capture's common view is shown region by region."""
from __future__ import annotations

import json
import re

import pytest
import torch

from irlens import cli
from irlens.backends import get_backend
from irlens.matrix.cross import run_grid
from irlens.errors import NoNativePath
from irlens.frontends import get_frontend
from irlens.frontends.bindings import program_for, run_program, stage_programs
from irlens.core.interpret import interpret
from irlens.backends.lowering import LEVEL
from irlens.matrix import run_matrix
from irlens.workloads.workload import MODES, Workload, run_eager


class ItemBreaks(torch.nn.Module):
    """Two `.item()` calls: three graphs, each reading a float the Python took from the one before."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)

    def forward(self, x):
        h = torch.relu(self.a(x))
        scale = h.abs().mean().item()
        h = torch.tanh(self.b(h)) * scale
        peak = h.abs().max().item()
        return self.c(h) / (1 + peak)


BREAKS = Workload.from_module("item_breaks", ItemBreaks(), ((3, 4),))
REF = f"{__file__}:BREAKS"
GRAPHS = 3


def acquired(mode: str):
    inst = BREAKS.instantiate("tiny")
    return inst, get_frontend("dynamo").acquire(inst, mode)


def interpreted(program, inst) -> dict:
    return run_program(program, inst, lambda step, xs: interpret(step.graph(LEVEL), xs))


def assert_matches_eager(got: dict, inst, mode: str) -> None:
    want = run_eager(inst.module, inst, mode)
    assert set(got) == set(want)
    for name, value in want.items():
        torch.testing.assert_close(got[name].to(value.dtype), value, msg=name)


@pytest.mark.parametrize("mode", MODES)
def test_the_interpreter_runs_every_graph_with_the_python_between(mode):
    inst, acq = acquired(mode)
    assert acq.notes["graphs"] == GRAPHS
    program = program_for(acq, inst)
    per_graph = 2 if mode == "fwdbwd" else 1
    assert [s.stage.name for s in program.steps][::per_graph] == ["aot.forward", "aot.forward[1]", "aot.forward[2]"]
    wide = inst.cast("float64")  # float64 throughout: the interpreted graphs' floats are what the Python reads
    assert_matches_eager(interpreted(program, wide), wide, mode)


def test_the_first_fx_graph_is_not_offered_as_a_program_of_the_whole():
    inst, acq = acquired("fwd")
    assert list(stage_programs(acq, inst)) == ["aot.forward"]  # the program of every graph, named by its first


def test_other_inputs_trace_the_graphs_again():
    """A float the Python reads is a constant of the next graph: other inputs give another float,
    Dynamo compiles the graphs after it again, and those run through the executor too."""
    inst, acq = acquired("fwd")
    program = program_for(acq, inst)
    wide = inst.cast("float64")
    stages = []

    def execute(step, xs):
        stages.append(step.stage.name)
        return interpret(step.graph(LEVEL), xs)

    run_program(program, wide, execute)
    first = list(stages)
    wide.inputs = (wide.inputs[0] * 3,)  # as the draws rebind them (irlens.matrix.draws)
    assert_matches_eager(run_program(program, wide, execute), wide, "fwd")
    assert first == ["aot.forward", "aot.forward[1]", "aot.forward[2]"]
    assert len(set(stages)) > GRAPHS  # traced again: graphs past the first three


def test_past_dynamo_s_recompile_limit_the_program_fails_rather_than_run_eagerly():
    inst, acq = acquired("fwd")
    program = program_for(acq, inst)
    wide = inst.cast("float64")
    x = wide.inputs[0]

    def execute(step, xs):
        return interpret(step.graph(LEVEL), xs)

    with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):
        for k in range(1, 2 * torch._dynamo.config.recompile_limit):
            wide.inputs = (x * k,)  # another `.item()` each time: Dynamo compiles the later graphs again
            run_program(program, wide, execute)


@pytest.fixture(scope="module")
def xla_doc() -> dict:
    return run_matrix([REF], ["xla"], list(MODES), progress=False, isolate=False).to_json()


@pytest.mark.parametrize("mode", MODES)
def test_xla_via_dynamo_lowers_every_graph(xla_doc, mode):
    (row,) = [r for r in xla_doc["rows"] if r["mode"] == mode]
    assert row["status"] == "ok", f"{row['reason']}\n{row['detail']}"
    assert row["via"] == "dynamo" and row["max_rel_err"] <= row["allowed"]
    assert row["notes"]["dynamo_graphs"] == GRAPHS and row["notes"]["graph_breaks"] >= GRAPHS - 1
    assert any("item()" in reason for reason in row["notes"]["break_reasons"])
    kinds = ["aot.forward"] + (["aot.backward"] if mode == "fwdbwd" else [])
    stages = {f"{kind}{'' if i == 0 else f'[{i}]'}" for kind in kinds for i in range(GRAPHS)}
    assert row["notes"]["lowered_graphs"] == len(stages)
    # each graph's kernels on its own optimized HLO, named by the graph they came from
    assert set(row["graphs"]) == {f"{s}:jax.hlo" for s in stages}
    assert {k["stage"] for k in row["kernels"]} == set(row["graphs"])
    assert row["coverage"]["uncovered"] == [] and row["coverage"]["unknown"] == []


def test_an_op_the_lowering_lacks_in_a_later_graph_is_named(monkeypatch):
    import irlens.backends.xla.lower as jax_lowering

    monkeypatch.setattr(jax_lowering, "SUPPORTED", jax_lowering.SUPPORTED - {"tanh"})  # graph 2 holds the tanh
    (row,) = run_matrix([REF], ["xla"], ["fwd"], progress=False, isolate=False).to_json()["rows"]
    assert row["status"] == "unavailable" and row["reason"] == "the jax lowering does not support: tanh"


@pytest.mark.gpu
def test_nvfuser_lowers_every_graph_where_thunder_cannot(monkeypatch):
    def no_thunder(inst, mode):
        raise NoNativePath("Thunder cannot trace it (simulated)")

    monkeypatch.setattr(get_backend("nvfuser"), "run", no_thunder)
    doc = run_matrix([REF], ["nvfuser"], list(MODES), device="cuda", progress=False, isolate=False).to_json()
    for row in doc["rows"]:
        assert row["status"] == "ok", f"{row['mode']}: {row['reason']}\n{row['detail']}"
        assert row["via"] == "dynamo" and row["notes"]["dynamo_graphs"] == GRAPHS
        forward = {k["stage"] for k in row["kernels"] if k["stage"].startswith("aot.forward")}
        assert forward == {"aot.forward", "aot.forward[1]", "aot.forward[2]"}


def test_the_cross_grid_runs_dynamo_s_graphs_on_each_lowering():
    doc = run_grid([REF], ["fwd"], acquired_by="dynamo", executed_by="inductor,xla", isolate=False, progress=False)
    for row in doc.rows:
        assert row.status == "ok", f"{row.backend}: {row.reason}\n{row.detail}"
        assert [g.stage for g in row.cross.lowered] == ["aot.forward", "aot.forward[1]", "aot.forward[2]"]


def test_the_reducer_gets_every_graph_as_the_program_runs_it(tmp_path):
    """`irlens repro`'s cases (irlens.repro.cases, the worker's `cases` purpose): one per graph,
    forward then the backward in autograd's order, each with the values its inputs had there."""
    from irlens.worker.entry import run_spec
    from irlens.matrix.spec import CellSpec
    from irlens.repro.cases import Case

    cell = CellSpec(REF, "inductor", "fwdbwd", frontend="dynamo")
    cases = [Case(**c) for c in run_spec(cell.to_json(), "cases", directory=str(tmp_path))]
    assert [c.stage for c in cases] == ["aot.forward", "aot.forward[1]", "aot.forward[2]",
                                        "aot.backward[2]", "aot.backward[1]", "aot.backward"]
    for case in cases:
        graph, values = case.graph(), torch.load(case.values_path, weights_only=True)
        assert [t.name for t in graph.inputs] == list(values), case.stage


# --- irlens dump: every graph -------------------------------------------------------------------

def dump(capsys, *argv) -> str:
    assert cli.main(["dump", *argv]) == 0
    return capsys.readouterr().out


def headers(out: str) -> list[str]:
    return re.findall(r"^# (\S+): .*\(graph (\d) of (\d)\)$", out, re.M)


def test_dump_shows_every_graph_in_order(capsys):
    out = dump(capsys, REF, "--frontend", "dynamo")
    assert headers(out) == [("dynamo.fx", "1", "3"), ("dynamo.fx[1]", "2", "3"), ("dynamo.fx[2]", "3", "3")]
    blocks = re.split(r"^# dynamo\.fx.*$", out, flags=re.M)[1:]
    assert ["torch.relu" in b for b in blocks] == [True, False, False]
    assert ["torch.tanh" in b for b in blocks] == [False, True, False]
    assert ["truediv" in b for b in blocks] == [False, False, True]


def test_dump_shows_every_backward_graph(capsys):
    out = dump(capsys, REF, "--frontend", "dynamo", "--backward", "--view", "common")
    assert [h[0] for h in headers(out)] == ["aot.backward", "aot.backward[1]", "aot.backward[2]"]
    assert out.count("\ngraph item_breaks [dynamo aot.backward") == GRAPHS


def test_dump_of_one_graph_says_how_many_there_are(capsys):
    out = dump(capsys, REF, "--frontend", "dynamo", "--stage", "aot.forward[1]", "--view", "common")
    assert out.startswith("# one of 3 parts, each a --stage of its own: aot.forward, aot.forward[1], aot.forward[2]")
    assert headers(out) == [("aot.forward[1]", "2", "3")]
    assert "tanh(" in out and "relu(" not in out


def test_dump_json_is_a_list_of_every_graph(capsys):
    graphs = json.loads(dump(capsys, REF, "--frontend", "dynamo", "--view", "common", "--format", "json"))
    assert [g["stage"] for g in graphs] == ["dynamo.fx", "dynamo.fx[1]", "dynamo.fx[2]"]


def test_a_whole_workload_s_dump_has_no_headers(capsys):
    out = dump(capsys, "gelu", "--frontend", "dynamo")
    assert not out.startswith("#") and "graph 1 of" not in out


# --- a ThunderFX capture's common view, region by region ---------------------------------------

def region_headers(out: str) -> list[tuple[str, str, str]]:
    return re.findall(r"^# (\S+): region \d of \d \((\S+)\), (Thunder's|left to Inductor)", out, re.M)


def test_thunderfx_common_view_shows_each_region(capsys):
    out = dump(capsys, "tests/support/thunderfx_models.py:erfcx_between", "--frontend", "thunder", "--thunder-capture",
               "thunderfx", "--view", "common")
    assert region_headers(out) == [("thunderfx.g0.thunder_0.trace[0]", "g0.thunder_0", "Thunder's"),
                                   ("thunderfx.g0.inductor_1.fx", "g0.inductor_1", "left to Inductor"),
                                   ("thunderfx.g0.thunder_2.trace[0]", "g0.thunder_2", "Thunder's")]
    assert "only has an automatic torch fallback in thunder" in out  # why the Inductor region is one
    blocks = re.split(r"^# thunderfx\..*$", out, flags=re.M)[1:]
    ops = [re.findall(r"^  \S+: \S+ = (\w+)\(", block, re.M) for block in blocks]
    assert ops == [["linear", "sin"], ["erfcx"], ["mul"]]


@pytest.mark.slow
def test_thunderfx_common_view_of_a_model_thunder_jit_cannot_trace(capsys):
    """transformers' Llama: thunder.jit fails on it, ThunderFX takes it (tests/support/thunderfx_models.py)."""
    out = dump(capsys, "tests/support/thunderfx_models.py:llama", "--frontend", "thunder", "--view", "common")
    regions = region_headers(out)
    assert len(regions) >= 2 and {taken for _, _, taken in regions} == {"Thunder's", "left to Inductor"}
    assert out.count("\ngraph tiny_llama [") == len(regions) and "unknown:" not in out


def test_a_split_s_native_view_is_still_its_summary(capsys):
    out = dump(capsys, "tests/support/thunderfx_models.py:erfcx_between", "--frontend", "thunder", "--thunder-capture",
               "thunderfx")
    assert out.startswith("ThunderFX split erfcx_between into 3 regions") and not region_headers(out)

