"""The vocabulary itself: every op declared once with a meaning (and a rule, if composite),
nodes checked against the declared schema, and each declared JAX lowering computing the op's
meaning on sample inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from irlens.core import ops
from irlens.core.interpret import MEANINGS, run_attrs
from irlens.core.ir import Node, TensorMeta
from irlens.frontends.dynamo import names as fx_names
from irlens.frontends.jax.hlo import names as hlo_names
from irlens.frontends.jax.jaxpr import names as jaxpr_names
from irlens.frontends.thunder import trace as thunder_trace

F = "float32"


def T(name, shape=(3, 4), dtype=F):
    return TensorMeta(name, tuple(shape), dtype)


def test_every_op_has_a_meaning_and_every_composite_a_rule():
    for name, op in ops.OPS.items():
        assert op.name == name and op.family, name
        assert op.meaning is not None or op.category == ops.COLLECTIVE, name
        assert op.decomposition is not None or op.category != ops.COMPOSITE, name
    assert set(MEANINGS) == {n for n, op in ops.OPS.items() if op.meaning is not None}


def test_a_second_declaration_is_refused():
    with pytest.raises(ValueError, match="declared twice"):
        ops.declare("add", ops.ELEMENTWISE, "x y")


def test_every_name_table_maps_into_the_vocabulary():
    tables = [fx_names.TORCH_NAMES, fx_names.ATEN_NAMES, fx_names.MODULE_NAMES, thunder_trace.NAME_TABLE, jaxpr_names.PRIMITIVES, hlo_names.OPCODES]
    for table in tables:
        ops.check_vocabulary(table)
    with pytest.raises(ValueError, match="outside"):
        ops.check_vocabulary({"x": "no_such_op"})


@pytest.mark.parametrize("node,problem", [
    (Node("n", "sum", ["x"], [T("y", (3,))], {"dims": [1], "keepdim": False, "dtype": "float64"}), "unknown attr 'dtype'"),
    (Node("n", "reshape", ["x"], [T("y", (12,))]), "missing attr shape"),
    (Node("n", "gather", ["x", "i", "j"], [T("y")], {"dim": 0}), "got 3 inputs"),
    (Node("n", "softmax", ["x"], [T("y")], {"dim": "last"}), "not of kind int"),
    (Node("n", "div", ["x", "y"], [T("z")], {"rounding_mode": "ceil"}), "is not one of"),
    (Node("n", "where", ["c", None, "y"], [T("z")]), "input x is required"),
    (Node("n", "topk", ["x"], [T("v")], {"k": 2}), "got 1 outputs"),
])
def test_a_node_off_its_schema_raises_in_strict_mode_and_is_unknown_otherwise(node, problem, monkeypatch):
    assert problem in ops.node_problem(node)
    monkeypatch.setenv("IRLENS_STRICT_OPS", "1")
    with pytest.raises(ops.SchemaError, match=problem):
        ops.conform(node)
    monkeypatch.setenv("IRLENS_STRICT_OPS", "0")
    node.native = "aten.native_name.default"
    unknown = ops.conform(node)
    assert unknown.op == "unknown:aten.native_name.default" and problem in unknown.attrs["schema_error"]


def test_conforming_nodes_pass_with_provenance_and_defaults():
    node = Node("n", "sum", ["x"], [T("y", (3,))], {"dims": [1], "op_name": "jit(f)/reduce_sum"})
    assert ops.conform(node) is node
    assert run_attrs(node) == {"dims": [1], "keepdim": False, "op_name": "jit(f)/reduce_sum"}
    assert ops.conform(Node("n", "concat", ["a", "b", "c"], [T("y")], {"dim": 0})).op == "concat"
    assert ops.conform(Node("n", "index", ["x", None, "i"], [T("y")])).op == "index"


# --- JAX lowerings against the meanings ------------------------------------------------------

INTEGER_OPS = {"population_count", "clz", "mulhi"}  # defined on integers only
# operands of different shapes or kinds, with defaults for every attr (tests/integration/test_lowering_ops.py has them)
SHAPED = {"adaptive_avg_pool_backward", "grouped_mm", "grouped_mm_backward",
          # complex operands, or real pairs in a last dim of 2: tests/integration/test_lowering_ops.py's cases
          "view_as_real", "view_as_complex"}


def _sample(name: str, op: ops.Op, gen: torch.Generator):
    """(attrs, inputs) for ops whose operands are all tensors of one shape and whose attrs have defaults."""
    if any(a.required for a in op.attrs.values()) or any(o.variadic for o in op.operands) or name in SHAPED:
        return None
    if name == "matmul":
        return {}, [torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.randn(4, 2, generator=gen, dtype=torch.float64)]
    n = len(op.operands)
    if name.startswith(("bitwise", "logical")) or name in INTEGER_OPS:
        xs = [torch.randint(-9, 9, (3, 4), generator=gen, dtype=torch.int32) for _ in range(n)]
        return {}, xs if not name.startswith("logical") else [x > 3 for x in xs]
    if name == "where":
        return {}, [torch.rand(3, 4, generator=gen) > 0.5, torch.randn(3, 4, generator=gen), torch.randn(3, 4, generator=gen)]
    lo, hi = (1.5, 3.0) if name == "acosh" else (0.1, 0.9)  # a domain every unary function is defined on
    return {}, [lo + (hi - lo) * torch.rand(3, 4, generator=gen, dtype=torch.float64) for _ in range(n)]


JAX_LOWERED = sorted(name for name, op in ops.OPS.items() if "jax" in op.lowerings)


@pytest.mark.parametrize("name", JAX_LOWERED)
def test_jax_lowering_computes_the_meaning(name):
    import jax

    from irlens.backends.xla.lower import jax_lowering

    op = ops.OPS[name]
    fn = jax_lowering(name)  # a lowering by name must resolve
    sample = _sample(name, op, torch.Generator().manual_seed(0))
    if sample is None:
        pytest.skip("needs attrs or several shapes: covered by the cross-lowering tests")
    attrs, inputs = sample
    want = op.meaning(op.attrs_of(attrs), *inputs)
    with jax.enable_x64(True):
        got = fn(op.attrs_of(attrs), *[jax.numpy.asarray(x.numpy()) for x in inputs])
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    for w, g in zip(want, got):
        np.testing.assert_allclose(np.asarray(g), w.numpy(), rtol=1e-6, atol=1e-9, equal_nan=True, err_msg=name)


@pytest.mark.parametrize("training", [True, False])
def test_batch_and_group_norm_meanings_are_torch_functionals(training):
    import torch.nn.functional as F

    x, w, b = torch.randn(4, 6, 3, 5, dtype=torch.float64), torch.randn(6, dtype=torch.float64), torch.randn(6, dtype=torch.float64)
    rm, rv = torch.randn(6, dtype=torch.float64), torch.rand(6, dtype=torch.float64) + 0.5
    y, mean, rstd, *running = MEANINGS["batch_norm"]({"training": training, "momentum": 0.3, "eps": 1e-4}, x, w, b, rm, rv)
    want_m, want_v = rm.clone(), rv.clone()
    torch.testing.assert_close(y, F.batch_norm(x, want_m, want_v, w, b, training, 0.3, 1e-4))
    if training:  # the running statistics as torch updates them in place
        torch.testing.assert_close(running, [want_m, want_v])
        torch.testing.assert_close(mean, x.mean((0, 2, 3)))
    y, mean, rstd = MEANINGS["group_norm"]({"groups": 3, "eps": 1e-4}, x, w, b)
    torch.testing.assert_close(y, F.group_norm(x, 3, w, b, 1e-4))
    assert mean.shape == rstd.shape == (4, 3)
