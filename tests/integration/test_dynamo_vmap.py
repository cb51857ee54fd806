"""torch.vmap in Dynamo's FX graph (Mamba's scan left 72 `_add_batch_dim` /
`_remove_batch_dim` calls unknown): each vmap region is read as the ATen graph functorch's
batching rules make of it (irlens.frontends.dynamo.vmap), and computes what eager computes."""
from __future__ import annotations

import functools

import pytest
import torch

from irlens.frontends.bindings import run_program, stage_programs
from irlens.frontends import get_frontend
from irlens.core.interpret import interpret
from irlens.backends.lowering import LEVEL
from irlens.workloads.workload import Workload, run_eager


def _batched(x, y):
    """in_dims and out_dims other than 0, a reduction over a per-example dim, an indexed read."""
    inner = torch.vmap(lambda a, b: (a * b).sum(-1) + a.amax(0).sum() * b[:, 0], in_dims=(0, 1), out_dims=1)
    return inner(x, y).tanh()


def _nested(x):
    return torch.vmap(torch.vmap(lambda r: r.softmax(-1) * r[0]))(x) + x


WORKLOADS = {"batched": Workload.from_module("vmap_batched", _batched, ((3, 4, 5), (4, 3, 5))),
             "nested": Workload.from_module("vmap_nested", _nested, ((2, 3, 4),))}


@functools.cache
def acquired(name: str):
    inst = WORKLOADS[name].instantiate("tiny")
    return inst, get_frontend("dynamo").acquire(inst, "fwd")


@pytest.mark.parametrize("name", WORKLOADS)
def test_vmap_regions_are_read_as_their_batched_aten_ops(name):
    inst, acq = acquired(name)
    native = acq.stages["dynamo.fx"].native_text
    assert "_add_batch_dim" in native and "_remove_batch_dim" in native  # Dynamo's own graph keeps them
    graph = acq.stages["dynamo.fx"].common()
    assert not graph.unknown_ops(), dict(graph.unknown_ops())
    assert not any("batch_dim" in (n.native or "") for n in graph.nodes)
    wide = inst.cast("float64")
    program = stage_programs(acq, inst)["dynamo.fx"]
    got = run_program(program, wide, lambda step, xs: interpret(step.graph(LEVEL), xs))
    torch.testing.assert_close(got["out0"], run_eager(wide.module, wide, "fwd")["out0"])
