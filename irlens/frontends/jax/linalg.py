"""jax's linear algebra as the canonical linalg ops (`irlens.core.ops.linalg`), for all three stages:
lax.linalg's primitives in a jaxpr, the LAPACK calls jax's CPU lowering makes of them (StableHLO
and HLO custom calls `lapack_<s|d><routine>_ffi`, their options in `backend_config` as LAPACK's
one-letter codes), and XLA's own `triangular_solve`.

Where jax's result convention differs from the canonical op's (ATen's), the difference is made
explicit with canonical ops: jax's cholesky puts NaN where the factorization failed, its lu gives
0-based pivots and the row permutation, eigh gives (vectors, values), svd (values, u, vt). A
LAPACK call's results are its routine's own: potrf leaves the input's other triangle in place,
getrf gives 1-based pivots and info. What has no meaning stays `unknown:` with the reason:

- the eigen- and singular vectors are unique only up to sign, and torch's LAPACK (MKL) and
  jaxlib's pick different signs for some matrices (symmetric 8x8 to 20x20 ones for syevd, 7x5,
  10x6 and wide ones for gesdd): eigh and svd map where their vectors are not read (the values
  alone), and stay `unknown:` where they are;
- jax's cholesky_p (before lax.linalg.cholesky takes its lower triangle) is LAPACK's potrf:
  the input's upper triangle stays in place (XLA's own Cholesky, on TPU, leaves it
  implementation-defined);
- syevd's and gesdd's `info` (non-zero where the iteration did not converge) has no ATen
  counterpart: torch raises there. It is written as a zero: wherever the float64 meaning runs,
  the routine converged. A result a routine leaves unspecified (gesdd's overwritten input, its
  u and vt when it computes values only, syevd's input when it computes no vectors) has no
  meaning: the call maps only where nothing reads it.
"""
from __future__ import annotations

import math
import re

from irlens.core.ir import Arg, TensorMeta
from irlens.frontends.jax.xla.forms import Emitter, Unmapped

# --- lax.linalg primitives (jaxpr) -----------------------------------------------------------


def cholesky_primitive(e: Emitter, x: str, out: TensorMeta) -> None:
    """cholesky_p: potrf's result (the lower factor, read from x's lower triangle, below x's
    upper triangle), NaN where x is not positive definite (jax's lowering checks LAPACK's info)."""
    packed, info = _potrf_result(e, x, True, None, None)
    _nan_unless_ok(e, packed, info, out)


def lu_primitive(e: Emitter, x: str, outs: list[TensorMeta]) -> None:
    """lu_p: (lu, pivots 0-based int32, permutation int32 with x[perm] = L U)."""
    lu, pivots, perm = outs
    piv1 = e.node("lu_factor", [x], [lu, None, None], pivot=True, check_errors=False).outputs[1].name
    e.emit("sub", [piv1, 1], pivots)
    # x = P L U: row i of L U is row perm[i] of x, P[perm[i], i] = 1
    (p,) = e.node("lu_unpack", [lu.name, piv1], [None], unpack_data=False, unpack_pivots=True).outputs
    rows = e.emit("argmax", [p.name], dim=len(p.shape) - 2, keepdim=False)
    e.emit("convert", [rows], perm, dtype=perm.dtype)


def qr_primitive(e: Emitter, x: str, outs: list[TensorMeta], full_matrices: bool, pivoting: bool) -> None:
    if pivoting:
        raise Unmapped("a column-pivoted QR (geqp3): no canonical op")
    e.node("qr", [x], outs, final=True, mode="complete" if full_matrices else "reduced")


def eigh_primitive(e: Emitter, x: str, xm: TensorMeta, outs: list[TensorMeta], dropped: frozenset[int],
                   lower: bool, sort_eigenvalues: bool, subset_by_index, algorithm) -> None:
    """eigh_p: (vectors, values), the values ascending; mapped where the vectors are dropped."""
    n = xm.shape[-1]
    if subset_by_index is not None and tuple(subset_by_index) != (0, n):
        raise Unmapped(f"eigh of the eigenvalues {tuple(subset_by_index)} only")
    if algorithm is not None:
        raise Unmapped(f"eigh by {algorithm} (the canonical op is LAPACK's syevd)")
    if not sort_eigenvalues:
        raise Unmapped("eigh with its eigenvalues in no specified order")
    _eigh(e, x, xm, outs[0], outs[1], "L" if lower else "U", dropped)


def svd_primitive(e: Emitter, x: str, xm: TensorMeta, outs: list[TensorMeta], dropped: frozenset[int],
                  subset_by_index, algorithm) -> None:
    """svd_p: (s,) or (s, u, vt); mapped where u and vt are not computed or dropped."""
    m, n = xm.shape[-2:]
    if subset_by_index is not None and tuple(subset_by_index) != (0, min(m, n)):
        raise Unmapped(f"svd of the singular values {tuple(subset_by_index)} only")
    if algorithm is not None and "DEFAULT" not in str(algorithm) and "DIVIDE_AND_CONQUER" not in str(algorithm):
        raise Unmapped(f"svd by {algorithm} (the canonical op is LAPACK's gesdd)")
    _require_unused(dropped, range(1, len(outs)), _SINGULAR_VECTORS)
    e.node("svdvals", [x], outs[:1], final=True)


def triangular_solve(e: Emitter, a: str, am: TensorMeta, b: Arg, out: TensorMeta, *, left_side: bool, lower: bool,
                     transpose_a: bool, unit_diagonal: bool) -> None:
    """op(a) x = b (left side) or x op(a) = b, op(a) = a or its transpose; a read from the one
    triangle `lower` names (its diagonal too, unless `unit_diagonal`: ones)."""
    if transpose_a:  # the transpose of a lower triangle is an upper one
        rank = len(am.shape)
        a = e.permute(a, [*range(rank - 2), rank - 1, rank - 2])
        lower = not lower
    e.node("solve_triangular", [a, b], [out], final=True, upper=not lower, left=left_side,
           unitriangular=unit_diagonal)


def tridiagonal_solve_primitive(e: Emitter, dl: Arg, d: Arg, du: Arg, b: str, bm: TensorMeta, out: TensorMeta,
                                perturb_singular: bool) -> None:
    """tridiagonal_solve_p: gtsv's x, NaN where A is singular."""
    if perturb_singular:
        raise Unmapped("a tridiagonal solve that perturbs a singular matrix's pivots")
    x, info = _gtsv_solve(e, dl, d, du, b, bm, None, None)
    _nan_unless_ok(e, x, info, out)


def _gtsv_solve(e: Emitter, dl: Arg, d: Arg, du: Arg, b: str, bm: TensorMeta, x: TensorMeta | None,
                info: TensorMeta | None) -> tuple[str, str]:
    """A x = b with A tridiagonal: sub-diagonal dl (dl[..., 0] unused), diagonal d, super-diagonal
    du (du[..., -1] unused), as LAPACK's gtsv solves it: A built dense and solved by LU with
    partial pivoting (in a tridiagonal matrix the same pivots gtsv picks), and LAPACK's info
    (`x`, `info`: the values to write, None: fresh ones). Returns their names."""
    *batch, n, _ = bm.shape
    shape, square = [*batch, n, n], [n, n]
    rows, cols = (e.emit("iota", [], shape=square, dim=k, dtype="int32") for k in (0, 1))
    below = e.emit("add", [cols, 1])
    above = e.emit("add", [rows, 1])
    a = 0.0
    for band, (i, j) in ((du, (above, cols)), (dl, (rows, below)), (d, (rows, cols))):
        on = e.emit("eq", [i, j])
        mask = e.emit("broadcast", [on], shape=shape, broadcast_dims=[len(batch), len(batch) + 1])
        # band[..., r] on row r
        spread = e.emit("broadcast", [band], shape=shape, broadcast_dims=list(range(len(batch) + 1)))
        a = e.emit("where", [mask, spread, a])
    solved = e.node("solve", [a, b], [x, None, None, info], left=True, check_errors=False)
    return solved.outputs[0].name, solved.outputs[3].name


# --- LAPACK calls (StableHLO / HLO custom calls) ---------------------------------------------

_LAPACK = re.compile(r"lapack_([sdcz])(\w+)_ffi")
# LAPACK's one-letter options, by their ASCII codes as jax writes them (uplo = 76: 'L')
_LETTERS = {76: "L", 85: "U", 78: "N", 84: "T", 67: "C", 82: "R", 65: "A", 83: "S", 86: "V", 79: "O"}


def is_lapack(target: str) -> bool:
    return _LAPACK.fullmatch(target) is not None


def lapack_options(spec: str) -> dict[str, str]:
    """`backend_config={uplo = 76 : ui8, ...}` (HLO) or `mhlo.backend_config = {...}` (StableHLO)
    as {uplo: 'L', ...}. Every entry is kept, one that is no letter code as `?<its text>`, so
    that a rule sees it (and refuses it) rather than losing it."""
    found = re.search(r"backend_config\s*=\s*\{([^}]*)\}", spec)
    options = {}
    for entry in filter(None, (e.strip() for e in found.group(1).split(","))) if found else ():
        key, _, value = (part.strip() for part in entry.partition("="))
        code = re.fullmatch(r"(\d+)\s*:\s*ui8", value)
        options[key] = _LETTERS.get(int(code.group(1)), f"?{code.group(1)}") if code else f"?{value}"
    return options


def lapack_call(e: Emitter, target: str, inputs: list[Arg], metas: list[TensorMeta], outs: list[TensorMeta],
                options: dict[str, str], unused: frozenset[int]) -> None:
    """One `lapack_<t><routine>_ffi` call as canonical ops."""
    kind, routine = _LAPACK.fullmatch(target).groups()
    if kind in "cz":
        raise Unmapped(f"{target}: complex numbers: the common view's dtypes are real")
    if routine not in _ROUTINES:
        raise Unmapped(f"custom call {target}: no canonical op for LAPACK's {routine}")
    rule, reads = _ROUTINES[routine]
    unread = sorted(set(options) - reads)
    if unread:
        raise Unmapped(f"{target}: options not mapped: {', '.join(unread)}")
    rule(e, inputs, metas, outs, options, unused)


def _potrf(e, inputs, metas, outs, options, unused) -> None:
    _potrf_result(e, inputs[0], _option(options, "uplo", "LU") == "L", outs[0], outs[1])


def _getrf(e, inputs, metas, outs, options, unused) -> None:
    """(L and U packed, 1-based int32 pivots, info): ATen's convention."""
    e.node("lu_factor", inputs, outs, final=True, pivot=True, check_errors=False)


def _geqrf(e, inputs, metas, outs, options, unused) -> None:
    e.node("geqrf", inputs, outs, final=True)


def _orgqr(e, inputs, metas, outs, options, unused) -> None:
    e.node("householder_product", inputs, outs, final=True)


def _trsm(e, inputs, metas, outs, options, unused) -> None:
    triangular_solve(e, inputs[0], metas[0], inputs[1], outs[0],
                     left_side=_option(options, "side", "LR") == "L", lower=_option(options, "uplo", "LU") == "L",
                     transpose_a=_option(options, "trans_x", "NTC") != "N",  # C: the adjoint, of a real matrix
                     unit_diagonal=_option(options, "diag", "NU") == "U")


def _syevd(e, inputs, metas, outs, options, unused) -> None:
    """(the vectors over the input, the values ascending, info); mapped where the vectors (mode V)
    or the overwritten input (mode N) are not read."""
    uplo, vectors = _option(options, "uplo", "LU"), _option(options, "mode", "NV") == "V"
    if not vectors:
        _require_unused(unused, [0], "syevd leaves its input unspecified in mode N")
    _eigh(e, inputs[0], metas[0], outs[0] if vectors else None, outs[1], uplo, unused)
    _converged(e, outs[2])


def _gesdd(e, inputs, metas, outs, options, unused) -> None:
    """(the input, overwritten, s, u, vt, info); mapped where only s and info are read."""
    mode = _option(options, "mode", "ASN")
    _require_unused(unused, [0], "gesdd leaves its overwritten input unspecified")
    _require_unused(unused, [2, 3], _SINGULAR_VECTORS if mode != "N" else "gesdd computes no u and vt in mode N")
    e.node("svdvals", inputs[:1], [outs[1]], final=True)
    _converged(e, outs[4])


def _gtsv(e, inputs, metas, outs, options, unused) -> None:
    """(dl, d, du overwritten by the factorization, x, info); mapped where the first three are not read."""
    _require_unused(unused, [0, 1, 2], "gtsv leaves its overwritten diagonals unspecified")
    _gtsv_solve(e, *inputs, metas[3], outs[3], outs[4])


# routine -> (rule, the options it reads)
_ROUTINES = {
    "potrf": (_potrf, {"uplo"}), "getrf": (_getrf, set()), "geqrf": (_geqrf, set()), "orgqr": (_orgqr, set()),
    "trsm": (_trsm, {"side", "uplo", "trans_x", "diag"}), "syevd": (_syevd, {"uplo", "mode"}),
    "gesdd": (_gesdd, {"mode"}), "gtsv": (_gtsv, set()),
}


# --- shared -----------------------------------------------------------------------------------


def _potrf_result(e: Emitter, x: str, lower: bool, out: TensorMeta | None,
                  info: TensorMeta | None) -> tuple[str, str]:
    """LAPACK's potrf: x with the triangle `lower` names replaced by the Cholesky factor read
    from it (the other triangle stays x's), and info (0, or the order of the leading minor that
    is not positive definite); `out`, `info`: the values to write (None: fresh ones). Returns
    their names."""
    factor, info = e.node("cholesky", [x], [None, info], upper=not lower, check_errors=False).outputs
    other = e.emit("triu" if lower else "tril", [x], diagonal=1 if lower else -1)
    return e.emit("add", [factor.name, other], out), info.name


def _nan_unless_ok(e: Emitter, value: str, info: str, out: TensorMeta) -> None:
    """value where info == 0 (per matrix of the batch), else NaN: jax's `_replace_not_ok_with_nan`."""
    ok = e.emit("eq", [info, 0])
    wide = e.emit("broadcast", [ok], shape=list(out.shape), broadcast_dims=list(range(len(out.shape) - 2)))
    e.emit("where", [wide, value, float("nan")], out)


def _eigh(e: Emitter, x: str, xm: TensorMeta, vectors: TensorMeta | None, values: TensorMeta, uplo: str,
          unread: frozenset[int]) -> None:
    """The eigenvalues; the vectors (result 0) too where they are read and have no sign to pick
    (an empty matrix), else they must be unread."""
    if vectors is not None and 0 not in unread and math.prod(xm.shape) == 0:
        e.node("eigh", [x], [values, vectors], final=True, UPLO=uplo, compute_v=True)
        return
    if vectors is not None:
        _require_unused(unread, [0], _EIGENVECTORS)
    e.node("eigh", [x], [values], final=True, UPLO=uplo, compute_v=False)


def _converged(e: Emitter, info: TensorMeta) -> None:
    e.emit("full", [], info, shape=list(info.shape), value=0, dtype=info.dtype)


def _option(options: dict[str, str], key: str, allowed: str) -> str:
    value = options.get(key)
    if value is None or value not in allowed:
        raise Unmapped(f"LAPACK option {key}={value!r} (expected one of {', '.join(allowed)})")
    return value


_SIGNS = "their signs are implementation-defined, and torch's LAPACK and jaxlib's pick different ones"
_EIGENVECTORS = f"the eigenvectors: {_SIGNS} (symmetric 8x8 to 20x20 matrices)"
_SINGULAR_VECTORS = f"the singular vectors: {_SIGNS} (7x5, 10x6 and wide matrices)"


def _require_unused(unused: frozenset[int], results, why: str) -> None:
    read = [r for r in results if r not in unused]
    if read:
        raise Unmapped(f"result {', '.join(map(str, read))} read, but {why}")
