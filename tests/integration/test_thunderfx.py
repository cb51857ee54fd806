"""Thunder where thunder.jit cannot trace: ThunderFX (Dynamo splits, Thunder takes the regions it
can, Inductor the rest), its split summary in dump, compare and the report, the capture option,
and the models thunder.jit fails on (tests/support/thunderfx_models.py: tiny random-weight transformers
and timm models, nothing downloaded)."""
from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import torch

from irlens.errors import NoNativePath, UsageError
from irlens.matrix.backend_run import run_backend
from irlens.frontends.thunder.capture import CAPTURE_ENV, capture, capture_as, chosen_capture
from irlens.workloads.workload import run_eager

MODELS = "tests/support/thunderfx_models.py"
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.fixture(autouse=True)
def default_capture(monkeypatch):
    """Each test starts from `auto`; whatever a test (or the CLI it calls) sets is undone after it."""
    monkeypatch.delenv(CAPTURE_ENV, raising=False)


def model(name: str):
    from irlens.workloads.builtin import resolve_workload

    return resolve_workload(f"{MODELS}:{name}")


def float64_results(inst, mode: str) -> dict:
    ref = inst.cast("float64")
    return run_eager(ref.module, ref, mode)


def assert_close_to_float64(results: dict, inst, mode: str, rtol: float = 1e-4) -> None:
    expected = float64_results(inst, mode)
    assert set(results) == set(expected)
    for name, want in expected.items():
        got = results[name]
        assert got is not None and want is not None, name
        err = (got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30)
        assert err < rtol, f"{name}: relative error {err:.1e}"


# --- the capture choice -----------------------------------------------------------------------

def _fails(message: str):
    def call(*_):
        raise RuntimeError(message)
    return call


def _inst(name="w", dtype="float32"):
    return SimpleNamespace(name=name, preset="tiny", dtype=dtype, device="cpu")


def test_auto_takes_jit_where_it_works_and_thunderfx_where_it_fails():
    assert chosen_capture() == "auto"
    assert capture(_inst(), "fwd", lambda: "jit", lambda why, _: why) == "jit"
    assert capture(_inst(), "fwd", _fails("no tracing here\nmore"), lambda why, _: why) == \
        "thunderfx (thunder.jit failed: RuntimeError: no tracing here (after 0 s))"


def test_a_forward_thunder_jit_failed_on_is_not_traced_again_for_its_backward():
    """fwd+bwd traces the same forward: where thunder.jit failed on it in this process, the fwd+bwd
    cell goes to ThunderFX at once and says so; another workload, or another dtype, tries again."""
    calls = []

    def jit():
        calls.append(1)
        raise RuntimeError("no tracing")

    inst = _inst("once")
    assert "no tracing" in capture(inst, "fwd", jit, lambda why, _: why) and len(calls) == 1
    why = capture(inst, "fwdbwd", jit, lambda why, _: why)
    assert len(calls) == 1 and why == ("thunderfx (thunder.jit failed: RuntimeError: no tracing, on its forward "
                                       "earlier in this process: not tried again)")
    capture(_inst("once", dtype="bfloat16"), "fwdbwd", jit, lambda why, _: why)
    capture(_inst("other"), "fwdbwd", jit, lambda why, _: why)
    assert len(calls) == 3
    with capture_as("jit"), pytest.raises(RuntimeError):  # asked for jit: always tried
        capture(inst, "fwdbwd", jit, lambda why, _: why)


def test_a_chosen_capture_takes_one_way_only():
    with capture_as("thunderfx"):
        assert capture(_inst(), "fwd", lambda: "jit", lambda why, _: why) == "thunderfx (asked for)"
    with capture_as("jit"), pytest.raises(RuntimeError, match="no tracing"):
        capture(_inst(), "fwd", _fails("no tracing"), lambda why, _: why)
    assert chosen_capture() == "auto"  # capture_as restores what was there


def test_thunder_that_cannot_run_at_all_is_no_native_path():
    with pytest.raises(NoNativePath, match=r"thunder.jit failed \(RuntimeError: one \(after 0 s\)\); ThunderFX failed too "
                                           r"\(RuntimeError: two\)"):
        capture(_inst(), "fwd", _fails("one"), _fails("two"))


def test_a_failure_dynamo_wraps_is_named_by_the_backend_s_own_error():
    from torch._dynamo.exc import BackendCompilerFailed

    def wrapped(*_):
        raise BackendCompilerFailed(lambda: None, TypeError("tree_flatten of type Tensor is not supported"), None)

    with pytest.raises(NoNativePath, match=r"ThunderFX failed too \(TypeError: tree_flatten of type Tensor"):
        capture(_inst(), "fwd", _fails("one"), wrapped)


def test_a_failure_without_a_message_says_where_it_was_raised():
    """Thunder's splitter fails on BLOOM's fwd+bwd with a bare `assert`: the row names its line."""
    from torch._dynamo.exc import BackendCompilerFailed

    def bare_assert():  # pytest rewrites a test file's asserts to carry messages: raise it bare
        raise AssertionError()

    try:
        bare_assert()
    except AssertionError as e:
        inner = e

    def wrapped(*_):
        raise BackendCompilerFailed(lambda: None, inner, None)

    with pytest.raises(NoNativePath, match=r"ThunderFX failed too \(AssertionError: no message, raised at "
                                           r".*test_thunderfx.py:\d+ \(raise AssertionError\(\)\)\)"):
        capture(_inst(), "fwd", _fails("one"), wrapped)


def test_a_bad_capture_is_a_usage_error(monkeypatch, capsys):
    from irlens import cli

    monkeypatch.setenv(CAPTURE_ENV, "sometimes")
    with pytest.raises(UsageError, match="choose from auto, jit, thunderfx"):
        chosen_capture()
    assert cli.main(["dump", "gelu", "--frontend", "thunder", "--thunder-capture", "bogus"]) == 2
    assert "unknown Thunder capture 'bogus'; choose from: auto, jit, thunderfx" in capsys.readouterr().err


# --- ThunderFX through the frontend ------------------------------------------------------------

@pytest.fixture(scope="module")
def erfcx_acquired():
    """erfcx_between acquired through ThunderFX (fwd): linear+sin, erfcx (Inductor's), scale."""
    from irlens.frontends import get_frontend

    inst = model("erfcx_between").instantiate()
    with capture_as("thunderfx"):
        return inst, get_frontend("thunder").acquire(inst, "fwd")


def test_the_split_names_regions_and_thunderfx_own_reasons(erfcx_acquired):
    _, acq = erfcx_acquired
    summary = acq.notes["thunderfx"]
    assert [(r["region"], r["taken_by"]) for r in summary["regions"]] == [
        ("g0.thunder_0", "thunder"), ("g0.inductor_1", "inductor"), ("g0.thunder_2", "thunder")]
    reasons = summary["regions"][1]["reasons"]
    assert reasons == ["missing_op_support: node with name: special_erfcx and target: <built-in function "
                       "special_erfcx> only has an automatic torch fallback in thunder."]
    assert acq.notes["capture"] == "thunderfx (asked for)"
    assert acq.notes["splits"].startswith("Thunder took 2 of 3 regions; 1 fell back to Inductor (missing_op_support")
    assert acq.default_stage == "thunderfx.splits"
    assert acq.parts == ["thunderfx.g0.thunder_0.trace[0]", "thunderfx.g0.inductor_1.fx", "thunderfx.g0.thunder_2.trace[0]"]
    assert "g0.inductor_1    inductor     1  missing_op_support" in acq.stage("thunderfx.splits").native_text


def test_each_region_has_its_common_view(erfcx_acquired):
    _, acq = erfcx_acquired
    fallback = acq.stage("thunderfx.g0.inductor_1.fx").common()
    assert [n.op for n in fallback.nodes] == ["erfcx"]
    first = [s for n, s in acq.stages.items() if n.startswith("thunderfx.g0.thunder_0.trace[")]
    last = [s for n, s in acq.stages.items() if n.startswith("thunderfx.g0.thunder_2.trace[")]
    assert {n.op for n in first[0].common().nodes} == {"linear", "sin"}
    assert {n.op for n in last[-1].common().nodes} == {"mul"}
    for stage in acq.stages.values():
        if stage.to_common is not None:
            assert not stage.common("primitive").unknown_ops(), stage.name


def test_a_thunderfx_acquisition_has_no_cross_grid_program(erfcx_acquired):
    from irlens.frontends.base import NoProgram
    from irlens.frontends.bindings import program_for

    inst, acq = erfcx_acquired
    with pytest.raises(NoProgram, match=r"ThunderFX split erfcx_between into 3 regions \(2 Thunder's, 1 Inductor's\)"):
        program_for(acq, inst)


def test_vmap_goes_to_inductor_with_irlens_reason():
    """ThunderFX's splitter fails on vmap's batched tensors; irlens hands those nodes to Inductor."""
    from irlens.frontends import get_frontend

    inst = model("vmap_between").instantiate()
    with capture_as("thunderfx"):
        acq = get_frontend("thunder").acquire(inst, "fwd")
    regions = acq.notes["thunderfx"]["regions"]
    assert [r["taken_by"] for r in regions] == ["thunder", "inductor", "thunder"]
    (reason,) = [x for x in regions[1]["reasons"] if x.startswith("irlens: inside vmap")]
    assert re.search(r"\[\d+ nodes?: ", reason), reason


def test_dump_shows_the_split_by_default(capsys, monkeypatch):
    from irlens import cli

    assert cli.main(["dump", f"{MODELS}:logcumsumexp_only", "--frontend", "thunder", "--thunder-capture",
                     "thunderfx"]) == 0
    out = capsys.readouterr().out
    assert "Thunder took no region: all 1 fell back to Inductor (missing_op_support: node with name: logcumsumexp" in out
    assert "g0.inductor_0    inductor     1" in out


# --- ThunderFX through the backends ------------------------------------------------------------

@pytest.fixture(scope="module")
def erfcx_run():
    from irlens.backends import get_backend

    inst = model("erfcx_between").instantiate()
    with capture_as("thunderfx"):
        return inst, run_backend(get_backend("thunder+torchcompile"), inst, "fwdbwd")


def test_thunderfx_backend_results_match_float64(erfcx_run):
    inst, run = erfcx_run
    assert_close_to_float64(run.results, inst, "fwdbwd")


def test_fallback_kernels_are_inductor_s_and_counted(erfcx_run):
    _, run = erfcx_run
    fallback = [k for k in run.kernels if k.backend == "inductor"]
    assert fallback and {k.stage for k in fallback} == {"thunderfx.g0.inductor_1.fx"}
    assert [k.name for k in fallback][0].startswith("g0.inductor_1/cpp_fused")
    # forward and backward modules of the fallback, and every torchcompile region's kernels, are launches
    region_names = run.notes["inductor_kernels"]
    assert region_names is not None, run.notes.get("inductor_note")
    assert run.launch_count() == (sum(len(v) for v in region_names.values())
                                  + len(run.notes["inductor_fallback_kernels"]["g0.inductor_1"]))
    assert len(run.notes["inductor_fallback_kernels"]["g0.inductor_1"]) >= 2  # forward and backward
    stages = {g.stage for g in run.graphs}
    assert "thunderfx.g0.inductor_1.fx" in stages and any(".backward[" in s for s in stages)
    from irlens.matrix.cell import kernel_coverage

    coverage = kernel_coverage(run.kernels, run.graphs)
    assert coverage.uncovered == [] and coverage.duplicates == [] and coverage.unknown == []


@pytest.mark.slow
def test_a_model_thunder_takes_nothing_of_is_an_ok_row():
    import irlens

    with capture_as("thunderfx"):
        doc = irlens.compare(f"{MODELS}:logcumsumexp_only", backends=["thunder+torchcompile"], modes=["fwd"])
    (row,) = doc["rows"]
    assert row["status"] == "ok", row["reason"]
    assert row["notes"]["splits"].startswith("Thunder took no region: all 1 fell back to Inductor (")
    assert row["kernel_count"] >= 1
    table = irlens.compare_table(doc)
    assert "thunder+torchcompile (logcumsumexp_only/fwd): capture: thunderfx (asked for); Thunder took no region" \
        in table


def test_the_report_has_a_regions_table():
    from irlens.matrix.document import Document
    from irlens.matrix.row import Row
    from irlens.reporting import build_report
    from irlens.reporting.markdown import render_markdown

    summary = {"graphs": 1, "graph_breaks": 0, "thunder_regions": 1, "inductor_regions": 1,
               "regions": [{"region": "g0.thunder_0", "taken_by": "thunder", "ops": 3},
                           {"region": "g0.inductor_1", "taken_by": "inductor", "ops": 1, "reasons": ["why not"]}]}
    row = Row("w", "fwd", "thunder+torchcompile", "thunder", status="ok", notes={
        "capture": "thunderfx (asked for)", "splits": "Thunder took 1 of 2 regions", "thunderfx": summary})
    text = render_markdown(build_report(Document("compare", [row], device="cpu")))
    assert "Regions: thunder+torchcompile" in text
    assert "| g0.inductor_1 | inductor | 1 | why not |" in text
    assert "capture: thunderfx (asked for); Thunder took 1 of 2 regions" in text


# --- the models thunder.jit fails on ------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
@pytest.mark.parametrize("workload", ["llama", "mamba"])
def test_a_transformers_model_goes_through_thunderfx(workload, mode):
    """thunder.jit cannot trace transformers 5 models; auto falls back to ThunderFX. Mamba's
    selective scan (vmap) goes to Inductor, with irlens' reason."""
    from irlens.backends import get_backend

    inst = model(workload).instantiate()
    run = run_backend(get_backend("thunder+torchcompile"), inst, mode)
    assert run.notes["capture"].startswith("thunderfx (thunder.jit failed: ")
    summary = run.notes["thunderfx"]
    assert summary["thunder_regions"] >= 1
    if workload == "mamba":
        assert any(reason.startswith("irlens: inside vmap") for r in summary["regions"] for reason in r.get("reasons", []))
    assert_close_to_float64(run.results, inst, mode, rtol=1e-3)


@pytest.mark.slow
@pytest.mark.slow
def test_a_timm_cnn_fwdbwd_splits_off_what_thunder_has_no_gradient_for():
    """thunder.jit with the torchcompile executor has no gradient for adaptive_avg_pool2d: the
    region holding it fails on its first call and is split again, that op going to Inductor."""
    from irlens.backends import get_backend

    inst = model("resnet").instantiate()
    run = run_backend(get_backend("thunder+torchcompile"), inst, "fwdbwd")
    summary = run.notes["thunderfx"]
    fallbacks = [r for r in summary["regions"] if r["taken_by"] == "inductor"]
    assert any("thunder.jit has no gradient for adaptive_avg_pool2d" in reason
               for r in fallbacks for reason in r["reasons"])
    assert all(r["ops"] == 1 for r in fallbacks if any("adaptive_avg_pool2d" in x for x in r["reasons"]))
    assert summary["thunder_regions"] >= 1
    assert_close_to_float64(run.results, inst, "fwdbwd", rtol=1e-3)
    assert torch.isfinite(run.results["loss"])


def test_buffers_a_failed_compilation_updated_are_put_back():
    """The Thunder region holding a train-mode BatchNorm runs before the region thunder.jit fails
    on (no gradient for adaptive_avg_pool2d); the compilation after it runs the step again.
    The statistics come back updated once, as eager's, and the module's state is untouched after
    the run (they were updated twice, num_batches_tracked 2)."""
    from irlens.backends import get_backend

    inst = model("batch_norm_then_no_gradient").instantiate()
    before = {n: b.clone() for n, b in inst.module.named_buffers()}
    with capture_as("thunderfx"):  # no thunder.jit first: its failure would keep the op from Thunder at once
        run = run_backend(get_backend("thunder+torchcompile"), inst, "fwdbwd")
    assert "no gradient for adaptive_avg_pool2d" in run.notes["splits"]
    assert run.results["buffer:bn.num_batches_tracked"].item() == 1
    expected = float64_results(inst, "fwdbwd")
    for name in ("buffer:bn.running_mean", "buffer:bn.running_var"):
        err = (run.results[name].double() - expected[name]).abs().max() / expected[name].abs().max()
        assert err < 1e-5, f"{name}: relative error {err:.1e}"
    assert all(torch.equal(b, before[n]) for n, b in inst.module.named_buffers())


def test_an_op_thunder_jit_has_no_gradient_for_is_kept_from_thunder_from_the_start():
    """Where thunder.jit of the whole module failed for want of an op's gradient, ThunderFX hides
    that op from the first compilation: no region fails on its first call, nothing compiles twice."""
    from irlens._compat import import_thunder
    from irlens.backends import get_backend
    from irlens.frontends.thunder.thunderfx import ThunderFX

    executors = get_backend("thunder+torchcompile").executors(import_thunder())  # the torchcompile executor first
    with pytest.raises(RuntimeError, match="gradient transform for bound symbol") as failed:
        failing = model("batch_norm_then_no_gradient").instantiate()
        run_eager(import_thunder().jit(failing.module, executors=executors), failing, "fwdbwd")
    inst = model("batch_norm_then_no_gradient").instantiate()
    fx = ThunderFX(inst.module, failed.value, executors=executors)
    results = fx.calls(lambda compiled: run_eager(compiled, inst, "fwdbwd"))()
    assert fx.compilations == 1
    reasons = [reason for region in fx.regions() for reason in region.reasons]
    assert any(r.startswith("irlens: thunder.jit has no gradient for adaptive_avg_pool2d") for r in reasons), reasons
    assert_close_to_float64(results, inst, "fwdbwd")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="upstream: Thunder 0.2.6 decomposes a padded max_pool2d that needs its gradient "
                                      "into a -inf pad and a one-hot convolution (0 x -inf = NaN) where torchcompile "
                                      "runs it; docs/results/repro-thunder-max-pool2d/")
def test_thunder_torchcompile_padded_max_pool2d_fwdbwd():
    from irlens.backends import get_backend

    inst = model("max_pool_padded").instantiate()
    run = run_backend(get_backend("thunder+torchcompile"), inst, "fwdbwd")
    assert_close_to_float64(run.results, inst, "fwdbwd")


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="upstream: Thunder 0.2.6's backward of an in-place activation of an intermediate "
                                      "(or division) reads its input after the in-place op overwrote it (timm's "
                                      "BatchNormAct2d with an in-place activation, transformers' Mixtral router); "
                                      "docs/results/repro-thunder-inplace-op/")
@pytest.mark.parametrize("workload", ["inplace_hardswish_gate", "inplace_router_normalize"])
def test_thunder_torchcompile_inplace_op_on_an_intermediate_fwdbwd(workload):
    from irlens.backends import get_backend

    inst = model(workload).instantiate()
    run = run_backend(get_backend("thunder+torchcompile"), inst, "fwdbwd")
    assert_close_to_float64(run.results, inst, "fwdbwd")


@pytest.mark.gpu
@pytest.mark.parametrize("workload", ["erfcx_between", "llama"])
def test_nvfuser_through_thunderfx(workload):
    """On CUDA the Thunder regions are nvFuser's (their segments as kernels) and the fallback
    regions Inductor's Triton kernels, all counted; results against float64."""
    from irlens.backends import get_backend

    inst = model(workload).instantiate(device="cuda")
    with capture_as("thunderfx"):
        run = run_backend(get_backend("nvfuser"), inst, "fwdbwd")
    assert run.unmapped is None, run.notes.get("kernel_mapping_traceback")
    assert_close_to_float64({k: v.cpu() for k, v in run.results.items()}, inst.cast("float32", "cpu"), "fwdbwd",
                            rtol=1e-3)
    fallback = [k for k in run.kernels if k.backend == "inductor"]
    assert fallback and all(k.stage.startswith("thunderfx.g0.inductor_") for k in fallback)
    assert any(k.name.split("/", 1)[1].startswith("triton_") for k in fallback)
    assert any(k.backend == "nvfuser" for k in run.kernels)
    assert run.launch_count() >= len([k for k in run.kernels if k.kind != "extern"])


def test_a_thunder_region_s_outputs_keep_dynamo_s_strides():
    """A Thunder region that returns another layout of the same values (nvFuser writing a
    transposed view's result contiguously) hands the next region the strides it was compiled for,
    values and gradients unchanged."""
    from irlens.frontends.thunder.thunderfx import _GuardedRegion

    def region_fn(x):
        return (x.transpose(1, 2) * 2,)

    region = torch.fx.symbolic_trace(region_fn)
    example = torch.randn(2, 3, 4)
    torch.fx.passes.shape_prop.ShapeProp(region).propagate(example)
    for node in region.graph.nodes:  # Dynamo records example values under this key
        if node.op == "call_function":
            node.meta["example_value"] = torch.empty_strided(node.meta["tensor_meta"].shape,
                                                             node.meta["tensor_meta"].stride)
    guarded = _GuardedRegion(lambda x: (region_fn(x)[0].contiguous(),), 0, region)
    x = torch.randn(2, 3, 4, requires_grad=True)
    (out,) = guarded(x)
    assert out.stride() == region_fn(x)[0].stride() != out.contiguous().stride()
    torch.testing.assert_close(out, region_fn(x)[0])
    out.sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0))


def test_an_expanded_region_output_keeps_its_zero_stride():
    """Dynamo recorded an expanded output (stride 0), the region wrote it in full: it comes back
    expanded, same values, and the gradient reaching the inputs is the same."""
    from irlens.frontends.thunder.thunderfx import restride

    x = torch.randn(2, 3, 1, requires_grad=True)
    full = (x * 2).expand(2, 3, 4).contiguous()
    out = restride(full, (3, 1, 0))
    assert out.stride() == (3, 1, 0)
    torch.testing.assert_close(out, full)
    (out * torch.arange(4.0)).sum().backward()
    torch.testing.assert_close(x.grad, torch.full_like(x, 2.0 * 6))


def test_a_thunder_region_s_one_bare_output_keeps_dynamo_s_strides():
    """A region of one output returns it bare, not in a tuple: it gets Dynamo's strides too (the
    pool's Inductor region asserted channels-last strides on Thunder's contiguous layer norm:
    `expected size 8==8, stride 25==1 at dim=1`, as CoAtNet's fwd+bwd on an H200)."""
    from irlens.backends import get_backend

    inst = model("layer_norm_2d_then_pool").instantiate()
    with capture_as("thunderfx"):
        run = run_backend(get_backend("thunder+torchcompile"), inst, "fwdbwd")
    summary = run.notes["thunderfx"]
    assert summary["thunder_regions"] >= 1 and summary["inductor_regions"] == 1
    assert_close_to_float64(run.results, inst, "fwdbwd")


@pytest.mark.slow
def test_a_fallback_regions_vmap_is_read_as_functorch_batches_it():
    """Mamba's selective scan runs under torch.vmap, which ThunderFX leaves to Inductor: the
    fallback region's common view expands it as Dynamo's own view does (96 unknown batch-dim ops
    before), and the row stays ok."""
    import irlens.matrix as cmp

    doc = cmp.run_matrix(["hf_mamba"], ["thunder+torchcompile"], ["fwd"], device="cpu", preset="tiny",
                         progress=False, isolate=False).to_json()
    (row,) = doc["rows"]
    assert row["status"] == "ok", row["reason"]
    assert row["coverage"] is not None and not row["coverage"]["unknown"], row["coverage"]["unknown"][:5]


def test_the_compile_marker_keeps_inductor_s_cache_key_picklable():
    """Inductor (torch 2.11) pickles its pre-grad custom pass into the FX graph cache key; the
    marker irlens puts there pickles as its uuid, or every compile would bypass the cache."""
    import pickle

    from irlens.frontends.thunder.thunderfx import _ModulesPerCompile

    modules = _ModulesPerCompile()
    marker = modules.patches()["pre_grad_custom_pass"]
    assert pickle.loads(pickle.dumps(marker)) == marker.uuid() == "irlens-compile-starts"
    modules.module("a")
    marker(None)
    modules.module("b")
    assert modules.groups == [["a"], ["b"]]
