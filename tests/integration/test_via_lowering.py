"""A backend whose own frontend cannot take a workload (errors.NoNativePath: no JAX twin, Thunder
traces none of it) runs Dynamo's graphs through the common view's lowering instead: the row is
`xla (via dynamo)` in the table, the JSON, the report and the bench page, with the reason, and
`unavailable` naming what stops it (an op the lowering lacks, no lowering). Graph breaks do not:
each of Dynamo's graphs is lowered."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from irlens.backends import get_backend
from irlens.backends.base import Backend
from irlens.reporting.bench_page import format_bench_table
from irlens.errors import NoNativePath
from irlens.frontends.base import Availability
from irlens.matrix import Document, run_matrix
from irlens.matrix.row import Row
from irlens.matrix.table import format_table
from irlens.reporting import write_report
from irlens.workloads.workload import MODES, Workload


class Net(torch.nn.Module):
    """What a small CNN's graphs hold: convolution, max pooling with padding, adaptive pooling, linear."""

    def __init__(self):
        super().__init__()
        self.conv, self.head = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.Linear(4, 5)

    def forward(self, x):
        y = F.max_pool2d(torch.relu(self.conv(x)), 3, 2, 1)
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


def _breaks(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y * 2


NET = Workload.from_module("via_net", Net(), ((2, 3, 8, 8),))
BREAKS = Workload.from_module("via_breaks", _breaks, ((4,),))


class NoNativeBackend(Backend):
    """A backend whose frontend takes nothing, and which has no lowering to fall back on."""

    name, frontend, description = "test-no-native", "thunder", "test-only: no native path, no lowering"

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def compile(self, inst, mode: str):
        raise NoNativePath("its frontend cannot take this workload")


NO_NATIVE = NoNativeBackend()


def ref(name: str) -> str:
    return f"{__file__}:{name}"


def rows_of(doc: Document) -> dict:
    """The rows as `--json` writes them, by cell."""
    return {(r["workload"], r["backend"], r["mode"]): r for r in doc.to_json()["rows"]}


@pytest.fixture(scope="module")
def net_doc() -> Document:
    return run_matrix([ref("NET")], ["eager", "xla"], list(MODES), progress=False, isolate=False)


@pytest.mark.parametrize("mode", MODES)
def test_xla_runs_a_torch_only_workload_via_dynamo(net_doc, mode):
    row = rows_of(net_doc)["via_net", "xla", mode]
    assert row["status"] == "ok", f"{row['reason']}\n{row['detail']}"
    assert (row["via"], row["frontend"], row["level"]) == ("dynamo", "dynamo", "primitive")
    assert row["via_reason"] == "workload 'via_net' has no JAX twin"
    wanted = {"out0"} | ({"loss", "grad:input0", "grad:conv.weight", "grad:head.bias"} if mode == "fwdbwd" else set())
    assert wanted <= set(row["per_result"])
    # XLA's kernels, mapped onto the optimized HLO of the lowered Dynamo graphs, cover all of it
    stages = ["aot.forward:jax.hlo"] + (["aot.backward:jax.hlo"] if mode == "fwdbwd" else [])
    assert sorted(row["graphs"]) == sorted(stages)
    assert row["kernels"] and all(k["backend"] == "xla" and k["stage"] in stages for k in row["kernels"])
    assert row["coverage"]["uncovered"] == [] and row["coverage"]["unknown"] == []
    assert Row.from_json(row).label == "xla (via dynamo)"
    assert "via" not in rows_of(net_doc)["via_net", "eager", mode]  # written only where set


def test_the_table_report_and_bench_page_say_via(net_doc, tmp_path):
    doc = net_doc
    table = format_table(doc)
    assert "xla (via dynamo)" in table
    assert "xla (via dynamo) (2 cells): dynamo's graphs through the common view's lowering: workload has no JAX twin" \
        in table
    md = write_report(doc, tmp_path, frontends=False)[0]["md"].read_text()
    assert "| via_net | fwd | xla (via dynamo) | ok |" in md and "through the common view's lowering" in md
    bench = format_bench_table([r for r in doc.rows if r.backend == "xla"])
    assert "| via_net | fwd | float32 | xla (via dynamo) | ok |" in bench


def test_graph_breaks_lower_each_graph_and_say_how_many():
    """Each of Dynamo's graphs is lowered, the code between them run as Dynamo runs it
    (tests/test_graph_breaks.py has more)."""
    (row,) = run_matrix([ref("BREAKS")], ["xla"], ["fwd"], progress=False, isolate=False).to_json()["rows"]
    assert row["status"] == "ok" and row["via"] == "dynamo", f"{row['reason']}\n{row['detail']}"
    assert row["notes"]["dynamo_graphs"] == row["notes"]["lowered_graphs"] == 2
    assert sorted(row["graphs"]) == ["aot.forward:jax.hlo", "aot.forward[1]:jax.hlo"]


def test_an_op_the_lowering_lacks_is_named(monkeypatch):
    import irlens.backends.xla.lower as jax_lowering

    monkeypatch.setattr(jax_lowering, "SUPPORTED", jax_lowering.SUPPORTED - {"max_pool"})
    (row,) = run_matrix([ref("NET")], ["xla"], ["fwd"], progress=False, isolate=False).to_json()["rows"]
    assert row["status"] == "unavailable" and row["via"] == "dynamo"
    assert row["reason"] == "the jax lowering does not support: max_pool"


def test_a_backend_without_a_lowering_says_both_reasons():
    (row,) = run_matrix([ref("NET")], [ref("NO_NATIVE")], ["fwd"], progress=False, isolate=False).to_json()["rows"]
    assert row["status"] == "unavailable" and "via" not in row
    assert row["reason"] == ("its frontend cannot take this workload; test-no-native has no lowering of the "
                             "common view to run instead")


@pytest.mark.gpu
def test_nvfuser_runs_dynamos_graphs_where_thunder_cannot(monkeypatch):
    """nvFuser through the lowering (regions of the lowered Dynamo graphs) when Thunder takes nothing."""
    def no_thunder(inst, mode):
        raise NoNativePath("Thunder cannot trace it (simulated)")

    monkeypatch.setattr(get_backend("nvfuser"), "run", no_thunder)
    doc = run_matrix([ref("NET")], ["nvfuser"], list(MODES), device="cuda", progress=False, isolate=False)
    for row in doc.rows:
        assert row.status == "ok", f"{row.reason}\n{row.detail}"
        assert row.label == "nvfuser (via dynamo)" and row.kernels



def test_xla_lowering_converts_an_unchanged_argument_once_and_a_changed_one_again(monkeypatch):
    """An argument of the lowered graph that comes back unchanged from one call to the next (a weight,
    an input) keeps its JAX array from then on, so a timed step is XLA's, not irlens's conversions;
    one new each call (a backward's saved activations) is converted each time and not held; a
    tensor changed in place is new."""
    import numpy as np

    from irlens.backends.xla.lower import XlaLowered
    from irlens.frontends.jax.frontend import jax_device

    lowered = XlaLowered.__new__(XlaLowered)  # its arguments alone: no graph needed
    lowered.jax_device, lowered._arrays, lowered._seen = jax_device("cpu"), {}, set()
    converted = []
    original = XlaLowered._to_jax
    monkeypatch.setattr(XlaLowered, "_to_jax", lambda self, t: converted.append(t) or original(self, t))
    weight, ids = torch.randn(4, 3), torch.arange(5)
    activations = [torch.ones(2), torch.ones(2)]  # held: each call's own storage
    lowered._arguments([weight, ids, activations[0]])
    kept = lowered._arguments([weight.detach(), ids, activations[1]])  # a new tensor over the same storage: the same
    assert len(converted) == 6 and len(lowered._arrays) == 2
    again = lowered._arguments([weight, ids])
    assert len(converted) == 6 and again[0] is kept[0] and again[1] is kept[1]
    with torch.no_grad():
        weight.add_(1.0)
    changed = lowered._arguments([weight, ids])
    assert len(converted) == 7 and changed[1] is kept[1] and len(lowered._arrays) == 1  # not held until seen again
    np.testing.assert_allclose(np.asarray(changed[0]), weight.numpy())
    lowered._arguments([weight, ids])
    assert len(converted) == 8 and len(lowered._arrays) == 2


def test_xla_lowering_passes_a_lowered_graphs_output_on_as_its_array(monkeypatch):
    """A forward's output that its backward takes (a saved activation) is the forward's JAX array, not
    converted back; an output's array is held no longer than its tensor; one written in place since
    is converted."""
    from irlens.backends.xla import lower as xla_lower
    from irlens.backends.xla.lower import XlaLowered
    from irlens.frontends.jax.frontend import jax_device

    def lowered(fn):
        low = XlaLowered.__new__(XlaLowered)
        low.jax_device, low._arrays, low._seen, low.compiled = jax_device("cpu"), {}, set(), fn
        return low

    monkeypatch.setattr(xla_lower, "_PRODUCED", {})
    converted = []
    original = XlaLowered._to_jax
    monkeypatch.setattr(XlaLowered, "_to_jax", lambda self, t: converted.append(t) or original(self, t))
    forward = lowered(lambda x: (x * 2.0, x + 1.0))
    backward = lowered(lambda saved, cotangent: (saved * cotangent,))
    x = torch.arange(3.0)
    saved, unused = forward([x])
    assert len(converted) == 1 and len(xla_lower._PRODUCED) == 2
    (grad,) = backward([saved, torch.ones(3)])
    assert len(converted) == 2  # the cotangent alone
    torch.testing.assert_close(grad, x * 2.0)
    held = {xla_lower._key(t) for t in (unused, grad)}
    assert set(xla_lower._PRODUCED) == held  # the saved activation went to the backward
    del unused, grad
    assert xla_lower._PRODUCED == {}  # their tensors went: nothing held
    saved, _ = forward([x])
    saved.add_(1.0)
    (grad,) = backward([saved, torch.ones(3)])
    assert len(converted) == 5  # x once more (kept from its second call on), then the output written in place
    torch.testing.assert_close(grad, x * 2.0 + 1.0)


def test_xla_lowering_narrows_int64_arguments_only_where_they_fit():
    """Without JAX's 64-bit types an int64 argument becomes int32 with the same values; one holding a
    value outside int32 is an error, not a silently wrapped number."""
    import numpy as np

    from irlens.backends.xla.lower import LoweringDtypeError, XlaLowered
    from irlens.frontends.jax.frontend import jax_device

    lowered = XlaLowered.__new__(XlaLowered)
    lowered.jax_device = jax_device("cpu")
    ids = torch.tensor([[0, 5, 2**31 - 1], [-(2**31), 7, 3]])
    array = lowered._to_jax(ids)
    assert str(array.dtype) == "int32" and np.array_equal(np.asarray(array), ids.numpy())
    with pytest.raises(LoweringDtypeError, match="outside int32"):
        lowered._to_jax(torch.tensor([2**31]))
