"""The `primitive` level: composite ops expanded into elementwise, reduction, matmul and
data-movement ops by one frontend-neutral set of rules.

Decomposition is an explicit pass over the common view (DESIGN.md, Principles), so every
frontend's graph is lowered by the same rules and primitive views compare op for op. The
expansion of node `n7` gets ids `n7.0`, `n7.1`, ... and `scope` = `n7`, so a kernel that
covers `n7` covers its expansion. The expansion's last value keeps the composite's output
name; consumers need no rewiring.

The rules follow the canonical input order documented in `irlens.ops`. An op with no rule
stays as it is and is reported by `unexpanded(graph)`.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

from irlens import ops
from irlens.ir import Arg, Graph, Node, TensorMeta

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_SQRT1_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


class _Emitter:
    """Builds the expansion of one composite node."""

    def __init__(self, parent: Node):
        self.parent = parent
        self.nodes: list[Node] = []

    def emit(self, op: str, inputs: list[Arg], oshape, odtype: str, oname: str | None = None, **attrs) -> str:
        """Append one node; returns its output's value name (`oname`, else a fresh one)."""
        nid = f"{self.parent.id}.{len(self.nodes)}"
        name = oname or nid
        scope = self.parent.id if not self.parent.scope else f"{self.parent.scope}/{self.parent.id}"
        self.nodes.append(Node(nid, op, list(inputs), [TensorMeta(name, tuple(oshape), odtype)], dict(attrs),
                               self.parent.native or self.parent.op, scope))
        return name

    def out(self, k: int = 0) -> TensorMeta | None:
        outs = self.parent.outputs
        return outs[k] if k < len(outs) else None


def _reduced(shape, dims, keepdim: bool):
    if keepdim:
        return [1 if i in dims else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in dims]


def _numel(shape, dims) -> int:
    n = 1
    for i in dims:
        n *= shape[i]
    return n


# --- rules: each takes (emitter, shapes of value inputs by name) and emits the expansion ---------

Rule = Callable[[_Emitter, dict[str, TensorMeta]], None]
RULES: dict[str, Rule] = {}


def rule(op: str):
    def deco(fn: Rule) -> Rule:
        RULES[op] = fn
        return fn

    return deco


def _meta(vals, a) -> TensorMeta:
    return vals[a]


@rule("mean")
def _mean(e: _Emitter, vals):
    x, out = e.parent.inputs[0], e.out()
    xm = _meta(vals, x)
    dims, keep = e.parent.attrs.get("dims", list(range(len(xm.shape)))), e.parent.attrs.get("keepdim", False)
    s = e.emit("sum", [x], _reduced(xm.shape, dims, keep), out.dtype, dims=dims, keepdim=keep)
    e.emit("div", [s, float(_numel(xm.shape, dims))], out.shape, out.dtype, out.name)


@rule("var")
def _var(e: _Emitter, vals):
    x, out = e.parent.inputs[0], e.out()
    xm = _meta(vals, x)
    dims = e.parent.attrs.get("dims", list(range(len(xm.shape))))
    keep, corr = e.parent.attrs.get("keepdim", False), e.parent.attrs.get("correction", 1)
    kshape = _reduced(xm.shape, dims, True)
    s = e.emit("sum", [x], kshape, out.dtype, dims=dims, keepdim=True)
    m = e.emit("div", [s, float(_numel(xm.shape, dims))], kshape, out.dtype)
    c = e.emit("sub", [x, m], xm.shape, out.dtype)
    sq = e.emit("mul", [c, c], xm.shape, out.dtype)
    ss = e.emit("sum", [sq], _reduced(xm.shape, dims, keep), out.dtype, dims=dims, keepdim=keep)
    e.emit("div", [ss, float(_numel(xm.shape, dims) - corr)], out.shape, out.dtype, out.name)


@rule("gelu")
def _gelu(e: _Emitter, vals):
    x, out = e.parent.inputs[0], e.out()
    sh, dt = out.shape, out.dtype
    if e.parent.attrs.get("approximate", "none") == "tanh":
        half_x = e.emit("mul", [x, 0.5], sh, dt)
        cube = e.emit("pow", [x, 3], sh, dt)
        inner = e.emit("add", [x, e.emit("mul", [cube, 0.044715], sh, dt)], sh, dt)
        t = e.emit("tanh", [e.emit("mul", [inner, _SQRT_2_OVER_PI], sh, dt)], sh, dt)
        e.emit("mul", [half_x, e.emit("add", [t, 1.0], sh, dt)], sh, dt, out.name)
    else:
        half_x = e.emit("mul", [x, 0.5], sh, dt)
        erf = e.emit("erf", [e.emit("mul", [x, _SQRT1_2], sh, dt)], sh, dt)
        e.emit("mul", [half_x, e.emit("add", [erf, 1.0], sh, dt)], sh, dt, out.name)


@rule("relu")
def _relu(e: _Emitter, vals):
    out = e.out()
    e.emit("maximum", [e.parent.inputs[0], 0.0], out.shape, out.dtype, out.name)


@rule("silu")
def _silu(e: _Emitter, vals):
    x, out = e.parent.inputs[0], e.out()
    s = e.emit("sigmoid", [x], out.shape, out.dtype)
    e.emit("mul", [x, s], out.shape, out.dtype, out.name)


@rule("dropout")
def _dropout(e: _Emitter, vals):
    # irlens runs models in eval mode, where dropout is the identity.
    out = e.out()
    e.emit("copy", [e.parent.inputs[0]], out.shape, out.dtype, out.name)


def _softmax_core(e: _Emitter, x: str, dim: int, sh, dt):
    """max-subtracted exp and its sum: the shared front half of softmax and log_softmax."""
    ksh = _reduced(sh, [dim], True)
    m = e.emit("amax", [x], ksh, dt, dims=[dim], keepdim=True)
    shifted = e.emit("sub", [x, m], sh, dt)
    ex = e.emit("exp", [shifted], sh, dt)
    z = e.emit("sum", [ex], ksh, dt, dims=[dim], keepdim=True)
    return m, shifted, ex, z


@rule("softmax")
def _softmax(e: _Emitter, vals):
    out = e.out()
    _, _, ex, z = _softmax_core(e, e.parent.inputs[0], e.parent.attrs["dim"], out.shape, out.dtype)
    e.emit("div", [ex, z], out.shape, out.dtype, out.name)


@rule("log_softmax")
def _log_softmax(e: _Emitter, vals):
    out = e.out()
    _, shifted, _, z = _softmax_core(e, e.parent.inputs[0], e.parent.attrs["dim"], out.shape, out.dtype)
    lz = e.emit("log", [z], _reduced(out.shape, [e.parent.attrs["dim"]], True), out.dtype)
    e.emit("sub", [shifted, lz], out.shape, out.dtype, out.name)


def _norm_dims(shape, n: int) -> list[int]:
    return list(range(len(shape) - n, len(shape)))


@rule("layer_norm")
def _layer_norm(e: _Emitter, vals):
    x, w, b = (list(e.parent.inputs) + [None, None])[:3]
    out = e.out()
    sh, dt = out.shape, out.dtype
    dims = _norm_dims(sh, e.parent.attrs.get("normalized_ndim", 1))
    ksh, n = _reduced(sh, dims, True), float(_numel(sh, dims))
    mean_out, rstd_out = e.out(1), e.out(2)
    s = e.emit("sum", [x], ksh, dt, dims=dims, keepdim=True)
    mean = e.emit("div", [s, n], ksh, mean_out.dtype if mean_out else dt, mean_out.name if mean_out else None)
    xc = e.emit("sub", [x, mean], sh, dt)
    v = e.emit("div", [e.emit("sum", [e.emit("mul", [xc, xc], sh, dt)], ksh, dt, dims=dims, keepdim=True), n], ksh, dt)
    rstd = e.emit("rsqrt", [e.emit("add", [v, e.parent.attrs.get("eps", 1e-5)], ksh, dt)], ksh, dt,
                  rstd_out.name if rstd_out else None)
    y = e.emit("mul", [xc, rstd], sh, dt, out.name if w is None and b is None else None)
    if w is not None:
        y = e.emit("mul", [y, w], sh, dt, out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, b], sh, dt, out.name)


@rule("rms_norm")
def _rms_norm(e: _Emitter, vals):
    x, w = (list(e.parent.inputs) + [None])[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    dims = _norm_dims(sh, e.parent.attrs.get("normalized_ndim", 1))
    ksh = _reduced(sh, dims, True)
    ms = e.emit("div", [e.emit("sum", [e.emit("mul", [x, x], sh, dt)], ksh, dt, dims=dims, keepdim=True),
                        float(_numel(sh, dims))], ksh, dt)
    r = e.emit("rsqrt", [e.emit("add", [ms, e.parent.attrs.get("eps", 1e-6)], ksh, dt)], ksh, dt)
    y = e.emit("mul", [x, r], sh, dt, out.name if w is None else None)
    if w is not None:
        e.emit("mul", [y, w], sh, dt, out.name)


def _transpose_last2(e: _Emitter, a: str, meta: TensorMeta) -> str:
    nd = len(meta.shape)
    perm = list(range(nd - 2)) + [nd - 1, nd - 2]
    return e.emit("permute", [a], [meta.shape[p] for p in perm], meta.dtype, perm=perm)


@rule("linear")
def _linear(e: _Emitter, vals):
    x, w, b = (list(e.parent.inputs) + [None])[:3]
    out = e.out()
    wt = _transpose_last2(e, w, _meta(vals, w))
    y = e.emit("matmul", [x, wt], out.shape, out.dtype, out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, b], out.shape, out.dtype, out.name)


def _attention_probs(e: _Emitter, vals, q: str, k: str, mask, is_causal: bool, scale):
    """Scaled, masked scores and their row max / exp / sum (the shared half of sdpa fwd and bwd)."""
    qm, km = _meta(vals, q), _meta(vals, k)
    dt = qm.dtype
    L, S = qm.shape[-2], km.shape[-2]
    ssh = list(qm.shape[:-1]) + [S]
    scale = scale if scale is not None else 1.0 / math.sqrt(qm.shape[-1])
    s = e.emit("mul", [e.emit("matmul", [q, _transpose_last2(e, k, km)], ssh, dt), scale], ssh, dt)
    if is_causal:
        rows = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=0, dtype="int64")
        cols = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=1, dtype="int64")
        keep = e.emit("ge", [rows, cols], [L, S], "bool")
        s = e.emit("where", [keep, s, -math.inf], ssh, dt)
    if mask is not None:
        mm = _meta(vals, mask)
        s = (e.emit("where", [mask, s, -math.inf], ssh, dt) if mm.dtype == "bool"
             else e.emit("add", [s, mask], ssh, dt))
    return s, ssh, dt


@rule("sdpa")
def _sdpa(e: _Emitter, vals):
    q, k, v, mask = (list(e.parent.inputs) + [None])[:4]
    a = e.parent.attrs
    out = e.out()
    s, ssh, dt = _attention_probs(e, vals, q, k, mask, a.get("is_causal", False), a.get("scale"))
    dim = len(ssh) - 1
    m, _, ex, z = _softmax_core(e, s, dim, ssh, dt)
    p = e.emit("div", [ex, z], ssh, dt)
    e.emit("matmul", [p, v], out.shape, out.dtype, out.name)
    lse_out = e.out(1)
    if lse_out is not None:  # log-sum-exp of the scores, kept by fused attention for its backward
        lse = e.emit("add", [e.emit("log", [z], _reduced(ssh, [dim], True), dt), m],
                     _reduced(ssh, [dim], True), lse_out.dtype)
        _lse_as_declared(e, lse, ssh[:-1], lse_out)
    for extra in e.parent.outputs[2:]:
        # RNG state and sequence bookkeeping (philox seed and offset, ...): zeros, as
        # `irlens.interpret.all_outputs` gives them; no canonical op reads them.
        e.emit("full", [], extra.shape, extra.dtype, extra.name, value=0, dtype=extra.dtype, shape=list(extra.shape))


def _lse_as_declared(e: _Emitter, lse: str, rows, lse_out: TensorMeta) -> None:
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


def _lse_rows(e: _Emitter, lse: str, lse_meta: TensorMeta, ksh) -> str:
    """A saved log-sum-exp as one value per score row (keepdim shape `ksh`): the padding a fused
    kernel added past the last row is sliced off (see `_lse_as_declared`)."""
    shape, rows = list(lse_meta.shape), list(ksh[:-1])
    if len(shape) == len(rows) and shape[:-1] == rows[:-1] and shape[-1] > rows[-1]:
        lse = e.emit("slice", [lse], rows, lse_meta.dtype, start=[0] * len(rows), limit=rows, step=[1] * len(rows))
    return e.emit("reshape", [lse], ksh, lse_meta.dtype, shape=list(ksh))


@rule("embedding")
def _embedding(e: _Emitter, vals):
    w, idx = e.parent.inputs[:2]
    out = e.out()
    e.emit("gather", [w, idx], out.shape, out.dtype, out.name, dim=0)


@rule("tril")
def _tril(e: _Emitter, vals):
    x, out = e.parent.inputs[0], e.out()
    L, S = out.shape[-2], out.shape[-1]
    rows = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=0, dtype="int64")
    cols = e.emit("iota", [], [L, S], "int64", shape=[L, S], dim=1, dtype="int64")
    shifted = e.emit("add", [rows, int(e.parent.attrs.get("diagonal", 0))], [L, S], "int64")
    keep = e.emit("ge", [shifted, cols], [L, S], "bool")
    e.emit("where", [keep, x, 0], out.shape, out.dtype, out.name)


@rule("masked_fill")
def _masked_fill(e: _Emitter, vals):
    x, mask, value = e.parent.inputs[:3]
    out = e.out()
    e.emit("where", [mask, value, x], out.shape, out.dtype, out.name)


# --- backward composites -----------------------------------------------------------------

@rule("tanh_backward")
def _tanh_backward(e: _Emitter, vals):
    g, y = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    one_minus = e.emit("sub", [1.0, e.emit("mul", [y, y], sh, dt)], sh, dt)
    e.emit("mul", [g, one_minus], sh, dt, out.name)


@rule("gelu_backward")
def _gelu_backward(e: _Emitter, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    if e.parent.attrs.get("approximate", "none") == "tanh":
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


@rule("sigmoid_backward")
def _sigmoid_backward(e: _Emitter, vals):
    g, y = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    e.emit("mul", [g, e.emit("mul", [y, e.emit("sub", [1.0, y], sh, dt)], sh, dt)], sh, dt, out.name)


@rule("silu_backward")
def _silu_backward(e: _Emitter, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    sh, dt = out.shape, out.dtype
    s = e.emit("sigmoid", [x], sh, dt)
    d = e.emit("mul", [s, e.emit("add", [e.emit("mul", [x, e.emit("sub", [1.0, s], sh, dt)], sh, dt), 1.0], sh, dt)],
               sh, dt)
    e.emit("mul", [g, d], sh, dt, out.name)


@rule("threshold_backward")
def _threshold_backward(e: _Emitter, vals):
    g, x = e.parent.inputs[:2]
    out = e.out()
    below = e.emit("le", [x, e.parent.attrs.get("threshold", 0.0)], out.shape, "bool")
    e.emit("where", [below, 0.0, g], out.shape, out.dtype, out.name)


@rule("softmax_backward")
def _softmax_backward(e: _Emitter, vals):
    g, y = e.parent.inputs[:2]
    out, dim = e.out(), e.parent.attrs["dim"]
    sh, dt = out.shape, out.dtype
    s = e.emit("sum", [e.emit("mul", [g, y], sh, dt)], _reduced(sh, [dim], True), dt, dims=[dim], keepdim=True)
    e.emit("mul", [y, e.emit("sub", [g, s], sh, dt)], sh, dt, out.name)


@rule("log_softmax_backward")
def _log_softmax_backward(e: _Emitter, vals):
    g, y = e.parent.inputs[:2]
    out, dim = e.out(), e.parent.attrs["dim"]
    sh, dt = out.shape, out.dtype
    s = e.emit("sum", [g], _reduced(sh, [dim], True), dt, dims=[dim], keepdim=True)
    e.emit("sub", [g, e.emit("mul", [e.emit("exp", [y], sh, dt), s], sh, dt)], sh, dt, out.name)


@rule("layer_norm_backward")
def _layer_norm_backward(e: _Emitter, vals):
    g, x, mean, rstd, w, _b = (list(e.parent.inputs) + [None] * 6)[:6]
    grads = e.parent.attrs.get("grads", [True, w is not None, _b is not None])
    xm = _meta(vals, x)
    sh, dt = xm.shape, xm.dtype
    dims = _norm_dims(sh, e.parent.attrs.get("normalized_ndim", 1))
    batch_dims = [i for i in range(len(sh)) if i not in dims]
    ksh, n = _reduced(sh, dims, True), float(_numel(sh, dims))
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


@rule("sdpa_backward")
def _sdpa_backward(e: _Emitter, vals):
    go, q, k, v, o, lse = (list(e.parent.inputs) + [None] * 6)[:6]
    a = e.parent.attrs
    dq_out, dk_out, dv_out = e.parent.outputs[:3]
    qm = _meta(vals, q)
    scale = a.get("scale") if a.get("scale") is not None else 1.0 / math.sqrt(qm.shape[-1])
    s, ssh, dt = _attention_probs(e, vals, q, k, None, a.get("is_causal", False), a.get("scale"))
    dim = len(ssh) - 1
    if lse is not None:  # recompute the probabilities from the saved log-sum-exp
        lse_k = _lse_rows(e, lse, _meta(vals, lse), _reduced(ssh, [dim], True))
        p = e.emit("exp", [e.emit("sub", [s, lse_k], ssh, dt)], ssh, dt)
    else:
        _, _, ex, z = _softmax_core(e, s, dim, ssh, dt)
        p = e.emit("div", [ex, z], ssh, dt)
    e.emit("matmul", [_transpose_last2(e, p, TensorMeta(p, tuple(ssh), dt)), go], dv_out.shape, dv_out.dtype, dv_out.name)
    dp = e.emit("matmul", [go, _transpose_last2(e, v, _meta(vals, v))], ssh, dt)
    osh = _meta(vals, o).shape
    dsum = e.emit("sum", [e.emit("mul", [go, o], osh, dt)], _reduced(osh, [len(osh) - 1], True), dt,
                  dims=[len(osh) - 1], keepdim=True)
    ds = e.emit("mul", [e.emit("mul", [p, e.emit("sub", [dp, dsum], ssh, dt)], ssh, dt), scale], ssh, dt)
    e.emit("matmul", [ds, k], dq_out.shape, dq_out.dtype, dq_out.name)
    e.emit("matmul", [_transpose_last2(e, ds, TensorMeta(ds, tuple(ssh), dt)), q], dk_out.shape, dk_out.dtype,
           dk_out.name)


@rule("embedding_backward")
def _embedding_backward(e: _Emitter, vals):
    g, idx = e.parent.inputs[:2]
    out = e.out()
    zeros = e.emit("full", [], out.shape, out.dtype, value=0.0, dtype=out.dtype, shape=list(out.shape))
    e.emit("scatter_add", [zeros, idx, g], out.shape, out.dtype, out.name, dim=0)


# --- the pass ------------------------------------------------------------------------------

def to_primitive(graph: Graph) -> Graph:
    """Expand every composite node that has a rule; other nodes are kept as they are."""
    if graph.level == "primitive":
        return graph
    vals = graph.values()
    nodes: list[Node] = []
    for n in graph.nodes:
        fn = RULES.get(n.op)
        if fn is None or ops.category(n.op) != ops.COMPOSITE:
            nodes.append(n)
            continue
        e = _Emitter(n)
        fn(e, vals)
        nodes.extend(e.nodes)
        vals.update({o.name: o for m in e.nodes for o in m.outputs})
    return replace(graph, level="primitive", nodes=nodes)


def unexpanded(graph: Graph) -> list[str]:
    """Composite ops left in a primitive graph (no rule for them)."""
    return sorted({n.op for n in graph.nodes if ops.category(n.op) == ops.COMPOSITE})
