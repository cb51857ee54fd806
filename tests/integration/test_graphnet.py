"""GraphNet's samples as workloads: the meta read, weights as parameters, a graph built on cuda:0
running on the CPU, a sample in bfloat16 as GraphNet's dtype generalization makes it, the corpus
command's selection and exit codes, and a compare on a sample."""
from __future__ import annotations

import json
import math
import os

import pytest
import torch

from irlens.cli import main
from irlens.graphnet.corpus import GraphNetConfig, find_samples, select
from irlens.workloads.builtin import resolve_workload
from irlens.workloads.graphnet import BadSample, read_meta, sample_workload
from irlens.workloads.graphnet.devices import for_device
from irlens.workloads.graphnet.meta import sizes
from irlens.workloads.graphnet.module import graph_class
from irlens.numerics.verdicts import rel_err
from irlens.workloads.graphnet.dtype_gen import keeps_float32
from tests.support.graphnet_samples import (EMBEDDING_META, LINEAR_META, conv_bn, edge_softmax, embedding_int, half_mask,
                                            linear_cuda, masked_edges, meta_text, table_f32, write_sample)


def test_meta_sizes_without_running(tmp_path):
    meta = read_meta(linear_cuda(tmp_path / "s"))
    assert meta.elements == 3 * 5 + 4 * 5 + 4 + 4
    assert meta.bytes == 4 * meta.elements
    assert meta.tensors["L_self_parameters_bias_"].data == (0.5, -0.25, 0.0, 1.0)
    assert sizes(meta.path) == (meta.elements, meta.bytes)  # the corpus's quick read of the same files


def test_weights_are_parameters_and_buffers_inputs_are_arguments(tmp_path):
    inst = sample_workload(linear_cuda(tmp_path / "s")).instantiate("tiny", None, "cpu")
    assert set(inst.params()) == {"L_self_parameters_weight_", "L_self_parameters_bias_"}
    assert set(inst.buffers()) == {"L_self_buffers_scale_"}
    assert [tuple(t.shape) for t in inst.inputs] == [(3, 5)]
    assert inst.params()["L_self_parameters_bias_"].tolist() == [0.5, -0.25, 0.0, 1.0]  # `data` where given
    assert inst.buffers()["L_self_buffers_scale_"].min() >= 0.75  # clamped to min_val


def test_a_graph_built_on_cuda_runs_on_the_cpu_and_computes_what_it_says(tmp_path):
    inst = resolve_workload(f"graphnet:{linear_cuda(tmp_path / 's')}").instantiate("tiny", None, "cpu")
    (out,) = inst.module(*inst.inputs)
    p, b = inst.params(), inst.buffers()
    x, w, bias, scale = (t.detach().double() for t in (inst.inputs[0], p["L_self_parameters_weight_"],
                                                          p["L_self_parameters_bias_"], b["L_self_buffers_scale_"]))
    expected = torch.tanh(x @ w.T + bias) * scale + torch.arange(4, dtype=torch.float64)
    assert out.device.type == "cpu"
    torch.testing.assert_close(out.double(), expected, rtol=1e-6, atol=1e-6)


def test_device_constants_follow_the_run(tmp_path):
    source = for_device((linear_cuda(tmp_path / "s") / "model.py").read_text(), torch.device("cpu"))
    assert "cuda" not in source and source.count("device('cpu')") == 2
    assert "'cuda:1'" in for_device('x.to("cuda:0")\ny = "cuda"\nz = "cudax"', torch.device("cuda:1"))
    assert for_device('y = "cuda"', torch.device("cpu")).strip() == "y = 'cpu'"


def test_floats_are_drawn_as_graphnets_replay_draws_them():
    """GraphNet's replay_tensor: normal(mean, std / 5), std 0.1 where none is recorded, clamped to the
    recorded range and to [-100, 100]."""
    from irlens.workloads.graphnet.meta import TensorMeta
    from irlens.workloads.graphnet.module import draw

    gen = torch.Generator().manual_seed(0)
    wide = draw(TensorMeta("w", (200_000,), torch.float32, mean=1.0, std=5.0), gen)
    assert abs(wide.mean().item() - 1.0) < 0.01 and abs(wide.std().item() - 1.0) < 0.01
    assert abs(draw(TensorMeta("u", (200_000,), torch.float32), gen).std().item() - 0.02) < 0.001
    far = draw(TensorMeta("f", (1000,), torch.float32, mean=300.0, std=1.0), gen)
    assert far.max().item() == 100.0
    var = draw(TensorMeta("running_var", (1000,), torch.float32, mean=0.0, std=10.0, min_val=0.0), gen)
    assert var.min().item() == 0.0


# torchaudio's squim_objective ends each branch so: a linear layer to one value, its bias of one element
ONE_ELEMENT_BIAS = '''import torch

class GraphModule(torch.nn.Module):
    def forward(self, L_x_: torch.Tensor, L_self_parameters_weight_: torch.nn.parameter.Parameter,
                L_self_parameters_bias_: torch.nn.parameter.Parameter, L_self_parameters_alpha_: torch.nn.parameter.Parameter):
        return (torch.prelu(torch._C._nn.linear(L_x_, L_self_parameters_weight_, L_self_parameters_bias_),
                            L_self_parameters_alpha_).squeeze(dim=1),)
'''


def test_a_one_element_weight_recorded_with_a_nan_std_is_drawn_as_its_mean(tmp_path):
    """Older captures record torch.std of a one-element tensor, NaN; drawn as is, every output is
    NaN and no stack's result can be compared. Its spread is none: the value is the mean."""
    meta = {"L_x_": ([3, 5], "torch.float32", {"mean": 0.0, "std": 1.0}),
            "L_self_parameters_weight_": ([1, 5], "torch.float32", {"mean": 0.0, "std": 0.5}),
            "L_self_parameters_bias_": ([1], "torch.float32", {"mean": 0.07, "std": math.nan}),
            "L_self_parameters_alpha_": ([1], "torch.float32", {"mean": 0.25, "std": math.nan})}
    inst = sample_workload(write_sample(tmp_path / "s", ONE_ELEMENT_BIAS, meta, source="torchaudio")).instantiate()
    m = inst.module
    assert m.L_self_parameters_bias_.item() == pytest.approx(0.07) and m.L_self_parameters_alpha_.item() == 0.25
    x = inst.inputs[0].double()
    z = x @ m.L_self_parameters_weight_.double().T + 0.07
    want = torch.where(z > 0, z, 0.25 * z).squeeze(1)
    with torch.no_grad():
        got = m(*inst.inputs)[0]
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=1e-6)


def test_int_inputs_are_drawn_in_their_range_and_get_no_gradient(tmp_path):
    inst = sample_workload(embedding_int(tmp_path / "e")).instantiate("tiny", None, "cpu")
    (ids,) = inst.inputs
    assert ids.dtype == torch.int64 and 3 <= int(ids.min()) and int(ids.max()) <= 9
    assert inst.grad_input_indices() == []
    assert set(inst.params()) == {"L_self_modules_emb_parameters_weight_"}


def test_a_sample_keeps_its_own_dtype(tmp_path):
    half = {n: (shape, "torch.float16" if dtype == "torch.float32" else dtype, extra)
            for n, (shape, dtype, extra) in EMBEDDING_META.items()}
    wl = sample_workload(write_sample(tmp_path / "h", (embedding_int(tmp_path / "e") / "model.py").read_text(), half))
    assert wl.dtype == "float16"


def casts(graph) -> list:
    """The `.to(dtype)` nodes of a generalized graph (the test samples' own graphs have none)."""
    return [n for n in graph.graph.nodes if n.op == "call_method" and n.target == "to"]


def test_a_half_run_casts_a_float32_table_before_its_matmul_as_graphnet_does(tmp_path):
    """In bfloat16 the graph's own float32 table meets a bfloat16 weight in a matmul, which fails as
    written; generalized, one `.to(bfloat16)` feeds the matmul (the table still built by the graph,
    not a constant of the rewrite), the LayerNorm weight GraphNet keeps
    stays float32, and the float64 copy (the reference) casts to float64 and computes what the
    graph says. In float32 and float64 the graph is the sample's own."""
    sample = table_f32(tmp_path / "t")
    wl = sample_workload(sample)
    half = wl.instantiate("tiny", "bfloat16", "cpu")
    p = half.params()
    assert p["L_self_modules_proj_parameters_weight_"].dtype == torch.bfloat16
    assert p["L_self_modules_ln_parameters_weight_"].dtype == torch.float32
    own = graph_class((sample / "model.py").read_text(), str(sample / "model.py"), "cpu")()
    with pytest.raises(RuntimeError, match="same dtype"):
        own(half.inputs[0], *p.values())
    (cast,) = casts(half.module.graph)
    assert cast.args[1] == torch.bfloat16 and [u.target for u in cast.users] == [torch.matmul]
    nodes = half.module.graph.graph.nodes
    assert torch.arange in {n.target for n in nodes} and "get_attr" not in {n.op for n in nodes}  # built, not folded
    (out,) = half.module(*half.inputs)
    assert out.dtype == torch.bfloat16

    ref = half.cast("float64")
    (cast,) = casts(ref.module.graph)
    assert cast.args[1] == torch.float64
    x, w, ln = (t.detach() for t in (ref.inputs[0], *ref.params().values()))
    position = torch.arange(6, dtype=torch.float32)  # the graph builds its table in float32 in any run
    table = torch.sin(position[:, None] * 0.5 + position[None, :4]).double()
    expected = torch.nn.functional.layer_norm(x + table @ w, (5,), ln)
    torch.testing.assert_close(ref.module(*ref.inputs)[0], expected, rtol=1e-12, atol=1e-12)
    for dtype in ("float32", "float64"):
        assert type(wl.instantiate("tiny", dtype, "cpu").module.graph) is type(own)


# a few bfloat16 roundings (2^-8 each) of float64, as a norm over the result
BFLOAT16_BOUND = 4 * 2.0 ** -8


def test_a_half_run_keeps_a_batch_norms_weights_float32_beside_its_statistics(tmp_path):
    """GraphNet keeps a BatchNorm's statistics float32 by their names (`running_mean`) and its weight
    and bias only where the module is called bn; timm names it `stem_modules_1`, and a bfloat16
    weight beside float32 statistics is a mix batch_norm refuses. They stay float32 with the
    statistics, the convolution's weight is cast, and the result is within bfloat16's rounding of
    float64."""
    half = sample_workload(conv_bn(tmp_path / "b")).instantiate("tiny", "bfloat16", "cpu")
    state = {**half.params(), **half.buffers()}
    assert {n for n, t in state.items() if t.dtype == torch.float32} == {n for n in state if "stem_modules_1" in n}
    assert state["L_self_modules_stem_modules_0_parameters_weight_"].dtype == torch.bfloat16
    assert not any(keeps_float32(n, t, torch.bfloat16) for n, t in state.items() if "_parameters_" in n)  # by name: cast
    (out,) = half.module(*half.inputs)
    assert out.dtype == torch.bfloat16

    ref = half.cast("float64")
    p, b = ref.params(), ref.buffers()
    conv = torch.nn.functional.conv2d(ref.inputs[0], p["L_self_modules_stem_modules_0_parameters_weight_"], padding=1)
    expected = torch.relu(torch.nn.functional.batch_norm(
        conv, b["L_self_modules_stem_modules_1_buffers_running_mean_"], b["L_self_modules_stem_modules_1_buffers_running_var_"],
        p["L_self_modules_stem_modules_1_parameters_weight_"], p["L_self_modules_stem_modules_1_parameters_bias_"],
        eps=1e-5)).detach()
    torch.testing.assert_close(ref.module(*ref.inputs)[0].detach(), expected, rtol=1e-12, atol=1e-12)
    assert rel_err(out, expected) <= BFLOAT16_BOUND


def test_a_half_run_casts_past_a_size_that_depends_on_values(tmp_path):
    """torch_geometric's GCN: the edges a boolean mask keeps have a size only values give (Dynamo's
    `torch._check_is_size` on it, which fx's tracing would test for truth), and float32 edge weights
    scale bfloat16 features into the second linear layer. A run on fake tensors stops at the mask;
    the one with values casts the float32 aggregate before that layer, as GraphNet's ShapeProp (a
    real run) finds it, and the result is within bfloat16's rounding of float64."""
    half = sample_workload(masked_edges(tmp_path / "g")).instantiate("tiny", "bfloat16", "cpu")
    (cast,) = casts(half.module.graph)
    assert cast.args[1] == torch.bfloat16 and [u.target for u in cast.users] == [torch._C._nn.linear]
    (out,) = half.module(*half.inputs)
    assert out.dtype == torch.bfloat16

    ref = half.cast("float64")
    x, edges = ref.inputs
    p = ref.params()
    kept = edges[:, edges[0] != edges[1]]
    h = x @ p["L_self_modules_lin_parameters_weight_"].T
    aggregated = torch.zeros(5, 4, dtype=torch.float64).index_add_(0, kept[1], h[kept[0]])
    expected = (aggregated @ p["L_self_modules_out_parameters_weight_"].T).detach()
    torch.testing.assert_close(ref.module(*ref.inputs)[0].detach(), expected, rtol=1e-12, atol=1e-12)
    assert rel_err(out, expected) <= BFLOAT16_BOUND


def test_a_float16_sample_in_bfloat16_casts_its_own_float16_mask(tmp_path):
    """A float16 sample (OPT's float16 capture) builds its causal mask in float16; in bfloat16 the
    attention gets it beside a bfloat16 query, which fails as written. The mask gets a
    `.to(bfloat16)` as a float32 one would (the float64 reference's, to float64), the result is
    within bfloat16's rounding of float64, and in its own dtype the sample runs its own graph."""
    sample = half_mask(tmp_path / "h")
    wl = sample_workload(sample)
    assert wl.dtype == "float16"
    half = wl.instantiate("tiny", "bfloat16", "cpu")
    (cast,) = casts(half.module.graph)
    assert cast.args[1] == torch.bfloat16
    assert [u.target for u in cast.users] == [torch._C._nn.scaled_dot_product_attention]
    (out,) = half.module(*half.inputs)
    assert out.dtype == torch.bfloat16

    ref = half.cast("float64")
    assert [c.args[1] for c in casts(ref.module.graph)] == [torch.float64]
    q, w = ref.inputs[0], ref.params()["L_self_modules_k_proj_parameters_weight_"]
    k = q @ w.T
    mask = torch.full((4, 4), -65504.0, dtype=torch.float64).triu(1)
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, k, attn_mask=mask).detach()
    torch.testing.assert_close(ref.module(*ref.inputs)[0].detach(), expected, rtol=1e-12, atol=1e-12)
    assert rel_err(out, expected) <= BFLOAT16_BOUND
    own = graph_class((sample / "model.py").read_text(), str(sample / "model.py"), "cpu")
    assert type(wl.instantiate("tiny", "float16", "cpu").module.graph) is own


@pytest.mark.slow
def test_compare_runs_a_generalized_sample_in_bfloat16_to_ok(tmp_path):
    """eager and Inductor on the CPU, fwd and fwd+bwd, in bfloat16: each ok against a float64 reference."""
    sample = table_f32(tmp_path / "t")
    out = tmp_path / "doc.json"
    assert main(["compare", "--workloads", f"graphnet:{sample}", "--backends", "eager,inductor", "--dtype", "bfloat16",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {(r["backend"], r["mode"], r["status"]) for r in rows} == {
        (b, m, "ok") for b in ("eager", "inductor") for m in ("fwd", "fwdbwd")}
    assert all(r["dtype"] == "bfloat16" and r.get("reference_fallback") is None for r in rows)
    assert all(math.isfinite(r["max_rel_err"]) for r in rows)


@pytest.mark.parametrize("break_it, words", [
    (lambda d: (d / "weight_meta.py").unlink(), "no weight_meta.py"),
    (lambda d: (d / "weight_meta.py").write_text(meta_text({**LINEAR_META, "L_x_": ([3, 5], "torch.float17", {})})),
     "unknown dtype 'torch.float17'"),
    (lambda d: (d / "weight_meta.py").write_text(meta_text({k: v for k, v in LINEAR_META.items() if k != "L_x_"})),
     "forward takes L_x_"),
    (lambda d: (d / "model.py").write_text("class Other:\n    pass\n"), "defines no class GraphModule"),
])
def test_a_malformed_sample_is_bad_input(tmp_path, capsys, break_it, words):
    sample = linear_cuda(tmp_path / "s")
    break_it(sample)
    with pytest.raises(BadSample, match=words.replace("(", r"\(")):
        sample_workload(sample)
    assert main(["compare", "--workloads", f"graphnet:{sample}", "--backends", "eager", "--mode", "fwd"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_a_folder_that_is_not_a_sample_is_bad_input(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    assert main(["compare", "--workloads", f"graphnet:{tmp_path / 'empty'}", "--mode", "fwd"]) == 2
    assert main(["graphnet", "--root", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    assert main(["graphnet", "--root", str(tmp_path / "nonesuch"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "not a GraphNet sample" in err[0] and "no GraphNet sample under it" in err[1]
    # another package's model.py below it (no graph_net.json beside) is no sample: the folder named is refused
    (tmp_path / "site" / "pkg").mkdir(parents=True)
    (tmp_path / "site" / "pkg" / "model.py").write_text("x = 1\n")
    assert main(["compare", "--workloads", f"graphnet:{tmp_path / 'site'}", "--mode", "fwd"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert f"{tmp_path / 'site'} is not a GraphNet sample" in line, line


def test_a_folder_of_samples_stands_for_each_of_them_in_a_list_and_is_refused_as_one(tmp_path, capsys):
    import json

    linear_cuda(tmp_path / "samples" / "timm" / "a")
    linear_cuda(tmp_path / "samples" / "timm" / "b")
    folder = tmp_path / "samples" / "timm"
    out = tmp_path / "doc.json"
    assert main(["compare", "--workloads", f"graphnet:{folder}", "--backends", "eager", "--mode", "fwd",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert sorted(r["workload"] for r in rows) == [f"graphnet:{(folder / n).resolve()}" for n in ("a", "b")]
    assert all(r["status"] == "ok" for r in rows)
    capsys.readouterr()
    assert main(["dump", f"graphnet:{folder}", "--frontend", "dynamo"]) == 2  # one workload asked for: the folder names its count
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a folder of 2 GraphNet samples" in err[0]


def test_a_samples_dump_files_are_named_by_its_source_and_name(tmp_path):
    """`irlens dump --out` of a sample writes one file per stage, named by source and name (its
    path, slashes and all, in the name made the files unwritable)."""
    sample = linear_cuda(tmp_path / "samples" / "timm" / "a")
    out = tmp_path / "dump"
    assert main(["dump", f"graphnet:{sample}", "--frontend", "dynamo", "--out", str(out)]) == 0
    written = sorted(os.listdir(out))
    assert written and all(name.startswith("timm_a.dynamo.") for name in written), written


def test_a_samples_reproducer_is_named_by_its_source_and_name_and_needs_no_clone(tmp_path, capsys):
    sample = linear_cuda(tmp_path / "samples" / "timm" / "a")
    out = tmp_path / "repro"
    assert main(["repro", f"graphnet:{sample}", "--backend", "eager", "--out", str(out), "--no-run"]) == 0
    (written,) = os.listdir(out)
    assert written == "timm_a-eager-fwd-float32.py"
    source = (out / written).read_text()
    code = source[source.index('"""', 3) + 3:]  # past the docstring, which says what made it
    assert str(tmp_path) not in code  # the graph and its tensors are in the file, not read from the sample


def corpus(root):
    """samples/timm/{a,b}, samples/transformers-auto-model/org/e, and one lacking its model's meta."""
    linear_cuda(root / "samples" / "timm" / "a")
    linear_cuda(root / "samples" / "timm" / "b")
    embedding_int(root / "samples" / "transformers-auto-model" / "org" / "e")
    gone = linear_cuda(root / "samples" / "timm" / "c")
    (gone / "weight_meta.py").unlink()
    return root


def test_selection_by_source_size_draw_and_shard(tmp_path, capsys):
    found = find_samples(corpus(tmp_path))
    assert {(s.path.name, s.source) for s in found} == {("a", "timm"), ("b", "timm"), ("c", "timm"),
                                                      ("e", "transformers-auto-model")}
    assert [s.problem for s in found if s.path.name == "c"] == ["missing from this copy: weight_meta.py"]
    cfg = GraphNetConfig(tmp_path)
    names = lambda **kw: [s.path.name for s in select(found, GraphNetConfig(tmp_path, **kw))]  # noqa: E731
    assert names(sources=["transformers-auto-model"]) == ["e"]
    assert names(max_elements=42) == ["c"]  # the linear ones hold 43 elements; c's size is not known
    assert names(max_elements=43) == ["a", "b", "c"]  # the embedding's: 12 + 80
    assert names(max_elements=100) == ["a", "b", "c", "e"]
    assert names(max_bytes=4 * 80 + 12 * 8 - 1) == ["a", "b", "c"]
    drawn = names(sample=2, seed=5)
    assert len(drawn) == 2 and drawn == names(sample=2, seed=5)
    assert sorted(names(shard=(0, 2)) + names(shard=(1, 2))) == names()
    assert select(found, cfg) == found
    assert main(["graphnet", "--root", str(tmp_path), "--sources", "nonesuch", "--out", str(tmp_path / "o")]) == 2
    assert "choose from: timm, transformers-auto-model" in capsys.readouterr().err


def test_a_corpus_run_keeps_a_row_for_every_sample(tmp_path):
    out = tmp_path / "out"
    status = main(["graphnet", "--root", str(corpus(tmp_path / "gn")), "--sources", "timm", "--backends", "eager",
                   "--mode", "fwd", "--out", str(out)])
    doc = json.loads((out / "graphnet.json").read_text())
    rows = {r["workload"].rsplit("/", 1)[-1]: r for r in doc["rows"]}
    assert status == 0  # a copy's missing files are not a failure of any stack
    assert rows["a"]["status"] == rows["b"]["status"] == "ok"
    assert rows["c"]["status"] == "unavailable" and "missing from this copy" in rows["c"]["reason"]
    page = (out / "graphnet.md").read_text()
    assert "| timm | eager | fwd | 2/2 (100 %) |" in page and "## Not run" in page


def test_compare_runs_a_sample_through_the_stacks_to_ok(tmp_path):
    """eager, Inductor and XLA (through the lowering of Dynamo's graphs) on the CPU, fwd and fwd+bwd:
    each ok against the float64 reference, and each row holds GraphNet's check against eager."""
    sample = linear_cuda(tmp_path / "s")
    out = tmp_path / "doc.json"
    assert main(["compare", "--workloads", f"graphnet:{sample}", "--backends", "eager,inductor,xla",
                 "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {(r["backend"], r["mode"], r["status"]) for r in rows} == {
        (b, m, "ok") for b in ("eager", "inductor", "xla") for m in ("fwd", "fwdbwd")}
    assert {r["backend"] for r in rows if r["mode"] == "fwdbwd" and "grad:L_self_parameters_weight_" in r["per_result"]} \
        == {"eager", "inductor", "xla"}
    levels = {r["backend"]: r["notes"]["graphnet_t"] for r in rows if r["mode"] == "fwd"}
    assert levels["eager"] == -10 and all(-10 <= t <= -4 for t in levels.values())
    assert all(math.isfinite(r["max_rel_err"]) for r in rows)


@pytest.mark.slow
def test_xla_lowers_a_softmax_over_a_graphs_edges_to_ok(tmp_path):
    """GAT's per-node maximum, a scatter_reduce_ (amax, without self) into zeros, through XLA's
    lowering of Dynamo's graphs, fwd and fwd+bwd: ok against the float64 reference, nodes without
    an edge keeping their zero."""
    sample = edge_softmax(tmp_path / "s")
    out = tmp_path / "doc.json"
    assert main(["compare", "--workloads", f"graphnet:{sample}", "--backends", "eager,xla", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert {(r["backend"], r["mode"], r["status"]) for r in rows} == {
        (b, m, "ok") for b in ("eager", "xla") for m in ("fwd", "fwdbwd")}
    assert all(not r["coverage"]["unknown"] for r in rows if r["backend"] == "xla")


def test_a_stopped_corpus_run_leaves_the_rows_that_finished(tmp_path, monkeypatch):
    """The document is written as rows finish (off the cells' threads), and once more when the run
    stops: a run stopped after its first row leaves that row beside the rows of the samples that
    could not run."""
    import irlens.graphnet.corpus
    from irlens.graphnet.corpus import run_corpus

    written = []
    real = irlens.graphnet.corpus.run_plan

    def stopped_after_a_row(plan, *args, on_row=None, **kwargs):
        def once(cell, row):
            on_row(cell, row)
            raise KeyboardInterrupt
        return real(plan, *args, on_row=once, **kwargs)

    monkeypatch.setattr(irlens.graphnet.corpus, "run_plan", stopped_after_a_row)
    cfg = GraphNetConfig(corpus(tmp_path / "gn"), sources=["timm"], backends=["eager"], modes=["fwd"])
    with pytest.raises(KeyboardInterrupt):
        run_corpus(cfg, progress=False, checkpoint=lambda doc: written.append(doc.rows))
    last = [(r.workload.rsplit("/", 1)[-1], r.status) for r in written[-1]]
    ran = [row for row in last if row[0] in ("a", "b")]
    assert len(ran) == 1 and ran[0][1] == "ok"
    assert ("c", "unavailable") in last
