"""An OpInfo sample as a plain function of its tensors, for the tests that trace OpInfo ops."""
from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten


def sample_function(op, sample) -> tuple:
    """(fn, slots, leaves): `fn(*tensors)` calls `op` on the sample with its tensors replaced in
    order and every other argument as the sample gives it; `slots` are the tensors' positions in
    the flattened (input, args, kwargs) `leaves` (position 0: the sample's input)."""
    leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
    slots = [k for k, v in enumerate(leaves) if isinstance(v, torch.Tensor)]

    def fn(*tensors):
        vals = list(leaves)
        for k, t in zip(slots, tensors):
            vals[k] = t
        inp, args, kwargs = tree_unflatten(vals, spec)
        return op(inp, *args, **kwargs)

    return fn, slots, leaves
