"""Max pooling through Thunder's traces (a Thunder-acquired ResNet executed by Inductor
or XLA was off by 0.515, `F.max_pool2d(x, 3, 2, 1)` alone NaN). Thunder decomposes max_pool2d by
padding with -inf and taking each window's elements with a one-hot convolution, where 0 * -inf is
NaN; it never runs that decomposition (its torch executor runs the function whole), so the
common view reads the symbol as torch's max pooling (`torch_fallback.KEPT_WHOLE`), and the
backward's `max_pool2d_with_indices_backward` as the ATen op its executor calls."""
from __future__ import annotations

import functools

import pytest
import torch
import torch.nn.functional as F

from irlens.frontends.bindings import program_for, run_program
from irlens.matrix.cross import cell
from irlens.frontends import get_frontend
from irlens.core.interpret import interpret
from irlens.backends.lowering import LEVEL
from irlens.matrix.references import compute_reference
from irlens.matrix.spec import CellSpec
from irlens.workloads.workload import Workload, run_eager

pytestmark = pytest.mark.skipif(not get_frontend("thunder").availability(), reason="lightning-thunder not importable")


def _pool(x):
    return F.max_pool2d(x, 3, 2, 1)


def _dilated(x):
    return F.max_pool2d(x, 3, 1, 1, dilation=2)


# all values below 0: windows over the padding must still give the largest element, not -inf or NaN
POOL = Workload.from_module("max_pool_thunder", _pool,
                            (-torch.rand(2, 3, 9, 9, generator=torch.Generator().manual_seed(0)) - 0.5,))
DILATED = Workload.from_module("max_pool_dilated", _dilated, ((1, 2, 9, 9),))
WORKLOADS = {"pool": POOL, "dilated": DILATED}


@functools.cache
def acquired(name: str, mode: str):
    inst = WORKLOADS[name].instantiate("tiny")
    return inst, get_frontend("thunder").acquire(inst, mode)


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_thunder_max_pool_is_torch_max_pooling_in_every_stage(mode):
    inst, acq = acquired("pool", mode)
    for stage in acq.stages.values():
        ops = {n.op for n in stage.common(LEVEL).all_nodes()}
        assert not any(op.startswith("unknown:") for op in ops), (stage.name, ops)
        assert "convolution" not in ops, stage.name  # Thunder's one-hot decomposition is not read
        assert ("max_pool_backward" if stage.backward else "max_pool") in ops, (stage.name, ops)
    # the program Thunder runs, interpreted in float64, computes what eager torch computes
    program = program_for(acq, inst)
    wide = inst.cast("float64")
    got = run_program(program, wide, lambda step, xs: interpret(step.graph(LEVEL), xs))
    want = run_eager(wide.module, wide, mode)
    for name, value in want.items():
        assert torch.isfinite(got[name]).all(), name
        torch.testing.assert_close(got[name], value, msg=name)


def test_thunder_max_pool_arguments_are_read_by_name():
    """Thunder's max_pool2d puts return_indices before ceil_mode, torch the reverse."""
    _, acq = acquired("dilated", "fwd")
    (node,) = [n for n in acq.stages["thunder.trace[0]"].common().nodes if n.op == "max_pool"]
    assert node.attrs["dilation"] == [2, 2] and node.attrs["stride"] == [1, 1] and node.attrs["ceil_mode"] is False


@pytest.mark.parametrize("mode", ["fwd", "fwdbwd"])
def test_thunder_max_pool_runs_on_xla(mode):
    ref = compute_reference(POOL, mode, "cpu", "tiny", None)
    row = cell(CellSpec(f"{__file__}:POOL", "xla", mode, frontend="thunder"), ref)
    assert row.status == "ok", f"{row.reason}\n{row.detail}"
    assert row.max_rel_err < 1e-6
