"""Control flow in the common view: lax.while_loop and fori_loop (trip counts that depend on the
data), lax.cond and lax.switch read at every JAX stage into `while` and `cond` nodes whose cond,
body and branches are graphs, interpreted in float64 against JAX in float64 at both levels,
lowered back to lax.while_loop and lax.switch; an unknown op in a body keeps the loop unknown
and is counted; graphs with loops survive JSON and print their bodies."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from jax import lax

from irlens.core.decompose import to_primitive
from irlens.frontends.jax.hlo.walk import hlo_to_graph
from irlens.frontends.jax.hlo.stablehlo import stablehlo_to_graph
from irlens.frontends.jax.jaxpr.walk import at_level, jaxpr_to_graph
from irlens.core.interpret import Uninterpretable, interpret
from irlens.core.ir import Graph, Node, TensorMeta
from irlens.backends.lowering import Unsupported

STAGES = ("jaxpr", "stablehlo", "hlo")


def stage_graphs(fn, args) -> dict[str, Graph]:
    """The common views of `fn(*args)` (x64 on) at each stage; closures hold no array constants."""
    with jax.enable_x64(True):
        closed = jax.make_jaxpr(fn)(*args)
        lowered = jax.jit(fn).lower(*args)
        return {
            "jaxpr": jaxpr_to_graph(closed, name="t"),
            "stablehlo": stablehlo_to_graph(lowered.compiler_ir("stablehlo"), name="t"),
            "hlo": hlo_to_graph(lowered.compile().runtime_executable().hlo_modules()[0], name="t"),
        }


def eager(fn, args) -> list[np.ndarray]:
    with jax.enable_x64(True):
        return [np.asarray(w) for w in jax.tree_util.tree_leaves(fn(*args))]


def run(graph: Graph, args) -> list[np.ndarray]:
    return [np.asarray(o) for o in interpret(graph, [torch.from_numpy(np.array(a)) for a in args])]


def fori_scaled(x, n):
    """A trip count from an input; the loop index feeds the carry."""
    return lax.fori_loop(0, n, lambda i, v: v * 1.5 + jnp.sin(v) * i, x)


def until_large(x):
    """A float condition: the trip count depends on the values; a scalar literal starts the carry."""
    return lax.while_loop(lambda c: c[1] < 40.0, lambda c: (c[0] * 1.25 + 0.5, c[1] + jnp.sum(jnp.abs(c[0]))),
                          (x, 0.0))


def closes_over(x, w):
    """cond and body read values from outside the loop (a jaxpr's consts) and nest a second loop."""
    def body(c):
        i, v = c
        inner = lax.fori_loop(0, i, lambda j, u: u + w[0] * j, jnp.zeros_like(v))
        return i + 1, jnp.tanh(v @ w) + inner
    return lax.while_loop(lambda c: (c[0] < 4) & (jnp.max(c[1]) < 10.0), body, (0, x))


CASES = {
    "fori_loop": (fori_scaled, lambda r: (r.standard_normal(3), 7)),
    "while_loop": (until_large, lambda r: (r.standard_normal(4),)),
    "closure_and_nesting": (closes_over, lambda r: (r.standard_normal((2, 3)), r.standard_normal((3, 3)))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_loops_are_faithful_at_every_stage_and_level(case):
    fn, make = CASES[case]
    args = make(np.random.default_rng(0))
    want = eager(fn, args)
    for stage, g in stage_graphs(fn, args).items():
        assert g.unknown_ops() == {}, f"{stage}: {g.unknown_ops()}"
        loops = [n for n in g.nodes if n.op == "while"]
        assert loops, f"{stage}: no while node:\n{g.to_text()}"
        for n in loops:
            assert set(n.subgraphs) == {"cond", "body"}
            assert len(n.subgraphs["cond"].inputs) == len(n.inputs) == len(n.subgraphs["body"].outputs)
        for level in ("composite", "primitive"):
            got = run(at_level(g, level), args)
            assert len(got) == len(want), stage
            for o, w in zip(got, want):
                np.testing.assert_allclose(o, w, rtol=1e-12, atol=1e-12, err_msg=f"{stage} ({level})")


def test_the_trip_count_follows_the_data():
    """One graph, two trip counts: the interpreter runs the loop as often as the input says."""
    g = stage_graphs(fori_scaled, (np.ones(3), 2))["hlo"]
    for n in (0, 1, 5):
        np.testing.assert_allclose(run(g, (np.ones(3), n))[0], eager(fori_scaled, (np.ones(3), n))[0], rtol=1e-12)


def test_an_unknown_op_in_a_body_keeps_the_loop_unknown_and_is_counted():
    """A host callback in the body (no canonical op): the loop is `unknown:while`, the reason
    names what is unknown inside, both are counted, and the interpreter refuses to run it."""
    def fn(x, n):
        return lax.fori_loop(0, n, lambda i, v: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(v.shape, v.dtype), v)
                             * i, x)

    inner = {"jaxpr": "unknown:pure_callback", "stablehlo": "unknown:custom-call", "hlo": "unknown:custom-call"}
    for stage, g in stage_graphs(fn, (np.ones(3), 4)).items():
        (loop,) = [n for n in g.nodes if n.op.endswith("while")]
        assert loop.op == "unknown:while" and inner[stage] in loop.attrs["reason"], stage
        assert inner[stage] in loop.subgraphs["body"].unknown_ops(), stage
        assert g.unknown_ops()["unknown:while"] == 1 and g.unknown_ops()[inner[stage]] == 1, stage
        assert "unknown: " in g.to_text() and inner[stage] in g.to_text()
        with pytest.raises(Uninterpretable):
            run(g, (np.ones(3), 4))


def test_a_loop_round_trips_through_json_and_prints_its_bodies():
    g = stage_graphs(closes_over, (np.ones((2, 3)), np.full((3, 3), 0.1)))["jaxpr"]
    back = Graph.from_json(json.loads(json.dumps(g.to_json())))
    assert back.to_json() == g.to_json()
    args = (np.ones((2, 3)), np.full((3, 3), 0.1))
    for o, w in zip(run(back, args), run(g, args)):
        np.testing.assert_array_equal(o, w)
    text = g.to_text().splitlines()
    cond = next(i for i, line in enumerate(text) if line.strip().startswith("cond ("))
    assert text[cond].startswith("    cond (") and " = while(" in text[cond - 1]
    assert any(line.startswith("        body (") for line in text), "the nested loop's body, indented twice"


def _loop_with_composite_body() -> Graph:
    """while i < 3: (i + 1, gelu(x)): a composite inside the body."""
    f, i = TensorMeta("x", (4,), "float32"), TensorMeta("i", (), "int64")
    cond = Graph("w.cond", "jax", "t", "composite", [i, f],
                 [Node("c0", "lt", ["i", 3], [TensorMeta("p", (), "bool")])], ["p"])
    body = Graph("w.body", "jax", "t", "composite", [i, f],
                 [Node("b0", "add", ["i", 1], [TensorMeta("j", (), "int64")]),
                  Node("b1", "gelu", ["x"], [TensorMeta("y", (4,), "float32")])], ["j", "y"])
    loop = Node("w", "while", ["i0", "x0"], [TensorMeta("i1", (), "int64"), TensorMeta("x1", (4,), "float32")],
                subgraphs={"cond": cond, "body": body})
    return Graph("t", "jax", "t", "composite", [TensorMeta("i0", (), "int64"), TensorMeta("x0", (4,), "float32")],
                 [loop], ["x1"])


def test_bodies_are_decomposed_with_the_graph():
    g = _loop_with_composite_body()
    p = to_primitive(g)
    body = p.nodes[0].subgraphs["body"]
    assert p.level == body.level == "primitive"
    assert "gelu" not in {n.op for n in body.nodes} and "gelu" in {n.op for n in g.nodes[0].subgraphs["body"].nodes}
    x = torch.linspace(-2, 2, 4, dtype=torch.float64)
    want = x
    for _ in range(3):
        want = torch.nn.functional.gelu(want)
    for view in (g, p):
        (got,) = interpret(view, [torch.tensor(0), x])
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_a_loop_lowers_to_lax_while_loop_and_not_to_the_torch_lowerings():
    from irlens.backends.inductor.lower import InductorLowered
    from irlens.backends.xla.lower import to_jax_function

    g = stage_graphs(fori_scaled, (np.ones(3), 2))["stablehlo"]
    p = at_level(g, "primitive")
    with jax.enable_x64(True):
        fn = jax.jit(to_jax_function(p))
        assert "while" in str(jax.make_jaxpr(to_jax_function(p))(jnp.ones(3), 5))
        for n in (0, 5):
            np.testing.assert_allclose(np.asarray(fn(jnp.ones(3), n)[0]), eager(fori_scaled, (np.ones(3), n))[0],
                                       rtol=1e-12)
    with pytest.raises(Unsupported, match="while .control flow"):
        InductorLowered(p, "cpu", "t", capture=None)


# --- conditionals ------------------------------------------------------------------------------

def branches(p, x, i):
    """lax.cond on a predicate, lax.switch on an index; a branch reads a value computed outside
    it (StableHLO's regions capture it; the node takes it as an operand)."""
    a = lax.cond(p, lambda v: jnp.sin(v) * 2.0, lambda v: v + 1.0, x)
    b = lax.switch(i, [jnp.sin, jnp.cos, lambda v: v * 3.0 + a], x)
    return a, b


@pytest.mark.parametrize("p,i", [(True, 1), (False, 2), (True, -4), (False, 9)])
def test_conditionals_are_faithful_at_every_stage_and_level(p, i):
    args = (p, np.linspace(-1.0, 2.0, 3), i)
    want = eager(branches, args)
    for stage, g in stage_graphs(branches, args).items():
        assert g.unknown_ops() == {}, f"{stage}: {g.unknown_ops()}"
        conds = [n for n in g.nodes if n.op == "cond"]
        assert [len(n.subgraphs) for n in conds] == [2, 3], stage
        for level in ("composite", "primitive"):
            for o, w in zip(run(at_level(g, level), args), want, strict=True):
                np.testing.assert_allclose(o, w, rtol=1e-12, err_msg=f"{stage} ({level})")


def _hlo(text: str) -> Graph:
    import jaxlib._hlo as hlo_lib

    return hlo_to_graph(hlo_lib.hlo_module_from_text(text), name="c")


def test_an_hlo_conditional_on_a_predicate_takes_each_branch_its_own_operand():
    """conditional(pred, true_operand, false_operand): branch 0 is the false one, each branch
    graph takes every operand and reads its own (a tuple's elements)."""
    g = _hlo("""HloModule m

%t (a: (f32[3])) -> f32[3] {
  %a = (f32[3]{0}) parameter(0)
  %x = f32[3]{0} get-tuple-element(%a), index=0
  ROOT %s = f32[3]{0} sine(%x)
}

%f (b: f32[3]) -> f32[3] {
  %b = f32[3]{0} parameter(0)
  ROOT %n = f32[3]{0} negate(%b)
}

ENTRY %main (p: pred[], x: f32[3], y: f32[3]) -> f32[3] {
  %p = pred[] parameter(0)
  %x = f32[3]{0} parameter(1)
  %y = f32[3]{0} parameter(2)
  %tx = (f32[3]{0}) tuple(%x)
  ROOT %c = f32[3]{0} conditional(%p, %tx, %y), true_computation=%t, false_computation=%f
}
""")
    (node,) = [n for n in g.nodes if n.op == "cond"]
    assert [n.op for n in node.subgraphs["branch0"].nodes] == ["neg"]
    x, y = torch.tensor([0.5, 1.0, 2.0]), torch.tensor([3.0, 4.0, 5.0])
    torch.testing.assert_close(interpret(g, [torch.tensor(True), x, y])[0], torch.sin(x).double())
    torch.testing.assert_close(interpret(g, [torch.tensor(False), x, y])[0], -y.double())


def test_an_index_out_of_range_takes_the_last_branch_when_interpreted_and_lowered():
    """XLA's case: an index outside [0, n) runs branch n - 1 (lax.switch clamps before it)."""
    from irlens.backends.xla.lower import to_jax_function

    x = TensorMeta("x", (3,), "float64")
    branch = [Graph(f"c.branch{k}", "jax", "t", "composite", [x], [Node(f"b{k}", op, ["x"], [TensorMeta("y", (3,), "float64")])],
                    ["y"]) for k, op in enumerate(("sin", "neg"))]
    g = Graph("t", "jax", "t", "composite", [TensorMeta("i", (), "int32"), x],
              [Node("c", "cond", ["i", "x"], [TensorMeta("out", (3,), "float64")],
                    subgraphs={"branch0": branch[0], "branch1": branch[1]})], ["out"])
    v = np.array([0.5, 1.0, 2.0])
    with jax.enable_x64(True):
        fn = jax.jit(to_jax_function(g))
        for i, want in ((0, np.sin(v)), (1, -v), (7, -v), (-1, -v)):
            np.testing.assert_allclose(run(g, (np.int32(i), v))[0], want, rtol=1e-12)
            np.testing.assert_allclose(np.asarray(fn(jnp.int32(i), jnp.asarray(v))[0]), want, rtol=1e-12)


_OUTSIDE = """
func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %lim = stablehlo.constant dense<4> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %x = %arg0) : tensor<i32>, tensor<3xf32>
  cond {
    %1 = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.add %i, %one : tensor<i32>
    %2 = stablehlo.add %x, ADDEND : tensor<3xf32>
    stablehlo.return %1, %2 : tensor<i32>, tensor<3xf32>
  }
  return %0#1 : tensor<3xf32>
}
"""


@pytest.mark.parametrize("addend", ["%x", "%arg1"])
def test_a_stablehlo_loop_region_reading_outside_values(addend):
    """StableHLO's while regions may read the enclosing function's values: a scalar constant (the
    cond's limit) is substituted in; a tensor (the body's %arg1) is not a carried value, so the
    loop stays unknown with the reason."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    with mlir.make_ir_context():
        g = stablehlo_to_graph(ir.Module.parse(_OUTSIDE.replace("ADDEND", addend)), name="t")
    (loop,) = [n for n in g.nodes if n.op.endswith("while")]
    x, y = np.array([0.5, 1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    if addend == "%x":
        assert loop.op == "while"
        np.testing.assert_allclose(run(g, (x, y))[0], x * 16)
    else:
        assert loop.op == "unknown:while" and "reading values from outside" in loop.attrs["reason"]


def test_a_stablehlo_if_reads_its_regions_captures_as_operands():
    """stablehlo.if(pred) {true} {false}: the regions read the function's values directly; they
    become the cond node's operands, the false region branch 0."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    text = """
func.func public @main(%p: tensor<i1>, %a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.if"(%p) ({
    %1 = stablehlo.sine %a : tensor<3xf32>
    stablehlo.return %1 : tensor<3xf32>
  }, {
    %1 = stablehlo.negate %b : tensor<3xf32>
    stablehlo.return %1 : tensor<3xf32>
  }) : (tensor<i1>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""
    with mlir.make_ir_context():
        g = stablehlo_to_graph(ir.Module.parse(text), name="t")
    (node,) = [n for n in g.nodes if n.op == "cond"]
    assert len(node.inputs) == 3 and [n.op for n in node.subgraphs["branch0"].nodes] == ["neg"]
    a, b = np.array([0.5, 1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    np.testing.assert_allclose(run(g, (True, a, b))[0], np.sin(a))
    np.testing.assert_allclose(run(g, (False, a, b))[0], -b)
