"""Losses over class-index targets: cross-entropy and nll_loss (forward, backward), composites."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from irlens.core.ops.core import CLASS, Attr, IndexOf, composite, decomposition, meaning


# --- losses -------------------------------------------------------------------------------------
_LOSS = dict(reduction=Attr("str", "mean", choices=("none", "mean", "sum")), ignore_index=Attr("int", -100))
cross_entropy = composite("cross_entropy", "x target weight?", **_LOSS,
                          index_of={"target": IndexOf("x", CLASS, keep="ignore_index")},
                          doc="nll_loss(log_softmax(x, class dim), target): class indices, class dim 1 (0 if x is 1-d)")
TARGETS = {"target": IndexOf("logp", CLASS, keep="ignore_index")}  # class indices; ignore_index is none
nll_loss = composite("nll_loss", "logp target weight?", outputs="out total_weight?", **_LOSS, index_of=TARGETS,
                     doc="-weight[t] * logp[.., t, ..] at each target t (class dim 1, or 0 if 1-d), ignore_index "
                         "weighs 0; mean divides by total_weight, the targets' summed weight (0 when none)")
nll_loss_backward = composite("nll_loss_backward", "grad logp target weight? total_weight", **_LOSS, index_of=TARGETS,
                              doc="d nll_loss / d logp: -weight[t] * grad (/ total_weight for mean) at each target")
_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}


@meaning(cross_entropy)
def _cross_entropy(a, x, target, weight=None):
    return F.cross_entropy(x, target.long(), weight, ignore_index=a["ignore_index"], reduction=a["reduction"])


@meaning(nll_loss)
def _nll_loss(a, logp, target, weight=None):
    return torch.ops.aten.nll_loss_forward(logp, target.long(), weight, _REDUCTION_CODES[a["reduction"]],
                                           a["ignore_index"])


@meaning(nll_loss_backward)
def _nll_loss_backward(a, g, logp, target, weight=None, total_weight=None):
    # total_weight may be a count (Thunder sums the kept targets as int64); ATen takes logp's dtype
    return torch.ops.aten.nll_loss_backward(g, logp, target.long(), weight, _REDUCTION_CODES[a["reduction"]],
                                            a["ignore_index"], total_weight.to(logp.dtype))


def _class_dim(shape) -> int:
    return 0 if len(shape) == 1 else 1


def _picked(e, vals, logp: str, target: str, weight):
    """For each target: the index into the class dim (ignored ones: 0), as the class dim of an
    index shaped like logp with a 1 there, and the target's weight (0 where ignored)."""
    lm, tm = vals[logp], vals[target]
    cdim = _class_dim(lm.shape)
    keep = e.emit("ne", [target, e.attr("ignore_index")])
    safe = e.emit("where", [keep, target, 0])
    wide = list(tm.shape[:cdim]) + [1] + list(tm.shape[cdim:])
    index = e.emit("reshape", [safe], shape=wide)
    w = e.emit("take", [weight, safe], dim=0) if weight is not None else 1.0
    w = e.emit("where", [keep, w, 0.0], tm.shape, lm.dtype)  # stated: without a weight, literals give no dtype
    return cdim, index, wide, w


@decomposition(cross_entropy)
def _cross_entropy_rule(e, vals):
    x, target, weight = (list(e.parent.inputs) + [None])[:3]
    out, xm = e.out(), vals[x]
    logp = e.emit("log_softmax", [x], dim=_class_dim(xm.shape))
    e.emit("nll_loss", [logp, target, weight], oname=out.name, reduction=e.attr("reduction"),
           ignore_index=e.attr("ignore_index"))


@decomposition(nll_loss)
def _nll_loss_rule(e, vals):
    logp, target, weight = (list(e.parent.inputs) + [None])[:3]
    out, total_out = e.out(), e.out(1)
    tm = vals[target]
    cdim, index, wide, w = _picked(e, vals, logp, target, weight)
    picked = e.emit("reshape", [e.emit("gather", [logp, index], dim=cdim)], shape=list(tm.shape))
    losses = e.emit("neg", [e.emit("mul", [picked, w])])
    every = list(range(len(tm.shape)))
    reduction = e.attr("reduction")
    total = e.emit("sum", [w], oname=total_out.name if total_out is not None and reduction != "none" else None,
                   dims=every, keepdim=False)
    if reduction == "none":
        e.emit("copy", [losses], oname=out.name)
        if total_out is not None:
            e.emit("full", [], oname=total_out.name, shape=[], value=0.0, dtype=total_out.dtype)
        return
    summed = e.emit("sum", [losses], oname=out.name if reduction == "sum" else None, dims=every, keepdim=False)
    if reduction == "mean":
        e.emit("div", [summed, total], oname=out.name)


@decomposition(nll_loss_backward)
def _nll_loss_backward_rule(e, vals):
    g, logp, target, weight, total = (list(e.parent.inputs) + [None] * 5)[:5]
    out, lm = e.out(), vals[logp]
    cdim, index, wide, w = _picked(e, vals, logp, target, weight)
    reduction = e.attr("reduction")
    scale = e.emit("div", [g, total]) if reduction == "mean" else g
    grads = e.emit("reshape", [e.emit("neg", [e.emit("mul", [w, scale])])], shape=wide)
    zeros = e.emit("full", [], shape=list(lm.shape), value=0.0, dtype=lm.dtype)
    e.emit("scatter", [zeros, index, grads], oname=out.name, dim=cdim)
