"""JAX frontend and its adapters (jaxpr, StableHLO, optimized HLO), on the built-in workloads
at the tiny preset: every stage dumps in both modes, op multisets match what the workloads
compute, and the HLO reader is checked against real compiled output. (Faithfulness, every common
view run by the float64 interpreter, is in test_faithfulness.py.)"""
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
import torch

from irlens.frontends import get_frontend
from irlens.core.interpret import interpret
from irlens.core.ir import Graph
from irlens.backends.xla.kernels import read_hlo
from irlens.frontends.jax.hlo.text import parse_instruction, parse_stack_frames
from irlens.frontends.jax.jaxpr.walk import jaxpr_to_graph
from irlens.workloads.builtin import workload_names
from irlens.workloads.workload import NoJaxTwin, Workload

from tests.support.workload_cache import acquired as cached_acquisition, instance
from tests.support.slow_cases import marked_slow

MODES = ("fwd", "fwdbwd")
STAGES = {"fwd": ["jax.jaxpr", "jax.stablehlo", "jax.hlo"], "fwdbwd": ["jax.jaxpr", "jax.grad", "jax.stablehlo", "jax.hlo"]}


def acquired(name: str, mode: str):
    return cached_acquisition(name, mode, "jax")


def _assert_well_formed(g: Graph) -> None:
    ids = [n.id for n in g.nodes]
    assert len(ids) == len(set(ids)), "node ids repeat"
    defined = {t.name for t in g.inputs}
    for n in g.nodes:
        missing = [v for v in n.value_inputs() if v not in defined]
        assert not missing, f"{n.id} ({n.op}) reads undefined values {missing}"
        for o in n.outputs:
            assert o.name not in defined, f"value {o.name} defined twice"
            defined.add(o.name)
    assert all(o in defined for o in g.outputs if isinstance(o, str))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", marked_slow(workload_names(), {"minigpt"}))
def test_jax_stages_dump(name, mode):
    acq = acquired(name, mode)
    assert list(acq.stages) == STAGES[mode]
    assert acq.frontend == "jax" and acq.mode == mode
    for stage in acq.stages.values():
        assert stage.native_text.strip()
        g = stage.common()
        assert (g.frontend, g.stage, g.level, g.name) == ("jax", stage.name, "composite", name)
        _assert_well_formed(g)
        assert not g.unknown_ops(), f"{stage.name}: {g.unknown_ops()}"
        assert Graph.from_json(g.to_json()).to_json() == g.to_json()
        assert f"[jax {stage.name}, composite]" in g.to_text()
    grad_outputs = {"loss", *(f"grad:{p}" for p in instance(name).params())}
    assert grad_outputs <= set(acq.notes["outputs"]) if mode == "fwdbwd" else "out0" in acq.notes["outputs"]


def test_jax_gelu_formula_jaxpr_ops():
    g = acquired("gelu", "fwd").stage("jax.jaxpr").common()
    assert g.compute_op_counts() == Counter({"mul": 4, "pow": 1, "add": 2, "tanh": 1})
    (pow_node,) = [n for n in g.nodes if n.op == "pow"]
    assert pow_node.native == "integer_pow" and pow_node.inputs == ["input0", 3]
    assert [t.name for t in g.inputs] == ["input0"]


def test_jax_attention_decomposes_to_matmuls_and_softmax():
    """jax.nn.dot_product_attention on CPU traces to two dot_generals around a softmax (max,
    exp, sum, div) under a causal select; its gradient has four more matmuls."""
    fwd = acquired("attention", "fwd").stage("jax.jaxpr").common()
    ops = fwd.op_counts()
    assert ops["matmul"] == 2 and ops["exp"] == 1 and ops["amax"] == 1 and ops["sum"] == 1 and ops["div"] == 1
    assert ops["where"] >= 1 and ops["iota"] == 2
    assert all("contract" in n.attrs for n in fwd.nodes if n.op == "matmul")  # [B,T,N,H] layouts: not plain
    assert acquired("attention", "fwdbwd").stage("jax.grad").common().op_counts()["matmul"] == 6


def test_jax_input_names_and_default_stage():
    fe = get_frontend("jax")
    assert fe.availability().ok
    assert (fe.default_stage("fwd"), fe.default_stage("fwdbwd")) == ("jax.jaxpr", "jax.grad")
    g = acquired("tinyhead", "fwdbwd").stage("jax.grad").common()
    assert [t.name for t in g.inputs] == sorted(instance("tinyhead").params()) + ["input0"]


def test_jax_workload_without_twin_raises():
    plain = Workload("no_twin", lambda cfg: torch.nn.Identity(), lambda cfg, dt, gen: (torch.ones(2),), {"tiny": {}})
    with pytest.raises(NoJaxTwin, match="no_twin"):
        get_frontend("jax").acquire(plain.instantiate("tiny"), "fwd")


def test_jaxpr_adapter_conventions():
    """Call-like primitives are inlined with their name as scope; params become the attrs of
    irlens.core.ops; select_n becomes where(pred, on_true, on_false); a primitive the adapter does
    not know survives as unknown, with the reason."""
    from jax.extend.core import Primitive

    brand_new = Primitive("brand_new")
    brand_new.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))

    @jax.jit
    def inner(x):
        return jnp.sin(x) * 2.0

    def f(x, w):
        y = jax.nn.relu(x) + inner(x)
        s = jnp.sum(y.T, axis=0)
        a, b = jnp.split(x @ w, 2, axis=1)
        return s, jnp.where(x > 0, x, -x) ** 2, a - b, jax.lax.cummax(x, axis=1), brand_new.bind(x)

    x, w = jnp.ones((4, 3)), jnp.ones((3, 6))
    g = jaxpr_to_graph(jax.make_jaxpr(f)(x, w), name="t", input_names=["x", "w"])
    by_native = {n.native: n for n in g.nodes}
    assert by_native["max"].scope.endswith("relu") and by_native["max"].op == "maximum"
    assert by_native["sin"].scope == "inner"
    assert by_native["transpose"].attrs == {"perm": [1, 0]}
    assert by_native["reduce_sum"].attrs == {"dims": [0], "keepdim": False}
    assert by_native["dot_general"].op == "matmul" and by_native["dot_general"].attrs == {}
    slices = [n for n in g.nodes if n.native == "split"]
    assert [n.attrs["start"] for n in slices] == [[0, 0], [0, 3]] and all(n.op == "slice" for n in slices)
    where = by_native["select_n"]
    assert where.op == "where" and where.inputs[1] == "x"  # on_true is x
    assert by_native["cummax"].op == "cummax" and by_native["cummax"].attrs == {"dim": 1}  # ATen's: no reverse
    assert g.unknown_ops() == Counter({"unknown:brand_new": 1})
    assert by_native["brand_new"].attrs["reason"] == "no canonical op for this primitive"


def test_hlo_reader_on_compiled_gelu():
    """The optimized HLO of GELU: one loop fusion holding the whole formula, op_name metadata
    and source lines recovered from the module's StackFrames section."""
    stage = acquired("gelu", "fwd").stage("jax.hlo")
    view = read_hlo(stage.native, name="gelu")
    (fusion,) = view.entry_ops
    assert fusion.opcode == "fusion" and fusion.fusion_kind == "kLoop"
    assert set(fusion.node_ids) == {n.id for n in view.graph.nodes}
    assert view.graph.compute_op_counts() == Counter({"mul": 6, "add": 2, "tanh": 1})  # x**3 is two muls here
    assert {n.attrs["op_name"].rsplit("/", 1)[-1] for n in view.graph.nodes} == {"mul", "add", "integer_pow", "tanh"}
    assert all(n.attrs["source"].split(":")[0].endswith("workloads/builtin/gelu.py") for n in view.graph.nodes)
    assert "fused_computation" in fusion.text and fusion.text.count("\n") >= 10


def test_hlo_instruction_parser_on_real_text():
    stage = acquired("tinyhead", "fwd").stage("jax.hlo")
    text = stage.native_text
    assert text.index("FileNames") < text.index("StackFrames") < text.index("ENTRY")  # the PITFALLS layout
    frames = parse_stack_frames(text)
    assert frames and all(f.line > 0 for f in frames.values())
    instrs = [parse_instruction(i) for c in stage.native.computations() for i in c.instructions()]
    by_opcode = {}
    for ins in instrs:
        by_opcode.setdefault(ins.opcode, ins)
    reduce = by_opcode["reduce"]
    assert reduce.shapes == [("float32", (16,))] and reduce.attrs["dimensions"] == "{1}"
    assert reduce.attrs["to_apply"].startswith("%region")
    assert 'op_name="jit(outputs)/reduce_' in reduce.attrs["metadata"]
    fusions = [i for i in instrs if i.opcode == "fusion"]
    assert fusions and all(i.attrs["calls"].startswith("%fused_computation") for i in fusions)
    # on CPU the matmul runs as a kCustom __ynn_fusion (PITFALLS)
    view = read_hlo(stage.native, name="tinyhead")
    dots = [e for e in view.entry_ops if any(view.graph.node(i).op == "matmul" for i in e.node_ids)]
    assert [(e.fusion_kind, e.custom_kind) for e in dots] == [("kCustom", "__ynn_fusion")]


def test_jaxpr_one_minus_square_from_newer_jax():
    """jax 0.11 writes tanh's derivative with a `one_minus_square` primitive (seen on the GPU
    machine); jax 0.10 has none, so a stand-in primitive of that name checks the expansion."""
    from jax.extend.core import Primitive

    prim = Primitive("one_minus_square")
    prim.def_abstract_eval(lambda x: jax.core.ShapedArray(x.shape, x.dtype))
    g = jaxpr_to_graph(jax.make_jaxpr(prim.bind)(jnp.ones((2, 3))), name="t", input_names=["x"])
    assert [(n.op, n.inputs[0]) for n in g.nodes] == [("mul", "x"), ("sub", 1.0)]
    x = torch.randn(2, 3)
    (out,) = interpret(g, [x])
    torch.testing.assert_close(out, 1 - x.double() ** 2)


@pytest.mark.parametrize("mode", MODES)
def test_lowered_modules_bind_only_the_arguments_jit_keeps(mode):
    """jit drops the arguments a function never reads: the StableHLO and HLO modules take the
    ones it kept, and the bindings feed those, by name, in both modes."""
    from irlens.frontends.bindings import program_for, run_program, stage_programs, workload_values

    def twin(params, x, unused, y):
        return (jnp.sin(x) * y, jnp.zeros_like(unused))

    w = Workload.from_module("unused_arg", lambda x, unused, y: (x.sin() * y, torch.zeros_like(unused)),
                             ((2, 3), (4,), (2, 3)), jax=twin)
    inst = w.instantiate("tiny")
    acq = get_frontend("jax").acquire(inst, mode)
    assert acq.notes["inputs"] == ["input0", "input1", "input2"]
    assert acq.notes["lowered_inputs"] == ["input0", "input2"]
    values = workload_values(inst)
    x, y = values["input0"].double(), values["input2"].double()
    jaxpr_results = run_program(program_for(acq, inst), inst,
                                lambda step, inputs: interpret(step.graph("primitive"), inputs))
    torch.testing.assert_close(jaxpr_results["out0"].double(), x.sin() * y, rtol=1e-6, atol=1e-7)
    for name in ("jax.stablehlo", "jax.hlo"):
        program = stage_programs(acq, inst)[name]
        assert len(program.forward.graph("primitive").inputs) == 2
        results = run_program(program, inst, lambda step, inputs: interpret(step.graph("primitive"), inputs))
        assert set(results) == set(jaxpr_results)  # in fwdbwd: the loss and every gradient too
        for key, value in jaxpr_results.items():
            torch.testing.assert_close(results[key].double(), value.double(), rtol=1e-6, atol=1e-7)


def test_a_jaxpr_jax_cannot_print_keeps_its_stage_and_says_why():
    """jax 0.10 cannot print `mul_p.bind(x, y)` (its printing rule reads an out_dtype param the
    bind leaves out; JAX's own mul harness does that): the stage keeps its graph, its text says why."""
    from jax import lax

    from irlens.frontends.jax.frontend import jaxpr_text

    class Unprintable:
        def __str__(self):
            raise KeyError("out_dtype")

    assert jaxpr_text(Unprintable()) == "(JAX could not print this jaxpr: KeyError: 'out_dtype')"
    closed = jax.make_jaxpr(lambda x, y: lax.mul_p.bind(x, y))(jnp.ones(3), jnp.ones(3))
    assert jaxpr_to_graph(closed, name="t").op_counts() == Counter({"mul": 1})
