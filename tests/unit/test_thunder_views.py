"""The Thunder adapter's record of tensors that share memory (irlens.frontends.thunder.views): a
write through a view chain gives its base's new value and replays the chains of the base's other
aliases, as torch's own views see the write; a write it cannot follow is flagged by the first read
that would miss it, never read back as a wrong value."""
import torch

from irlens.core.interpret import interpret
from irlens.core.ir import Graph, Node, TensorMeta
from irlens.frontends.thunder.views import Step, Views


class Emitted:
    """The nodes a Views emits, as a graph's body."""

    def __init__(self):
        self.nodes: list[Node] = []

    def __call__(self, op, inputs, attrs, shape, dtype, native, hint):
        name = f"{hint}#{len(self.nodes)}"
        self.nodes.append(Node(name, op, list(inputs), [TensorMeta(name, tuple(shape), dtype)], dict(attrs), native))
        return name


def step(op, in_shape, out_shape, **attrs):
    return Step(op, attrs, tuple(in_shape), tuple(out_shape), "float64", op)


# b.view(2, 12)[None].permute(0, 2, 1)[:, 1:11:3, :] of a [4, 6] base: shape [1, 4, 2]
CHAIN = (step("reshape", (4, 6), (2, 12), shape=[2, 12]),
         step("broadcast", (2, 12), (1, 2, 12), shape=[1, 2, 12], broadcast_dims=[1, 2]),
         step("permute", (1, 2, 12), (1, 12, 2), perm=[0, 2, 1]),
         step("slice", (1, 12, 2), (1, 4, 2), start=[0, 1, 0], limit=[1, 11, 2], step=[1, 3, 1]))


def test_a_write_through_an_invertible_chain_gives_the_base_and_its_aliases_new_values():
    b, w = torch.randn(4, 6, dtype=torch.float64), torch.randn(1, 4, 2, dtype=torch.float64)
    views, emit = Views(), Emitted()
    views.note("b", "a", (step("permute", (4, 6), (6, 4), perm=[1, 0]),))  # a = b.t(), made before the write
    views.note("b", "v", CHAIN)
    views.write("v", "w", at=0, native="copy_", emit=emit)
    outputs = [views.read("b", emit), views.read("a", emit), views.read("v", emit)]
    assert outputs[2] == "w" and not views.flags
    graph = Graph("views", "thunder", "t", "composite", [TensorMeta("b", (4, 6), "float64"),
                                                          TensorMeta("w", (1, 4, 2), "float64")], emit.nodes, outputs)
    got = interpret(graph, [b, w])
    want_b = b.clone()
    want_a = want_b.t()
    want_b.view(2, 12)[None].permute(0, 2, 1)[:, 1:11:3, :].copy_(w)
    assert torch.equal(got[0], want_b) and torch.equal(got[1], want_a) and torch.equal(got[2], w)


def test_the_tensor_a_write_returns_is_the_one_it_wrote():
    """copy_'s output is the tensor it wrote (`r = y.add_(1)` is y), views of y or none: a write
    into r is y's new value, and a write into y after it r's."""
    views, emit = Views(), Emitted()
    views.write("y", "r", at=0, native="copy_", emit=emit)
    views.write("r", "r2", at=1, native="copy_", emit=emit)
    assert views.read("y", emit) == "r2"
    views.write("y", "y3", at=2, native="copy_", emit=emit)
    assert views.read("r", emit) == "y3" and views.read("r2", emit) == "y3"
    assert not views.flags and not emit.nodes


def test_a_write_through_a_real_broadcast_is_flagged_by_a_read_of_its_base():
    """An expand's elements share memory: a write into one cannot be undone into the base."""
    views, emit = Views(), Emitted()
    views.note("b", "e", (step("broadcast", (1, 6), (3, 6), shape=[3, 6], broadcast_dims=[0, 1]),))
    views.write("e", "e2", at=7, native="copy_", emit=emit)
    assert views.read("e", emit) == "e2" and not views.flags  # the written tensor reads its own new value
    assert views.read("b", emit) == "b" and list(views.flags) == [7]
    assert "broadcast" in views.flags[7] and "cannot invert" in views.flags[7]
    assert not emit.nodes


def test_groups_joined_after_a_write_flag_it():
    """Thunder says two tensors share memory where no view op here made them: a write into one
    group, before the join, is flagged by a read of the other's tensors, which missed it."""
    views, emit = Views(), Emitted()
    views.note("b", "a", ())
    views.note("c", "d", ())
    views.write("d", "d2", at=3, native="copy_", emit=emit)
    assert views.read("c", emit) == "d2" and not views.flags  # followed within its own group
    views.join(["a", "d"])
    views.read("b", emit)
    assert list(views.flags) == [3] and views.flags[3].startswith("an in-place update of d,")


def test_a_tensor_that_owns_its_memory_stays_apart_from_a_join():
    views, emit = Views(), Emitted()
    views.note("b", "a", ())
    views.own("c")  # b.to(another dtype): Thunder's alias analysis groups it with b
    views.write("c", "c2", at=1, native="copy_", emit=emit)
    views.join(["a", "c"])
    assert views.read("b", emit) == "b" and views.read("a", emit) == "a" and not views.flags
