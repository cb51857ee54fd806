"""Expansion by torch's own decompositions, for a call no converter maps: an ATen op by its entry
in `torch._decomp` (core-ATen table first), a torch function by tracing that one call down to
core ATen with the same table. The walk (fx.py) converts the traced graph in place of the call."""
from __future__ import annotations

import functools
from typing import Callable

import torch
import torch.fx as fx

from irlens.frontends.dynamo.meta import concrete, example_value
from irlens.frontends.dynamo.names import ATEN_NAMES, packet


@functools.cache
def _core_table() -> dict:
    """torch's core-ATen decompositions, less those of ops irlens names (they stay whole)."""
    from torch._decomp import core_aten_decompositions

    return {op: fn for op, fn in core_aten_decompositions().items()
            if not isinstance(op, torch._ops.OpOverload) or packet(op) not in ATEN_NAMES}


def decomposition_of(target) -> Callable | None:
    """The decomposition torch has for one OpOverload: the core-ATen table's, else the general one's,
    else irlens's own of an op torch does not decompose (decompositions.EXTRA);
    a custom op's (`torch.library.custom_op`, e.g. torch_nn's linear_cross_entropy kernels) is its
    own Python implementation, the function the op was defined by, unless it writes to an
    argument (that write is a side effect an expansion would not carry)."""
    from torch._decomp import core_aten_decompositions, decomposition_table
    from torch._library.custom_ops import _maybe_get_opdef

    from irlens.frontends.dynamo.decompositions import EXTRA

    own = core_aten_decompositions().get(target) or decomposition_table.get(target) or EXTRA.get(target)
    if own is None:
        opdef = _maybe_get_opdef(target)
        writes = any(a.alias_info is not None and a.alias_info.is_write for a in target._schema.arguments)
        own = opdef._init_fn if opdef is not None and not writes else None
    return own


def trace_call(node: fx.Node, mutates: bool) -> fx.GraphModule | None:
    """The call re-traced on its example values down to core ATen: an ATen op through its
    decomposition, a torch function through its own dispatch (functionalized; an in-place call
    gives the tensor it updated). None when it does not trace or does not decompose."""
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.utils._pytree import tree_flatten, tree_unflatten

    table = dict(_core_table())
    if isinstance(node.target, torch._ops.OpOverload):
        own = decomposition_of(node.target)
        if own is None:
            return None
        table[node.target] = own
    leaves, spec = tree_flatten((node.args, node.kwargs))
    values = [example_value(a) if isinstance(a, fx.Node) else a for a in leaves]
    slots = [i for i, v in enumerate(values) if isinstance(v, torch.Tensor)]
    for i, v in enumerate(values):
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            values[i] = concrete(v)
    if any(isinstance(values[i], fx.Node) for i in range(len(values))):
        return None
    target, method = node.target, node.op == "call_method"

    def call(*tensors):
        vals = list(values)
        for i, t in zip(slots, tensors):
            vals[i] = t
        args, kwargs = tree_unflatten(vals, spec)
        result = getattr(args[0], target)(*args[1:], **kwargs) if method else target(*args, **kwargs)
        return args[0] if mutates else result

    tensors = [values[i] for i in slots]
    mode = detect_fake_mode(tensors)
    if mode is None:
        mode = FakeTensorMode(allow_non_fake_inputs=True)
        tensors = [mode.from_tensor(t) for t in tensors]
    try:
        with mode:
            # decompositions run below functionalization and may write in place (through views):
            # the decomposed graph is traced once more, functionalized
            gm = make_fx(call, decomposition_table=table)(*tensors)
            gm = make_fx(torch.func.functionalize(gm, remove="mutations"))(*tensors)
    except Exception:  # noqa: BLE001  (a call that does not re-trace stays unknown)
        return None
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    if isinstance(node.target, torch._ops.OpOverload) and [n.target for n in calls] == [node.target]:
        return None
    return gm
