"""Normalizations: layer, RMS, batch and group norm, with their backward ops."""
from __future__ import annotations

import torch

from irlens.core.ops.core import Attr, composite, decomposition, meaning
from irlens.core.ops.shapes import last_dims, numel


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
    dims = last_dims(out.shape, e.attr("normalized_ndim"))
    n = float(numel(out.shape, dims))
    mean_out, rstd_out = e.out(1), e.out(2)
    s = e.emit("sum", [x], dims=dims, keepdim=True)
    mean = e.emit("div", [s, n], oname=mean_out.name if mean_out else None)
    xc = e.emit("sub", [x, mean])
    v = e.emit("div", [e.emit("sum", [e.emit("mul", [xc, xc])], dims=dims, keepdim=True), n])
    rstd = e.emit("rsqrt", [e.emit("add", [v, e.attr("eps")])], oname=rstd_out.name if rstd_out else None)
    y = e.emit("mul", [xc, rstd], oname=out.name if w is None and b is None else None)
    if w is not None:
        y = e.emit("mul", [y, w], oname=out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, b], oname=out.name)


@decomposition(rms_norm)
def _rms_norm_rule(e, vals):
    x, w = (list(e.parent.inputs) + [None])[:2]
    out, rstd_out = e.out(), e.out(1)
    sh = out.shape
    dims = last_dims(sh, e.attr("normalized_ndim"))
    ms = e.emit("div", [e.emit("sum", [e.emit("mul", [x, x])], dims=dims, keepdim=True),
                        float(numel(sh, dims))])
    r = e.emit("rsqrt", [e.emit("add", [ms, e.attr("eps")])])
    y = e.emit("mul", [x, r], oname=out.name if w is None else None)
    if w is not None:
        e.emit("mul", [y, w], oname=out.name)
    if rstd_out is not None:
        e.emit("reshape", [r], oname=rstd_out.name, shape=list(rstd_out.shape))


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
    sh = vals[x].shape
    dims = last_dims(sh, e.attr("normalized_ndim"))
    batch_dims = [i for i in range(len(sh)) if i not in dims]
    n = float(numel(sh, dims))
    outs = iter(e.parent.outputs)
    xhat = e.emit("mul", [e.emit("sub", [x, mean]), rstd])
    if grads[0]:
        dx_out = next(outs)
        gw = e.emit("mul", [g, w]) if w is not None else g
        mean_g = e.emit("div", [e.emit("sum", [gw], dims=dims, keepdim=True), n])
        mean_gx = e.emit("div", [e.emit("sum", [e.emit("mul", [gw, xhat])], dims=dims, keepdim=True),
                                 n])
        inner = e.emit("sub", [e.emit("sub", [gw, mean_g]), e.emit("mul", [xhat, mean_gx])])
        e.emit("mul", [inner, rstd], oname=dx_out.name)
    if len(grads) > 1 and grads[1]:
        dw_out = next(outs)
        e.emit("sum", [e.emit("mul", [g, xhat])], oname=dw_out.name,
               dims=batch_dims, keepdim=False)
    if len(grads) > 2 and grads[2]:
        db_out = next(outs)
        e.emit("sum", [g], oname=db_out.name, dims=batch_dims, keepdim=False)


# --- batch and group norm ---------------------------------------------------------------------------
batch_norm = composite(
    "batch_norm", "x weight? bias? running_mean? running_var?", outputs="y mean? rstd? new_running_mean? new_running_var?",
    training=Attr("bool", False), momentum=Attr("float", 0.1), eps=Attr("float", 1e-5),
    doc="per channel (dim 1): training normalizes by the batch's statistics (mean, rstd = 1/sqrt(biased var + "
        "eps)) and gives the running ones updated by momentum (unbiased var); else by the running statistics "
        "(mean and rstd then empty)")
group_norm = composite("group_norm", "x weight? bias?", outputs="y mean? rstd?", groups=Attr("int"),
                       eps=Attr("float", 1e-5),
                       doc="channels (dim 1) in `groups` groups, each normalized over its channels and the "
                           "spatial dims; mean, rstd are [N, groups]")
group_norm_backward = composite("group_norm_backward", "grad x mean rstd weight?", outputs="*grads",
                                groups=Attr("int"), grads=Attr("any"),
                                doc="[dx, dweight, dbias], those `grads` asks for (ATen's native_group_norm_backward)")


def _channel_view(t, rank: int):
    return t.reshape([1, -1] + [1] * (rank - 2))


@meaning(batch_norm)
def _batch_norm(a, x, w=None, b=None, rmean=None, rvar=None):
    dims = [d for d in range(x.dim()) if d != 1]
    if a["training"]:
        mean, var = x.mean(dims), x.var(dims, correction=0)
        rstd = torch.rsqrt(var + a["eps"])
        n = x.numel() // x.shape[1]
        m = a["momentum"]
        new = [] if rmean is None else [(1 - m) * rmean + m * mean, (1 - m) * rvar + m * var * n / max(n - 1, 1)]
        saved = [mean, rstd]
    else:
        mean, rstd = rmean, torch.rsqrt(rvar + a["eps"])
        saved = [x.new_zeros(0), x.new_zeros(0)]
        new = [] if rmean is None else [rmean.clone(), rvar.clone()]  # unchanged
    y = (x - _channel_view(mean, x.dim())) * _channel_view(rstd, x.dim())
    if w is not None:
        y = y * _channel_view(w, x.dim())
    if b is not None:
        y = y + _channel_view(b, x.dim())
    return (y, *saved, *new)


@decomposition(batch_norm)
def _batch_norm_rule(e, vals):
    x, w, b, rmean, rvar = (list(e.parent.inputs) + [None] * 5)[:5]
    out = e.out()
    sh = out.shape
    C, rank = sh[1], len(sh)
    dims = [d for d in range(rank) if d != 1]
    n = float(numel(sh, dims))
    chan = [1, C] + [1] * (rank - 2)
    outs = list(e.parent.outputs)

    def name(k):
        return outs[k].name if k < len(outs) else None

    if e.attr("training"):
        mean = e.emit("div", [e.emit("sum", [x], dims=dims, keepdim=False), n], oname=name(1))
        xc = e.emit("sub", [x, e.emit("reshape", [mean], shape=chan)])
        var = e.emit("div", [e.emit("sum", [e.emit("mul", [xc, xc])], dims=dims, keepdim=False), n])
        rstd = e.emit("rsqrt", [e.emit("add", [var, e.attr("eps")])], oname=name(2))
        if rmean is not None and len(outs) > 3:
            m = e.attr("momentum")
            for k, running, stat in ((3, rmean, mean), (4, rvar, e.emit("mul", [var, n / max(n - 1, 1)]))):
                kept = e.emit("mul", [running, 1 - m])
                e.emit("add", [kept, e.emit("mul", [stat, m])], oname=name(k))
    else:
        xc = e.emit("sub", [x, e.emit("reshape", [rmean], shape=chan)])
        rstd = e.emit("rsqrt", [e.emit("add", [rvar, e.attr("eps")])])
        for k in (1, 2):
            if name(k):
                e.emit("empty", [], oname=name(k), shape=[0], dtype=outs[k].dtype)
        for k, running in ((3, rmean), (4, rvar)):  # the running statistics, unchanged
            if name(k):
                e.emit("copy", [running], oname=name(k))
    y = e.emit("mul", [xc, e.emit("reshape", [rstd], shape=chan)],
               oname=out.name if w is None and b is None else None)
    if w is not None:
        y = e.emit("mul", [y, e.emit("reshape", [w], shape=chan)], oname=out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, e.emit("reshape", [b], shape=chan)], oname=out.name)


@meaning(group_norm)
def _group_norm(a, x, w=None, b=None):
    N, groups = x.shape[0], a["groups"]
    xg = x.reshape(N, groups, -1)
    mean, var = xg.mean(-1, keepdim=True), xg.var(-1, correction=0, keepdim=True)
    rstd = torch.rsqrt(var + a["eps"])
    y = ((xg - mean) * rstd).reshape(x.shape)
    if w is not None:
        y = y * _channel_view(w, x.dim())
    if b is not None:
        y = y + _channel_view(b, x.dim())
    return y, mean.reshape(N, groups), rstd.reshape(N, groups)


@decomposition(group_norm)
def _group_norm_rule(e, vals):
    x, w, b = (list(e.parent.inputs) + [None, None])[:3]
    out, mean_out, rstd_out = e.out(), e.out(1), e.out(2)
    sh = out.shape
    N, C, groups, rank = sh[0], sh[1], e.attr("groups"), len(sh)
    grouped = [N, groups, numel(sh) // max(N * groups, 1)]
    xg = e.emit("reshape", [x], shape=grouped)
    mean = e.emit("div", [e.emit("sum", [xg], dims=[2], keepdim=True), float(grouped[2])])
    xc = e.emit("sub", [xg, mean])
    var = e.emit("div", [e.emit("sum", [e.emit("mul", [xc, xc])], dims=[2], keepdim=True),
                         float(grouped[2])])
    rstd = e.emit("rsqrt", [e.emit("add", [var, e.attr("eps")])])
    y = e.emit("reshape", [e.emit("mul", [xc, rstd])], oname=out.name if w is None and b is None else None,
               shape=list(sh))
    chan = [1, C] + [1] * (rank - 2)
    if w is not None:
        y = e.emit("mul", [y, e.emit("reshape", [w], shape=chan)], oname=out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, e.emit("reshape", [b], shape=chan)], oname=out.name)
    for stat, meta in ((mean, mean_out), (rstd, rstd_out)):
        if meta is not None:
            e.emit("reshape", [stat], oname=meta.name, shape=list(meta.shape))


@meaning(group_norm_backward)
def _group_norm_backward(a, g, x, mean, rstd, w=None):
    N, C = x.shape[0], x.shape[1]
    grads = torch.ops.aten.native_group_norm_backward(g, x, mean, rstd, w, N, C, x.numel() // max(N * C, 1),
                                                      a["groups"], list(a["grads"]))
    return tuple(t for t in grads if t is not None)


@decomposition(group_norm_backward)
def _group_norm_backward_rule(e, vals):
    """layer_norm_backward's formula over each group (its channels and spatial dims); the weight
    scales the gradient per channel first, dweight and dbias sum per channel."""
    g, x, mean, rstd, w = (list(e.parent.inputs) + [None])[:5]
    grads = e.attr("grads")
    sh = vals[x].shape
    N, C, groups, rank = sh[0], sh[1], e.attr("groups"), len(sh)
    grouped, kept = [N, groups, numel(sh) // max(N * groups, 1)], [N, groups, 1]
    chan = [1, C] + [1] * (rank - 2)
    per_channel = [0] + list(range(2, rank))  # the dims dweight and dbias sum over
    outs = iter(e.parent.outputs)
    rstd_k = e.emit("reshape", [rstd], shape=kept)
    xhat = e.emit("mul", [e.emit("sub", [e.emit("reshape", [x], shape=grouped),
                                         e.emit("reshape", [mean], shape=kept)]), rstd_k])
    if grads[0]:
        dx_out = next(outs)
        gw = e.emit("mul", [g, e.emit("reshape", [w], shape=chan)]) if w is not None else g
        gw = e.emit("reshape", [gw], shape=grouped)
        n = float(grouped[2])
        mean_g = e.emit("div", [e.emit("sum", [gw], dims=[2], keepdim=True), n])
        mean_gx = e.emit("div", [e.emit("sum", [e.emit("mul", [gw, xhat])], dims=[2],
                                        keepdim=True), n])
        inner = e.emit("sub", [e.emit("sub", [gw, mean_g]), e.emit("mul", [xhat, mean_gx])])
        dx = e.emit("mul", [inner, rstd_k])
        e.emit("reshape", [dx], oname=dx_out.name, shape=list(dx_out.shape))
    if len(grads) > 1 and grads[1]:
        dw_out = next(outs)
        xhat_full = e.emit("reshape", [xhat], shape=list(sh))
        e.emit("sum", [e.emit("mul", [g, xhat_full])], oname=dw_out.name,
               dims=per_channel, keepdim=False)
    if len(grads) > 2 and grads[2]:
        db_out = next(outs)
        e.emit("sum", [g], oname=db_out.name, dims=per_channel, keepdim=False)
