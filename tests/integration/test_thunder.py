"""The Thunder frontend and the trace adapter: stages and op multisets. (Faithfulness, every
common view run by the float64 interpreter, is in test_faithfulness.py.)"""
from __future__ import annotations

from collections import Counter

import pytest
import torch

from irlens.frontends import get_frontend
from irlens.frontends.base import FRONTENDS
from irlens.core.ir import Graph
from irlens.frontends.thunder.trace import trace_to_graph
from irlens.workloads.builtin import get_workload, workload_names
from irlens.workloads.workload import MODES

from tests.support.workload_cache import acquired as cached_acquisition
from tests.support.slow_cases import marked_slow

pytestmark = pytest.mark.skipif(not get_frontend("thunder").availability(), reason="lightning-thunder not importable")

GELU_FORMULA_OPS = Counter({"mul": 4, "pow": 1, "add": 2, "tanh": 1})
# The backward Thunder derives for the formula: d/dx x**3 is 3 * x**2 (a second pow), and
# d/dx tanh(u) is 1 - tanh(u)**2 (the sub and one more mul).
GELU_FORMULA_BACKWARD_OPS = Counter({"mul": 9, "pow": 1, "add": 2, "sub": 1})


def acquire(name: str, mode: str):
    return cached_acquisition(name, mode, "thunder")


def test_frontend_is_registered():
    frontend = get_frontend("thunder")
    assert FRONTENDS.get("thunder") is frontend
    assert frontend.default_stage("fwd") == "thunder.trace[0]"
    assert frontend.default_stage("fwdbwd") == "thunder.backward[0]"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", marked_slow(workload_names(), {"minigpt"}))
def test_every_stage_dumps(name, mode):
    acq = acquire(name, mode)
    assert acq.stages, "no stages"
    assert get_frontend("thunder").default_stage(mode) in acq.stages
    names = list(acq.stages)
    assert names[0] == "thunder.trace[0]" and "acquired" in acq.stages[names[0]].description
    forward = [s for s in acq.stages.values() if not s.backward]
    assert forward[-1].description.startswith("final execution trace")
    assert any(s.backward for s in acq.stages.values()) == (mode == "fwdbwd")
    for stage in acq.stages.values():
        assert stage.native_text.strip() and stage.description
        graph = stage.common()
        assert graph.stage == stage.name and graph.frontend == "thunder" and graph.level == "composite"
        assert graph.nodes and graph.inputs and graph.outputs
        assert Graph.from_json(graph.to_json()).to_json() == graph.to_json()
        assert stage.name in graph.to_text()
        # built-in workloads use only ops the tables know
        assert not graph.unknown_ops(), f"{stage.name}: {dict(graph.unknown_ops())}"
        defined = {t.name for t in graph.inputs} | {o.name for n in graph.nodes for o in n.outputs}
        assert all(v in defined for n in graph.nodes for v in n.value_inputs()), stage.name
        assert all(o in defined for o in graph.outputs), stage.name


@pytest.mark.parametrize("mode", MODES)
def test_gelu_formula_ops(mode):
    acq = acquire("gelu", mode)
    forward = [s for s in acq.stages.values() if not s.backward]
    assert forward[0].common().compute_op_counts() == GELU_FORMULA_OPS
    # the forward part keeps the formula through every trace; the grad transform's trace also
    # holds the backward, so it is the one exception in fwdbwd mode
    for stage in forward:
        if "Grad transform" not in stage.description:
            assert stage.common().compute_op_counts() == GELU_FORMULA_OPS, stage.name
    if mode == "fwdbwd":
        assert acq.stages["thunder.backward[0]"].common().compute_op_counts() == GELU_FORMULA_BACKWARD_OPS


def test_attention_keeps_sdpa():
    fwd = acquire("attention", "fwd")
    for stage in fwd.stages.values():
        assert stage.common().op_counts()["sdpa"] == 1, stage.name
    # With grad, Thunder's grad transform decomposes sdpa unless an executor claims it. The sdpa
    # executor runs on CUDA only, so on the CPU the split forward and the backward are matmuls.
    fwdbwd = acquire("attention", "fwdbwd")
    assert fwdbwd.stages["thunder.trace[0]"].common().op_counts()["sdpa"] == 1
    final_forward = [s for s in fwdbwd.stages.values() if not s.backward][-1].common().op_counts()
    assert final_forward["sdpa"] == 0 and final_forward["matmul"] == 2 and final_forward["softmax"] == 1
    backward = fwdbwd.stages["thunder.backward[0]"].common().op_counts()
    assert backward["sdpa_backward"] == 0 and backward["matmul"] == 4  # dV, dP, dQ, dK


@pytest.mark.gpu
def test_attention_sdpa_backward_on_cuda():
    inst = get_workload("attention").instantiate("tiny", device="cuda")
    acq = get_frontend("thunder").acquire(inst, "fwdbwd")
    final_forward = [s for s in acq.stages.values() if not s.backward][-1].common().op_counts()
    assert final_forward["sdpa"] == 1
    assert acq.stages["thunder.backward[0]"].common().op_counts()["sdpa_backward"] == 1


def test_unknown_op_is_kept():
    """A symbol no table entry maps and Thunder does not decompose stays unknown, with why;
    view(dtype) reinterprets bits (prims.bitcast): never a reshape."""
    from irlens._compat import import_thunder

    thunder = import_thunder()

    def fn(x):
        return torch.flip(torch.clamp(x, -1.0, 1.0), (0,)).view(torch.int32) * 2

    jfn = thunder.jit(fn)
    jfn(torch.randn(4, 3))
    for trace in (thunder.last_traces(jfn)[0], thunder.last_traces(jfn)[-1]):
        graph = trace_to_graph(trace, name="flip", stage="s")
        assert graph.op_counts() == Counter({"clamp": 1, "flip": 1, "unknown:prims.bitcast": 1, "mul": 1})
        (unknown,) = [n for n in graph.nodes if n.is_unknown]
        assert "bitcast" in unknown.attrs["reason"] and unknown.scope.endswith("view")
        assert graph.nodes[-1].inputs[1] == 2  # the scalar operand stays a literal
