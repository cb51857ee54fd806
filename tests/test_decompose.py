"""The primitive level: every decomposition rule computes what its composite means.

Each case interprets a one-node composite graph and its `to_primitive` expansion in float64
on random inputs; they must agree to rounding, and the expansion must hold no composite op.
"""
import math

import pytest
import torch

from irlens import ops
from irlens.interpret import interpret
from irlens.ir import Graph, Node, TensorMeta
from irlens.ir_adapters.decompose import RULES, to_primitive, unexpanded

F = "float32"


def T(name, shape, dtype=F):
    return TensorMeta(name, tuple(shape), dtype)


def rnd(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def _causal_lse(q, k):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.logsumexp(s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf), -1)


def _padded(lse, rows: int):
    return torch.cat([lse, torch.full((*lse.shape[:-1], rows - lse.shape[-1]), math.inf, dtype=lse.dtype)], -1)


def cases():
    torch.manual_seed(0)
    x, g, w, b = rnd(4, 8), rnd(4, 8), rnd(8), rnd(8)
    X, G, W, B = T("x", (4, 8)), T("g", (4, 8)), T("w", (8,)), T("b", (8,))
    y = [T("y", (4, 8))]
    q, k, v, go = rnd(2, 3, 6, 4), rnd(2, 3, 6, 4), rnd(2, 3, 6, 4), rnd(2, 3, 6, 4)
    Q, K, V = T("q", q.shape), T("k", k.shape), T("v", v.shape)
    o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    lse = _causal_lse(q, k)
    mean, rstd = x.mean(1, keepdim=True), torch.rsqrt(x.var(1, unbiased=False, keepdim=True) + 1e-5)
    idx = torch.tensor([[1, 3], [0, 3]])
    w2 = rnd(5, 8)
    attn = {"is_causal": True, "scale": None}
    return {
        "gelu_tanh": (Node("n", "gelu", ["x"], y, {"approximate": "tanh"}), [X], [x]),
        "gelu_erf": (Node("n", "gelu", ["x"], y, {"approximate": "none"}), [X], [x]),
        "relu": (Node("n", "relu", ["x"], y), [X], [x]),
        "silu": (Node("n", "silu", ["x"], y), [X], [x]),
        "softmax": (Node("n", "softmax", ["x"], y, {"dim": 1}), [X], [x]),
        "log_softmax": (Node("n", "log_softmax", ["x"], y, {"dim": 1}), [X], [x]),
        "layer_norm": (Node("n", "layer_norm", ["x", "w", "b"], y + [T("m", (4, 1)), T("r", (4, 1))],
                            {"normalized_ndim": 1, "eps": 1e-5}), [X, W, B], [x, w, b]),
        "rms_norm": (Node("n", "rms_norm", ["x", "w"], y, {"normalized_ndim": 1, "eps": 1e-6}), [X, W], [x, w]),
        "mean": (Node("n", "mean", ["x"], [T("y", (4,))], {"dims": [1], "keepdim": False}), [X], [x]),
        "var": (Node("n", "var", ["x"], [T("y", (4, 1))], {"dims": [1], "keepdim": True, "correction": 1}), [X], [x]),
        "linear": (Node("n", "linear", ["x", "w", "b"], [T("y", (4, 5))]), [X, T("w", (5, 8)), T("b", (5,))],
                   [x, w2, rnd(5)]),
        "sdpa": (Node("n", "sdpa", ["q", "k", "v", None], [T("o", o.shape), T("l", lse.shape)], attn),
                 [Q, K, V], [q, k, v]),
        "embedding": (Node("n", "embedding", ["w", "i"], [T("y", (2, 2, 8))]), [T("w", (5, 8)), T("i", (2, 2), "int64")],
                      [w2, idx]),
        "tril": (Node("n", "tril", ["x"], y, {"diagonal": 0}), [X], [x]),
        "masked_fill": (Node("n", "masked_fill", ["x", "m", -1.0], y), [X, T("m", (4, 8), "bool")], [x, x > 0]),
        "dropout": (Node("n", "dropout", ["x"], y, {"p": 0.0}), [X], [x]),
        "gelu_backward_tanh": (Node("n", "gelu_backward", ["g", "x"], y, {"approximate": "tanh"}), [G, X], [g, x]),
        "gelu_backward_erf": (Node("n", "gelu_backward", ["g", "x"], y, {"approximate": "none"}), [G, X], [g, x]),
        "tanh_backward": (Node("n", "tanh_backward", ["g", "x"], y), [G, X], [g, torch.tanh(x)]),
        "silu_backward": (Node("n", "silu_backward", ["g", "x"], y), [G, X], [g, x]),
        "sigmoid_backward": (Node("n", "sigmoid_backward", ["g", "x"], y), [G, X], [g, torch.sigmoid(x)]),
        "threshold_backward": (Node("n", "threshold_backward", ["g", "x"], y, {"threshold": 0.0}), [G, X], [g, x]),
        "softmax_backward": (Node("n", "softmax_backward", ["g", "x"], y, {"dim": 1}), [G, X], [g, torch.softmax(x, 1)]),
        "log_softmax_backward": (Node("n", "log_softmax_backward", ["g", "x"], y, {"dim": 1}), [G, X],
                                 [g, torch.log_softmax(x, 1)]),
        "layer_norm_backward": (Node("n", "layer_norm_backward", ["g", "x", "m", "r", "w", "b"],
                                     [T("dx", (4, 8)), T("dw", (8,)), T("db", (8,))],
                                     {"normalized_ndim": 1, "grads": [True, True, True]}),
                                [G, X, T("m", (4, 1)), T("r", (4, 1)), W, B], [g, x, mean, rstd, w, b]),
        "sdpa_backward": (Node("n", "sdpa_backward", ["go", "q", "k", "v", "o", "l"],
                               [T("dq", q.shape), T("dk", k.shape), T("dv", v.shape)], attn),
                          [T("go", go.shape), Q, K, V, T("o", o.shape), T("l", lse.shape)], [go, q, k, v, o, lse]),
        "embedding_backward": (Node("n", "embedding_backward", ["g", "i"], [T("y", (5, 8))], {"num_weights": 5}),
                               [T("g", (2, 2, 8)), T("i", (2, 2), "int64")], [rnd(2, 2, 8), idx]),
        # CUDA's memory-efficient attention saves the log-sum-exp padded to 32 rows per head (+inf past the last)
        "sdpa_backward_padded_lse": (Node("n", "sdpa_backward", ["go", "q", "k", "v", "o", "l"],
                                          [T("dq", q.shape), T("dk", k.shape), T("dv", v.shape)], attn),
                                     [T("go", go.shape), Q, K, V, T("o", o.shape), T("l", (2, 3, 32))],
                                     [go, q, k, v, o, _padded(lse, 32)]),
    }


CASES = cases()


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_matches_composite_meaning(case):
    node, inputs, values = CASES[case]
    graph = Graph("t", "test", "s", "composite", inputs, [node], [o.name for o in node.outputs])
    prim = to_primitive(graph)
    assert prim.level == "primitive"
    assert not unexpanded(prim)
    assert all(ops.is_primitive(n.op) for n in prim.nodes)
    assert all(n.scope == "n" for n in prim.nodes)  # kernels covering `n` cover its expansion
    for got, want in zip(interpret(prim, values), interpret(graph, values)):
        assert torch.allclose(got, want, rtol=1e-12, atol=1e-12), case


def test_every_composite_op_has_a_rule():
    composite = {name for name, op in ops.OPS.items() if op.category == ops.COMPOSITE}
    assert composite <= set(RULES), composite - set(RULES)


def test_gelu_rule_matches_the_formula_op_multiset():
    node, inputs, _ = CASES["gelu_tanh"]
    prim = to_primitive(Graph("t", "test", "s", "composite", inputs, [node], ["y"]))
    assert prim.compute_op_counts() == {"mul": 4, "pow": 1, "add": 2, "tanh": 1}


@pytest.mark.parametrize("kept", [32, 0])
def test_sdpa_rule_gives_the_lse_and_rng_outputs_cuda_attention_declares(kept):
    """CUDA's memory-efficient attention declares (out, lse[B, H, 32 * ceil(L / 32)], philox seed,
    philox offset); without grad the lse keeps no rows. The expansion yields each in its
    declared shape: the padding is +inf, as the kernel writes it, the RNG state zeros."""
    _, inputs, values = CASES["sdpa"]
    q, k, _ = values
    outs = [T("o", q.shape), T("l", (2, 3, kept)), T("seed", (), "int64"), T("offset", (), "int64")]
    node = Node("n", "sdpa", ["q", "k", "v", None], outs, {"is_causal": True, "scale": None})
    graph = Graph("t", "test", "s", "composite", inputs, [node], [o.name for o in outs])
    prim = to_primitive(graph)
    assert not unexpanded(prim)
    o, lse, seed, offset = interpret(prim, values)
    want_o, _, _, _ = interpret(graph, values)
    assert torch.allclose(o, want_o, rtol=1e-12, atol=1e-12)
    assert lse.shape == (2, 3, kept) and seed.shape == () and offset.shape == () and seed == 0
    if kept:
        assert torch.allclose(lse, _padded(_causal_lse(q, k), kept), rtol=1e-12, atol=1e-12)
