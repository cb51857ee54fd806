"""Softmax and scaled dot-product attention (forward and backward): composites with rules."""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from irlens.core.ops.core import Attr, composite, decomposition, meaning
from irlens.core.ops.shapes import reduced, transpose_last2


# --- softmax ----------------------------------------------------------------------------------
softmax = composite("softmax", dim=Attr("int"))
log_softmax = composite("log_softmax", dim=Attr("int"))
meaning(softmax)(lambda a, x: torch.softmax(x, dim=a["dim"]))
meaning(log_softmax)(lambda a, x: torch.log_softmax(x, dim=a["dim"]))


def softmax_core(e, x: str, dim: int):
    """max-subtracted exp and its sum: the shared front half of softmax and log_softmax."""
    m = e.emit("amax", [x], dims=[dim], keepdim=True)
    shifted = e.emit("sub", [x, m])
    ex = e.emit("exp", [shifted])
    z = e.emit("sum", [ex], dims=[dim], keepdim=True)
    return m, shifted, ex, z


@decomposition(softmax)
def _softmax_rule(e, vals):
    out = e.out()
    _, _, ex, z = softmax_core(e, e.parent.inputs[0], e.attr("dim"))
    e.emit("div", [ex, z], oname=out.name)


@decomposition(log_softmax)
def _log_softmax_rule(e, vals):
    out, dim = e.out(), e.attr("dim")
    _, shifted, _, z = softmax_core(e, e.parent.inputs[0], dim)
    e.emit("sub", [shifted, e.emit("log", [z])], oname=out.name)


# --- backward composites of activations and softmax ----------------------------------------------
softmax_backward = composite("softmax_backward", "grad y", dim=Attr("int"), doc="y = softmax(x)")
log_softmax_backward = composite("log_softmax_backward", "grad y", dim=Attr("int"), doc="y = log_softmax(x)")
meaning(softmax_backward)(lambda a, g, y: y * (g - (g * y).sum(dim=a["dim"], keepdim=True)))
meaning(log_softmax_backward)(lambda a, g, y: g - torch.exp(y) * g.sum(dim=a["dim"], keepdim=True))


@decomposition(softmax_backward)
def _softmax_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out, dim = e.out(), e.attr("dim")
    s = e.emit("sum", [e.emit("mul", [g, y])], dims=[dim], keepdim=True)
    e.emit("mul", [y, e.emit("sub", [g, s])], oname=out.name)


@decomposition(log_softmax_backward)
def _log_softmax_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out, dim = e.out(), e.attr("dim")
    s = e.emit("sum", [g], dims=[dim], keepdim=True)
    e.emit("sub", [g, e.emit("mul", [e.emit("exp", [y]), s])], oname=out.name)


# --- attention --------------------------------------------------------------------------------
_ATTENTION = dict(is_causal=Attr("bool", False), scale=Attr("float", None), enable_gqa=Attr("bool", False))
sdpa = composite("sdpa", "q k v attn_mask?", outputs="out *extra", dropout_p=Attr("float", 0.0), **_ATTENTION,
                 doc="softmax(q k^T * scale + mask) v; a bool mask keeps where True. extra outputs: the "
                     "log-sum-exp of each score row (fused kernels keep it), then RNG/sequence bookkeeping")
sdpa_backward = composite("sdpa_backward", "grad_out q k v out? logsumexp? attn_mask?", outputs="dq dk dv *extra",
                          **_ATTENTION, doc="gradients of sdpa (no dropout) for q, k and v; a fourth output, "
                                            "where a kernel declares one, is an additive (float) mask's gradient "
                                            "in the mask's shape (memory-efficient attention's attn_bias)")


def _causal_keep(L: int, S: int, device) -> torch.Tensor:
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()


def _expand_kv(q, k, v, enable_gqa: bool):
    if enable_gqa and k.shape[-3] != q.shape[-3]:
        groups = q.shape[-3] // k.shape[-3]
        k, v = k.repeat_interleave(groups, dim=-3), v.repeat_interleave(groups, dim=-3)
    return k, v


@meaning(sdpa)
def _sdpa(a, q, k, v, mask=None):
    if a["dropout_p"] > 0:  # random: no log-sum-exp to give
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=a["dropout_p"],
                                              is_causal=a["is_causal"], scale=a["scale"], enable_gqa=a["enable_gqa"])
    k, v = _expand_kv(q, k, v, a["enable_gqa"])
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if a["is_causal"]:
        s = s.masked_fill(~_causal_keep(s.shape[-2], s.shape[-1], s.device), -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask
    lse = torch.logsumexp(s, dim=-1)
    return torch.matmul(torch.exp(s - lse[..., None]), v), lse


@meaning(sdpa_backward)
@torch.enable_grad()
def _sdpa_backward(a, go, q, k, v, out=None, lse=None, mask=None):
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    if mask is not None and mask.is_floating_point():  # a bias: the scores' gradient, summed to its shape
        mask = mask.detach().requires_grad_(True)
        leaves.append(mask)
    y, _ = _sdpa({**a, "dropout_p": 0.0}, *leaves[:3], mask)
    return tuple(torch.autograd.grad(y, leaves, go))


def _kv_for_queries(e, vals, q: str, kv: str) -> str:
    """k or v with each head repeated for its group of query heads (grouped-query attention)."""
    qm, km = vals[q], vals[kv]
    hq, hk = qm.shape[-3], km.shape[-3]
    if not e.attr("enable_gqa") or hq == hk:
        return kv
    lead, (S, D) = list(km.shape[:-3]), km.shape[-2:]
    split = lead + [hk, 1, S, D]
    wide = lead + [hk, hq // hk, S, D]
    one = e.emit("reshape", [kv], shape=split)
    rep = e.emit("broadcast", [one], shape=wide, broadcast_dims=list(range(len(wide))))
    return e.emit("reshape", [rep], shape=lead + [hq, S, D])


def _kv_grad(e, operands: list[str], shape, out) -> None:
    """The gradient of k or v (`out`): the product of `operands`, per query head (`shape`), with each
    group's heads summed where queries are grouped."""
    shape, declared = list(shape), list(out.shape)
    if shape == declared:
        e.emit("matmul", operands, oname=out.name)
        return
    lead, hk = declared[:-3], declared[-3]
    split = lead + [hk, shape[-3] // hk] + declared[-2:]
    per_group = e.emit("reshape", [e.emit("matmul", operands)], shape=split)
    e.emit("sum", [per_group], oname=out.name, dims=[len(lead) + 1], keepdim=False)


def _attention_scores(e, vals, q: str, k: str, mask):
    """Scaled, masked scores (the shared half of sdpa forward and backward)."""
    qm, km = vals[q], vals[k]
    dt = qm.dtype
    L, S = qm.shape[-2], km.shape[-2]
    ssh = list(qm.shape[:-1]) + [S]
    scale = e.attr("scale") if e.attr("scale") is not None else 1.0 / math.sqrt(qm.shape[-1])
    s = e.emit("mul", [e.emit("matmul", [q, transpose_last2(e, k)]), scale])
    if e.attr("is_causal"):
        rows = e.emit("iota", [], shape=[L, S], dim=0, dtype="int64")
        cols = e.emit("iota", [], shape=[L, S], dim=1, dtype="int64")
        s = e.emit("where", [e.emit("ge", [rows, cols]), s, -math.inf])
    if mask is not None and vals[mask].dtype == "bool":
        s = e.emit("where", [mask, s, -math.inf])
    elif mask is not None:  # an additive mask; one wider than the scores is added at its width, then rounded
        s = _as_dtype(e, e.emit("add", [_as_dtype(e, s, vals[mask].dtype), mask]), dt)
    return s, ssh, dt, scale


@decomposition(sdpa)
def _sdpa_rule(e, vals):
    if e.attr("dropout_p") > 0:
        raise NotImplementedError("sdpa with dropout has no rule (random)")
    q, k, v, mask = (list(e.parent.inputs) + [None])[:4]
    out = e.out()
    k, v = _kv_for_queries(e, vals, q, k), _kv_for_queries(e, vals, q, v)
    vals = {**vals, **e.values()}
    s, ssh, dt, _ = _attention_scores(e, vals, q, k, mask)
    dim = len(ssh) - 1
    m, _, ex, z = softmax_core(e, s, dim)
    e.emit("matmul", [e.emit("div", [ex, z]), v], oname=out.name)
    lse_out = e.out(1)
    if lse_out is not None:  # log-sum-exp of the scores, kept by fused attention for its backward
        # in the dtype the kernel keeps it (float32 beside half-precision scores)
        z, m = _as_dtype(e, z, lse_out.dtype), _as_dtype(e, m, lse_out.dtype)
        lse = e.emit("add", [e.emit("log", [z]), m])
        _lse_as_declared(e, lse, ssh[:-1], lse_out)
    for extra in e.parent.outputs[2:]:
        # RNG state and sequence bookkeeping (philox seed and offset, ...): zeros, as
        # `irlens.core.interpret.all_outputs` gives them; no canonical op reads them.
        e.emit("full", [], oname=extra.name, value=0, dtype=extra.dtype, shape=list(extra.shape))


def _as_dtype(e, x: str, want: str) -> str:
    """`x` converted to `want`: a fused kernel keeps the log-sum-exp in float32 beside
    half-precision scores, and an op of the two computes in float32, not in the scores' dtype."""
    return x if e.meta(x).dtype == want else e.emit("convert", [x], dtype=want)


def _lse_as_declared(e, lse: str, rows, lse_out) -> None:
    """The log-sum-exp (one value per score row, keepdim shape) in the shape the attention kernel
    declares for it. CUDA's memory-efficient kernel pads the rows of each head to a multiple of
    32, and fills the padding with +inf; without grad it keeps none (a last dim of 0)."""
    rows, declared = list(rows), list(lse_out.shape)
    kept = declared[-1] if declared else 0
    if declared[:-1] != rows[:-1] or kept == rows[-1]:
        e.emit("reshape", [lse], oname=lse_out.name, shape=declared)
    elif kept == 0:
        e.emit("full", [], oname=lse_out.name, value=0.0, dtype=lse_out.dtype, shape=declared)
    else:
        flat = e.emit("reshape", [lse], shape=rows)
        pad = rows[:-1] + [kept - rows[-1]]
        inf = e.emit("full", [], value=math.inf, dtype=lse_out.dtype, shape=pad)
        e.emit("concat", [flat, inf], oname=lse_out.name, dim=len(declared) - 1)


def _lse_rows(e, lse: str, lse_meta, ksh) -> str:
    """A saved log-sum-exp as one value per score row (keepdim shape `ksh`): the padding a fused
    kernel added past the last row is sliced off (see `_lse_as_declared`)."""
    shape, rows = list(lse_meta.shape), list(ksh[:-1])
    if len(shape) == len(rows) and shape[:-1] == rows[:-1] and shape[-1] > rows[-1]:
        lse = e.emit("slice", [lse], start=[0] * len(rows), limit=rows, step=[1] * len(rows))
    return e.emit("reshape", [lse], shape=list(ksh))


@decomposition(sdpa_backward)
def _sdpa_backward_rule(e, vals):
    go, q, k, v, o, lse, mask = (list(e.parent.inputs) + [None] * 7)[:7]
    dq_out, dk_out, dv_out = e.parent.outputs[:3]
    # grouped queries: k and v repeated for their query heads, their gradients summed back per group
    k, v = _kv_for_queries(e, vals, q, k), _kv_for_queries(e, vals, q, v)
    vals = {**vals, **e.values()}
    s, ssh, dt, scale = _attention_scores(e, vals, q, k, mask)
    dim = len(ssh) - 1
    if lse is not None:  # recompute the probabilities from the saved log-sum-exp, in its dtype
        ldt = vals[lse].dtype
        lse_k = _lse_rows(e, lse, vals[lse], reduced(ssh, [dim], True))
        shifted = e.emit("sub", [_as_dtype(e, s, ldt), lse_k])
        p = _as_dtype(e, e.emit("exp", [shifted]), dt)
    else:
        _, _, ex, z = softmax_core(e, s, dim)
        p = e.emit("div", [ex, z])
    _kv_grad(e, [transpose_last2(e, p), go], vals[v].shape, dv_out)
    dp = e.emit("matmul", [go, transpose_last2(e, v)])
    if o is None:
        o = e.emit("matmul", [p, v])
    last = len(vals[go].shape) - 1
    dsum = e.emit("sum", [e.emit("mul", [go, o])], dims=[last], keepdim=True)
    d_scores = e.emit("mul", [p, e.emit("sub", [dp, dsum])])  # also an additive mask's gradient
    ds = e.emit("mul", [d_scores, scale])
    e.emit("matmul", [ds, k], oname=dq_out.name)
    _kv_grad(e, [transpose_last2(e, ds), q], vals[k].shape, dk_out)
    extras = list(e.parent.outputs[3:])
    if extras and mask is not None and "float" in vals[mask].dtype:  # an additive mask, as the meaning takes it
        _sum_to_declared(e, d_scores, ssh, extras.pop(0))
    for extra in extras:  # a bool mask's gradient, where a kernel declares one: none flows
        e.emit("full", [], oname=extra.name, value=0, dtype=extra.dtype, shape=list(extra.shape))


def _sum_to_declared(e, x: str, shape, out) -> None:
    """`x` (of `shape`) summed over the dims `out` broadcasts along (a mask shared by the batch or
    the heads), as `out`."""
    declared = list(out.shape)
    lead = len(shape) - len(declared)
    dims = list(range(lead)) + [lead + i for i, n in enumerate(declared) if n == 1 and shape[lead + i] != 1]
    if dims:
        x = e.emit("sum", [x], dims=dims, keepdim=True)
    e.emit("reshape", [_as_dtype(e, x, out.dtype)], oname=out.name, shape=declared)
