"""Output metadata: every node a frontend writes records the output shapes and dtypes its op's
rule infers (irlens.core.ops.infer) from the node's inputs and attrs (over the built-in workloads'
stages and levels in tests/integration/test_faithfulness.py, which holds their acquisitions); a
wrong one is caught; and the Dynamo converters that let emit infer their intermediates give graphs
the interpreter runs to the float64 results."""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from irlens.conformance.metadata import check_metadata
from irlens.frontends import get_frontend
from irlens.frontends.bindings import run_program, stage_programs
from irlens.core.interpret import interpret
from irlens.core.ir import Graph
from irlens.numerics.verdicts import compare_results
from irlens.core.ops import OPS
from irlens.core.ops.infer import RULES, Misfit, NotInferable, infer
from irlens.workloads.workload import Workload, run_eager

from tests.support.output_metadata import assert_outputs_inferred as _checked
from tests.support.workload_cache import acquired

LEVELS = ("composite", "primitive")


def test_a_wrong_shape_or_dtype_is_caught():
    """A node whose recorded output is not what its op gives, as an adapter could write it."""
    graph = get_frontend_graph("block")
    i, node = next((i, n) for i, n in enumerate(graph.nodes) if n.op == "permute")
    out = node.outputs[0]
    wrong_perm = list(reversed(node.attrs["perm"]))  # an attribute ignored: the output is the input's order
    assert wrong_perm != node.attrs["perm"]
    graph.nodes[i] = replace(node, attrs={**node.attrs, "perm": wrong_perm})
    j, mm = next((j, n) for j, n in enumerate(graph.nodes) if n.op == "matmul")
    graph.nodes[j] = replace(mm, outputs=[replace(mm.outputs[0], dtype="bfloat16")])
    found = check_metadata(graph)
    assert {d.node for d in found.disagreements} == {node.id, mm.id}
    by_node = {d.node: d for d in found.disagreements}
    assert by_node[node.id].recorded == [(out.shape, out.dtype)]
    assert by_node[node.id].inferred[0][0] != out.shape
    assert by_node[mm.id].inferred == [(mm.outputs[0].shape, "float32")]


def test_swapped_operands_are_caught():
    """A matmul whose operands an adapter swapped no longer fits: listed, with torch's reason."""
    graph = get_frontend_graph("block")
    values = graph.values()
    j, mm = next((j, n) for j, n in enumerate(graph.nodes)
                 if n.op == "matmul" and values[n.inputs[1]].shape[-1] != values[n.inputs[0]].shape[-2])
    graph.nodes[j] = replace(mm, inputs=list(reversed(mm.inputs)))
    found = check_metadata(graph)
    assert [d.node for d in found.disagreements] == [mm.id]
    assert "do not fit" in str(found.disagreements[0]) and found.disagreements[0].reason


def get_frontend_graph(name: str) -> Graph:
    """A copy of the workload's ATen forward graph: the acquisition's own is shared by the tests."""
    return Graph.from_json(acquired(name, "fwd", "dynamo").stages["aot.forward"].common("composite").to_json())


def test_every_op_has_a_rule():
    """A meaning to run on fake tensors, or an explicit rule."""
    assert not [name for name, op in OPS.items() if op.meaning is None and name not in RULES]


def test_inference_is_torch_own():
    """Broadcasting, type promotion and attributes, as torch computes them."""
    assert infer("add", ["x", "y"], {"x": ((4, 1), "float16"), "y": ((3,), "float32")}) == [((4, 3), "float32")]
    assert infer("sum", ["x"], {"x": ((2, 3, 4), "float32")}, {"dims": [1], "keepdim": True}) == [((2, 1, 4), "float32")]
    assert infer("convert", ["x"], {"x": ((5,), "float32")}, {"dtype": "bfloat16"}) == [((5,), "bfloat16")]
    assert infer("mul", ["x", 0.5], {"x": ((2,), "bfloat16")}) == [((2,), "bfloat16")]
    for op, inputs, metas in (("div", [1.0, 512.0], {}), ("where", ["keep", 1.0, 0.0], {"keep": ((3,), "bool")}),
                              ("mul", ["n", 0.5], {"n": ((3,), "int64")})):
        with pytest.raises(NotInferable, match="comes from a literal"):
            infer(op, inputs, metas)
    with pytest.raises(NotInferable, match="no metadata"):
        infer("neg", ["x"], {})


def test_a_node_inferred_again_gets_the_same_answer_from_the_memo():
    """The memo keys on the literal's type too: an int and a float literal promote differently."""
    metas = {"n": ((3,), "int64"), "x": ((2, 3), "float32")}
    first = infer("add", ["n", 1], metas)
    assert infer("add", ["n", 1], metas) == first == [((3,), "int64")]
    assert infer("add", ["n", True], metas) == [((3,), "int64")]
    assert infer("add", ["x", 2.0], metas) == [((2, 3), "float32")]
    assert infer("sum", ["x"], metas, {"dims": [1], "keepdim": True}) == [((2, 1), "float32")]
    assert infer("sum", ["x"], metas, {"dims": [1], "keepdim": False}) == [((2,), "float32")]
    with pytest.raises(Misfit):  # a refusal is not remembered as an answer
        infer("matmul", ["x", "x"], metas)
    with pytest.raises(Misfit):
        infer("matmul", ["x", "x"], metas)


def test_dynamic_slices_infer_without_reading_their_starts():
    """The starts' values say where, never the shapes: a dynamic slice has its sizes, an update
    the operand's shape; sizes, updates or starts that do not fit the operand are a misfit."""
    metas = {"x": ((5, 4, 3), "bfloat16"), "i": ((), "int32"), "u": ((2, 2, 3), "bfloat16"),
             "w": ((6, 4, 3), "bfloat16")}
    assert infer("dynamic_slice", ["x", "i", 1, 0], metas, {"sizes": [2, 2, 3]}) == [((2, 2, 3), "bfloat16")]
    assert infer("dynamic_update_slice", ["x", "u", "i", 1, 0], metas) == [((5, 4, 3), "bfloat16")]
    for op, inputs, attrs in (("dynamic_slice", ["x", "i", 0, 0], {"sizes": [6, 2, 3]}),
                              ("dynamic_slice", ["x", "i", 0], {"sizes": [2, 2, 3]}),
                              ("dynamic_update_slice", ["x", "w", "i", 0, 0], {}),
                              ("dynamic_update_slice", ["x", "u", "i", 0], {})):
        with pytest.raises(Misfit):
            infer(op, inputs, metas, attrs)


# --- Dynamo's converters whose intermediates are inferred -----------------------------------

class _Converted(torch.nn.Module):
    """Calls whose converters write several nodes: their intermediates' shapes come from the rules."""

    def forward(self, x, y, b1, b2, m):
        out = torch.add(x, y, alpha=2) + torch.sub(x, y, alpha=0.5) + torch.rsub(x, y, alpha=3)  # y broadcasts
        out = out + torch.addmm(y, x, m, beta=0.5, alpha=2)
        out = out + torch.addbmm(y, b1, b2, beta=2, alpha=0.5)
        out = out + torch.baddbmm(x[None], b1[:1], b2[:1], alpha=3)[0]
        out = out + x.sum(dim=1, keepdim=True, dtype=x.dtype) + x.cumsum(1, dtype=x.dtype)  # a convert first
        out = out + m.diagonal(1)[:, None][:4, :1] + x.select(1, 2)[:, None] + x.unbind(1)[3][:, None]
        out = out + x.repeat(1, 2)[:, :6] + x[1:3, 2].sum() + torch.arange(1, 13, 2, dtype=torch.float32)
        return out


def _converted_workload() -> Workload:
    def inputs(cfg, dtype, gen):
        return tuple(torch.randn(s, generator=gen).to(dtype) for s in ((4, 6), (6,), (3, 4, 5), (3, 5, 6), (6, 6)))
    return Workload("converted", lambda cfg: _Converted(), inputs, {"tiny": {}})


def test_dynamo_intermediates_take_their_rules_shapes():
    """add(x, y, alpha) with y broadcast scales y, not the sum: its intermediate has y's shape;
    every stage's graph agrees with the rules and the interpreter gives eager's float64 values."""
    inst = _converted_workload().instantiate("tiny")
    acq = get_frontend("dynamo").acquire(inst, "fwd")
    fx_graph = acq.stages["dynamo.fx"].common("composite")
    scaled = [n for n in fx_graph.nodes if n.op == "mul" and 2 in n.inputs and n.id.endswith(".0")]
    assert scaled and all(n.outputs[0].shape == (6,) for n in scaled), [str(n.outputs[0]) for n in scaled]
    ref = inst.cast("float64")
    expected = run_eager(ref.module, ref, "fwd")
    for stage, program in stage_programs(acq, inst).items():
        for level in LEVELS:
            _checked(program.forward.stage.common(level))
            got = run_program(program, inst, lambda step, xs, level=level: interpret(step.graph(level), xs))
            cmp = compare_results(got, expected, 1e-12)
            assert cmp.ok, f"{stage} ({level}): {cmp.reason}"


class _Derived(torch.nn.Module):
    """Symbols Thunder's normalizers write as several nodes, the values between them derived."""

    def forward(self, x, y, idx):
        out = torch.add(x, y, alpha=2) + torch.sub(x, y, alpha=0.5)  # y broadcasts: alpha * y has y's shape
        out = out + x.cumsum(1, dtype=torch.float64).to(x.dtype) + torch.arange(1, 13, 2, dtype=x.dtype)
        out = out + x.std(dim=0, keepdim=True) + torch.argsort(x, dim=1).to(x.dtype)
        out = out + torch.index_select(x, 0, idx[0])  # a 0-d index made 1-d
        z = x.clone()
        z[1:3, 2] = y[:2].to(torch.float64)  # cast and reshaped into the block
        return out + z


def test_thunder_derived_values_take_their_rules_shapes():
    """Thunder's add(x, y, alpha) with y broadcast scales y, not the sum: the derived value has
    y's shape (it once recorded the output's); every stage's graph agrees with the rules and the
    interpreter gives eager's float64 values."""
    if not get_frontend("thunder").availability():
        pytest.skip("lightning-thunder is not available")

    def inputs(cfg, dtype, gen):
        x, y = torch.randn(4, 6, generator=gen).to(dtype), torch.randn(6, generator=gen).to(dtype)
        return x, y, torch.tensor([2, 0])
    inst = Workload("derived", lambda cfg: _Derived(), inputs, {"tiny": {}}).instantiate("tiny")
    acq = get_frontend("thunder").acquire(inst, "fwd")
    first = acq.stages["thunder.trace[0]"].common("composite")
    scaled = [n for n in first.nodes if n.op == "mul" and n.outputs[0].name.endswith("_alpha")]
    assert len(scaled) == 2 and all(n.outputs[0].shape == (6,) for n in scaled), [str(n.outputs[0]) for n in scaled]
    ref = inst.cast("float64")
    expected = run_eager(ref.module, ref, "fwd")
    for stage, program in stage_programs(acq, inst).items():
        for level in LEVELS:
            graph = program.forward.stage.common(level)
            assert not graph.unknown_ops(), f"{stage}: {dict(graph.unknown_ops())}"
            _checked(graph)
            got = run_program(program, inst, lambda step, xs, level=level: interpret(step.graph(level), xs))
            cmp = compare_results(got, expected, 1e-12)
            assert cmp.ok, f"{stage} ({level}): {cmp.reason}"


def test_the_sweep_records_jax_shapes_the_rules_give():
    """lax.shift_right_logical of an int32 [1, 20] by a [20, 20] widens x on int64 first: that
    convert has x's shape (the adapter once wrote the broadcast output's). The sweep's records
    carry no metadata disagreement for it, in any stage."""
    from irlens.conformance.check import CAPTURED, check_case
    from irlens.conformance.corpora import get_corpus

    if not get_frontend("jax").availability():
        pytest.skip("jax is not available")
    case = next(c for c in get_corpus("lax_harness").cases(1) if c.id.startswith("lax_harness:shift_right_logical:int32"))
    record = check_case(case.to_json(), "jax")
    assert record["status"] == CAPTURED
    found = {f"{stage} {level}": result["metadata"] for stage, levels in record["stages"].items()
             for level, result in levels.items() if "metadata" in result}
    assert not found
