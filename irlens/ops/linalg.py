"""Contractions: matmul (torch.matmul broadcasting, or XLA's dot_general through attrs)."""
from __future__ import annotations

import math

import torch

from irlens.ops._torch import jnp, lax, widened
from irlens.ops.core import MATMUL, Attr, declare, lowering, meaning

matmul = declare("matmul", MATMUL, "a b", contract=Attr("any", None), batch=Attr("any", None),
                 doc="torch.matmul; with contract [[lhs dims], [rhs dims]] and batch [[lhs], [rhs]] a "
                     "dot_general: batch dims first, then lhs free dims, then rhs free dims")


def _matmul(a, x, y):
    if a["contract"] is None:
        return torch.matmul(x, y)
    (lc, rc), (lb, rb) = a["contract"], a["batch"] or [[], []]
    lfree = [d for d in range(x.dim()) if d not in lc and d not in lb]
    rfree = [d for d in range(y.dim()) if d not in rc and d not in rb]
    xp = x.permute([*lb, *lfree, *lc]).reshape(*[x.shape[d] for d in lb],
                                             math.prod([x.shape[d] for d in lfree]) if lfree else 1, -1)
    yp = y.permute([*rb, *rc, *rfree]).reshape(*[y.shape[d] for d in rb], -1,
                                             math.prod([y.shape[d] for d in rfree]) if rfree else 1)
    out = torch.matmul(xp, yp)
    return out.reshape([*[x.shape[d] for d in lb], *[x.shape[d] for d in lfree], *[y.shape[d] for d in rfree]])


meaning(matmul)(widened(_matmul, bools=True))  # torch has no bool or unsigned matmul


@lowering(matmul, "jax")
def _matmul_jax(a, x, y):
    if a["contract"] is None:
        return jnp().matmul(x, y)
    (lc, rc), (lb, rb) = a["contract"], a["batch"] or [[], []]
    return lax().dot_general(x, y, ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))


# nvFuser's matmul has no dot_general form: plain a[.., m, k] @ b[.., k, n] only
@lowering(matmul, "nvfuser", when=lambda node: node.attrs.get("contract") is None)
def _matmul_nvfuser(fd, nv, node, args, metas):
    return fd.ops.matmul(*args)
