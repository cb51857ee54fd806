"""In-place calls in Dynamo's FX graph next to indexing (Mixtral's router `values /=
values.sum()` on topk's values and `inv_perm[perm] = arange` stayed unknown as updates "through a
view"). An item of a call's several results is a view only where that call gives views (chunk, not
topk), and x[index] only where the index is basic (a tensor index copies). Updates through a real
view stay unknown."""
from __future__ import annotations

import pytest
import torch

from irlens.frontends.bindings import run_program, stage_programs
from irlens.frontends import get_frontend
from irlens.core.interpret import interpret
from irlens.backends.lowering import LEVEL
from irlens.workloads.workload import Workload, run_eager


def _topk_values_scaled(x):
    values, indices = x.topk(2, dim=-1)
    values /= values.sum(-1, keepdim=True)
    return values, indices


def _scatter_by_setitem(x):
    perm = x.argsort(-1)
    inverse = torch.empty_like(perm)
    inverse[perm] = torch.arange(perm.size(0))
    return x[inverse] * 2


def _advanced_read_then_update(x):
    y = x.clone()
    z = y[torch.tensor([2, 0])]  # a copy: the update below does not reach it
    y += 1
    return z, y


def _chunk_updated(x):
    a, _ = x.clone().chunk(2)
    a /= 2  # a view of the clone: known only with what it shares
    return a


def _basic_view_updated(x):
    y = x.clone()
    z = y[1:]
    y += 1
    return z


FAITHFUL = {"topk": (_topk_values_scaled, (3, 5)), "setitem": (_scatter_by_setitem, (6,)),
            "advanced": (_advanced_read_then_update, (4, 3))}
THROUGH_VIEWS = {"chunk": (_chunk_updated, (4, 3)), "basic": (_basic_view_updated, (4, 3))}


def acquired(fn, shape):
    inst = Workload.from_module(fn.__name__.strip("_"), fn, (shape,)).instantiate("tiny")
    return inst, get_frontend("dynamo").acquire(inst, "fwd")


@pytest.mark.parametrize("name", FAITHFUL)
def test_in_place_updates_next_to_copies_are_known_and_faithful(name):
    inst, acq = acquired(*FAITHFUL[name])
    graph = acq.stages["dynamo.fx"].common()
    assert not graph.unknown_ops(), dict(graph.unknown_ops())
    wide = inst.cast("float64")
    got = run_program(stage_programs(acq, inst)["dynamo.fx"], wide, lambda step, xs: interpret(step.graph(LEVEL), xs))
    for key, value in run_eager(wide.module, wide, "fwd").items():
        torch.testing.assert_close(got[key].to(value.dtype), value, msg=key)


@pytest.mark.parametrize("name", THROUGH_VIEWS)
def test_updates_through_views_stay_unknown(name):
    _, acq = acquired(*THROUGH_VIEWS[name])
    nodes = [n for n in acq.stages["dynamo.fx"].common().nodes if n.is_unknown]
    assert nodes and all(n.attrs.get("adapter_error") == "in-place update through a view" for n in nodes)
