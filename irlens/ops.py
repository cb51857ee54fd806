"""The canonical op vocabulary of the common view, and each frontend's native-name table.

Every canonical op has a category. `primitive` graphs hold only the categories in
`PRIMITIVE_CATEGORIES`; `composite` ops are expanded by `irlens.ir_adapters.decompose`.

Attribute conventions (Node.attrs), shared by every adapter so graphs compare and execute:
  dims: list[int] (non-negative), keepdim: bool     reductions (sum, amax, amin, mean, var, argmax)
  dim: int (non-negative)                           softmax, log_softmax, concat, stack, cumsum
  shape: list[int]                                  reshape, broadcast, full, iota
  broadcast_dims: list[int]                         broadcast (which output dims the input maps to)
  perm: list[int]                                   permute
  start, limit, step: list[int]                     slice (one entry per dim)
  dtype: str                                        convert, full, iota
  value: number                                     full
  approximate: "tanh" | "none"                      gelu, gelu_backward
  normalized_ndim: int, eps: float                  layer_norm, rms_norm (+ their backward)
  is_causal: bool, scale: float | None              sdpa, sdpa_backward
  contract: [[lhs dims], [rhs dims]], batch: [[lhs], [rhs]]   matmul when not a plain a[..,m,k] @ b[..,k,n]
Scalar operands (0.5 in 0.5 * x, the 3 in x ** 3) are literal entries of Node.inputs.

Canonical input order of composite ops (adapters reorder native arguments into this; an
optional input that is absent is None in Node.inputs; `irlens.ir_adapters.decompose`
relies on it):
  gelu(x) {approximate}            relu(x)     silu(x)       dropout(x) {p}
  softmax(x) {dim}                 log_softmax(x) {dim}
  layer_norm(x, weight, bias) {normalized_ndim, eps}   outputs [y] or [y, mean, rstd]
  rms_norm(x, weight) {normalized_ndim, eps}
  linear(x, weight, bias)          weight is [out, in] as in torch
  sdpa(q, k, v, attn_mask) {is_causal, scale}          outputs [out] or [out, logsumexp, ...]
  embedding(weight, indices)       mean(x) {dims, keepdim}    var(x) {dims, keepdim, correction}
  tril(x) {diagonal}               masked_fill(x, mask, value)
  gelu_backward(grad, x) {approximate}    tanh_backward(grad, y)    silu_backward(grad, x)
  sigmoid_backward(grad, y)
  softmax_backward(grad, y) {dim}         log_softmax_backward(grad, y) {dim}
  threshold_backward(grad, x) {threshold}
  layer_norm_backward(grad, x, mean, rstd, weight, bias) {normalized_ndim}  outputs [dx, dweight, dbias]
      (attrs `grads`: [bool, bool, bool] says which of the three are produced, in that order)
  sdpa_backward(grad_out, q, k, v, out, logsumexp) {is_causal, scale}     outputs [dq, dk, dv]
  embedding_backward(grad, indices) {num_weights}
Primitive ops with operands: where(cond, a, b); pow(x, exponent); convert(x) {dtype};
  gather(table, indices) {dim}: take along `dim`, output shape = indices.shape in place of dim;
  scatter_add(base, indices, src) {dim}: base with src's slices added at the (flattened)
  indices along `dim` (torch's index_add); scatter(base, indices, src) {dim}: torch.scatter
  (indices shaped like src; src may be a scalar); topk(x) {k, dim, largest} -> [values, indices];
  full() {shape, value, dtype}; iota() {shape, dim, dtype}; matmul(a, b) (torch.matmul
  broadcasting unless contract/batch attrs say otherwise). Elementwise ops broadcast like numpy.
"""
from __future__ import annotations

ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
MATMUL = "matmul"
DATA_MOVEMENT = "data_movement"
CAST = "cast"
CREATION = "creation"
COMPOSITE = "composite"
COLLECTIVE = "collective"
OTHER = "other"

PRIMITIVE_CATEGORIES = {ELEMENTWISE, REDUCTION, MATMUL, DATA_MOVEMENT, CAST, CREATION, COLLECTIVE, OTHER}
COMPUTE_CATEGORIES = {ELEMENTWISE, REDUCTION, MATMUL, COMPOSITE}

_UNARY = "neg abs exp exp2 log log1p expm1 tanh sqrt rsqrt reciprocal sin cos erf sigmoid sign floor ceil round logical_not isnan"
_BINARY = "add sub mul div pow maximum minimum remainder atan2 eq ne lt le gt ge logical_and logical_or bitwise_and bitwise_or"

OPS: dict[str, str] = {
    **{op: ELEMENTWISE for op in _UNARY.split()},
    **{op: ELEMENTWISE for op in _BINARY.split()},
    "where": ELEMENTWISE,
    "sum": REDUCTION, "amax": REDUCTION, "amin": REDUCTION, "prod": REDUCTION, "argmax": REDUCTION,
    "argmin": REDUCTION, "cumsum": REDUCTION,
    "topk": OTHER,
    "matmul": MATMUL,
    "reshape": DATA_MOVEMENT, "permute": DATA_MOVEMENT, "broadcast": DATA_MOVEMENT,
    "slice": DATA_MOVEMENT, "concat": DATA_MOVEMENT, "stack": DATA_MOVEMENT, "gather": DATA_MOVEMENT, "scatter_add": DATA_MOVEMENT, "scatter": DATA_MOVEMENT,
    "copy": DATA_MOVEMENT, "pad": DATA_MOVEMENT, "index_put": DATA_MOVEMENT,
    "convert": CAST,
    "full": CREATION, "iota": CREATION, "rand": CREATION,
    # composite: expanded at the primitive level
    "gelu": COMPOSITE, "relu": COMPOSITE, "silu": COMPOSITE, "softmax": COMPOSITE, "log_softmax": COMPOSITE,
    "layer_norm": COMPOSITE, "rms_norm": COMPOSITE, "linear": COMPOSITE, "sdpa": COMPOSITE,
    "embedding": COMPOSITE, "mean": COMPOSITE, "var": COMPOSITE,
    "dropout": COMPOSITE, "tril": COMPOSITE, "masked_fill": COMPOSITE,
    "gelu_backward": COMPOSITE, "tanh_backward": COMPOSITE, "softmax_backward": COMPOSITE,
    "log_softmax_backward": COMPOSITE, "layer_norm_backward": COMPOSITE,
    "sdpa_backward": COMPOSITE, "embedding_backward": COMPOSITE, "threshold_backward": COMPOSITE,
    "silu_backward": COMPOSITE, "sigmoid_backward": COMPOSITE,
    # collectives (the joint-graph parallel path)
    "all_gather": COLLECTIVE, "reduce_scatter": COLLECTIVE, "all_reduce": COLLECTIVE,
    "all_to_all": COLLECTIVE, "wait": COLLECTIVE,
}


def category(op: str) -> str:
    return OPS.get(op, OTHER)


def is_compute(op: str) -> bool:
    return category(op) in COMPUTE_CATEGORIES


def is_primitive(op: str) -> bool:
    return op.startswith("unknown:") or category(op) in PRIMITIVE_CATEGORIES


def check_vocabulary(table: dict[str, str]) -> None:
    """Fail loudly at import if a name table maps to an op outside the vocabulary."""
    bad = sorted({v for v in table.values() if v not in OPS})
    if bad:
        raise ValueError(f"name table maps to ops outside irlens.ops.OPS: {bad}")
