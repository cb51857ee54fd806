"""Neural-network composites: kept whole at the composite level (as the frontends write them)
and expanded by their decomposition rule at the primitive level. Each meaning is the torch
function it stands for, or autograd of the forward meaning for a backward op; each rule is
checked against its meaning in float64 (tests/test_decompose.py)."""
from __future__ import annotations

import math
from typing import Callable

import torch
import torch.nn.functional as F

from irlens.ops.core import COMPOSITE, Attr, declare, decomposition, meaning
from irlens.ops.shapes import last_dims, numel, reduced

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_APPROXIMATE = Attr("str", "none", choices=("none", "tanh"))


def composite(name: str, operands: str = "x", *, outputs: str = "out", doc: str = "", **attrs: Attr):
    return declare(name, COMPOSITE, operands, outputs=outputs, doc=doc, **attrs)


def with_grad(fn: Callable, n_diff: int) -> Callable:
    """A backward op's meaning as autograd of its forward meaning `fn(a, *args)`: the gradients
    of the first n_diff args, for the cotangent g. Grad mode is on even where the caller runs
    the table under no_grad (a lowered graph does)."""
    @torch.enable_grad()
    def run(a, g, *args):
        leaves = [t.detach().requires_grad_(True) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                  for t in args]
        out = fn(a, *leaves)
        diff = [t for t in leaves[:n_diff] if isinstance(t, torch.Tensor) and t.requires_grad]
        return torch.autograd.grad(out, diff, g, allow_unused=True)
    return run


# --- activations ----------------------------------------------------------------------------
gelu = composite("gelu", approximate=_APPROXIMATE)
relu = composite("relu")
silu = composite("silu", doc="x * sigmoid(x)")


def _gelu(a, x):
    return F.gelu(x, approximate=a["approximate"])


meaning(gelu)(_gelu)
meaning(relu)(lambda a, x: torch.relu(x))
meaning(silu)(lambda a, x: F.silu(x))


@decomposition(gelu)
def _gelu_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    sh, dt = out.shape, out.dtype
    half_x = e.emit("mul", [x, 0.5], sh, dt)
    if e.attr("approximate") == "tanh":
        cube = e.emit("pow", [x, 3], sh, dt)
        inner = e.emit("add", [x, e.emit("mul", [cube, 0.044715], sh, dt)], sh, dt)
        t = e.emit("tanh", [e.emit("mul", [inner, _SQRT_2_OVER_PI], sh, dt)], sh, dt)
        e.emit("mul", [half_x, e.emit("add", [t, 1.0], sh, dt)], sh, dt, out.name)
    else:
        erf = e.emit("erf", [e.emit("mul", [x, _SQRT1_2], sh, dt)], sh, dt)
        e.emit("mul", [half_x, e.emit("add", [erf, 1.0], sh, dt)], sh, dt, out.name)


@decomposition(relu)
def _relu_rule(e, vals):
    out = e.out()
    e.emit("maximum", [e.parent.inputs[0], 0.0], out.shape, out.dtype, out.name)


@decomposition(silu)
def _silu_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    s = e.emit("sigmoid", [x], out.shape, out.dtype)
    e.emit("mul", [x, s], out.shape, out.dtype, out.name)


dropout = composite("dropout", outputs="y mask?", p=Attr("float", 0.5), training=Attr("bool", True),
                    doc="training and p > 0: x / (1 - p) where rand >= p, else 0 (random: no two runs "
                        "agree); otherwise the identity. mask: where x was kept")


def _random_dropout(a) -> bool:
    return a["training"] and a["p"] > 0


@meaning(dropout)
def _dropout(a, x):
    if not _random_dropout(a):
        return x.clone(), torch.ones_like(x, dtype=torch.bool)
    keep = torch.rand_like(x) >= a["p"]
    return torch.where(keep, x / (1 - a["p"]), torch.zeros_like(x)), keep


@decomposition(dropout)
def _dropout_rule(e, vals):
    x, out, mask = e.parent.inputs[0], e.out(), e.out(1)
    sh, dt = out.shape, out.dtype
    if not _random_dropout(e.attrs):
        e.emit("copy", [x], sh, dt, out.name)
        if mask is not None:
            e.emit("full", [], sh, "bool", mask.name, shape=list(sh), value=True, dtype="bool")
        return
    p = e.attr("p")
    r = e.emit("rand", [], sh, dt, shape=list(sh), dtype=dt, distribution="uniform")
    keep = e.emit("ge", [r, p], sh, "bool", mask.name if mask is not None else None)
    e.emit("where", [keep, e.emit("mul", [x, 1.0 / (1.0 - p)], sh, dt), 0.0], sh, dt, out.name)


# --- softmax ----------------------------------------------------------------------------------
softmax = composite("softmax", dim=Attr("int"))
log_softmax = composite("log_softmax", dim=Attr("int"))
meaning(softmax)(lambda a, x: torch.softmax(x, dim=a["dim"]))
meaning(log_softmax)(lambda a, x: torch.log_softmax(x, dim=a["dim"]))


def softmax_core(e, x: str, dim: int, sh, dt):
    """max-subtracted exp and its sum: the shared front half of softmax and log_softmax."""
    ksh = reduced(sh, [dim], True)
    m = e.emit("amax", [x], ksh, dt, dims=[dim], keepdim=True)
    shifted = e.emit("sub", [x, m], sh, dt)
    ex = e.emit("exp", [shifted], sh, dt)
    z = e.emit("sum", [ex], ksh, dt, dims=[dim], keepdim=True)
    return m, shifted, ex, z


@decomposition(softmax)
def _softmax_rule(e, vals):
    out = e.out()
    _, _, ex, z = softmax_core(e, e.parent.inputs[0], e.attr("dim"), out.shape, out.dtype)
    e.emit("div", [ex, z], out.shape, out.dtype, out.name)


@decomposition(log_softmax)
def _log_softmax_rule(e, vals):
    out, dim = e.out(), e.attr("dim")
    _, shifted, _, z = softmax_core(e, e.parent.inputs[0], dim, out.shape, out.dtype)
    lz = e.emit("log", [z], reduced(out.shape, [dim], True), out.dtype)
    e.emit("sub", [shifted, lz], out.shape, out.dtype, out.name)


# --- norms ------------------------------------------------------------------------------------
layer_norm = composite("layer_norm", "x weight? bias?", outputs="y mean? rstd?", normalized_ndim=Attr("int", 1),
                       eps=Attr("float", 1e-5), doc="over the last normalized_ndim dims; mean, rstd keep them as 1")
rms_norm = composite("rms_norm", "x weight?", outputs="y rstd?", normalized_ndim=Attr("int", 1),
                     eps=Attr("float", 1e-6), doc="x * rsqrt(mean(x^2) + eps) * weight")


@meaning(layer_norm)
def _layer_norm(a, x, w=None, b=None):
    dims = last_dims(x.shape, a["normalized_ndim"])
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    rstd = torch.rsqrt(var + a["eps"])
    y = (x - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


@meaning(rms_norm)
def _rms_norm(a, x, w=None):
    dims = last_dims(x.shape, a["normalized_ndim"])
    rstd = torch.rsqrt((x * x).mean(dim=dims, keepdim=True) + a["eps"])
    y = x * rstd
    return (y * w if w is not None else y), rstd


@decomposition(layer_norm)
def _layer_norm_rule(e, vals):
    x, w, b = (list(e.parent.inputs) + [None, None])[:3]
    out = e.out()
    sh, dt = out.shape, out.dtype
    dims = last_dims(sh, e.attr("normalized_ndim"))
    ksh, n = reduced(sh, dims, True), float(numel(sh, dims))
    mean_out, rstd_out = e.out(1), e.out(2)
    s = e.emit("sum", [x], ksh, dt, dims=dims, keepdim=True)
    mean = e.emit("div", [s, n], ksh, mean_out.dtype if mean_out else dt, mean_out.name if mean_out else None)
    xc = e.emit("sub", [x, mean], sh, dt)
    v = e.emit("div", [e.emit("sum", [e.emit("mul", [xc, xc], sh, dt)], ksh, dt, dims=dims, keepdim=True), n], ksh, dt)
    rstd = e.emit("rsqrt", [e.emit("add", [v, e.attr("eps")], ksh, dt)], ksh, dt, rstd_out.name if rstd_out else None)
    y = e.emit("mul", [xc, rstd], sh, dt, out.name if w is None and b is None else None)
    if w is not None:
        y = e.emit("mul", [y, w], sh, dt, out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, b], sh, dt, out.name)


@decomposition(rms_norm)
def _rms_norm_rule(e, vals):
    x, w = (list(e.parent.inputs) + [None])[:2]
    out, rstd_out = e.out(), e.out(1)
    sh, dt = out.shape, out.dtype
    dims = last_dims(sh, e.attr("normalized_ndim"))
    ksh = reduced(sh, dims, True)
    ms = e.emit("div", [e.emit("sum", [e.emit("mul", [x, x], sh, dt)], ksh, dt, dims=dims, keepdim=True),
                        float(numel(sh, dims))], ksh, dt)
    r = e.emit("rsqrt", [e.emit("add", [ms, e.attr("eps")], ksh, dt)], ksh, dt)
    y = e.emit("mul", [x, r], sh, dt, out.name if w is None else None)
    if w is not None:
        e.emit("mul", [y, w], sh, dt, out.name)
    if rstd_out is not None:
        e.emit("reshape", [r], rstd_out.shape, rstd_out.dtype, rstd_out.name, shape=list(rstd_out.shape))


layer_norm_backward = composite(
    "layer_norm_backward", "grad x mean rstd weight? bias?", outputs="*grads", normalized_ndim=Attr("int", 1),
    grads=Attr("any", None), doc="[dx, dweight, dbias], those that `grads` ([bool] * 3) asks for, in that order")


@meaning(layer_norm_backward)
def _layer_norm_backward(a, g, x, mean, rstd, w=None, b=None):
    """The analytic gradient from the saved statistics (the kernel's formula; the forward's eps
    is not an attr here, so autograd of the forward could not be taken)."""
    grads = a["grads"] or [True, w is not None, b is not None]
    dims = last_dims(x.shape, a["normalized_ndim"])
    batch = [d for d in range(x.dim()) if d not in dims]
    xhat = (x - mean) * rstd
    out = []
    if grads[0]:
        gw = g * w if w is not None else g
        out.append(rstd * (gw - gw.mean(dims, keepdim=True) - xhat * (gw * xhat).mean(dims, keepdim=True)))
    if len(grads) > 1 and grads[1]:
        out.append((g * xhat).sum(batch) if batch else g * xhat)
    if len(grads) > 2 and grads[2]:
        out.append(g.sum(batch) if batch else g.clone())
    return tuple(out)


@decomposition(layer_norm_backward)
def _layer_norm_backward_rule(e, vals):
    g, x, mean, rstd, w, _b = (list(e.parent.inputs) + [None] * 6)[:6]
    grads = e.attr("grads") or [True, w is not None, _b is not None]
    xm = vals[x]
    sh, dt = xm.shape, xm.dtype
    dims = last_dims(sh, e.attr("normalized_ndim"))
    batch_dims = [i for i in range(len(sh)) if i not in dims]
    ksh, n = reduced(sh, dims, True), float(numel(sh, dims))
    outs = iter(e.parent.outputs)
    xhat = e.emit("mul", [e.emit("sub", [x, mean], sh, dt), rstd], sh, dt)
    if grads[0]:
        dx_out = next(outs)
        gw = e.emit("mul", [g, w], sh, dt) if w is not None else g
        mean_g = e.emit("div", [e.emit("sum", [gw], ksh, dt, dims=dims, keepdim=True), n], ksh, dt)
        mean_gx = e.emit("div", [e.emit("sum", [e.emit("mul", [gw, xhat], sh, dt)], ksh, dt, dims=dims, keepdim=True),
                                 n], ksh, dt)
        inner = e.emit("sub", [e.emit("sub", [gw, mean_g], sh, dt), e.emit("mul", [xhat, mean_gx], sh, dt)], sh, dt)
        e.emit("mul", [inner, rstd], dx_out.shape, dx_out.dtype, dx_out.name)
    if len(grads) > 1 and grads[1]:
        dw_out = next(outs)
        e.emit("sum", [e.emit("mul", [g, xhat], sh, dt)], dw_out.shape, dw_out.dtype, dw_out.name,
               dims=batch_dims, keepdim=False)
    if len(grads) > 2 and grads[2]:
        db_out = next(outs)
        e.emit("sum", [g], db_out.shape, db_out.dtype, db_out.name, dims=batch_dims, keepdim=False)


# --- linear, embedding ------------------------------------------------------------------------
linear = composite("linear", "x weight bias?", doc="x @ weight^T + bias; weight is [out, in] as in torch")
meaning(linear)(lambda a, x, w, b=None: F.linear(x, w, b))


def transpose_last2(e, a: str, shape, dtype: str) -> str:
    nd = len(shape)
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    return e.emit("permute", [a], [shape[p] for p in perm], dtype, perm=perm)


@decomposition(linear)
def _linear_rule(e, vals):
    x, w, b = (list(e.parent.inputs) + [None])[:3]
    out = e.out()
    wt = transpose_last2(e, w, vals[w].shape, vals[w].dtype)
    y = e.emit("matmul", [x, wt], out.shape, out.dtype, out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, b], out.shape, out.dtype, out.name)


embedding = composite("embedding", "weight indices", doc="rows of weight at indices")
embedding_backward = composite(
    "embedding_backward", "grad indices", num_weights=Attr("int"), padding_idx=Attr("int", None),
    scale_grad_by_freq=Attr("bool", False),
    doc="grad's rows summed into [num_weights, dim] at indices; rows at padding_idx get none; "
        "scale_grad_by_freq divides each by how often its index occurs")
meaning(embedding)(lambda a, w, idx: F.embedding(idx.long(), w))


@meaning(embedding_backward)
def _embedding_backward(a, g, idx):
    idx = idx.long().reshape(-1)
    g = g.reshape(-1, g.shape[-1])
    if a["padding_idx"] is not None:
        g = torch.where((idx == a["padding_idx"])[:, None], torch.zeros_like(g), g)
    if a["scale_grad_by_freq"]:
        counts = torch.bincount(idx, minlength=a["num_weights"]).to(g.dtype)
        g = g / counts[idx][:, None]
    out = torch.zeros(a["num_weights"], g.shape[-1], dtype=g.dtype, device=g.device)
    return out.index_add(0, idx, g)


@decomposition(embedding)
def _embedding_rule(e, vals):
    w, idx = e.parent.inputs[:2]
    out = e.out()
    e.emit("take", [w, idx], out.shape, out.dtype, out.name, dim=0)


@decomposition(embedding_backward)
def _embedding_backward_rule(e, vals):
    g, idx = e.parent.inputs[:2]
    out = e.out()
    gm, im = vals[g], vals[idx]
    if e.attr("padding_idx") is not None:
        pad = e.emit("eq", [idx, e.attr("padding_idx")], im.shape, "bool")
        pad = e.emit("reshape", [pad], [*im.shape, 1], "bool", shape=[*im.shape, 1])
        g = e.emit("where", [pad, 0.0, g], gm.shape, gm.dtype)
    if e.attr("scale_grad_by_freq"):
        zeros = e.emit("full", [], [out.shape[0]], out.dtype, value=0.0, dtype=out.dtype, shape=[out.shape[0]])
        ones = e.emit("full", [], im.shape, out.dtype, value=1.0, dtype=out.dtype, shape=list(im.shape))
        counts = e.emit("index_add", [zeros, idx, ones], [out.shape[0]], out.dtype, dim=0)
        per_row = e.emit("take", [counts, idx], im.shape, out.dtype, dim=0)
        per_row = e.emit("reshape", [per_row], [*im.shape, 1], out.dtype, shape=[*im.shape, 1])
        g = e.emit("div", [g, per_row], gm.shape, gm.dtype)
    zeros = e.emit("full", [], out.shape, out.dtype, value=0.0, dtype=out.dtype, shape=list(out.shape))
    e.emit("index_add", [zeros, idx, g], out.shape, out.dtype, out.name, dim=0)


# --- masking ----------------------------------------------------------------------------------
tril = composite("tril", diagonal=Attr("int", 0), doc="x's lower triangle (last two dims), zeros above diagonal")
masked_fill = composite("masked_fill", "x mask value", doc="value where mask, else x")
meaning(tril)(lambda a, x: torch.tril(x, a["diagonal"]))
meaning(masked_fill)(lambda a, x, m, v: x.masked_fill(m, v))


@decomposition(tril)
def _tril_rule(e, vals):
    x, out = e.parent.inputs[0], e.out()
    L, S = out.shape[-2], out.shape[-1]
    rows = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=0, dtype="int64")
    cols = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=1, dtype="int64")
    shifted = e.emit("add", [rows, int(e.attr("diagonal"))], [L, S], "int64")
    keep = e.emit("ge", [shifted, cols], [L, S], "bool")
    e.emit("where", [keep, x, 0], out.shape, out.dtype, out.name)


@decomposition(masked_fill)
def _masked_fill_rule(e, vals):
    x, mask, value = e.parent.inputs[:3]
    out = e.out()
    e.emit("where", [mask, value, x], out.shape, out.dtype, out.name)


# --- attention --------------------------------------------------------------------------------
_ATTENTION = dict(is_causal=Attr("bool", False), scale=Attr("float", None), enable_gqa=Attr("bool", False))
sdpa = composite("sdpa", "q k v attn_mask?", outputs="out *extra", dropout_p=Attr("float", 0.0), **_ATTENTION,
                 doc="softmax(q k^T * scale + mask) v; a bool mask keeps where True. extra outputs: the "
                     "log-sum-exp of each score row (fused kernels keep it), then RNG/sequence bookkeeping")
sdpa_backward = composite("sdpa_backward", "grad_out q k v out? logsumexp? attn_mask?", outputs="dq dk dv *extra",
                          **_ATTENTION, doc="gradients of sdpa (no dropout) for q, k and v")


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
    y, _ = _sdpa({**a, "dropout_p": 0.0}, *leaves, mask)
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
    one = e.emit("reshape", [kv], split, km.dtype, shape=split)
    rep = e.emit("broadcast", [one], wide, km.dtype, shape=wide, broadcast_dims=list(range(len(wide))))
    return e.emit("reshape", [rep], lead + [hq, S, D], km.dtype, shape=lead + [hq, S, D])


def _attention_scores(e, vals, q: str, k: str, mask):
    """Scaled, masked scores (the shared half of sdpa forward and backward)."""
    qm, km = vals[q], vals[k]
    dt = qm.dtype
    L, S = qm.shape[-2], km.shape[-2]
    ssh = list(qm.shape[:-1]) + [S]
    scale = e.attr("scale") if e.attr("scale") is not None else 1.0 / math.sqrt(qm.shape[-1])
    kt = transpose_last2(e, k, km.shape, km.dtype)
    s = e.emit("mul", [e.emit("matmul", [q, kt], ssh, dt), scale], ssh, dt)
    if e.attr("is_causal"):
        rows = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=0, dtype="int64")
        cols = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=1, dtype="int64")
        keep = e.emit("ge", [rows, cols], [L, S], "bool")
        s = e.emit("where", [keep, s, -math.inf], ssh, dt)
    if mask is not None:
        s = (e.emit("where", [mask, s, -math.inf], ssh, dt) if vals[mask].dtype == "bool"
             else e.emit("add", [s, mask], ssh, dt))
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
    m, _, ex, z = softmax_core(e, s, dim, ssh, dt)
    p = e.emit("div", [ex, z], ssh, dt)
    e.emit("matmul", [p, v], out.shape, out.dtype, out.name)
    lse_out = e.out(1)
    if lse_out is not None:  # log-sum-exp of the scores, kept by fused attention for its backward
        lse = e.emit("add", [e.emit("log", [z], reduced(ssh, [dim], True), dt), m], reduced(ssh, [dim], True),
                     lse_out.dtype)
        _lse_as_declared(e, lse, ssh[:-1], lse_out)
    for extra in e.parent.outputs[2:]:
        # RNG state and sequence bookkeeping (philox seed and offset, ...): zeros, as
        # `irlens.interpret.all_outputs` gives them; no canonical op reads them.
        e.emit("full", [], extra.shape, extra.dtype, extra.name, value=0, dtype=extra.dtype, shape=list(extra.shape))


def _lse_as_declared(e, lse: str, rows, lse_out) -> None:
    """The log-sum-exp (one value per score row, keepdim shape) in the shape the attention kernel
    declares for it. CUDA's memory-efficient kernel pads the rows of each head to a multiple of
    32, and fills the padding with +inf; without grad it keeps none (a last dim of 0)."""
    rows, declared = list(rows), list(lse_out.shape)
    kept = declared[-1] if declared else 0
    if declared[:-1] != rows[:-1] or kept == rows[-1]:
        e.emit("reshape", [lse], declared, lse_out.dtype, lse_out.name, shape=declared)
    elif kept == 0:
        e.emit("full", [], declared, lse_out.dtype, lse_out.name, value=0.0, dtype=lse_out.dtype, shape=declared)
    else:
        flat = e.emit("reshape", [lse], rows, lse_out.dtype, shape=rows)
        pad = rows[:-1] + [kept - rows[-1]]
        inf = e.emit("full", [], pad, lse_out.dtype, value=math.inf, dtype=lse_out.dtype, shape=pad)
        e.emit("concat", [flat, inf], declared, lse_out.dtype, lse_out.name, dim=len(declared) - 1)


def _lse_rows(e, lse: str, lse_meta, ksh) -> str:
    """A saved log-sum-exp as one value per score row (keepdim shape `ksh`): the padding a fused
    kernel added past the last row is sliced off (see `_lse_as_declared`)."""
    shape, rows = list(lse_meta.shape), list(ksh[:-1])
    if len(shape) == len(rows) and shape[:-1] == rows[:-1] and shape[-1] > rows[-1]:
        lse = e.emit("slice", [lse], rows, lse_meta.dtype, start=[0] * len(rows), limit=rows, step=[1] * len(rows))
    return e.emit("reshape", [lse], ksh, lse_meta.dtype, shape=list(ksh))


@decomposition(sdpa_backward)
def _sdpa_backward_rule(e, vals):
    go, q, k, v, o, lse, mask = (list(e.parent.inputs) + [None] * 7)[:7]
    dq_out, dk_out, dv_out = e.parent.outputs[:3]
    if e.attr("enable_gqa") and vals[k].shape[-3] != vals[q].shape[-3]:
        raise NotImplementedError("grouped-query sdpa_backward has no rule")
    s, ssh, dt, scale = _attention_scores(e, vals, q, k, mask)
    dim = len(ssh) - 1
    if lse is not None:  # recompute the probabilities from the saved log-sum-exp
        lse_k = _lse_rows(e, lse, vals[lse], reduced(ssh, [dim], True))
        p = e.emit("exp", [e.emit("sub", [s, lse_k], ssh, dt)], ssh, dt)
    else:
        _, _, ex, z = softmax_core(e, s, dim, ssh, dt)
        p = e.emit("div", [ex, z], ssh, dt)
    e.emit("matmul", [transpose_last2(e, p, ssh, dt), go], dv_out.shape, dv_out.dtype, dv_out.name)
    dp = e.emit("matmul", [go, transpose_last2(e, v, vals[v].shape, vals[v].dtype)], ssh, dt)
    if o is None:
        o = e.emit("matmul", [p, v], vals[go].shape, dt)
    osh = vals[go].shape
    dsum = e.emit("sum", [e.emit("mul", [go, o], osh, dt)], reduced(osh, [len(osh) - 1], True), dt,
                  dims=[len(osh) - 1], keepdim=True)
    ds = e.emit("mul", [e.emit("mul", [p, e.emit("sub", [dp, dsum], ssh, dt)], ssh, dt), scale], ssh, dt)
    e.emit("matmul", [ds, k], dq_out.shape, dq_out.dtype, dq_out.name)
    e.emit("matmul", [transpose_last2(e, ds, ssh, dt), q], dk_out.shape, dk_out.dtype, dk_out.name)
    for extra in e.parent.outputs[3:]:  # a mask's gradient, where a kernel declares one: none flows
        e.emit("full", [], extra.shape, extra.dtype, extra.name, value=0, dtype=extra.dtype, shape=list(extra.shape))


# --- backward composites of activations and softmax ----------------------------------------------
gelu_backward = composite("gelu_backward", "grad x", approximate=_APPROXIMATE)
silu_backward = composite("silu_backward", "grad x")
tanh_backward = composite("tanh_backward", "grad y", doc="grad * (1 - y^2), y = tanh(x)")
sigmoid_backward = composite("sigmoid_backward", "grad y", doc="grad * y * (1 - y), y = sigmoid(x)")
threshold_backward = composite("threshold_backward", "grad x", threshold=Attr("float", 0.0),
                               doc="0 where x <= threshold, else grad")
softmax_backward = composite("softmax_backward", "grad y", dim=Attr("int"), doc="y = softmax(x)")
log_softmax_backward = composite("log_softmax_backward", "grad y", dim=Attr("int"), doc="y = log_softmax(x)")

meaning(gelu_backward)(with_grad(_gelu, 1))
meaning(silu_backward)(with_grad(lambda a, x: F.silu(x), 1))
meaning(tanh_backward)(lambda a, g, y: g * (1 - y * y))
meaning(sigmoid_backward)(lambda a, g, y: g * y * (1 - y))
meaning(threshold_backward)(lambda a, g, x: torch.where(x <= a["threshold"], torch.zeros_like(g), g))
meaning(softmax_backward)(lambda a, g, y: y * (g - (g * y).sum(dim=a["dim"], keepdim=True)))
meaning(log_softmax_backward)(lambda a, g, y: g - torch.exp(y) * g.sum(dim=a["dim"], keepdim=True))


@decomposition(tanh_backward)
def _tanh_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    one_minus = e.emit("sub", [1.0, e.emit("mul", [y, y], sh, dt)], sh, dt)
    e.emit("mul", [g, one_minus], sh, dt, out.name)


@decomposition(gelu_backward)
def _gelu_backward_rule(e, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    if e.attr("approximate") == "tanh":
        # d/dx 0.5 x (1 + tanh(u)), u = c (x + 0.044715 x^3)
        x2 = e.emit("mul", [x, x], sh, dt)
        inner = e.emit("add", [x, e.emit("mul", [e.emit("mul", [x2, x], sh, dt), 0.044715], sh, dt)], sh, dt)
        t = e.emit("tanh", [e.emit("mul", [inner, _SQRT_2_OVER_PI], sh, dt)], sh, dt)
        du = e.emit("mul", [e.emit("add", [e.emit("mul", [x2, 3 * 0.044715], sh, dt), 1.0], sh, dt),
                            _SQRT_2_OVER_PI], sh, dt)
        sech2 = e.emit("sub", [1.0, e.emit("mul", [t, t], sh, dt)], sh, dt)
        right = e.emit("mul", [e.emit("mul", [x, e.emit("mul", [sech2, du], sh, dt)], sh, dt), 0.5], sh, dt)
        left = e.emit("mul", [e.emit("add", [t, 1.0], sh, dt), 0.5], sh, dt)
        d = e.emit("add", [left, right], sh, dt)
    else:
        cdf = e.emit("mul", [e.emit("add", [e.emit("erf", [e.emit("mul", [x, _SQRT1_2], sh, dt)], sh, dt), 1.0], sh, dt),
                             0.5], sh, dt)
        pdf = e.emit("mul", [e.emit("exp", [e.emit("mul", [e.emit("mul", [x, x], sh, dt), -0.5], sh, dt)], sh, dt),
                             _INV_SQRT_2PI], sh, dt)
        d = e.emit("add", [cdf, e.emit("mul", [x, pdf], sh, dt)], sh, dt)
    e.emit("mul", [g, d], sh, dt, out.name)


@decomposition(sigmoid_backward)
def _sigmoid_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    e.emit("mul", [g, e.emit("mul", [y, e.emit("sub", [1.0, y], sh, dt)], sh, dt)], sh, dt, out.name)


@decomposition(silu_backward)
def _silu_backward_rule(e, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    s = e.emit("sigmoid", [x], sh, dt)
    d = e.emit("mul", [s, e.emit("add", [e.emit("mul", [x, e.emit("sub", [1.0, s], sh, dt)], sh, dt), 1.0], sh, dt)],
               sh, dt)
    e.emit("mul", [g, d], sh, dt, out.name)


@decomposition(threshold_backward)
def _threshold_backward_rule(e, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    below = e.emit("le", [x, e.attr("threshold")], out.shape, "bool")
    e.emit("where", [below, 0.0, g], out.shape, out.dtype, out.name)


@decomposition(softmax_backward)
def _softmax_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out, dim = e.out(), e.attr("dim")
    sh, dt = out.shape, out.dtype
    s = e.emit("sum", [e.emit("mul", [g, y], sh, dt)], reduced(sh, [dim], True), dt, dims=[dim], keepdim=True)
    e.emit("mul", [y, e.emit("sub", [g, s], sh, dt)], sh, dt, out.name)


@decomposition(log_softmax_backward)
def _log_softmax_backward_rule(e, vals):
    g, y = e.parent.inputs[:2]
    out, dim = e.out(), e.attr("dim")
    sh, dt = out.shape, out.dtype
    s = e.emit("sum", [g], reduced(sh, [dim], True), dt, dims=[dim], keepdim=True)
    e.emit("sub", [g, e.emit("mul", [e.emit("exp", [y], sh, dt), s], sh, dt)], sh, dt, out.name)


# --- losses -------------------------------------------------------------------------------------
_LOSS = dict(reduction=Attr("str", "mean", choices=("none", "mean", "sum")), ignore_index=Attr("int", -100))
nll_loss_backward = composite("nll_loss_backward", "grad logp target weight? total_weight", **_LOSS,
                              doc="d nll_loss / d logp: -weight[t] * grad (/ total_weight for mean) at each target")
_REDUCTION_CODES = {"none": 0, "mean": 1, "sum": 2}


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
    keep = e.emit("ne", [target, e.attr("ignore_index")], tm.shape, "bool")
    safe = e.emit("where", [keep, target, 0], tm.shape, tm.dtype)
    wide = list(tm.shape[:cdim]) + [1] + list(tm.shape[cdim:])
    index = e.emit("reshape", [safe], wide, tm.dtype, shape=wide)
    w = e.emit("take", [weight, safe], tm.shape, lm.dtype, dim=0) if weight is not None else 1.0
    w = e.emit("where", [keep, w, 0.0], tm.shape, lm.dtype)
    return cdim, index, wide, w


@decomposition(nll_loss_backward)
def _nll_loss_backward_rule(e, vals):
    g, logp, target, weight, total = (list(e.parent.inputs) + [None] * 5)[:5]
    out, lm, tm = e.out(), vals[logp], vals[target]
    dt = lm.dtype
    cdim, index, wide, w = _picked(e, vals, logp, target, weight)
    reduction = e.attr("reduction")
    scale = e.emit("div", [g, total], [], dt) if reduction == "mean" else g
    grads = e.emit("neg", [e.emit("mul", [w, scale], tm.shape, dt)], tm.shape, dt)
    grads = e.emit("reshape", [grads], wide, dt, shape=wide)
    zeros = e.emit("full", [], lm.shape, dt, shape=list(lm.shape), value=0.0, dtype=dt)
    e.emit("scatter", [zeros, index, grads], out.shape, out.dtype, out.name, dim=cdim)
