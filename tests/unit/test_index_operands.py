"""Index operands are declared in the op schema (`IndexOf`), and both readers of the schema use
it: the repro runner keeps the positions it feeds a graph within what they index (a shrunk
graph's tables are smaller than the case's values), and the interpreter names a node whose
indices fall outside, instead of torch's bare "index out of range"."""
from __future__ import annotations

import pytest
import torch

from irlens.core.interpret import IndexOutOfRange, interpret
from irlens.core.ir import Graph, Node, TensorMeta, canonical_dtype
from irlens.core.ops import OPS
from irlens.repro.run_graph import graph_inputs


def f(*shape):
    return torch.randn(shape, dtype=torch.float32)


def wild(bound: int, *shape) -> torch.Tensor:
    """int64 positions from -2*bound to 2*bound, the first one just past the end."""
    n = 1
    for d in shape:
        n *= d
    values = (torch.arange(n) * 7) % (4 * bound) - 2 * bound
    values[0] = bound
    return values.reshape(shape)


def _bag():
    """A valid embedding bag of 6 indices into 7 rows, in 2 bags: what its backward ops also read."""
    indices, offsets = torch.tensor([0, 2, 4, 6, 1, 3]), torch.tensor([0, 3])
    _, offset2bag, bag_size, maximum = torch.ops.aten._embedding_bag(f(7, 3), indices, offsets)
    return offsets, offset2bag, bag_size, maximum


OFFSETS, OFFSET2BAG, BAG_SIZE, MAXIMUM = _bag()
BAG = dict(scale_grad_by_freq=False, mode=0, sparse=False, padding_idx=-1)

# op: (its inputs by operand name, None where absent; its attrs; {index input: the positions it may hold})
CASES = {
    "take": ({"x": f(4, 6), "index": wild(6, 3)}, {"dim": 1}, {"index": 6}),
    "gather": ({"x": f(4, 6), "index": wild(6, 4, 2)}, {"dim": 1}, {"index": 6}),
    "index": ({"x": f(4, 6), "all": None, "i1": wild(6, 3)}, {}, {"i1": 6}),  # x[:, i1]
    "index_add": ({"x": f(4, 6), "index": wild(6, 3), "src": f(4, 3)}, {"dim": 1}, {"index": 6}),
    "index_copy": ({"x": f(4, 6), "index": wild(6, 3), "src": f(4, 3)}, {"dim": 1}, {"index": 6}),
    "scatter": ({"x": f(4, 6), "index": wild(6, 4, 2), "src": f(4, 2)}, {"dim": 1}, {"index": 6}),
    "scatter_add": ({"x": f(4, 6), "index": wild(6, 4, 2), "src": f(4, 2)}, {"dim": 1}, {"index": 6}),
    "scatter_reduce": ({"x": f(4, 6), "index": wild(4, 2, 6), "src": f(2, 6)}, {"dim": 0, "reduce": "amax"},
                       {"index": 4}),
    "index_put": ({"x": f(4, 6), "values": f(3), "i0": wild(4, 3), "i1": wild(6, 3)}, {"accumulate": True},
                  {"i0": 4, "i1": 6}),
    "index_reduce": ({"self": f(4, 6), "index": wild(4, 5), "source": f(5, 6)}, {"dim": 0, "reduce": "prod"},
                     {"index": 4}),
    "put": ({"self": f(4, 6), "index": wild(24, 5), "source": f(5)}, {}, {"index": 24}),
    "embedding": ({"weight": f(7, 3), "indices": wild(7, 2, 5)}, {}, {"indices": 7}),
    "embedding_backward": ({"grad": f(2, 5, 3), "indices": wild(7, 2, 5)}, {"num_weights": 7}, {"indices": 7}),
    "embedding_bag": ({"weight": f(7, 3), "indices": wild(7, 6), "offsets": OFFSETS}, {}, {"indices": 7}),
    "embedding_bag_forward_only": ({"weight": f(7, 3), "indices": wild(7, 6), "offsets": OFFSETS}, {},
                                   {"indices": 7}),
    "embedding_bag_backward": ({"grad": f(2, 3), "indices": wild(7, 6), "offsets": OFFSETS, "offset2bag": OFFSET2BAG,
                                "bag_size": BAG_SIZE, "maximum_indices": MAXIMUM},
                               {"num_weights": 7, **BAG}, {"indices": 7}),
    "embedding_bag_per_sample_weights_backward": (
        {"grad": f(2, 3), "weight": f(7, 3), "indices": wild(7, 6), "offsets": OFFSETS, "offset2bag": OFFSET2BAG},
        {"mode": 0, "padding_idx": -1}, {"indices": 7}),
    "cross_entropy": ({"x": f(4, 6), "target": wild(6, 4)}, {}, {"target": 6}),
    "nll_loss": ({"logp": f(4, 6).log_softmax(1), "target": wild(6, 4)}, {}, {"target": 6}),
    "nll_loss_backward": ({"grad": f(), "logp": f(4, 6).log_softmax(1), "target": wild(6, 4), "weight": None,
                           "total_weight": torch.tensor(4.0)}, {}, {"target": 6}),
}
LOSSES = ("cross_entropy", "nll_loss", "nll_loss_backward")


def one_node_graph(op: str, values: dict, attrs: dict) -> Graph:
    inputs = [TensorMeta(name, tuple(v.shape), canonical_dtype(v.dtype)) for name, v in values.items() if v is not None]
    node = Node("n0", op, [name if v is not None else None for name, v in values.items()],
                [TensorMeta("out", (), "float32")], attrs)
    return Graph("index_case", "test", "test", "primitive", inputs, [node], ["out"])


def test_every_op_with_index_operands_has_a_case():
    declared = {name for name, op in OPS.items() if op.index_of}
    assert declared == set(CASES)


@pytest.mark.parametrize("op", sorted(CASES))
def test_the_repro_runner_keeps_indices_within_what_they_index(op):
    values, attrs, bounds = CASES[op]
    values = dict(values)
    if op in LOSSES:
        values["target"] = values["target"].clone()
        values["target"][1] = -100  # ignore_index: no class, and left as it is
    graph = one_node_graph(op, values, attrs)
    given = [v for v in values.values() if v is not None]
    with pytest.raises(IndexOutOfRange, match=rf"n0 \({op}\): input .* outside \["):
        interpret(graph, given)

    fed = dict(zip((t.name for t in graph.inputs), graph_inputs(graph, values, "cpu")))
    for name, bound in bounds.items():
        positions = fed[name]
        if op in LOSSES:
            assert positions[1] == -100
            positions = positions[positions != -100]
        assert positions.dtype == torch.int64 and 0 <= positions.min() and positions.max() < bound, (name, positions)
    for name, value in values.items():  # the other inputs as they were
        if value is not None and name not in bounds:
            assert torch.equal(fed[name], value)
    interpret(graph, list(fed.values()))  # the float64 meaning runs on them


def test_a_shrunk_table_takes_its_indices_with_it():
    """The reducer cuts a graph's inputs to their declared shapes: a gather's table shrunk to 3
    columns gets its indices (recorded against 6) within 3."""
    values = {"x": f(4, 6), "index": torch.tensor([[5, 0], [4, 1], [3, 2], [5, 5]])}
    graph = one_node_graph("gather", values, {"dim": 1})
    graph.inputs[0] = TensorMeta("x", (4, 3), "float32")
    x, index = graph_inputs(graph, values, "cpu")
    assert x.shape == (4, 3) and torch.equal(index, values["index"] % 3)
    assert torch.equal(interpret(graph, [x, index])[0], torch.gather(x.double(), 1, index))
