"""While loops in the common view: lax.while_loop and fori_loop (trip counts that depend on the
data) read at every JAX stage into a `while` node whose cond and body are graphs, interpreted in
float64 against JAX in float64 at both levels, lowered back to lax.while_loop; an unknown op in
a body keeps the loop unknown and is counted; graphs with loops survive JSON and print their
bodies."""
from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from jax import lax

from irlens.decompose import to_primitive
from irlens.frontends.jax.hlo import hlo_to_graph, stablehlo_to_graph
from irlens.frontends.jax.jaxpr import at_level, jaxpr_to_graph
from irlens.interpret import Uninterpretable, interpret
from irlens.ir import Graph, Node, TensorMeta
from irlens.lowering import Unsupported

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
    """A conditional in the body (no canonical op): the loop is `unknown:while`, the reason names
    what is unknown inside, both are counted, and the interpreter refuses to run it."""
    def fn(x, n):
        return lax.fori_loop(0, n, lambda i, v: lax.cond(v[0] > 1.0, jnp.sin, jnp.cos, v) * i, x)

    inner = {"jaxpr": "unknown:cond", "stablehlo": "unknown:case", "hlo": "unknown:conditional"}
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
