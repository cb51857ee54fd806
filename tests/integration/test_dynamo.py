"""The Dynamo frontend and the FX adapter: stages, op multisets, graph breaks, and graphs of ops
the workloads do not use that compute what the module computes (run through the float64
reference interpreter; the workloads' own graphs are checked in test_faithfulness.py)."""
import operator

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from irlens.frontends import get_frontend
from irlens.frontends.dynamo.capture import GraphCapture
from irlens.core.decompose import to_primitive
from irlens.core.interpret import interpret
from irlens.core.ir import Graph
from irlens.frontends.dynamo.fx import fx_to_graph
from irlens.workloads.builtin import get_workload, workload_names
from irlens.workloads.workload import Workload, as_tuple

MODES = ("fwd", "fwdbwd")


def acquire(workload: str, mode: str):
    return get_frontend("dynamo").acquire(get_workload(workload).instantiate("tiny"), mode)


def capture(module: nn.Module, inputs: tuple, backward: bool = False) -> GraphCapture:
    """Compile `module` with the frontend's capturing backend and run it once."""
    torch._dynamo.reset()
    cap = GraphCapture()
    compiled = torch.compile(module, backend=cap, dynamic=False)
    if backward:
        sum(o.sum() for o in as_tuple(compiled(*inputs))).backward()
    else:
        with torch.no_grad():
            compiled(*inputs)
    torch._dynamo.reset()
    return cap


def max_error(got, want) -> float:
    return max((g - w.double()).abs().max().item() for g, w in zip(got, want))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workload", workload_names())
def test_every_stage_dumps_without_unknown_ops(workload, mode):
    frontend = get_frontend("dynamo")
    acq = frontend.acquire(get_workload(workload).instantiate("tiny"), mode)
    expected = {"dynamo.fx", "aot.forward"} | ({"aot.backward"} if mode == "fwdbwd" else set())
    assert expected <= set(acq.stages)
    assert frontend.default_stage(mode) in acq.stages
    assert acq.notes["graph_breaks"] == 0 and acq.notes["graphs"] == 1
    for stage in acq.stages.values():
        assert stage.native_text.strip()
        g = stage.common("composite")
        assert g.nodes and g.outputs and g.stage == stage.name
        assert not g.unknown_ops(), f"{stage.name}: {dict(g.unknown_ops())}"
        assert Graph.from_json(g.to_json()).to_text() == g.to_text()
        assert stage.common("primitive").level == "primitive"


def test_gelu_formula_composite_ops():
    acq = acquire("gelu", "fwd")
    want = {"mul": 4, "pow": 1, "add": 2, "tanh": 1}
    for stage in ("dynamo.fx", "aot.forward"):
        assert dict(acq.stage(stage).common().compute_op_counts()) == want, stage
    pow_node = next(n for n in acq.stage("dynamo.fx").common().nodes if n.op == "pow")
    assert pow_node.inputs[1] == 3  # the scalar exponent is a literal input


def test_native_text_has_shapes():
    text = acquire("gelu", "fwd").stage("aot.forward").native_text
    assert 'f32[8, 64]' in text and "aten.tanh" in text


def test_attention_keeps_sdpa_forward_and_backward():
    acq = acquire("attention", "fwdbwd")
    assert acq.stage("dynamo.fx").common().op_counts()["sdpa"] == 1
    fwd = acq.stage("aot.forward").common()
    (sdpa,) = [n for n in fwd.nodes if n.op == "sdpa"]
    assert sdpa.attrs["is_causal"] is True and len(sdpa.inputs) == 4
    assert len(sdpa.outputs) >= 2  # output and log-sum-exp, saved for the backward
    (bwd,) = [n for n in acq.stage("aot.backward").common().nodes if n.op == "sdpa_backward"]
    assert len(bwd.inputs) == 7 and bwd.inputs[6] is None and len(bwd.outputs) == 3  # no mask


def _efficient_attention_backward_graph(bias_shape: tuple, bias_grad: bool = True) -> Graph:
    """The AOT backward graph CUDA's memory-efficient attention gives an attention with a learned
    bias (timm's BEiT, CoAtNet), built on meta tensors: the kernel is CUDA's, its meta function runs anywhere."""
    B, H, L, D = 2, 3, 5, 8
    meta = dict(device="meta", dtype=torch.float32)
    vals = {"go": torch.empty(B, H, L, D, **meta), "q": torch.empty(B, H, L, D, **meta),
            "k": torch.empty(B, H, L, D, **meta), "v": torch.empty(B, H, L, D, **meta),
            "bias": torch.empty(bias_shape, **meta).expand(B, H, L, L), "out": torch.empty(B, H, L, D, **meta),
            "lse": torch.empty(B, H, 32, **meta), "seed": torch.empty((), device="meta", dtype=torch.int64),
            "offset": torch.empty((), device="meta", dtype=torch.int64)}
    g = torch.fx.Graph()
    args = []
    for name, val in vals.items():
        args.append(g.placeholder(name))
        args[-1].meta["val"] = val
    op = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default
    wanted = [True, True, True, bias_grad]
    call = g.call_function(op, (*args, 0.0, wanted))
    call.meta["val"] = op(*vals.values(), 0.0, wanted)
    outs = []
    for i, val in enumerate(call.meta["val"][:4 if bias_grad else 3]):
        outs.append(g.call_function(operator.getitem, (call, i)))
        outs[-1].meta["val"] = val
    g.output(tuple(outs))
    return fx_to_graph(torch.fx.GraphModule(nn.Module(), g), name="t", frontend="dynamo", stage="aot.backward")


def test_efficient_attentions_bias_gradient_flows_through_the_xla_lowering():
    """Memory-efficient attention's backward returns the bias's gradient as a fourth output; the
    common view gives it (it gave zeros: XLA called BEiT's relative position tables' gradients off by 1.0)."""
    pytest.importorskip("jax")
    from irlens.backends import get_backend

    graph = _efficient_attention_backward_graph((1, 3, 5, 5))
    (node,) = graph.nodes
    assert node.op == "sdpa_backward" and [o.shape for o in node.outputs][3] == (2, 3, 5, 5)
    gen = torch.Generator().manual_seed(0)
    go, q, k, v = (torch.randn(2, 3, 5, 8, generator=gen, dtype=torch.float64) for _ in range(4))
    bias = torch.randn(1, 3, 5, 5, generator=gen, dtype=torch.float64).expand(2, 3, 5, 5)
    leaves = [t.clone().requires_grad_(True) for t in (q, k, v, bias)]
    want = torch.autograd.grad(F.scaled_dot_product_attention(*leaves[:3], attn_mask=leaves[3]), leaves, go)
    seed = offset = torch.zeros((), dtype=torch.int64)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    lse = torch.logsumexp(q @ k.transpose(-1, -2) / 8 ** 0.5 + bias, -1)
    lse = torch.cat([lse, torch.full((2, 3, 27), torch.inf, dtype=lse.dtype)], -1)  # padded to 32 rows, +inf
    args = [t.float() if t.is_floating_point() else t for t in (go, q, k, v, bias.contiguous(), out, lse, seed, offset)]
    got = get_backend("xla").lower(to_primitive(graph), "cpu", "t")(args)
    for g_, w in zip(got, want, strict=True):
        assert torch.allclose(g_.double(), w, rtol=1e-4, atol=1e-5)
    assert want[3].abs().max() > 0.1  # the bias gradient checked is not a vacuous zero


def test_efficient_attention_without_the_bias_gradient_declares_three_outputs():
    (node,) = _efficient_attention_backward_graph((1, 3, 5, 5), bias_grad=False).nodes
    assert node.op == "sdpa_backward" and len(node.outputs) == 3 and node.inputs[6] == "bias"


class _Breaks(nn.Module):
    def forward(self, x):
        y = torch.sin(x)
        print("a graph break")  # noqa: T201
        if y.sum().item() > 0:  # data-dependent Python branch: another break
            return torch.cos(y)
        return torch.tan(y)


def test_graph_breaks_are_counted_and_each_graph_is_a_stage(capsys):
    wl = Workload("breaks", lambda cfg: _Breaks(), lambda cfg, dtype, gen: (torch.randn(4, 4, generator=gen),),
                  {"tiny": {}})
    acq = get_frontend("dynamo").acquire(wl.instantiate("tiny"), "fwd")
    assert acq.notes["graph_breaks"] >= 2 and acq.notes["graphs"] >= 2
    assert any("print" in r for r in acq.notes["break_reasons"])
    assert {"dynamo.fx", "dynamo.fx[1]", "aot.forward", "aot.forward[1]"} <= set(acq.stages)
    assert acq.stage("dynamo.fx").common().compute_op_counts() == {"sin": 1}  # the graph before the print
    assert acq.stage("dynamo.fx[1]").common().compute_op_counts() == {"sum": 1}  # before .item()


class _Views(nn.Module):
    """Indexing, views, creation ops and norms that the workloads do not all use."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 5))
        self.b = nn.Parameter(torch.randn(5))

    def forward(self, x, idx):
        p, q = x.chunk(2, dim=-1)
        return (
            x[:, 1:5:2, None, ...] * 2,
            x[0] + x[..., -1:],
            x.select(2, 2) - x.narrow(2, 1, 3).sum(-1),
            torch.cat([q, p], dim=1).permute(2, 0, 1).contiguous(),
            x.index_select(1, idx).var(-1, keepdim=True) + x.amax(dim=(0, 2)).mean(),
            torch.where(x > 0, x, torch.zeros_like(x)).to(torch.float64),
            torch.tril(torch.ones(6, 6)) * torch.arange(2, 14, 2) + torch.full((6, 1), 3.0),
            1.0 - x.expand(2, 4, 6, 8).transpose(0, 1).reshape(4, 2, 48),
            torch.addmm(self.b, x.flatten(0, 1), self.w, beta=0.5, alpha=2.0)
            + F.linear(x, self.w.t(), self.b).flatten(0, 1),
            torch.softmax(x, dim=1) + F.log_softmax(x, -1) + F.gelu(x) + F.relu(x) + F.silu(x),
            F.layer_norm(x, (6, 8)) + F.rms_norm(x, (8,), eps=1e-5),
        )


def test_views_indexing_and_creation_ops_compute_the_model():
    module, inputs = _Views(), (torch.randn(4, 6, 8), torch.tensor([0, 5, 2]))
    want = module(*inputs)
    cap = capture(module, inputs)
    for gm in (cap.dynamo[0], cap.forward[0]):
        g = fx_to_graph(gm, name="views", frontend="dynamo", stage="s")
        assert not g.unknown_ops()
        for level in ("composite", "primitive"):
            g = fx_to_graph(gm, name="views", frontend="dynamo", stage="s", level=level)
            assert max_error(interpret(g, cap.example_inputs[0]), want) < 1e-4, level
    ops = fx_to_graph(cap.dynamo[0], name="views", frontend="dynamo", stage="s").op_counts()
    assert ops["slice"] >= 5 and ops["take"] == 1 and ops["iota"] == 1


@torch.library.custom_op("irlens_test::twice", mutates_args=())
def _twice(x: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(x.detach().numpy() * 2)  # outside torch: its implementation does not trace


@_twice.register_fake
def _(x):
    return torch.empty_like(x)


@torch.library.custom_op("irlens_test::scaled_softmax", mutates_args=())
def _scaled_softmax(x: torch.Tensor, scale: float) -> torch.Tensor:
    out = torch.empty_like(x)  # written in place, as kernels written in torch often are
    out.copy_(torch.softmax(x * scale, dim=-1))
    return out


@_scaled_softmax.register_fake
def _(x, scale):
    return torch.empty_like(x)


@torch.library.custom_op("irlens_test::scale_into", mutates_args=("out",))
def _scale_into(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    out.copy_(x * 3)
    return x + out


@_scale_into.register_fake
def _(x, out):
    return torch.empty_like(x)


def test_unknown_ops_are_kept_by_native_name():
    """An op with no table entry and no decomposition to core ATen (a custom op whose
    implementation does not trace) stays unknown, by name, at both levels."""
    class Custom(nn.Module):
        def forward(self, x):
            return torch.ops.irlens_test.twice(x) + 1

    cap = capture(Custom(), (torch.randn(4, 10),))
    for gm in (cap.dynamo[0], cap.forward[0]):
        g = fx_to_graph(gm, name="c", frontend="dynamo", stage="s")
        assert dict(g.unknown_ops()) == {"unknown:irlens_test.twice": 1}
        assert g.op_counts()["add"] == 1


def test_a_custom_op_that_writes_an_argument_stays_unknown():
    """Expanding it would lose the write (a side effect on its argument): it has no decomposition
    (one that only returns a value has its implementation), and stays unknown."""
    from irlens.frontends.dynamo.expansion import decomposition_of

    assert decomposition_of(torch.ops.irlens_test.scale_into.default) is None
    assert decomposition_of(torch.ops.irlens_test.scaled_softmax.default) is _scaled_softmax._init_fn

    class Custom(nn.Module):
        def forward(self, x):
            out = torch.zeros_like(x)
            return torch.ops.irlens_test.scale_into(x, out), out

    cap = capture(Custom(), (torch.randn(4, 10),))
    g = fx_to_graph(cap.dynamo[0], name="c", frontend="dynamo", stage="s")
    assert dict(g.unknown_ops()) == {"unknown:irlens_test.scale_into": 1}


def test_a_custom_op_expands_by_its_own_implementation():
    """A custom op (torch.library.custom_op) is its Python implementation: traced to core ATen,
    its nodes keep the op's native name, and the float64 interpreter gives eager's result."""
    class Custom(nn.Module):
        def forward(self, x):
            return torch.ops.irlens_test.scaled_softmax(x, 0.5) + 1

    x = torch.randn(4, 10)
    want = (torch.softmax(x.double() * 0.5, dim=-1) + 1,)
    cap = capture(Custom(), (x,))
    for gm in (cap.dynamo[0], cap.forward[0]):
        for level in ("composite", "primitive"):
            g = fx_to_graph(gm, name="c", frontend="dynamo", stage="s", level=level)
            assert not g.unknown_ops(), dict(g.unknown_ops())
            assert any(n.native.startswith("irlens_test.scaled_softmax") for n in g.nodes)
            assert max_error(interpret(g, [x.double()]), want) < 1e-12, level


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_linear_cross_entropy_is_its_own_chunked_loop(reduction):
    """F.linear_cross_entropy with options runs torch_nn's chunked custom ops (the loss and,
    for mean and sum, gradients precomputed in forward), one call in Dynamo's graph; it expands
    by the op's own implementation into a graph the float64 interpreter runs, every argument
    (bias, class weights, ignore_index, chunk size) kept, the chunks giving eager's loss."""
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(5, 3, generator=g), torch.randn(4, 3, generator=g), torch.randn(4, generator=g)
    cw, target = 0.5 + torch.rand(4, generator=g), torch.tensor([0, 3, 1, 2, 3])
    options = torch.nn.LinearCrossEntropyOptions(batch_chunk_size=2, allow_retain_graph=reduction != "none")

    class Loss(nn.Module):
        def forward(self, x, w, b, cw, target):
            return F.linear_cross_entropy(x, w, target, linear_bias=b, weight=cw, reduction=reduction, ignore_index=1,
                                          options=options)

    inputs = (x, w, b, cw, target)
    want = (F.cross_entropy(F.linear(x.double(), w.double(), b.double()), target, weight=cw.double(),
                            reduction=reduction, ignore_index=1),)
    cap = capture(Loss(), inputs)
    natives = {str(n.target) for n in cap.dynamo[0].graph.nodes if n.op == "call_function"}
    assert any("torch_nn._linear_cross_entropy_batch_chunked" in t for t in natives), natives
    for gm in (cap.dynamo[0], cap.forward[0]):
        for level in ("composite", "primitive"):
            graph = fx_to_graph(gm, name="lce", frontend="dynamo", stage="s", level=level)
            assert not graph.unknown_ops(), dict(graph.unknown_ops())
            got = interpret(graph, [t.double() if t.is_floating_point() else t for t in cap.example_inputs[0]])
            assert max_error(got, want) < 1e-12, level


def test_cross_entropy_and_nll_loss_are_composites_with_rules():
    """F.cross_entropy (torch level) and nll_loss_forward/backward (ATen) are canonical
    composites; both levels reproduce the loss and its gradient, ignore_index and weights included."""
    from irlens.frontends.bindings import program_for, run_program
    from irlens.workloads.workload import Workload, run_eager

    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", torch.rand(10) + 0.5)  # class weights take no gradient

        def forward(self, logits, target):
            return (F.cross_entropy(logits, target, weight=self.w, ignore_index=3),
                    F.cross_entropy(logits, target, reduction="sum"), F.cross_entropy(logits, target, reduction="none"))

    wl = Workload("loss", lambda cfg: Loss(),
                  lambda cfg, dt, g: (torch.randn(6, 10, generator=g).to(dt), torch.tensor([1, 3, 3, 9, 0, 2])),
                  {"tiny": {}})
    inst = wl.instantiate()
    acq = get_frontend("dynamo").acquire(inst, "fwdbwd")
    assert acq.stage("dynamo.fx").common().op_counts()["cross_entropy"] == 3
    assert {"log_softmax", "nll_loss"} <= set(acq.stage("aot.forward").common().op_counts())
    assert "nll_loss_backward" in acq.stage("aot.backward").common().op_counts()
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, "fwdbwd")
    for level in ("composite", "primitive"):
        for stage in ("aot.forward", "aot.backward"):
            assert not acq.stage(stage).common(level).unknown_ops()
        got = run_program(program_for(acq, inst), inst, lambda step, xs: interpret(step.graph(level), xs))
        for name in want:
            assert torch.allclose(got[name], want[name], rtol=1e-10, atol=1e-12), (level, name)


def test_functional_collectives_map_to_canonical_ops():
    """A hand-built ATen graph (no process group needed) with the ops the joint graphs use."""
    c10d = torch.ops._c10d_functional
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(4, 8)

    def call(target, args, shape):
        n = graph.call_function(target, args)
        n.meta["val"] = torch.empty(shape)
        return n

    gathered = call(c10d.all_gather_into_tensor.default, (x, 2, "g0"), (8, 8))
    gathered = call(c10d.wait_tensor.default, (gathered,), (8, 8))
    scattered = call(c10d.reduce_scatter_tensor.default, (gathered, "sum", 2, "g0"), (4, 8))
    reduced = call(c10d.all_reduce.default, (call(c10d.wait_tensor.default, (scattered,), (4, 8)), "avg", "g0"), (4, 8))
    swapped = call(c10d.all_to_all_single.default, (reduced, [2, 2], [2, 2], "g0"), (4, 8))
    graph.output((call(c10d.wait_tensor.default, (swapped,), (4, 8)),))
    g = fx_to_graph(torch.fx.GraphModule(nn.Module(), graph), name="c", frontend="dynamo", stage="s")
    want = ["all_gather", "wait", "reduce_scatter", "wait", "all_reduce", "all_to_all", "wait"]
    assert [n.op for n in g.nodes] == want
    assert g.nodes[0].attrs == {"group_size": 2, "group_name": "g0"}
    assert g.nodes[2].attrs["reduce_op"] == "sum" and g.nodes[2].inputs == [g.nodes[1].outputs[0].name]


def test_inductor_online_softmax_statistics_expand_to_amax_sub_exp_sum():
    """prims.prepare_softmax_online, which Inductor's post-grad graphs hold on CUDA."""
    import torch._inductor.inductor_prims  # noqa: F401  (registers the prim)

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(4, 6)
    stats = graph.call_function(torch.ops.prims.prepare_softmax_online.default, (x, -1))
    stats.meta["val"] = (torch.empty(4, 1), torch.empty(4, 1))
    outs = []
    for i in range(2):
        outs.append(graph.call_function(operator.getitem, (stats, i)))
        outs[-1].meta["val"] = torch.empty(4, 1)
    graph.output(tuple(outs))
    g = fx_to_graph(torch.fx.GraphModule(nn.Module(), graph), name="s", frontend="dynamo", stage="s")
    assert [n.op for n in g.nodes] == ["amax", "sub", "exp", "sum"]
    t = torch.randn(4, 6, dtype=torch.float64)
    row_max, total = interpret(g, [t])
    torch.testing.assert_close(row_max, t.amax(1, keepdim=True))
    torch.testing.assert_close(total, (t - row_max).exp().sum(1, keepdim=True))


def test_multi_output_values_take_their_getitem_names():
    graph = acquire("block", "fwd").stage("aot.forward").common()
    ln = next(n for n in graph.nodes if n.op == "layer_norm")
    produced = {o.name for n in graph.nodes for o in n.outputs}
    assert ln.outputs[0].name.startswith("getitem")
    used = {a for n in graph.nodes for a in n.value_inputs()}
    assert used <= produced | {t.name for t in graph.inputs}
    assert not any("getitem" in n.native for n in graph.nodes)


def test_moe_routing_ops_map_and_compute():
    """The ops a mixture-of-experts router brings (sigmoid, topk, index_add; in the backward
    sigmoid_backward and topk's scatter) are canonical ops, and the ATen graphs built from them,
    forward chained into backward, compute the module's outputs and gradients."""
    from irlens.frontends.bindings import program_for, run_program
    from irlens.workloads.workload import Workload, run_eager

    class Router(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = torch.nn.Parameter(torch.randn(8, 4))

        def forward(self, x):
            scores = torch.sigmoid(x @ self.gate)
            weights, experts = torch.topk(scores, 2, dim=-1)
            load = torch.zeros(4, dtype=x.dtype).index_add(0, experts.reshape(-1), weights.reshape(-1))
            return weights, load

    wl = Workload("router", lambda cfg: Router(), lambda cfg, dt, g: (torch.randn(6, 8, generator=g).to(dt),),
                  {"tiny": {}})
    inst = wl.instantiate()
    acq = get_frontend("dynamo").acquire(inst, "fwdbwd")
    fwd, bwd = acq.stage("aot.forward").common(), acq.stage("aot.backward").common()
    assert {"topk", "index_add", "sigmoid"} <= set(fwd.op_counts())
    assert {"sigmoid_backward", "scatter"} <= set(bwd.op_counts())
    assert not fwd.unknown_ops() and not bwd.unknown_ops()
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, "fwdbwd")
    for level in ("composite", "primitive"):
        got = run_program(program_for(acq, inst), inst, lambda step, xs: interpret(step.graph(level), xs))
        assert set(got) == set(want)
        for name in want:
            assert torch.allclose(got[name], want[name], rtol=1e-5, atol=1e-6), (level, name)


class _Cached(nn.Module):
    """Stores a tensor made from its weight in a dict on its first call and returns the sum first
    (timm's LeViT caches its attention biases so in eval mode): Dynamo's graph returns the stored
    tensor too, after the module's outputs."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.cache = {}

    def forward(self, x):
        if "w" not in self.cache:
            self.cache["w"] = self.w * 2
        y = x @ self.cache["w"]
        return y.sum(), y


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_a_tensor_the_module_stores_is_no_result(mode):
    """A Dynamo graph output the module does not return (its bytecode stores it in a cache) is no
    `out<i>`: the programs give eager's results, no more (the stored tensor's cotangent is zero)."""
    from irlens.frontends.bindings import program_for, run_program, stage_programs
    from irlens.workloads.workload import run_eager

    wl = Workload("cached", lambda cfg: _Cached(), lambda cfg, dt, g: (torch.randn(3, 4, generator=g).to(dt),),
                  {"tiny": {}})
    inst = wl.instantiate()
    acq = get_frontend("dynamo").acquire(inst, mode)
    assert acq.notes["graph_outputs"] == ["out0", "out1", None]
    inst.module.cache.clear()  # it holds a tensor of the capture's graph, which a copy cannot take
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, mode)
    programs = {"aot": program_for(acq, inst), **stage_programs(acq, inst)}
    for name, program in programs.items():
        got = run_program(program, inst, lambda step, xs: interpret(step.graph("primitive"), xs))
        assert set(got) == set(want), name
        for key in want:
            assert torch.allclose(got[key].double(), want[key], rtol=1e-5, atol=1e-6), (name, key)


class _Clipped(nn.Module):
    """Clips its weight in place under no_grad before using it (a max-norm constraint; transformers'
    RWKV rescales its weights so in eval mode): AOTAutograd's backward takes a cotangent for the
    parameter's new value."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        with torch.no_grad():
            self.w.clamp_(-0.5, 0.5)
        return x @ self.w


def test_a_parameter_updated_in_place_gets_a_zero_cotangent():
    """The backward's cotangent for an input's new value is zero (the loss reads the outputs
    only), and the program gives eager's results."""
    from irlens.frontends.bindings import program_for, run_program
    from irlens.workloads.workload import run_eager

    wl = Workload("clipped", lambda cfg: _Clipped(), lambda cfg, dt, g: (torch.randn(3, 4, generator=g).to(dt),),
                  {"tiny": {}})
    inst = wl.instantiate()
    acq = get_frontend("dynamo").acquire(inst, "fwdbwd")
    assert "mutation_cotangent" in [r.kind for r in acq.notes["roles"]["aot.backward"][0]]
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, "fwdbwd")
    got = run_program(program_for(acq, inst), inst, lambda step, xs: interpret(step.graph("primitive"), xs))
    assert set(got) == set(want)
    for key in want:
        assert torch.allclose(got[key].double(), want[key], rtol=1e-5, atol=1e-6), key


class _Counter(nn.Module):
    """Counts its calls by reassigning a buffer (a new tensor, not an in-place update)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.register_buffer("count", torch.zeros(()))

    def forward(self, x):
        self.count = self.count + 1
        return x @ self.w


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_a_reassigned_buffer_is_a_result_like_one_updated_in_place(mode):
    """The graph reads the buffer as it was before the call and returns its new value, which the
    programs give as `buffer:count`, as eager does."""
    from irlens.frontends.bindings import program_for, run_program, stage_programs
    from irlens.workloads.workload import run_eager

    wl = Workload("counter", lambda cfg: _Counter(), lambda cfg, dt, g: (torch.randn(3, 4, generator=g).to(dt),),
                  {"tiny": {}})
    inst = wl.instantiate()
    acq = get_frontend("dynamo").acquire(inst, mode)
    assert acq.notes["graph_outputs"] == ["out0", "buffer:count"]
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, mode)
    assert torch.equal(want["buffer:count"], torch.ones((), dtype=torch.float64))
    for name, program in {"aot": program_for(acq, inst), **stage_programs(acq, inst)}.items():
        got = run_program(program, inst, lambda step, xs: interpret(step.graph("primitive"), xs))
        assert set(got) == set(want), name
        for key in want:
            assert torch.allclose(got[key].double(), want[key], rtol=1e-5, atol=1e-6), (name, key)


def test_graph_outputs_bind_by_identity_or_say_why_not():
    from irlens.frontends.dynamo.frontend import returned_outputs

    y, z, cache = torch.ones(2), torch.zeros(2), torch.ones(3)
    assert returned_outputs([z, y, cache], (y, z), {"count": cache}) == ["out1", "out0", "buffer:count"]
    assert returned_outputs([z, y, cache], (y, z), {}) == ["out1", "out0", None]
    assert "out1 of the module's outputs once each" in returned_outputs([y, cache], (y, y), {})
    assert "out1" in returned_outputs([y], (y, torch.ones(1)), {})  # made outside the graph
    assert returned_outputs([y], ({"y": y},), {}) is None and returned_outputs(None, (y,), {}) is None
    # in fwd+bwd a view of a graph input: AOTAutograd makes it, and routes its gradient, outside its graphs
    x = torch.ones(2, 3)
    v = x.t()
    assert returned_outputs([v, y], (v, y), {}) == ["out0", "out1"]
    assert "out0 of the module's outputs is a view of a graph input" in returned_outputs([v, y], (v, y), {}, [x])


class _Indexing(nn.Module):
    """Ops whose meaning the vocabulary once got wrong: torch.gather and
    take_along_dim (index with the input's rank), scatter_add (not index_add), argmax/argmin
    over the flattened input, empty_like/new_empty (values unspecified: only used for shapes)."""

    def forward(self, x, idx, rows):
        scattered = torch.zeros(4, 6).scatter_add(1, idx, x[:, :3])
        added = torch.zeros(5, 6).index_add(0, rows, x, alpha=2.0)
        shaped = torch.empty_like(x).fill_(1.5) + x.new_empty(4, 6).zero_()
        return (torch.gather(x, 1, idx), torch.take_along_dim(x, idx, dim=1), scattered, added,
                x.argmax(), x.argmin(dim=0), x.argmax(dim=1, keepdim=True), shaped)


def test_indexing_ops_have_the_meaning_eager_torch_gives():
    module, inputs = _Indexing(), (torch.randn(4, 6), torch.tensor([[0, 5, 5]] * 4), torch.tensor([4, 0, 4, 1]))
    want = module(*inputs)
    cap = capture(module, inputs)
    for gm in (cap.dynamo[0], cap.forward[0]):
        for level in ("composite", "primitive"):
            g = fx_to_graph(gm, name="idx", frontend="dynamo", stage="s", level=level)
            assert not g.unknown_ops(), dict(g.unknown_ops())
            got = interpret(g, cap.example_inputs[0])
            for i, (a, b) in enumerate(zip(got, want)):
                assert torch.equal(a, b.to(a.dtype)) or torch.allclose(a, b.double()), (level, i)
    ops = fx_to_graph(cap.forward[0], name="idx", frontend="dynamo", stage="s").op_counts()
    assert ops["gather"] == 2 and ops["scatter_add"] == 1 and ops["index_add"] == 1 and ops["empty"] == 2


class _Arguments(nn.Module):
    """Arguments and operators whose meaning an adapter once dropped:
    each must be mapped with its meaning, or the node expanded by torch's own decomposition."""

    def forward(self, x, y, n, m):
        return (
            torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc"), x // y, n // 3,
            torch.round(x * 100, decimals=-1), torch.round(x, decimals=3), 2.0 ** x, x.__rpow__(3.0),
            torch.rsub(x, y, alpha=2.0), torch.add(x, y, alpha=-0.5), x - 2 * y,
            x * (~n) + x * (n & 6) + (n | m) - (n ^ m), ~(n > 2), (n > 1) & (m < 3),
            x.view(torch.int32), torch.sum(x, dim=0, dtype=torch.float64), torch.softmax(x, 1, torch.float64),
            torch.max(x, 1)[0], torch.max(x, y), torch.var(x, 1, False, True), torch.clamp(x, min=y),
            torch.where(n > 2, x, y), x.where(n > 2, y), torch.lerp(x, y, 0.3), torch.addcmul(x, x, y, value=0.5),
            F.leaky_relu(x, 0.2), F.hardtanh(x, -0.5, 0.5), F.elu(x, 0.7), x.flip(0, 1), x.repeat(2, 1, 3),
            torch.diagonal(x, 1), x.T + x.mT, torch.triu(x, -1),
        )


def test_arguments_are_mapped_or_expanded_never_dropped():
    """At both levels every node is known and the float64 interpreter gives eager torch's values
    (an argument an adapter does not map sends the call to torch's decomposition instead)."""
    gen = torch.Generator().manual_seed(0)
    x, y = torch.randn(4, 6, generator=gen), torch.rand(4, 6, generator=gen) + 0.5
    n, m = torch.randint(0, 8, (4, 6), generator=gen), torch.randint(0, 8, (4, 6), generator=gen)
    module = _Arguments()
    want = module(x.double(), y.double(), n, m)
    cap = capture(module, (x, y, n, m))
    for gm in (cap.dynamo[0], cap.forward[0]):
        for level in ("composite", "primitive"):
            g = fx_to_graph(gm, name="args", frontend="dynamo", stage="s", level=level)
            assert not g.unknown_ops(), dict(g.unknown_ops())
            got = interpret(g, cap.example_inputs[0])
            assert len(got) == len(want)
            for i, (a, b) in enumerate(zip(got, want)):
                if i == 14:  # x.view(int32): the bits of the float32 input, not of a float64 one
                    b = x.view(torch.int32)
                assert a.dtype == (torch.float64 if b.is_floating_point() else b.dtype), (level, i)
                assert torch.allclose(a, b.to(a.dtype), rtol=1e-12, atol=1e-12), (level, i)
    torch_level = fx_to_graph(cap.dynamo[0], name="args", frontend="dynamo", stage="s").nodes
    assert any(n.op == "div" and n.attrs.get("rounding_mode") == "floor" for n in torch_level)
    assert any(n.op == "bitwise_not" for n in torch_level) and any(n.op == "round" and n.attrs for n in torch_level)
    assert any(n.native == "torch.lerp" for n in torch_level)  # expanded through torch's decomposition


class _OrdinaryOps(nn.Module):
    """The ops once found unknown in ordinary model code, forward and backward: slicing and
    selecting (slice/select backward), index_copy/index_put/scatter, padding, gathers, a
    cross-entropy with integer targets (nll_loss forward and backward), bitwise ops on integers,
    casts."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 8))

    def forward(self, x, idx, target, flags):
        h = x @ self.w.T  # [4, 6]
        picked = h[:, 1:5].select(1, 2) + h[:, 2] + torch.gather(h, 1, idx[:, None]).squeeze(1)
        taken = torch.take_along_dim(h, idx[:, None], dim=1).squeeze(1) + h.index_select(1, idx).sum(0)
        copied = h.new_zeros(6, 6).index_copy(0, idx[:3], h[:3]) + h.new_zeros(6, 6).index_put((idx,), h[0], accumulate=True)
        padded = F.pad(h, (1, 2)).sum(1) + h.new_zeros(4, 6).scatter(1, idx[:, None], h[:, :1]).sum(1)
        masked = (flags & 6) | (flags ^ 3)
        loss = F.cross_entropy(h, target) + F.nll_loss(F.log_softmax(h, 1), target, reduction="sum")
        return loss, picked.sum() + taken.sum() + copied.sum() + padded.sum(), masked.to(h.dtype) * h[:, :1]


def test_ordinary_ops_are_known_and_compute_forward_and_backward():
    from irlens.frontends.bindings import program_for, run_program
    from irlens.workloads.workload import Workload, run_eager

    def inputs(cfg, dt, g):
        return (torch.randn(4, 8, generator=g).to(dt), torch.tensor([3, 0, 5, 1]), torch.tensor([2, 5, 0, 1]),
                torch.randint(0, 8, (4, 1), generator=g))

    wl = Workload("ordinary", lambda cfg: _OrdinaryOps(), inputs, {"tiny": {}})
    inst = wl.instantiate()
    acq = get_frontend("dynamo").acquire(inst, "fwdbwd")
    for stage in ("dynamo.fx", "aot.forward", "aot.backward"):
        for level in ("composite", "primitive"):
            assert not acq.stage(stage).common(level).unknown_ops(), (stage, level)
    bwd = acq.stage("aot.backward").common().op_counts()
    assert {"nll_loss_backward", "slice_scatter"} <= set(bwd), bwd
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, "fwdbwd")
    for level in ("composite", "primitive"):
        got = run_program(program_for(acq, inst), inst, lambda step, xs: interpret(step.graph(level), xs))
        for name in want:
            assert torch.allclose(got[name], want[name], rtol=1e-10, atol=1e-10), (level, name)


def test_casts_to_half_round_in_the_interpreter_as_in_eager():
    """`.half()` / `.bfloat16()` round (eager float64 torch does); `.float()` of float64 values does not:
    float32 is the precision the interpreter's float64 stands in for."""
    class Casts(nn.Module):
        def forward(self, x):
            return x.half(), x.bfloat16(), (x * 3).half().float() / 3

    x = torch.randn(8, 8) * 1000
    cap = capture(Casts(), (x,))
    x64 = x.double()
    for gm in (cap.dynamo[0], cap.forward[0]):
        half, bf16, third = interpret(fx_to_graph(gm, name="c", frontend="dynamo", stage="s"), [x])
        assert torch.equal(half, x64.half().double()) and not torch.equal(half, x64)
        assert torch.equal(bf16, x64.bfloat16().double())
        assert torch.equal(third, (x64 * 3).half().double() / 3)  # no float32 rounding after .float()


class _Solver(nn.Module):
    """Ordinary code with torch.linalg.solve and inv: their error checks (`_linalg_check_errors`)
    are side effects, which AOTAutograd orders with an effect token its forward takes first."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4) + 4 * torch.eye(4))

    def forward(self, a, b):
        x = torch.linalg.solve(a @ a.mT + torch.eye(4, dtype=a.dtype), b @ self.w)
        return x, torch.linalg.inv(self.w) @ x.mT


@pytest.mark.parametrize("mode", MODES)
def test_an_effect_token_is_an_input_of_its_own_and_the_program_feeds_it(mode):
    from irlens.frontends.bindings import run_program, stage_programs
    from irlens.workloads.workload import Workload, run_eager

    def inputs(cfg, dt, g):
        return torch.randn(4, 4, generator=g).to(dt), torch.randn(4, 4, generator=g).to(dt)

    inst = Workload("solver", lambda cfg: _Solver(), inputs, {"tiny": {}}).instantiate()
    acq = get_frontend("dynamo").acquire(inst, mode)
    forward = acq.stage("aot.forward").common()
    token = forward.inputs[0]
    assert (token.name, token.shape) == ("effect_token0", (0,))  # named for what it is, not arg0_1
    assert len(forward.inputs) == 4 and forward.outputs[0] == token.name
    assert {"solve", "inv"} <= set(forward.op_counts()) and not forward.unknown_ops()
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, mode)
    programs = stage_programs(acq, inst)
    assert set(programs) == ({"aot.forward", "dynamo.fx"} if mode == "fwd" else {"aot.forward"})
    for program in programs.values():
        for level in ("composite", "primitive"):
            got = run_program(program, inst, lambda step, xs: interpret(step.graph(level), xs))
            assert set(got) == set(want)
            for name in want:
                assert torch.allclose(got[name], want[name], rtol=1e-9, atol=1e-9), (level, name)


def test_inductor_made_effect_tokens_are_a_constant_and_bookkeeping():
    """Inductor's post-grad graphs make the effect token AOTAutograd's graph took as an input
    (prims._make_token) and sink it at the end (prims._sink_tokens): a literal empty tensor and
    no dataflow, not unknown ops."""
    from torch._higher_order_ops.effects import with_effects

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    x.meta["val"] = torch.empty(3, 3)

    def call(target, args, val, **kwargs):
        n = graph.call_function(target, args, kwargs)
        n.meta["val"] = val
        return n

    token = call(torch.ops.prims._make_token.default, (), torch.empty(0))
    inv = call(torch.ops.aten.linalg_inv_ex.default, (x,), (torch.empty(3, 3), torch.empty((), dtype=torch.int32)))
    inverse = call(operator.getitem, (inv, 0), torch.empty(3, 3))
    info = call(operator.getitem, (inv, 1), torch.empty((), dtype=torch.int32))
    checked = call(with_effects, (token, torch.ops.aten._linalg_check_errors.default, info, "linalg.inv"),
                   (torch.empty(0),), is_matrix=True)
    call(torch.ops.prims._sink_tokens.default, ([call(operator.getitem, (checked, 0), torch.empty(0))],), None)
    graph.output((inverse,))
    g = fx_to_graph(torch.fx.GraphModule(nn.Module(), graph), name="t", frontend="dynamo", stage="s")
    assert [n.op for n in g.nodes] == ["constant", "inv"] and g.nodes[0].outputs[0].shape == (0,)
    a = torch.randn(3, 3, dtype=torch.float64) + 3 * torch.eye(3, dtype=torch.float64)
    (got,) = interpret(g, [a])
    torch.testing.assert_close(got, torch.linalg.inv(a))


def test_an_input_updated_in_place_binds_before_the_outputs():
    """F.batch_norm in training updates the running statistics it is given: AOTAutograd's
    forward returns their new values before the outputs, and the program binds them so (not as
    the outputs)."""
    from irlens.frontends.bindings import program_for, run_program
    from irlens.workloads.workload import Workload, run_eager

    def fn(x, mean, var):
        return F.batch_norm(torch.tanh(x), mean, var, training=True, momentum=0.3)

    inst = Workload.from_module("bn_train", fn, ((8, 5), (5,), (5,))).instantiate("tiny")
    acq = get_frontend("dynamo").acquire(inst, "fwd")
    updated = [r.index for r in acq.notes["roles"]["aot.forward"][1] if r.kind == "mutated"]
    assert updated == [1, 2]  # the running mean and variance
    ref = inst.cast("float64")
    want = run_eager(ref.module, ref, "fwd")
    got = run_program(program_for(acq, ref), ref, lambda step, inputs: interpret(step.graph("composite"), inputs))
    assert set(got) == set(want)
    for name in want:
        assert torch.allclose(got[name], want[name], rtol=1e-9, atol=1e-12), name


def test_aten_copy_broadcasts_and_converts_its_source():
    """aten.copy(self, src): src's values in self's dtype, broadcast to self's shape (Inductor's
    post-grad graphs write a 0-d fill into a slice this way), mapped to convert + broadcast."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from irlens.core.interpret import interpret

    def fill(x, v):
        return torch.ops.aten.copy.default(x[:, :3], v) * 2

    x, v = torch.randn(4, 5), torch.tensor(1.5, dtype=torch.float64)
    gm = make_fx(fill)(x, v)
    g = fx_to_graph(gm, name="fill", frontend="dynamo", stage="aten")
    assert not [n for n in g.nodes if n.is_unknown]
    assert {"convert", "broadcast"} <= set(g.op_counts())
    (got,) = interpret(g, [x.double(), v])
    torch.testing.assert_close(got, fill(x, v).double())
