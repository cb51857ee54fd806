"""Contractions: matmul (torch.matmul broadcasting, or XLA's dot_general through attrs)."""
from __future__ import annotations

import math

import torch

from irlens.core.ops._torch import jnp, lax, widened
from irlens.core.ops.core import MATMUL, OTHER, Attr, declare, from_aten, lowering, meaning

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


# --- grouped matmul (mixture-of-experts layers: each expert's tokens times its weight) ---------------
grouped_mm = declare("grouped_mm", MATMUL, "x weight offs",
                     doc="matmuls over groups of x's rows (offs: each group's end, cumulative), as ATen's _grouped_mm: "
                         "x [m, k] by weight [g, k, n] gives [m, n], the rows of group g times weight[g] (rows past "
                         "the last end 0); x [k, m] by weight [m, n] gives [g, k, n], group g's columns of x times "
                         "its rows of weight (the weight gradient)")
grouped_mm_backward = declare("grouped_mm_backward", MATMUL, "x weight offs grad", outputs="dx dweight",
                              doc="grouped_mm's (2-d x 3-d) gradients for x and weight")


def _groups(offs: torch.Tensor):
    """(group, first row, end row) of each group (the offsets are data: read here)."""
    start = 0
    for g, end in enumerate(offs.tolist()):
        yield g, start, max(start, end)
        start = max(start, end)


@meaning(grouped_mm)
def _grouped_mm(a, x, w, offs):
    if w.dim() == 2:  # the contracted dim is grouped: one product per group
        out = x.new_zeros(len(offs), x.shape[0], w.shape[1])
        for g, start, end in _groups(offs):
            out[g] = x[:, start:end] @ w[start:end]
        return out
    out = x.new_zeros(x.shape[0], w.shape[-1])
    for g, start, end in _groups(offs):
        out[start:end] = x[start:end] @ w[g]
    return out


@meaning(grouped_mm_backward)
def _grouped_mm_backward(a, x, w, offs, grad):
    dx, dw = torch.zeros_like(x), torch.zeros_like(w)
    for g, start, end in _groups(offs):
        dx[start:end] = grad[start:end] @ w[g].T
        dw[g] = x[start:end].T @ grad[start:end]
    return dx, dw


def _ragged(x, w, offs):
    """lax.ragged_dot of x [m, k] by w [g, k, n] in groups of the sizes offs ends them at (rows past: 0)."""
    np_ = jnp()
    ends = offs.astype(np_.int32)
    sizes = np_.diff(ends, prepend=np_.zeros(1, np_.int32))
    return lax().ragged_dot(x, w, sizes, precision=lax().Precision.HIGHEST)


@lowering(grouped_mm, "jax")
def _grouped_mm_jax(a, x, w, offs):
    import jax

    if w.ndim == 2:  # per group, x's columns times w's rows: ragged_dot's gradient for its weight
        zeros = jnp().zeros((offs.shape[0], x.shape[0], w.shape[1]), x.dtype)
        return jax.vjp(lambda v: _ragged(x.T, v, offs), zeros)[1](w)[0]
    return _ragged(x, w, offs)


@lowering(grouped_mm_backward, "jax")
def _grouped_mm_backward_jax(a, x, w, offs, grad):
    import jax

    return jax.vjp(lambda x, w: _ragged(x, w, offs), x, w)[1](grad)


A = torch.ops.aten
cdist = from_aten("cdist", MATMUL, A._cdist_forward.default, doc="p-norm distance between rows of x1 and rows of x2")
cdist_backward = from_aten("cdist_backward", MATMUL, A._cdist_backward.default)
pdist = from_aten("pdist", MATMUL, A._pdist_forward.default, doc="p-norm distance between each pair of rows")
pdist_backward = from_aten("pdist_backward", MATMUL, A._pdist_backward.default)

# --- factorizations and solves: LAPACK's, as JAX's lax.linalg has them ------------------------------
cholesky = from_aten("cholesky", OTHER, A.linalg_cholesky_ex.default, doc="L with x = L L^H (upper: U^H U), info")
cholesky_solve = from_aten("cholesky_solve", OTHER, A.cholesky_solve.default)
cholesky_inverse = from_aten("cholesky_inverse", OTHER, A.cholesky_inverse.default)
qr = from_aten("qr", OTHER, A.linalg_qr.default)
svd = from_aten("svd", OTHER, A._linalg_svd.default)
svdvals = from_aten("svdvals", OTHER, A.linalg_svdvals.default, doc="the singular values, descending")
eigh = from_aten("eigh", OTHER, A._linalg_eigh.default)
lu_factor = from_aten("lu_factor", OTHER, A.linalg_lu_factor_ex.default)
lu = from_aten("lu", OTHER, A.linalg_lu.default)
lu_solve = from_aten("lu_solve", OTHER, A.linalg_lu_solve.default)
lu_unpack = from_aten("lu_unpack", OTHER, A.lu_unpack.default)
solve = from_aten("solve", OTHER, A._linalg_solve_ex.default)
solve_triangular = from_aten("solve_triangular", OTHER, A.linalg_solve_triangular.default)
triangular_solve = from_aten("triangular_solve", OTHER, A.triangular_solve.default)
inv = from_aten("inv", OTHER, A.linalg_inv_ex.default)
det = from_aten("det", OTHER, A._linalg_det.default)
slogdet = from_aten("slogdet", OTHER, A._linalg_slogdet.default)
ldl_factor = from_aten("ldl_factor", OTHER, A.linalg_ldl_factor_ex.default)
ldl_solve = from_aten("ldl_solve", OTHER, A.linalg_ldl_solve.default)
householder_product = from_aten("householder_product", OTHER, A.linalg_householder_product.default)
geqrf = from_aten("geqrf", OTHER, A.geqrf.default)
ormqr = from_aten("ormqr", OTHER, A.ormqr.default)
matrix_exp = from_aten("matrix_exp", OTHER, A.linalg_matrix_exp.default)
pinv = from_aten("pinv", OTHER, A.linalg_pinv.atol_rtol_tensor)
