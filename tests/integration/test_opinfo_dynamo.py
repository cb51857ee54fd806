"""OpInfo through the Dynamo frontend, a fixed slice: each op, as a plain function
of its first float32 sample, captured in one graph; every graph it makes (dynamo.fx, aot.forward,
aot.backward) has no unknown op at either level, and the float64 interpreter gives what the
graph computes run eagerly in float64. The whole of OpInfo is measured by the conformance sweep."""
from __future__ import annotations

import copy

import pytest
import torch
from torch.utils._pytree import tree_flatten

from irlens.frontends.dynamo.capture import GraphCapture
from irlens.core.interpret import interpret
from irlens.frontends.dynamo.fx import fx_to_graph

from tests.support.opinfo_samples import sample_function

op_db = pytest.importorskip("torch.testing._internal.common_methods_invocations").op_db

# Elementwise with arguments, reductions with dtypes, indexing reads and writes, views (and their
# backward: slice/select scatters), norms and losses, spatial ops, linalg and special functions that
# no decomposition reaches, ops expanded through torch's decompositions (lerp, addcmul, logsumexp).
SLICE = ("div.floor_rounding round.decimals_3 floor_divide sum var_mean prod cumsum max.reduction_with_dim argmax "
         "gather scatter_add index_put index_copy take_along_dim __getitem__ diagonal_copy narrow_copy "
         "nn.functional.pad.reflect nn.functional.cross_entropy nn.functional.layer_norm nn.functional.batch_norm "
         "nn.functional.group_norm nn.functional.conv2d nn.functional.max_pool2d nn.functional.softplus "
         "linalg.cholesky polygamma.polygamma_n_1 lerp logsumexp sort bitwise_xor half").split()


def _op(key: str):
    matches = [o for o in op_db if f"{o.name}.{o.variant_test_name}".rstrip(".") == key]
    assert len(matches) == 1, key
    return matches[0]


class _Capture(GraphCapture):
    """Keeps each graph with the arguments it ran on (AOT's forward and backward included)."""

    def __init__(self):
        super().__init__()
        self.runs: dict[str, tuple] = {}

    def __call__(self, gm, example_inputs):
        from torch._dynamo.backends.common import aot_autograd

        self.runs["dynamo.fx"] = (gm, list(example_inputs))

        def keep(stage):
            def compiler(g, _):
                def run(args):
                    self.runs.setdefault(stage, (g, [a.detach().clone() if isinstance(a, torch.Tensor) else a
                                                     for a in args]))
                    return g(*args)
                run._boxed_call = True
                return run
            return compiler

        self.dynamo.append(gm)
        return aot_autograd(fw_compiler=keep("aot.forward"), bw_compiler=keep("aot.backward"))(gm, example_inputs)


def _float64(gm):
    """The graph as the float64 program: the float32 (complex64) it names read float64 (complex128)."""
    wide = {torch.float32: torch.float64, torch.complex64: torch.complex128}
    gm = copy.deepcopy(gm)
    for n in gm.graph.nodes:
        n.args = tuple(wide.get(a, a) if isinstance(a, torch.dtype) else a for a in n.args)
        n.kwargs = {k: wide.get(v, v) if isinstance(v, torch.dtype) else v for k, v in n.kwargs.items()}
    gm.recompile()
    return gm


@pytest.mark.parametrize("key", SLICE)
def test_opinfo_op_through_dynamo_is_known_and_faithful(key):
    op = _op(key)
    dtype = torch.float32 if torch.float32 in op.supported_dtypes("cpu") else torch.int64  # bitwise ops
    sample = next(iter(op.sample_inputs("cpu", dtype)))
    fn, slots, leaves = sample_function(op, sample)

    torch._dynamo.reset()
    cap = _Capture()
    # gradients for the sample's input (other tensors may be running statistics, indices, ...)
    inputs = [leaves[i].detach().clone().requires_grad_(i == 0 and op.supports_autograd and leaves[i].is_floating_point())
              for i in slots]
    outs = [o for o in tree_flatten(torch.compile(fn, backend=cap, dynamic=False)(*inputs))[0]
            if isinstance(o, torch.Tensor) and o.requires_grad]
    if outs:
        sum((o.double() ** 2).mean() for o in outs).backward()
    torch._dynamo.reset()
    assert len(cap.dynamo) == 1
    assert "aot.forward" in cap.runs and ("aot.backward" in cap.runs or not outs)
    for stage, (gm, args) in cap.runs.items():
        args = [torch.empty(0) if a is None else a for a in args]  # an effect token
        args = [a.detach().double() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
        copies = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        with torch.no_grad():
            outputs = tree_flatten(_float64(gm)(*copies))[0]
        for level in ("composite", "primitive"):
            graph = fx_to_graph(gm, name=key, frontend="dynamo", stage=stage, level=level)
            assert not graph.unknown_ops(), (stage, level, dict(graph.unknown_ops()))
            # inputs updated in place (batch_norm's running statistics) are the graph's last outputs
            names = [m.name for m in graph.inputs]
            want = outputs + [copies[names.index(name)] for name in graph.updates.values()]
            got = interpret(graph, args)
            assert len(got) == len(want), (stage, level)
            for i, (g, w) in enumerate(zip(got, want)):
                if isinstance(w, torch.Tensor):
                    assert g.shape == w.shape, (stage, level, i)
                    ok = (torch.allclose(g.to(w.dtype), w, rtol=1e-7, atol=1e-9, equal_nan=True)
                          if w.is_floating_point() else torch.equal(g.to(w.dtype), w))
                    assert ok, (stage, level, i)
