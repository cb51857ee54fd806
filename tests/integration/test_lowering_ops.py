"""The lowerings of the ops real models' graphs hold (pooling, convolution and their backward
ops, advanced indexing): each lowered op against its float64 meaning (irlens.core.interpret), with the
attrs that change what it computes (padding, ceil_mode, dilation, count_include_pad, groups,
output_padding, ...)."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest
import torch

from irlens.core.interpret import MEANINGS, interpret
from irlens.core.ir import Graph, Node, TensorMeta, canonical_dtype
from irlens.core.ops import OPS

jax = pytest.importorskip("jax")


@dataclass
class Case:
    op: str
    attrs: dict
    inputs: list  # tensors (float32 or index dtypes) and literals
    id: str
    unread: set = field(default_factory=set)  # outputs a lowering may leave in its own index dtype only

    def __str__(self) -> str:
        return self.id


def _x(*shape, seed=0, ties=False) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    return x.round() if ties else x  # ties: many equal values in a window (which maximum is first?)


def _pool(kernel, stride, padding, **kw) -> dict:
    return {"kernel": kernel, "stride": stride, "padding": padding, **kw}


def _indices(attrs: dict, x: torch.Tensor) -> torch.Tensor:
    return MEANINGS["max_pool"](OPS["max_pool"].attrs_of(attrs), x)[1]


def _with_nan(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    x.view(-1)[5] = float("nan")
    return x


_MAX = [
    ("k3s2p1", _pool([3, 3], [2, 2], [1, 1]), (2, 3, 9, 9)),
    ("k3s2p1-negative", _pool([3, 3], [2, 2], [1, 1]), (1, 2, 6, 6)),  # -inf padding must never win
    ("k2s2-ceil", _pool([2, 2], [2, 2], [0, 0], ceil_mode=True), (2, 2, 7, 7)),
    ("k3s2p1-ceil", _pool([3, 3], [2, 2], [1, 1], ceil_mode=True), (1, 2, 8, 8)),
    ("k3s1p1-dilation2", _pool([3, 3], [1, 1], [1, 1], dilation=[2, 2]), (1, 2, 9, 9)),
    ("k2s2-3d", _pool([2, 2, 2], [2, 2, 2], [0, 0, 0]), (1, 2, 4, 6, 6)),
    ("k3s2-unbatched", _pool([3, 3], [2, 2], [1, 1]), (3, 7, 7)),
]
_AVG = [
    ("k3s2p1", _pool([3, 3], [2, 2], [1, 1]), (2, 3, 9, 9)),
    ("k3s2p1-exclude-pad", _pool([3, 3], [2, 2], [1, 1], count_include_pad=False), (2, 3, 9, 9)),
    ("k3s2p1-ceil", _pool([3, 3], [2, 2], [1, 1], ceil_mode=True), (1, 2, 8, 8)),
    ("k3s2p1-ceil-exclude-pad", _pool([3, 3], [2, 2], [1, 1], ceil_mode=True, count_include_pad=False), (1, 2, 8, 8)),
    ("k2s2-divisor", _pool([2, 2], [2, 2], [0, 0], divisor_override=3), (2, 2, 6, 6)),
    ("k3s2-1d", _pool([3], [2], [1]), (2, 3, 9)),
    ("k2s1-3d", _pool([2, 2, 2], [1, 1, 1], [1, 0, 1]), (1, 2, 3, 4, 4)),
]
_ADAPTIVE = [("global", [1, 1], (2, 3, 7, 7)), ("uneven", [3, 3], (2, 3, 7, 8)), ("even", [2, 2], (1, 2, 8, 8)),
             ("1d", [3], (2, 3, 10)), ("3d", [2, 2, 1], (1, 2, 5, 4, 3))]
_CONV = [
    ("s2p1", dict(stride=[2, 2], padding=[1, 1], dilation=[1, 1]), (2, 4, 9, 9), (6, 4, 3, 3)),
    ("groups-dilation", dict(stride=[1, 1], padding=[2, 2], dilation=[2, 2], groups=2), (2, 4, 8, 8), (6, 2, 3, 3)),
    ("depthwise", dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=4), (1, 4, 6, 6), (4, 1, 3, 3)),
    ("transposed", dict(stride=[2, 2], padding=[1, 1], dilation=[1, 1], transposed=True, output_padding=[1, 1]),
     (2, 4, 5, 5), (4, 3, 3, 3)),
    ("transposed-groups-dilation", dict(stride=[2, 1], padding=[0, 1], dilation=[1, 2], transposed=True,
                                        output_padding=[1, 0], groups=2), (1, 4, 4, 5), (4, 2, 3, 3)),
    ("1d", dict(stride=[2], padding=[1], dilation=[1]), (2, 3, 11), (5, 3, 4)),
]


def _cases() -> list[Case]:
    cases = []
    for name, attrs, shape in _MAX:
        x = _x(*shape, ties=True)
        if name.endswith("negative"):
            x = -x.abs() - 1
        cases.append(Case("max_pool", attrs, [x], f"max_pool-{name}"))
        g = _x(*_indices(attrs, x).shape, seed=1)
        cases.append(Case("max_pool_backward", attrs, [g, x, _indices(attrs, x)], f"max_pool_backward-{name}"))
    cases.append(Case("max_pool", _MAX[0][1], [_with_nan(_x(*_MAX[0][2]))], "max_pool-nan"))
    minus_inf = _x(1, 1, 5, 5).index_fill(3, torch.tensor([0, 1]), float("-inf"))  # windows of -inf only
    cases.append(Case("max_pool", _pool([2, 2], [2, 2], [1, 1]), [minus_inf], "max_pool-minus-inf"))
    for name, attrs, shape in _AVG:
        x = _x(*shape)
        cases.append(Case("avg_pool", attrs, [x], f"avg_pool-{name}"))
        if len(attrs["kernel"]) == 1:  # ATen's backward is 2d and 3d (avg_pool1d is avg_pool2d's)
            continue
        out = MEANINGS["avg_pool"](OPS["avg_pool"].attrs_of(attrs), x)
        cases.append(Case("avg_pool_backward", attrs, [_x(*out.shape, seed=1), x], f"avg_pool_backward-{name}"))
    for name, size, shape in _ADAPTIVE:
        x = _x(*shape)
        cases.append(Case("adaptive_avg_pool", {"output_size": size}, [x], f"adaptive_avg_pool-{name}"))
        if len(size) > 1:  # ATen's backward is 2d and 3d
            g = _x(*shape[:-len(size)], *size, seed=1)
            cases.append(Case("adaptive_avg_pool_backward", {"spatial": len(size)}, [g, x],
                              f"adaptive_avg_pool_backward-{name}"))
    for name, attrs, xs, ws in _CONV:
        attrs = {"transposed": False, "groups": 1, **attrs}
        x, w, b = _x(*xs), _x(*ws, seed=1), _x(ws[1] * attrs["groups"] if attrs["transposed"] else ws[0], seed=2)
        cases.append(Case("convolution", attrs, [x, w, b], f"convolution-{name}"))
        y = MEANINGS["convolution"](OPS["convolution"].attrs_of(attrs), x, w, b)
        for mask in ([True, True, True], [False, True, False], [True, False, True]):
            bwd = {**attrs, "grads": mask, "bias_sizes": [b.shape[0]]}
            cases.append(Case("convolution_backward", bwd, [_x(*y.shape, seed=3), x, w],
                              f"convolution_backward-{name}-{''.join('x' if m else '-' for m in mask)}"))
    return cases + _indexing_cases()


def _long(*values) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int64)


def _scatter_reduce_cases() -> list[Case]:
    """torch.scatter_reduce each way: rows 0 and 4 take several values, rows 2 and 5 none (they keep
    x's own, include_self or not); GAT's softmax over a graph's edges is amax without self."""
    edges = _long(0, 4, 0, 1, 3, 4, 0).view(7, 1).expand(7, 3).contiguous()
    ints = torch.tensor([[5, -7, 3], [-2, 9, 4], [1, 1, -1], [8, -3, 6], [-5, 2, 7], [3, 3, 3]])
    src_ints = torch.tensor([[4, -9, 2], [1, 6, -8], [-3, 7, 5], [2, 2, -2], [9, -1, 0], [-6, 8, 1], [7, -5, 3]])
    cases = [Case("scatter_reduce", {"dim": 0, "reduce": reduce, "include_self": include_self},
                  [_x(6, 3), edges, _x(7, 3, seed=1)], f"scatter_reduce-{reduce}-{'with' if include_self else 'without'}-self")
             for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)]
    cases += [Case("scatter_reduce", {"dim": 0, "reduce": reduce, "include_self": include_self}, [ints, edges, src_ints],
                   f"scatter_reduce-int-{reduce}-{'with' if include_self else 'without'}-self")
              for reduce in ("mean", "amax", "amin") for include_self in (True, False)]  # mean floors
    return cases + [Case("scatter_reduce", {"dim": 1, "reduce": "amax", "include_self": False},
                         [_x(3, 5), _long(4, 0, 4).expand(3, 3).contiguous(), _x(3, 4, seed=1)], "scatter_reduce-dim1-src-larger")]


def _indexing_cases() -> list[Case]:
    x, ties = _x(4, 5, 6), _x(3, 8, ties=True)
    nans = _with_nan(_x(3, 8))
    rows = torch.tensor([[0, 2, 1], [3, 0, 2]])
    cases = [
        Case("index", {}, [x, _long(0, -1, 2), None, _long(5, 0, 1)], "index-separated-by-a-slice"),
        Case("index", {}, [x, None, rows], "index-after-a-slice"),
        Case("index", {}, [x, _long(1, 3), _long(4, 0)], "index-leading"),
        Case("index_put", {"accumulate": True}, [x, _x(3, 6, seed=1), _long(0, 2, 0), _long(1, 1, 1)],
             "index_put-accumulate-duplicates"),
        Case("index_put", {}, [x, _x(5, seed=1), _long(3, 1), None, _long(2, 4)], "index_put-broadcast-values"),
        Case("scatter", {"dim": 1}, [_x(3, 5), rows.T.contiguous(), _x(3, 4, seed=1)], "scatter-src-larger"),
        Case("scatter", {"dim": 0}, [_x(4, 3), rows, 2.5], "scatter-scalar"),
        Case("scatter_add", {"dim": 1}, [_x(2, 4), _long(0, 0, 3).expand(2, 3).contiguous(), _x(2, 3, seed=1)],
             "scatter_add-duplicates"),
        *_scatter_reduce_cases(),
        Case("as_strided", {"size": [3, 4], "stride": [2, 1], "storage_offset": 1}, [_x(4, 5)], "as_strided-overlapping"),
        Case("as_strided", {"size": [2, 3], "stride": [1, 0]}, [_x(6)], "as_strided-stride-0"),
        Case("as_strided_scatter", {"size": [2, 2], "stride": [5, 2], "storage_offset": 1}, [_x(4, 5), _x(2, 2, seed=1)],
             "as_strided_scatter"),
        Case("histc", {"bins": 7, "min": -1.5, "max": 1.0}, [_x(50)], "histc-range"),
        Case("histc", {"bins": 5}, [_x(50)], "histc-data-range"),
        Case("histc", {"bins": 4, "max": 3}, [_long(0, 3, 3, 1, 2, 3, 0).float()], "histc-expert-counts"),
    ]
    for name, v in (("ties", ties), ("nan", nans), ("int", ties.long())):
        for descending in (False, True):
            way = "descending" if descending else "ascending"
            cases.append(Case("sort", {"dim": 1, "descending": descending, "stable": True}, [v], f"sort-{name}-{way}"))
        for largest in (False, True):
            cases.append(Case("topk", {"k": 3, "dim": 1, "largest": largest}, [v],
                              f"topk-{name}-{'largest' if largest else 'smallest'}"))
    # grouped matmul: groups 0..2 of rows [0, 2), [2, 2) (empty), [2, 5); rows 5..6 past the last end
    offs = torch.tensor([2, 2, 5], dtype=torch.int32)
    x, w = _x(7, 4), _x(3, 4, 6, seed=1)
    cases += [Case("grouped_mm", {}, [x, w, offs], "grouped_mm-empty-group-and-tail"),
              Case("grouped_mm", {}, [x.T.contiguous(), _x(7, 6, seed=2), offs], "grouped_mm-2d-by-2d"),
              Case("grouped_mm_backward", {}, [x, w, offs, _x(7, 6, seed=2)], "grouped_mm_backward")]
    cases.append(Case("sort", {"dim": 0}, [_x(5, 3)], "sort-unstable-dim0"))
    # F.fold (ConvBERT's span convolution's backward): overlapping windows sum, padding cropped
    fold = {"output_size": [7, 6], "kernel_size": [3, 2], "dilation": [1, 2], "padding": [1, 0], "stride": [2, 1]}
    cases += [Case("col2im", fold, [_x(2, 3 * 6, 4 * 4)], "col2im-overlapping-strided-dilated"),
              Case("col2im", {**fold, "stride": [1, 1], "dilation": [1, 1], "padding": [1, 1]},
                   [_x(3 * 6, 7 * 7)], "col2im-unbatched-padded")]
    # torch scans bools and integers in int64 (Llama's and GPT-2's position ids from a mask)
    cases.append(Case("cumsum", {"dim": 1}, [_x(2, 5) > 0], "cumsum-bool"))
    cases.append(Case("cumsum", {"dim": 0, "reverse": True}, [_long(3, -1, 2)], "cumsum-int-reverse"))
    cases.append(Case("topk", {"k": 2, "dim": 0, "sorted": False}, [_x(5, 3)], "topk-dim0"))
    # Fourier transforms and complex parts (FNet's token mixing: fftn over two dims, then the real
    # part), each normalization and direction
    z = torch.complex(_x(2, 5, 6), _x(2, 5, 6, seed=1))
    cases += [Case("fft_c2c", {"dim": [1, 2], "normalization": 0, "forward": True}, [z], "fft_c2c-2d-forward"),
              Case("fft_c2c", {"dim": [2], "normalization": 2, "forward": False}, [z], "fft_c2c-inverse-by-n"),
              Case("fft_c2c", {"dim": [0, 1], "normalization": 1, "forward": False}, [z], "fft_c2c-inverse-ortho"),
              Case("fft_r2c", {"dim": [1, 2], "normalization": 1, "onesided": True}, [_x(2, 5, 6)], "fft_r2c-onesided"),
              Case("fft_r2c", {"dim": [2], "normalization": 2, "onesided": False}, [_x(2, 5, 6)], "fft_r2c-full"),
              Case("fft_c2r", {"dim": [1, 2], "normalization": 2, "last_dim_size": 7}, [z[..., :4].contiguous()],
                   "fft_c2r-odd-last-size"),
              Case("view_as_real", {}, [z], "view_as_real"),
              Case("view_as_complex", {}, [_x(3, 4, 2)], "view_as_complex"),
              Case("complex", {}, [_x(3, 4), _x(3, 4, seed=1)], "complex"),
              Case("real", {}, [z], "real"), Case("imag", {}, [z], "imag")]
    return cases


CASES = _cases()


def one_node_graph(case: Case) -> Graph:
    """The op as a graph over its tensor inputs (literals stay literals), outputs shaped as its
    meaning gives them."""
    metas, args = [], []
    for i, v in enumerate(case.inputs):
        if isinstance(v, torch.Tensor):
            metas.append(TensorMeta(f"in{i}", tuple(v.shape), canonical_dtype(v.dtype)))
            args.append(f"in{i}")
        else:
            args.append(v)
    out = MEANINGS[case.op](OPS[case.op].attrs_of(case.attrs), *case.inputs)
    outs = out if isinstance(out, tuple) else (out,)
    outputs = [TensorMeta(f"out{k}", tuple(o.shape), canonical_dtype(o.dtype)) for k, o in enumerate(outs)]
    return Graph("case", "test", "s", "primitive", metas, [Node("n0", case.op, args, outputs, dict(case.attrs))],
                 [o.name for o in outputs])


def _tensors(case: Case) -> list[torch.Tensor]:
    return [v for v in case.inputs if isinstance(v, torch.Tensor)]


def _check(got: list, want: list, graph: Graph) -> None:
    import numpy as np

    for g, w, meta in zip(got, want, graph.outputs):
        g = g if isinstance(g, torch.Tensor) else torch.as_tensor(np.array(g))
        assert tuple(g.shape) == tuple(w.shape), meta
        if w.is_complex():
            g, w = torch.view_as_real(g.to(torch.complex128)), torch.view_as_real(w.to(torch.complex128))
        if w.is_floating_point():
            # float32 against float64: windows of a few dozen terms, a few ulps each
            scale = w.abs().nan_to_num(0).max().item() or 1.0
            torch.testing.assert_close(g.double(), w, rtol=1e-5, atol=1e-6 * scale, equal_nan=True, msg=meta)
        else:
            assert torch.equal(g.long(), w.long()), f"{meta}: {g} != {w}"


@pytest.mark.parametrize("case", CASES, ids=str)
def test_jax_lowering_computes_the_meaning(case):
    """The lowered op against its meaning; on the CPU also the common view of XLA's optimized HLO
    of it (where a via row's kernels map): no unknown op, the same values (on a GPU XLA calls
    cuDNN and cuBLAS, which that view keeps unknown)."""
    import numpy as np

    from irlens.backends.xla.lower import SUPPORTED, to_jax_function
    from irlens.backends.xla.kernels import read_hlo

    assert case.op in SUPPORTED
    graph = one_node_graph(case)
    want = interpret(graph, _tensors(case))
    args = [np.asarray(t.numpy()) for t in _tensors(case)]
    with jax.default_matmul_precision("highest"):
        compiled = jax.jit(to_jax_function(graph), keep_unused=True).lower(*args).compile()
    _check([np.asarray(g) for g in compiled(*args)], want, graph)
    if jax.default_backend() == "cpu":
        hlo = read_hlo(compiled.runtime_executable().hlo_modules()[0], name=case.id, stage="jax.hlo").graph
        assert not hlo.unknown_ops(), dict(hlo.unknown_ops())
        _check(interpret(hlo, _tensors(case)), want, graph)


def test_the_max_pool_lowering_reads_its_indices_only_where_used():
    """The indices are an argmax over each window's elements; XLA drops them where only the values are read."""
    import numpy as np

    from irlens.backends.xla.lower import to_jax_function

    case = next(c for c in CASES if c.id == "max_pool-k3s2p1")
    graph = one_node_graph(case)
    x = np.asarray(case.inputs[0].numpy())

    def reductions():  # the argmax is a reduce (the values a reduce-window)
        return jax.jit(to_jax_function(graph)).lower(x).compile().as_text().count(" reduce(")

    assert reductions() >= 1
    graph.outputs = graph.outputs[:1]
    assert reductions() == 0


def _chain() -> tuple[Graph, list[torch.Tensor]]:
    """conv -> max pool (values, indices) -> its backward -> avg pool (ceil_mode) -> adaptive pool,
    and the convolution's backward, as one graph."""
    def t(name, *shape, dtype="float32"):
        return TensorMeta(name, shape, dtype)

    pool = _pool([3, 3], [2, 2], [1, 1])
    conv = dict(stride=[1, 1], padding=[1, 1], dilation=[1, 1])
    nodes = [Node("n0", "convolution", ["x", "w", None], [t("y", 1, 3, 9, 9)], conv),
             Node("n1", "max_pool", ["y"], [t("v", 1, 3, 5, 5), t("i", 1, 3, 5, 5, dtype="int64")], pool),
             Node("n2", "max_pool_backward", ["v", "y", "i"], [t("gy", 1, 3, 9, 9)], pool),
             Node("n3", "avg_pool", ["gy"], [t("a", 1, 3, 5, 5)], {**pool, "ceil_mode": True}),
             Node("n4", "adaptive_avg_pool", ["a"], [t("p", 1, 3, 2, 2)], {"output_size": [2, 2]}),
             Node("n5", "convolution_backward", ["gy", "x", "w"], [t("dx", 1, 2, 9, 9), t("dw", 3, 2, 3, 3)],
                  {**conv, "grads": [True, True, False], "bias_sizes": None})]
    graph = Graph("chain", "test", "s", "primitive", [t("x", 1, 2, 9, 9), t("w", 3, 2, 3, 3)], nodes, ["p", "dx", "dw"])
    return graph, [_x(1, 2, 9, 9), _x(3, 2, 3, 3, seed=1)]


@pytest.mark.slow  # an Inductor compile of the chain: tens of seconds on a loaded 2-core machine
def test_the_torch_lowering_runs_the_new_ops_in_one_graph():
    """Inductor's lowering (a GraphModule of the meanings, compiled) against the interpreter."""
    from irlens.backends import get_backend

    graph, inputs = _chain()
    got = get_backend("inductor").lower(graph, "cpu", "s")(inputs)
    _check(got, interpret(graph, inputs), graph)


def test_the_jax_lowering_runs_the_chain():
    import numpy as np

    from irlens.backends.xla.lower import to_jax_function

    graph, inputs = _chain()
    with jax.default_matmul_precision("highest"):
        got = jax.jit(to_jax_function(graph))(*[np.asarray(t.numpy()) for t in inputs])
    _check([np.asarray(g) for g in got], interpret(graph, inputs), graph)


@pytest.mark.gpu
def test_the_nvfuser_lowering_runs_the_chain():
    """nvFuser's lowering on a GPU: the pools and convolutions run as torch ops between its regions."""
    from irlens.backends import get_backend

    graph, inputs = _chain()
    got = get_backend("nvfuser").lower(graph, "cuda", "s")([t.cuda() for t in inputs])
    _check([g.cpu() for g in got], interpret(graph, inputs), graph)


def test_a_lowered_graph_gives_none_for_an_output_none():
    """AOTAutograd's backward returns None for an input that gets no gradient (token ids)."""
    from irlens.backends import get_backend

    graph = Graph("g", "test", "s", "primitive", [TensorMeta("x", (3,), "float32")],
                  [Node("n0", "tanh", ["x"], [TensorMeta("y", (3,), "float32")])], ["y", None])
    y, none = get_backend("xla").lower(graph, "cpu", "s")([torch.ones(3)])
    assert none is None
    torch.testing.assert_close(y, torch.ones(3).tanh())


@pytest.mark.parametrize("x_shape, w_shape", [((2, 64, 2, 2), (32, 64, 3, 3)), ((1, 8, 2, 3), (4, 8, 3, 2))])
def test_xlas_reversed_convolution_windows_are_read_as_a_flipped_kernel(x_shape, w_shape):
    """XLA's CPU compiler writes a convolution over a small plane with `rhs_reversal` (ResNet-18's
    last stage at 32x32 inputs): its HLO view flips the kernel there, and computes what XLA computed."""
    import numpy as np
    from jax import lax

    from irlens.backends.xla.kernels import read_hlo

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), [(1, 1), (1, 1)], precision=lax.Precision.HIGHEST)

    x, w = _x(*x_shape), _x(*w_shape, seed=1)
    with jax.default_device(jax.devices("cpu")[0]):  # on a GPU, XLA calls cuDNN instead
        compiled = jax.jit(conv).lower(x.numpy(), w.numpy()).compile()
    hlo = read_hlo(compiled.runtime_executable().hlo_modules()[0], name="conv", stage="jax.hlo")
    assert not hlo.graph.unknown_ops()
    reversed_here = "rhs_reversal=1" in compiled.as_text()
    assert reversed_here == ("flip" in {n.op for n in hlo.graph.nodes})
    want = torch.from_numpy(np.asarray(compiled(x.numpy(), w.numpy()))).double()
    torch.testing.assert_close(interpret(hlo.graph, [x, w])[0], want, rtol=1e-5, atol=1e-5)


def test_a_half_precision_embedding_gradient_is_summed_in_float32():
    """ATen (and torch's own decomposition) sums an embedding's bfloat16 gradient rows in float32
    and rounds once: 4096 ones into one row are 4096, where a bfloat16 sum stops at 256."""
    import numpy as np

    from irlens.backends.xla.lower import to_jax_function
    from irlens.core.decompose import to_primitive

    n = 4096
    g = TensorMeta("g", (n, 2), "bfloat16")
    idx = TensorMeta("i", (n,), "int64")
    out = TensorMeta("w", (3, 2), "bfloat16")
    graph = Graph("emb", "test", "s", "composite", [g, idx],
                  [Node("n0", "embedding_backward", ["g", "i"], [out], {"num_weights": 3})], ["w"])
    args = [jax.numpy.ones((n, 2), jax.numpy.bfloat16), np.ones(n, np.int32)]
    (got,) = jax.jit(to_jax_function(to_primitive(graph)))(*args)
    assert got.dtype == jax.numpy.bfloat16
    np.testing.assert_array_equal(np.asarray(got, np.float32), [[0, 0], [n, n], [0, 0]])


def test_a_half_precision_softmax_sums_in_float32():
    """A 4096-wide bfloat16 softmax of equal values is 2**-12 each, as ATen gives it: summed in
    bfloat16 the denominator stops at 256."""
    import numpy as np

    from irlens.backends.xla.lower import to_jax_function
    from irlens.core.decompose import to_primitive

    n = 4096
    x, y = TensorMeta("x", (2, n), "bfloat16"), TensorMeta("y", (2, n), "bfloat16")
    graph = Graph("sm", "test", "s", "composite", [x], [Node("n0", "softmax", ["x"], [y], {"dim": 1})], ["y"])
    primitive = to_primitive(graph)
    assert primitive.nodes[0].op == "convert" and primitive.nodes[-1].op == "convert"
    assert {o.dtype for n in primitive.nodes[1:-1] for o in n.outputs} == {"float32"}
    (got,) = jax.jit(to_jax_function(primitive))(jax.numpy.zeros((2, n), jax.numpy.bfloat16))
    assert got.dtype == jax.numpy.bfloat16
    np.testing.assert_array_equal(np.asarray(got, np.float32), np.full((2, n), 2.0 ** -12, np.float32))


def test_jax_results_take_their_declared_dtypes():
    """JAX promotes a bf16 tensor times a 0-d float32 one to float32; torch keeps bf16 (computed in
    float, rounded): the lowering converts the result to the dtype the graph declares. Checked
    strictly (irlens's own rules, in the tests) the difference is an error; a result of another kind
    (float where the graph says int) is an error either way."""
    import jax.numpy as jnp

    from irlens.backends.xla.lower import LoweringDtypeError, to_jax_function

    x, s = TensorMeta("x", (4,), "bfloat16"), TensorMeta("s", (), "float32")
    graph = Graph("g", "test", "s", "composite", [x, s], [Node("n", "mul", ["x", "s"], [TensorMeta("y", (4,), "bfloat16")])],
                  ["y"])
    xs = jnp.asarray([1.0, 3.0, -2.0, 0.5], dtype=jnp.bfloat16)
    (y,) = to_jax_function(graph)(xs, jnp.asarray(0.1, dtype=jnp.float32))
    assert y.dtype == jnp.bfloat16
    assert [float(v) for v in y] == [float(v) for v in (xs.astype(jnp.float32) * 0.1).astype(jnp.bfloat16)]
    with pytest.raises(LoweringDtypeError, match="mul \\(y\\) computed float32 where the graph has bfloat16"):
        to_jax_function(graph, strict=True)(xs, jnp.asarray(0.1, dtype=jnp.float32))
    wrong = Graph("g", "test", "s", "composite", [x, s], [Node("n", "mul", ["x", "s"], [TensorMeta("y", (4,), "int32")])],
                  ["y"])
    with pytest.raises(LoweringDtypeError, match="computed float32 where the graph has int32"):
        to_jax_function(wrong)(xs, jnp.asarray(0.1, dtype=jnp.float32))
