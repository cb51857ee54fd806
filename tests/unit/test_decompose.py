"""The primitive level: every decomposition rule computes what its composite means.

Each case interprets a one-node composite graph and its `to_primitive` expansion in float64
on random inputs; they must agree to rounding, and the expansion must hold no composite op.
"""
import math

import pytest
import torch

from irlens.core import ops
from irlens.core.interpret import interpret
from irlens.core.ir import Graph, Node, TensorMeta
from irlens.core.decompose import RULES, to_primitive, unexpanded

F = "float32"


def T(name, shape, dtype=F):
    return TensorMeta(name, tuple(shape), dtype)


def rnd(*shape):
    return torch.randn(*shape, dtype=torch.float64)


def _causal_lse(q, k):
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return torch.logsumexp(s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf), -1)


def _causal_biased(q, k, v, bias):
    """(out, log-sum-exp, bias) of causal attention with an additive bias, as a fused kernel saves them."""
    s = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + bias
    s = s.masked_fill(~torch.ones(s.shape[-2:], dtype=torch.bool).tril(), -math.inf)
    lse = torch.logsumexp(s, -1)
    return torch.exp(s - lse[..., None]) @ v, lse, bias


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
    targets, x4 = torch.tensor([1, 2, 7, 0]), rnd(2, 3, 4, 5)
    attn = {"is_causal": True, "scale": None}
    gn_g, gn_x = rnd(2, 6, 4, 5), rnd(2, 6, 4, 5)
    gn_stats = torch.ops.aten.native_group_norm(gn_x, None, None, 2, 6, 20, 3, 1e-5)[1:]
    causal_bias = rnd(6, 6)
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
        "embedding_backward_padding_freq": (
            Node("n", "embedding_backward", ["g", "i"], [T("y", (5, 8))],
                 {"num_weights": 5, "padding_idx": 3, "scale_grad_by_freq": True}),
            [T("g", (2, 2, 8)), T("i", (2, 2), "int64")], [rnd(2, 2, 8), idx]),
        "elu": (Node("n", "elu", ["x"], y, {"alpha": 0.7, "scale": 1.2, "input_scale": 0.5}), [X], [x]),
        "hardtanh": (Node("n", "hardtanh", ["x"], y, {"min_val": -0.5, "max_val": 0.25}), [X], [x]),
        "leaky_relu": (Node("n", "leaky_relu", ["x"], y, {"negative_slope": 0.2}), [X], [x]),
        "triu": (Node("n", "triu", ["x"], y, {"diagonal": -1}), [X], [x]),
        "dropout_eval": (Node("n", "dropout", ["x"], y + [T("mask", (4, 8), "bool")], {"p": 0.3, "training": False}),
                         [X], [x]),
        **{f"cross_entropy_{red}": (Node("n", "cross_entropy", ["x", "t", "w"], [T("l", (4,) if red == "none" else ())],
                                         {"reduction": red, "ignore_index": 2}),
                                    [X, T("t", (4,), "int64"), W], [x, targets, w.abs() + 0.1])
           for red in ("none", "mean", "sum")},
        "nll_loss_1d": (Node("n", "nll_loss", ["w", "t0", None], [T("l", ()), T("tw", ())], {"reduction": "mean"}),
                        [W, T("t0", (), "int64")], [torch.log_softmax(w, 0), torch.tensor(5)]),
        **{f"nll_loss_backward_{red}": (
            Node("n", "nll_loss_backward", ["gl", "x", "t", "w", "tw"], [T("dlp", (4, 8))],
                 {"reduction": red, "ignore_index": 2}),
            [T("gl", (4,) if red == "none" else ()), X, T("t", (4,), "int64"), W, T("tw", ())],
            [rnd(4) if red == "none" else torch.tensor(0.7, dtype=torch.float64), torch.log_softmax(x, 1), targets,
             w.abs() + 0.1, ((w.abs() + 0.1)[targets] * (targets != 2)).sum()])
           for red in ("none", "mean", "sum")},
        **{f"batch_norm_{mode}": (
            Node("n", "batch_norm", ["x4", "c", "c2", "rm", "rv"],
                 [T("y", (2, 3, 4, 5)), T("m", (3,) if mode == "train" else (0,)), T("r", (3,) if mode == "train" else (0,))]
                 + [T("nm", (3,)), T("nv", (3,))],  # the running statistics, updated or not
                 {"training": mode == "train", "momentum": 0.1, "eps": 1e-5}),
            [T("x4", (2, 3, 4, 5)), T("c", (3,)), T("c2", (3,)), T("rm", (3,)), T("rv", (3,))],
            [x4, rnd(3), rnd(3), rnd(3), rnd(3).abs() + 0.5])
           for mode in ("train", "eval")},
        "group_norm": (Node("n", "group_norm", ["x4", "c6", "c6b"], [T("y", (2, 6, 4, 5)), T("m", (2, 3)), T("r", (2, 3))],
                            {"groups": 3, "eps": 1e-5}),
                       [T("x4", (2, 6, 4, 5)), T("c6", (6,)), T("c6b", (6,))], [rnd(2, 6, 4, 5), rnd(6), rnd(6)]),
        **{f"group_norm_backward_{which}": (
            Node("n", "group_norm_backward", ["g4", "x6", "gm", "gr"] + (["c6"] if which != "no_weight" else []),
                 [T(name, shape) for name, shape, want in (("dx", (2, 6, 4, 5), True), ("dw", (6,), which == "all"),
                                                           ("db", (6,), which == "all")) if want],
                 {"groups": 3, "grads": [True, which == "all", which == "all"]}),
            [T("g4", (2, 6, 4, 5)), T("x6", (2, 6, 4, 5)), T("gm", (2, 3)), T("gr", (2, 3))]
            + ([T("c6", (6,))] if which != "no_weight" else []),
            [gn_g, gn_x, *gn_stats] + ([rnd(6)] if which != "no_weight" else []))
           for which in ("all", "dx_only", "no_weight")},
        "sdpa_gqa_mask": (Node("n", "sdpa", ["q", "k2", "v2", "mask"], [T("o", q.shape)],
                               {"enable_gqa": True, "scale": 0.3}),
                          [Q, T("k2", (2, 1, 6, 4)), T("v2", (2, 1, 6, 4)), T("mask", (6, 6), "bool")],
                          [q, rnd(2, 1, 6, 4), rnd(2, 1, 6, 4), torch.rand(6, 6) > 0.3]),
        "sdpa_backward_gqa": (Node("n", "sdpa_backward", ["go", "q", "k2", "v2"],
                                   [T("dq", q.shape), T("dk2", (2, 1, 6, 4)), T("dv2", (2, 1, 6, 4))],
                                   {"enable_gqa": True, "is_causal": True, "scale": 0.3}),
                              [T("go", go.shape), Q, T("k2", (2, 1, 6, 4)), T("v2", (2, 1, 6, 4))],
                              [go, q, rnd(2, 1, 6, 4), rnd(2, 1, 6, 4)]),
        "sdpa_backward_mask": (Node("n", "sdpa_backward", ["go", "q", "k", "v", None, None, "mask"],
                                    [T("dq", q.shape), T("dk", k.shape), T("dv", v.shape)], {"scale": 0.3}),
                               [T("go", go.shape), Q, K, V, T("mask", (6, 6), "bool")],
                               [go, q, k, v, torch.rand(6, 6) > 0.3]),
        # memory-efficient attention's bias gradient, in the bias's shape: shared by the batch, or by all
        **{f"sdpa_backward_bias_{name}": (
            Node("n", "sdpa_backward", ["go", "q", "k", "v", None, None, "bias"],
                 [T("dq", q.shape), T("dk", k.shape), T("dv", v.shape), T("db", shape)], {"scale": 0.3}),
            [T("go", go.shape), Q, K, V, T("bias", shape)], [go, q, k, v, rnd(*shape)])
           for name, shape in (("full", (2, 3, 6, 6)), ("per_head", (1, 3, 6, 6)), ("shared", (6, 6)))},
        # with a causal mask and the saved log-sum-exp (the probabilities come from it); grouped queries
        "sdpa_backward_bias_causal_lse": (
            Node("n", "sdpa_backward", ["go", "q", "k", "v", "o", "l", "bias"],
                 [T("dq", q.shape), T("dk", k.shape), T("dv", v.shape), T("db", (6, 6))], attn),
            [T("go", go.shape), Q, K, V, T("o", o.shape), T("l", lse.shape), T("bias", (6, 6))],
            [go, q, k, v, *_causal_biased(q, k, v, causal_bias)]),
        "sdpa_backward_bias_gqa": (
            Node("n", "sdpa_backward", ["go", "q", "k2", "v2", None, None, "bias"],
                 [T("dq", q.shape), T("dk2", (2, 1, 6, 4)), T("dv2", (2, 1, 6, 4)), T("db", (2, 1, 6, 6))],
                 {"enable_gqa": True, "scale": 0.3}),
            [T("go", go.shape), Q, T("k2", (2, 1, 6, 4)), T("v2", (2, 1, 6, 4)), T("bias", (2, 1, 6, 6))],
            [go, q, rnd(2, 1, 6, 4), rnd(2, 1, 6, 4), rnd(2, 1, 6, 6)]),
        # a float32 bias beside bf16 scores in the bfloat16 test (`_in_bfloat16`), with its gradient
        "sdpa_backward_bias32": (
            Node("n", "sdpa_backward", ["go", "q", "k", "v", "o", "l", "bias32"],
                 [T("dq", q.shape), T("dk", k.shape), T("dv", v.shape), T("db", (6, 6))], attn),
            [T("go", go.shape), Q, K, V, T("o", o.shape), T("l", lse.shape), T("bias32", (6, 6))],
            [go, q, k, v, *_causal_biased(q, k, v, causal_bias)]),
        "sdpa_bias32": (Node("n", "sdpa", ["q", "k", "v", "bias32"], [T("o", o.shape), T("l", lse.shape)], attn),
                        [Q, K, V, T("bias32", (6, 6))], [q, k, v, causal_bias]),
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
    assert all(n.scope.split("/")[0] == "n" for n in prim.nodes)  # kernels covering `n` cover its expansion
    got, want = interpret(prim, values), interpret(graph, values)
    assert len(got) == len(want) == len(node.outputs)
    for g, w in zip(got, want):
        assert g.shape == w.shape and torch.allclose(g, w, rtol=1e-12, atol=1e-12, equal_nan=True), case


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


def test_sdpa_backward_gives_an_additive_masks_gradient():
    """The mask's gradient a fused kernel declares (memory-efficient attention's attn_bias, as
    timm's relative position bias tables reach it) is the scores' gradient summed to the mask's
    shape, as autograd through the explicit formula gives it."""
    node, inputs, values = CASES["sdpa_backward_bias_per_head"]
    go, q, k, v, bias = values
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    scores = leaves[0] @ leaves[1].transpose(-1, -2) * 0.3 + leaves[3]
    want = torch.autograd.grad(torch.softmax(scores, -1) @ leaves[2], leaves, go)
    graph = Graph("t", "test", "s", "composite", inputs, [node], [o.name for o in node.outputs])
    for level in (graph, to_primitive(graph)):
        got = interpret(level, values)
        assert all(torch.allclose(g, w, rtol=1e-12, atol=1e-12) for g, w in zip(got, want, strict=True))



def _in_bfloat16(meta: TensorMeta, op: str) -> TensorMeta:
    """A float meta in bfloat16; attention's log-sum-exp ("l") stays float32, as fused kernels keep
    it, and so does a bias named "bias32" (torch adds a float32 mask to bf16 scores)."""
    if meta.dtype != F or (op.startswith("sdpa") and meta.name in ("l", "bias32")):
        return meta
    return TensorMeta(meta.name, meta.shape, "bfloat16")


@pytest.mark.parametrize("case", sorted(CASES))
def test_rule_computes_in_the_declared_dtypes_in_bfloat16(case):
    """Each primitive of an expansion computes in the dtype the graph declares for it, half-precision
    values beside float32 ones included (the saved log-sum-exp): the JAX lowering checks every node
    (a bf16 - f32 that promoted to f32 fed a convolution's backward a float32 cotangent on the GPU)."""
    jnp = pytest.importorskip("jax.numpy")
    from irlens.backends.xla.lower import to_jax_function

    node, inputs, values = CASES[case]
    node = Node(node.id, node.op, node.inputs, [_in_bfloat16(o, node.op) for o in node.outputs], node.attrs)
    inputs = [_in_bfloat16(t, node.op) for t in inputs]
    graph = Graph("t", "test", "s", "composite", inputs, [node], [o.name for o in node.outputs])
    args = [jnp.asarray(v.numpy(), dtype=t.dtype) if v.is_floating_point() else jnp.asarray(v.numpy())
            for t, v in zip(inputs, values)]
    outs = to_jax_function(to_primitive(graph), strict=True)(*args)
    assert [str(o.dtype) for o in outs] == [o.dtype.replace("int64", "int32") for o in node.outputs]
