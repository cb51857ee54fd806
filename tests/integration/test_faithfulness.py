"""Faithfulness: every built-in workload, mode and frontend, its common views (both levels) run
by the float64 reference interpreter, give the workload's float64 results: outputs, loss and
gradients, with the frontend's forward graph feeding its backward graph as the frontend does
(irlens.frontends.bindings); and every node of every stage and level records the output shapes
and dtypes its op's rule infers (irlens.conformance.metadata). Acquisitions are made once per
test process: both walks take the same ones."""
from __future__ import annotations


import pytest
import torch

from irlens.frontends.bindings import program_for, run_program, stage_programs
from irlens.core.interpret import MEANINGS, Uninterpretable, interpret
from irlens.core.ir import Graph, Node, TensorMeta
from irlens.workloads.builtin import workload_names
from irlens.numerics.verdicts import compare_results
from irlens.workloads.workload import MODES

from tests.support.output_metadata import assert_outputs_inferred
from tests.support.workload_cache import acquired, instance, reference
from tests.support.slow_cases import marked_slow

FRONTENDS = ("dynamo", "thunder", "jax")
# minigpt chains the block (its own cases here) after embeddings: its cases are the slow tier
CASES = marked_slow([(n, m) for m in MODES for n in workload_names()], {("minigpt", "fwdbwd"), ("minigpt", "fwd")})
# torch's graphs hold float64-exact constants: only reassociation differs. jaxprs hold their
# literals (sqrt(2/pi), 1/sqrt(d)) as float32 constants, which shows at ~1e-8.
TOLERANCE = {"dynamo": 1e-12, "thunder": 1e-12, "jax": 1e-7}


def interpreted(level: str):
    return lambda step, inputs: interpret(step.graph(level), inputs)


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("name, mode", CASES)
def test_common_views_reproduce_the_workload(name, mode, frontend):
    """Each program (fwd: every forward stage; fwdbwd: forward -> loss -> backward), at both levels."""
    acq = acquired(name, mode, frontend)
    inst = instance(name)
    programs = stage_programs(acq, inst)
    assert program_for(acq, inst).forward.stage.name in programs
    for stage, program in programs.items():
        graphs = {level: program.forward.stage.common(level) for level in ("composite", "primitive")}
        # the primitive view is run where decomposition changed something (jaxprs and HLO mostly are primitive)
        levels = ["composite"] + (["primitive"] if graphs["primitive"].op_counts() != graphs["composite"].op_counts()
                                  or program.backward is not None else [])
        for level in levels:
            got = run_program(program, inst, interpreted(level))
            cmp = compare_results(got, reference(name, mode), TOLERANCE[frontend])
            assert cmp.ok, f"{stage} ({level}): {cmp.reason}"


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("name, mode", CASES)
def test_recorded_outputs_are_the_inferred_ones(name, mode, frontend):
    """Every stage the frontend captured, at both levels (tests/integration/test_output_metadata.py
    has the check failing on a wrong shape or dtype)."""
    for stage in acquired(name, mode, frontend).stages.values():
        for level in ("composite", "primitive"):
            assert_outputs_inferred(stage.common(level))


def test_fwdbwd_programs_chain_forward_into_backward():
    """The torch frontends split the step: the backward reads tensors the forward saved and the
    outputs' cotangents; JAX's value_and_grad is one graph."""
    inst = instance("block")
    for frontend in ("dynamo", "thunder"):
        program = program_for(acquired("block", "fwdbwd", frontend), inst)
        assert program.backward is not None and program.backward.stage.backward
        saved = {k for k in program.forward.outputs if k and k.startswith("saved:")}
        assert saved and saved <= set(program.backward.inputs), frontend
        assert "cotangent:out0" in program.backward.inputs
        assert {f"grad:{p}" for p in inst.params()} <= set(program.backward.outputs)
    jax_program = program_for(acquired("block", "fwdbwd", "jax"), inst)
    assert jax_program.backward is None and "loss" in jax_program.forward.outputs


def test_a_wrong_binding_is_caught():
    """Swapping two same-shaped parameters gives wrong results: the check can fail."""
    inst = instance("block")
    program = program_for(acquired("block", "fwd", "dynamo"), inst)
    keys = program.forward.inputs
    i, j = keys.index("ln_1.weight"), keys.index("ln_2.weight")
    keys[i], keys[j] = keys[j], keys[i]
    try:
        inst.module.ln_1.weight.data.add_(1.0)  # make the two differ (both start as ones)
        got = run_program(program, inst, interpreted("composite"))
    finally:
        inst.module.ln_1.weight.data.sub_(1.0)
        keys[i], keys[j] = keys[j], keys[i]
    assert not compare_results(got, reference("block", "fwd"), 1e-6).ok


def test_unknown_ops_say_which_stop_the_interpreter():
    x = TensorMeta("x", (4,), "float32")
    nodes = [Node("n0", "unknown:aten.cummax", ["x"], [TensorMeta("a", (4,), "float32")]),
             Node("n1", "tanh", ["a"], [TensorMeta("b", (4,), "float32")]),
             Node("n2", "unknown:aten.flip", ["b"], [TensorMeta("c", (4,), "float32")])]
    graph = Graph("g", "dynamo", "s", "composite", [x], nodes, ["c"])
    with pytest.raises(Uninterpretable, match="unknown:aten.cummax, unknown:aten.flip") as e:
        interpret(graph, [torch.ones(4)])
    assert e.value.ops == ["unknown:aten.cummax", "unknown:aten.flip"]


def test_the_table_preserves_dtypes():
    """The interpreter runs the table in float64; the FX lowering runs the same table in the graph's dtypes."""
    x = torch.randn(3, 4)
    assert MEANINGS["mul"]({}, x, 0.5).dtype == torch.float32
    assert MEANINGS["where"]({}, x > 0, x, 0.0).dtype == torch.float32
    assert MEANINGS["full"]({"shape": [2], "value": 1.0, "dtype": "bfloat16"}).dtype == torch.bfloat16
    assert MEANINGS["convert"]({"dtype": "float16"}, x).dtype == torch.float16
    graph = Graph("g", "jax", "s", "primitive", [TensorMeta("x", (3, 4), "float32")],
                  [Node("n0", "convert", ["x"], [TensorMeta("y", (3, 4), "float16")], {"dtype": "float16"})], ["y"])
    (y,) = interpret(graph, [x])
    # carried in float64, rounded where the graph casts to a narrower dtype, as eager float64 torch does at .half()
    assert y.dtype == torch.float64 and torch.equal(y, x.half().double()) and not torch.equal(y, x.double())
