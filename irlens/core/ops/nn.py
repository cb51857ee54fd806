"""Layers: linear, embedding (and ATen's embedding bag), triangular masks, masked fill. The
composites among them are expanded by their rule at the primitive level."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from irlens.core.ops.core import MATMUL, OTHER, Attr, IndexOf, composite, decomposition, from_aten, meaning
from irlens.core.ops.shapes import literal, transpose_last2


# --- linear, embedding ------------------------------------------------------------------------
linear = composite("linear", "x weight bias?", doc="x @ weight^T + bias; weight is [out, in] as in torch")
meaning(linear)(lambda a, x, w, b=None: F.linear(x, w, b))


@decomposition(linear)
def _linear_rule(e, vals):
    x, w, b = (list(e.parent.inputs) + [None])[:3]
    out = e.out()
    wt = transpose_last2(e, w)
    y = e.emit("matmul", [x, wt], oname=out.name if b is None else None)
    if b is not None:
        e.emit("add", [y, b], oname=out.name)


ROWS = IndexOf("weight", 0)  # an embedding's indices: rows of its weight
embedding = composite("embedding", "weight indices", doc="rows of weight at indices", index_of={"indices": ROWS})
embedding_backward = composite(
    "embedding_backward", "grad indices", num_weights=Attr("int"), padding_idx=Attr("int", None),
    index_of={"indices": IndexOf(size="num_weights")},
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
    e.emit("take", [w, idx], oname=out.name, dim=0)


@decomposition(embedding_backward)
def _embedding_backward_rule(e, vals):
    g, idx = e.parent.inputs[:2]
    out = e.out()
    im = vals[idx]
    if e.attr("padding_idx") is not None:
        pad = e.emit("eq", [idx, e.attr("padding_idx")])
        pad = e.emit("reshape", [pad], shape=[*im.shape, 1])
        g = e.emit("where", [pad, 0.0, g])
    if e.attr("scale_grad_by_freq"):
        zeros = e.emit("full", [], value=0.0, dtype=out.dtype, shape=[out.shape[0]])
        ones = e.emit("full", [], value=1.0, dtype=out.dtype, shape=list(im.shape))
        counts = e.emit("index_add", [zeros, idx, ones], dim=0)
        per_row = e.emit("take", [counts, idx], dim=0)
        per_row = e.emit("reshape", [per_row], shape=[*im.shape, 1])
        g = e.emit("div", [g, per_row])
    zeros = e.emit("full", [], value=0.0, dtype=out.dtype, shape=list(out.shape))
    e.emit("index_add", [zeros, idx, g], oname=out.name, dim=0)


# --- masking ----------------------------------------------------------------------------------
masked_fill = composite("masked_fill", "x mask value", doc="value where mask, else x")
meaning(masked_fill)(lambda a, x, m, v: x.masked_fill(m, v))


def _triangle(name: str, keep_cmp: str, fn, doc: str):
    """tril / triu: x where row + diagonal compares `keep_cmp` with column, zeros elsewhere."""
    op = composite(name, diagonal=Attr("int", 0), doc=doc)
    meaning(op)(lambda a, x: fn(x, a["diagonal"]))

    @decomposition(op)
    def rule(e, vals):
        x, out = e.parent.inputs[0], e.out()
        L, S = out.shape[-2], out.shape[-1]
        rows = e.emit("iota", [], shape=[L, S], dim=0, dtype="int64")
        cols = e.emit("iota", [], shape=[L, S], dim=1, dtype="int64")
        keep = e.emit(keep_cmp, [e.emit("add", [rows, int(e.attr("diagonal"))]), cols])
        e.emit("where", [keep, x, literal(0, out.dtype)], oname=out.name)
    return op


tril = _triangle("tril", "ge", torch.tril, "x's lower triangle (last two dims), zeros above diagonal")
triu = _triangle("triu", "le", torch.triu, "x's upper triangle (last two dims), zeros below diagonal")


@decomposition(masked_fill)
def _masked_fill_rule(e, vals):
    """where(mask, value, x), the value in x's dtype (masked_fill keeps it; where would promote)."""
    x, mask, value = e.parent.inputs[:3]
    out = e.out()
    if isinstance(value, str) and vals[value].dtype != out.dtype:
        value = e.emit("convert", [value], dtype=out.dtype)
    elif not isinstance(value, str):
        value = literal(value, out.dtype)
    e.emit("where", [mask, value, x], oname=out.name)


embedding_bag = from_aten("embedding_bag", OTHER, torch.ops.aten._embedding_bag.default,
                          doc="rows of weight summed (mode 0), averaged (1) or maxed (2) per bag",
                          index_of={"indices": ROWS})
embedding_bag_forward_only = from_aten("embedding_bag_forward_only", OTHER,
                                       torch.ops.aten._embedding_bag_forward_only.default, index_of={"indices": ROWS})
embedding_bag_backward = from_aten("embedding_bag_backward", OTHER, torch.ops.aten._embedding_bag_backward.default,
                                   index_of={"indices": IndexOf(size="num_weights")})
embedding_bag_per_sample_weights_backward = from_aten("embedding_bag_per_sample_weights_backward", OTHER,
                                                      torch.ops.aten._embedding_bag_per_sample_weights_backward.default,
                                                      index_of={"indices": ROWS})
trilinear = from_aten("trilinear", MATMUL, torch.ops.aten._trilinear.default, doc="the bilinear form F.bilinear computes")
