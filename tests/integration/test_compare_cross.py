"""The cross grid: graphs acquired by one frontend, lowered from the common view and executed by
another stack's backend, checked against the float64 reference (irlens.matrix.cross, irlens.backends.lowering)."""
from __future__ import annotations

import argparse
import functools
import json
import math

import pytest
import torch

from irlens.backends import get_backend
from irlens.cli.compare import run as cross_main
from irlens.matrix.cross import cell, format_grid, run_grid
from irlens.core.ir import Graph, Node, TensorMeta
from irlens.backends.lowering import Unsupported
from irlens.matrix import Document
from irlens.matrix.row import Row
from irlens.matrix.references import compute_reference
from irlens.matrix.spec import CellSpec
from irlens.workloads.builtin import get_workload
from irlens.workloads.workload import MODES
from tests.support.slow_cases import marked_slow


@functools.cache
def reference(workload: str, mode: str, device: str = "cpu"):
    return compute_reference(get_workload(workload), mode, device, "tiny", None)


def run(workload: str, acquired_by: str, executed_by: str, mode: str, device: str = "cpu") -> Row:
    return cell(CellSpec(workload, executed_by, mode, device=device, frontend=acquired_by),
                reference(workload, mode, device))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("acquired_by, executed_by, workload", marked_slow(
    [(*stacks, w) for stacks in [("jax", "inductor"), ("dynamo", "xla")] for w in ["gelu", "block"]],
    {("jax", "inductor", "block")}))
def test_graphs_of_one_stack_run_on_another_backend(acquired_by, executed_by, workload, mode):
    row = run(workload, acquired_by, executed_by, mode)
    assert row.status == "ok", f"{row.reason}\n{row.detail}"
    assert row.max_rel_err <= row.tol and row.level == "primitive"
    wanted = {"out0"} | ({"loss", "grad:input0"} if mode == "fwdbwd" else set())
    if workload == "block" and mode == "fwdbwd":
        wanted |= {"grad:qkv.weight", "grad:ln_2.bias", "grad:mlp_out.weight"}
    assert wanted <= set(row.results)
    # Dynamo's fwdbwd is two graphs, both lowered: the backward computes the gradients from the
    # forward's saved tensors; JAX's value_and_grad is one.
    stages = [g.stage for g in row.cross.lowered]
    assert stages == ({"dynamo": ["aot.forward", "aot.backward"], "jax": ["jax.grad"]}[acquired_by]
                      if mode == "fwdbwd" else {"dynamo": ["aot.forward"], "jax": ["jax.jaxpr"]}[acquired_by])
    assert row.kernel_count == len(row.kernels) >= 1 and row.run_us > 0
    backend = {"inductor": "inductor", "xla": "xla"}[executed_by]
    assert all(k.backend == backend and k.stage.split(":")[0] in stages for k in row.kernels)
    if executed_by == "inductor" and workload == "gelu" and mode == "fwd":
        assert row.kernel_count == 1 and row.kernels[0].kind == "fused"  # GELU fuses into one C++ loop


def test_wrong_numbers_are_a_mismatch():
    ref = reference("gelu", "fwd")
    skewed = type(ref)({k: v * 1.01 for k, v in ref.results.items()}, ref.state, ref.inputs)
    row = cell(CellSpec("gelu", "xla", frontend="dynamo"), skewed)
    assert row.status == "mismatch" and "out0: rel err" in row.reason


def test_an_unsupported_op_makes_the_cell_unavailable(monkeypatch):
    import irlens.backends.xla.lower as jax_lowering

    monkeypatch.setattr(jax_lowering, "SUPPORTED", jax_lowering.SUPPORTED - {"tanh"})
    row = run("gelu", "thunder", "xla", "fwd")
    assert row.status == "unavailable" and row.reason == "the jax lowering does not support: tanh"


def test_lowerings_name_every_op_they_lack():
    from irlens.backends.inductor import lower as fx
    from irlens.backends.xla import lower as jax

    x = TensorMeta("x", (4,), "float32")
    graph = Graph("g", "dynamo", "s", "primitive", [x],
                  [Node("n0", "unknown:aten.cummax", ["x"], [TensorMeta("a", (4,), "float32")]),
                   Node("n1", "sdpa_backward", ["a", "a", "a", "a"], [TensorMeta("b", (4,), "float32")])], ["b"])
    with pytest.raises(Unsupported, match="does not support: sdpa_backward, unknown:aten.cummax"):
        get_backend("xla").lower(graph, "cpu", "s")
    with pytest.raises(Unsupported, match="fx lowering does not support: unknown:aten.cummax$"):
        get_backend("inductor").lower(graph, "cpu", "s")
    assert {"matmul", "reshape", "broadcast", "where", "iota", "convert"} <= jax.SUPPORTED
    # the torch lowering takes every op the JAX lowering does but control flow (straight-line graphs only)
    assert jax.SUPPORTED - fx.SUPPORTED == {"while", "cond"}


def test_fx_lowering_keeps_the_graph_dtypes():
    from irlens.backends.inductor.lower import to_graph_module

    graph = Graph("g", "jax", "s", "primitive", [TensorMeta("x", (2, 3), "bfloat16")], [
        Node("n0", "div", [1.0, 3.0], [TensorMeta("c", (), "bfloat16")]),
        Node("n1", "mul", ["x", "c"], [TensorMeta("y", (2, 3), "bfloat16")]),
        Node("n2", "full", [], [TensorMeta("z", (2, 3), "float32")], {"shape": [2, 3], "value": 2.0, "dtype": "float32"}),
        Node("n3", "convert", ["y"], [TensorMeta("w", (2, 3), "float32")], {"dtype": "float32"}),
        Node("n4", "add", ["w", "z"], [TensorMeta("v", (2, 3), "float32")])], ["y", "v"])
    x = torch.randn(2, 3).bfloat16()
    y, v = to_graph_module(graph, "cpu")(x)
    assert (y.dtype, v.dtype) == (torch.bfloat16, torch.float32)
    torch.testing.assert_close(v, (x * torch.tensor(1 / 3, dtype=torch.bfloat16)).float() + 2.0)


@functools.cache
def grid() -> Document:
    """One isolated run: Dynamo's gelu graphs through Inductor and nvFuser (unavailable on a CPU)."""
    return run_grid(["gelu"], ["fwd"], acquired_by="dynamo", executed_by="inductor,nvfuser", timeout=240)


@pytest.mark.parametrize("workload", ["gelu", "block"])
def test_fx_lowering_computes_literals_on_the_target_device(workload):
    """JAX's fwd+bwd graph divides literals (the mean's cotangent, 1.0 / 512.0) and broadcasts the
    quotient: made on the CPU, it met CUDA tensors and Inductor's fake tensors refused the cell on
    the GPU. Lowered for the meta device, every value of the graph must be on it."""
    from irlens.frontends.bindings import program_for
    from irlens.frontends import get_frontend
    from irlens.backends.lowering import LEVEL
    from irlens.backends.inductor.lower import to_graph_module

    inst = get_workload(workload).instantiate("tiny", None, "cpu")
    graph = program_for(get_frontend("jax").acquire(inst, "fwdbwd"), inst).forward.graph(LEVEL)
    assert any(not n.value_inputs() for n in graph.nodes)  # the case: an op of literals only
    module = to_graph_module(graph, "meta")
    outputs = module(*[torch.empty(t.shape, dtype=getattr(torch, t.dtype), device="meta") for t in graph.inputs])
    assert {o.device.type for o in outputs if isinstance(o, torch.Tensor)} == {"meta"}


@pytest.mark.slow
def test_run_cross_isolated_document():
    doc = grid().to_json()  # the form `--json` writes
    assert doc["kind"] == "cross" and doc["acquired_by"] == ["dynamo"] and doc["executed_by"] == ["inductor", "nvfuser"]
    ok, nvfuser = doc["rows"]
    # a row in the form of every document's rows (from its worker, through that form too), its own record in "cross"
    assert (ok["frontend"], ok["backend"], ok["status"], ok["cross"]["native"]) == ("dynamo", "inductor", "ok", True)
    assert [g["stage"] for g in ok["cross"]["lowered"]] == ["aot.forward"] and ok["level"] == "primitive"
    assert not {"acquired_by", "executed_by", "native", "lowered", "bench"} & set(ok)
    if not torch.cuda.is_available():
        assert nvfuser["status"] == "unavailable" and "CUDA" in nvfuser["reason"]
    json.dumps(doc, allow_nan=False)
    text = format_grid(grid())
    assert "gelu fwd" in text and "ok*" in text


@pytest.mark.slow
def test_report_draws_the_grid(tmp_path):
    from irlens.reporting import write_report

    paths, _ = write_report([grid()], tmp_path, frontends=False)
    md = paths["md"].read_text()
    assert "Cross grid: gelu · fwd" in md and "| dynamo | ok * · err" in md
    assert "Cross grid" in paths["html"].read_text()


def test_cli_arguments_are_checked(capsys):
    args = argparse.Namespace(workloads=["no_such_workload"], modes=["fwd"], device="cpu", preset="tiny", dtype=None,
                              json=None, timeout=10.0, cross=True)
    assert cross_main(args) == 2
    assert "no_such_workload" in capsys.readouterr().err


@pytest.mark.gpu
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workload", ["gelu", "block"])
@pytest.mark.parametrize("acquired_by", ["dynamo", "thunder", "jax"])
def test_nvfuser_runs_every_frontends_graphs(acquired_by, workload, mode):
    row = run(workload, acquired_by, "nvfuser", mode, device="cuda")
    assert row.status == "ok", f"{row.reason}\n{row.detail}"
    assert any(k.backend == "nvfuser" and k.kind == "fused" and k.node_ids for k in row.kernels)


class _FakeNvFuser:
    """nvfuser_direct's FusionDefinition API as used by irlens.backends.thunder.lower, evaluated with torch
    ops on the CPU: it checks the lowering's regions, inputs/outputs and op arguments here; the
    real nvFuser is checked by the gpu tests."""

    DataType = type("DataType", (), {"Float": torch.float32, "Double": torch.float64, "Half": torch.float16,
                                     "BFloat16": torch.bfloat16, "Int": torch.int64, "Int32": torch.int32,
                                     "Bool": torch.bool})

    class Value:
        def __init__(self, fn):
            self.fn = fn  # inputs -> tensor or number

    IMPL = {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a / b,
        "pow": lambda a, b: a ** b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
        "maximum": lambda a, b: torch.maximum(torch.as_tensor(a), torch.as_tensor(b)),
        "bitwise_and": lambda a, b: a & b, "where": torch.where,
        "cast": lambda x, dtype: torch.as_tensor(x).to(dtype),
        "sum": lambda x, dims: x.sum(dims), "max": lambda x, dims: x.amax(dims), "min": lambda x, dims: x.amin(dims),
        "broadcast_in_dim": lambda x, shape, dims: x.reshape([x.shape[dims.index(d)] if d in dims else 1
                                                              for d in range(len(shape))]).expand(shape),
        "reshape": lambda x, shape: _FakeNvFuser.reshape(x, shape), "permute": lambda x, perm: x.permute(perm),
        "set": lambda x: x.clone(), "cat": lambda xs, dim: torch.cat(xs, dim), "matmul": torch.matmul,
        "slice": lambda x, start, end, strides: x[tuple(slice(s, e, st) for s, e, st in zip(start, end, strides))],
    }

    @staticmethod
    def reshape(x, shape):
        # nvFuser reshapes statically defined tensors to the sizes given: no inferred (-1) dims
        assert all(d >= 0 for d in shape) and x.numel() == math.prod(shape), (tuple(x.shape), shape)
        return x.reshape(shape)

    class FusionDefinition:
        def __init__(self):
            self.inputs, self.outputs, self.ops = [], [], self

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def define_tensor(self, sizes, strides, dtype, static_sizes=False, is_cpu=False):
            # the `sizes, strides` form: nvFuser derives contiguity (None for size-1 dims) itself
            i = len(self.inputs)
            self.inputs.append((list(sizes), list(strides), dtype))
            return _FakeNvFuser.Value(lambda xs: xs[i])

        def define_scalar(self, value, dtype):
            return _FakeNvFuser.Value(lambda xs: value)

        def add_output(self, value):
            self.outputs.append(value)

        def execute(self, inputs):
            # nvFuser binds each input to its definition: same sizes, strides and dtype
            assert [(list(x.shape), list(x.stride()), x.dtype) for x in inputs] == self.inputs
            return [torch.as_tensor(o.fn(inputs)) for o in self.outputs]

        def __getattr__(self, name):  # fd.ops.<name>
            impl = _FakeNvFuser.IMPL.get(name) or getattr(torch, name)

            def op(*args):
                def run(xs):
                    vals = [[v.fn(xs) for v in a] if isinstance(a, list) and a and isinstance(a[0], _FakeNvFuser.Value)
                            else a.fn(xs) if isinstance(a, _FakeNvFuser.Value) else a for a in args]
                    return impl(*vals)
                return _FakeNvFuser.Value(run)
            return op

    class PythonProfiler:
        profile = type("Profile", (), {"kernel_profiles": []})

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


@pytest.mark.parametrize("acquired_by, workload, mode", marked_slow(
    [(a, w, m) for m in MODES for w in ["gelu", "block"] for a in ["dynamo", "jax"]], {("dynamo", "block", "fwdbwd")}))
def test_nvfuser_lowering_regions_compute_the_graph(monkeypatch, acquired_by, workload, mode):
    """jax's graphs hold size-1 dims in region inputs (block) and literal-only nodes torch
    computes as 0-d CPU tensors (gelu fwdbwd): both reach nvFuser as inputs."""
    import irlens.backends.thunder.lower as nvfuser_lowering

    monkeypatch.setattr(nvfuser_lowering, "nvfuser_direct", lambda: _FakeNvFuser)
    monkeypatch.setattr(nvfuser_lowering, "check_device", lambda device: None)
    row = run(workload, acquired_by, "nvfuser", mode)
    assert row.status == "ok", f"{row.reason}\n{row.detail}"
    fused = [k for k in row.kernels if k.kind == "fused"]
    assert fused and all(k.name.startswith("nvFusion:") for k in fused)
    if workload == "gelu" and mode == "fwd":
        assert len(row.kernels) == 1  # the whole formula is one region


def test_nvfuser_lowering_sums_half_precision_in_float32(monkeypatch):
    """A bfloat16 sum (the block's LayerNorm means) is lowered as torch computes it, accumulated in
    float32 and rounded once: nvFuser's own sum of bfloat16 values fails its codegen (an internal
    assert on the zoo's CoAtNet, docs/results/zoo-h200-bench), and would round otherwise."""
    import irlens.backends.thunder.lower as nvfuser_lowering

    summed = []
    monkeypatch.setattr(nvfuser_lowering, "nvfuser_direct", lambda: _FakeNvFuser)
    monkeypatch.setattr(nvfuser_lowering, "check_device", lambda device: None)
    monkeypatch.setitem(_FakeNvFuser.IMPL, "sum", lambda x, dims: (summed.append(x.dtype), x.sum(dims))[1])
    row = cell(CellSpec("block", "nvfuser", dtype="bfloat16", frontend="dynamo"),
               compute_reference(get_workload("block"), "fwd", "cpu", "tiny", "bfloat16"))
    assert row.status == "ok", f"{row.reason}\n{row.detail}"
    assert summed and set(summed) == {torch.float32}


def test_nvfuser_lowering_skips_its_profiler_once_torch_profiler_holds_cupti(monkeypatch):
    """CUPTI takes one subscriber: nvFuser's profiler started after torch.profiler ends the process."""
    import irlens.backends.thunder.lower as nvfuser_lowering
    import irlens.runtime.timing as timing

    started = []

    class Refusing(_FakeNvFuser):
        class PythonProfiler(_FakeNvFuser.PythonProfiler):
            def __enter__(self):
                started.append(self)  # (an exception here would be taken for a failed profile)
                return self

    monkeypatch.setattr(nvfuser_lowering, "nvfuser_direct", lambda: Refusing)
    monkeypatch.setattr(nvfuser_lowering, "check_device", lambda device: None)
    monkeypatch.setattr(timing, "_CUPTI_TAKEN", True)
    row = run("gelu", "dynamo", "nvfuser", "fwd")
    assert row.status == "ok", f"{row.reason}\n{row.detail}"
    assert [k.kind for k in row.kernels] == ["fused"] and not started
