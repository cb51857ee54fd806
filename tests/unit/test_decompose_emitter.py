"""The decomposition Emitter: an emitted node's output shape and dtype, when a rule does not state
them, are the op's inference on its inputs' metadata, or the composite's own output's where the
value keeps that output's name."""
import pytest

from irlens.core.decompose import Emitter
from irlens.core.ir import Node, TensorMeta
from irlens.core.ops.infer import NotInferable


def _emitter():
    x, idx = TensorMeta("x", (4, 8), "bfloat16"), TensorMeta("i", (4,), "int64")
    parent = Node("n", "layer_norm", ["x"], [TensorMeta("y", (4, 8), "float32")], {})
    return Emitter(parent, {"n", "x", "i", "y"}, {"x": x, "i": idx})


def test_an_unstated_output_is_inferred_from_inputs_and_earlier_emissions():
    e = _emitter()
    s = e.emit("sum", ["x"], dims=[1], keepdim=True)
    c = e.emit("convert", [s], dtype="float32")
    keep = e.emit("ne", ["i", -100])
    assert e.meta(s) == TensorMeta(s, (4, 1), "bfloat16")
    assert e.meta(c) == TensorMeta(c, (4, 1), "float32")
    assert e.meta(keep) == TensorMeta(keep, (4,), "bool")


def test_the_composites_output_keeps_its_recorded_metadata():
    e = _emitter()
    y = e.emit("mul", ["x", 2.0], oname="y")  # inference would say bfloat16
    assert e.meta(y) == TensorMeta("y", (4, 8), "float32")


def test_a_stated_output_is_kept_and_one_inference_cannot_give_raises():
    e = _emitter()
    w = e.emit("where", [e.emit("ne", ["i", -100]), 1.0, 0.0], (4,), "float32")
    assert e.meta(w) == TensorMeta(w, (4,), "float32")
    with pytest.raises(NotInferable, match="literal"):
        e.emit("where", [e.emit("ne", ["i", -100]), 1.0, 0.0])
