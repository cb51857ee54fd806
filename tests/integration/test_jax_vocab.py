"""The closed vocabulary on JAX's side: every lax primitive accounted for, each structured form
(gather/scatter dimension numbers, windows, convolutions, sorts, shifts ...) run through the
jaxpr, StableHLO and optimized-HLO adapters and the float64 interpreter against JAX in float64,
params and attributes the adapters do not map kept unknown, ordinary model code with no unknown
op at any stage, and a fixed slice of lax_ops() and jax.numpy measured as the sweep does."""
from __future__ import annotations

import functools
import importlib
import math
import pkgutil
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from jax import lax
from jax._src.lax.linalg import geqrf  # not in jax.lax.linalg's public names

from irlens.core.interpret import interpret
from irlens.core.ir import TensorMeta
from irlens.frontends.jax.hlo import names as hlo_names
from irlens.frontends.jax.xla import forms as xla_forms, op as xla_op
from irlens.frontends.jax.jaxpr import eqn as jaxpr_eqn, names as jaxpr_names
from irlens.frontends.jax.hlo.walk import hlo_to_graph
from irlens.frontends.jax.hlo.stablehlo import stablehlo_to_graph
from irlens.frontends.jax.jaxpr.walk import MAX_CONSTANT_ELEMENTS, at_level, jaxpr_to_graph

ALL = ("jaxpr", "stablehlo", "hlo")
R = np.random.default_rng(0)


def normal(*shape):
    return R.standard_normal(shape)


def ints(lo, hi, *shape, dtype=np.int64):
    return R.integers(lo, hi, shape).astype(dtype)


# --- running a function at every level ------------------------------------------------------

def graphs(fn, args, levels=ALL) -> dict:
    """The common views of `fn(*args)` (x64 on): jaxpr, StableHLO, optimized HLO."""
    out = {}
    with jax.enable_x64(True):
        if "jaxpr" in levels:
            closed = jax.make_jaxpr(fn)(*args)
            # the constants the graph takes as inputs (smaller ones are `constant` nodes in it)
            consts = [np.asarray(c) for c in closed.consts if np.size(c) > MAX_CONSTANT_ELEMENTS]
            out["jaxpr"] = (jaxpr_to_graph(closed, name="t"), consts)
        if "stablehlo" in levels or "hlo" in levels:
            lowered = jax.jit(fn, keep_unused=True).lower(*args)
            if "stablehlo" in levels:
                out["stablehlo"] = (stablehlo_to_graph(lowered.compiler_ir("stablehlo"), name="t"), [])
            if "hlo" in levels:
                module = lowered.compile().runtime_executable().hlo_modules()[0]
                out["hlo"] = (hlo_to_graph(module, name="t"), [])
    return out


def assert_faithful(fn, args, levels=ALL, rtol=1e-9, atol=1e-12):
    """No unknown op at any level, and the interpreter (both levels of the common view) gives
    what JAX gives, in float64."""
    with jax.enable_x64(True):
        want = [np.asarray(w) for w in jax.tree_util.tree_leaves(fn(*args))]
    for level, (g, consts) in graphs(fn, args, levels).items():
        unknown = {n.op: n.attrs.get("reason") for n in g.nodes if n.is_unknown}
        assert not unknown, f"{level}: {unknown}"
        for view in ("composite", "primitive"):
            got = interpret(at_level(g, view), [torch.from_numpy(np.array(a)) for a in [*consts, *args]])
            assert len(got) == len(want), level
            for o, w in zip(got, want):
                o = o.numpy() if isinstance(o, torch.Tensor) else np.asarray(o)
                assert o.shape == w.shape, f"{level}: shape {o.shape} vs {w.shape}"
                np.testing.assert_allclose(o.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                                           equal_nan=True, err_msg=f"{level} ({view})")
    return want


def primitives_of(fn, args) -> set[str]:
    """The primitives a jaxpr holds, call bodies included."""
    found = set()

    def walk(jaxpr):
        for eqn in jaxpr.eqns:
            found.add(eqn.primitive.name)
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (list, tuple)) else [p]):
                    inner = getattr(sub, "jaxpr", sub)
                    if hasattr(inner, "eqns"):
                        walk(inner)
    with jax.enable_x64(True):
        walk(jax.make_jaxpr(fn)(*args).jaxpr)
    return found


# --- one case per form: (fn, args, levels) ---------------------------------------------------

def _prng_iota_2x32(shape):
    from jax._src.random import prng  # the PRNGs' counters: no public name

    return prng.iota_2x32_shape(shape)


def _keep_max_pair(a, b):
    """(value, tangent) of the greater value, the accumulated one on ties (jax's select_and_gather_add body)."""
    keep = a[0] >= b[0]
    return lax.select(keep, a[0], b[0]), lax.select(keep, a[1], b[1])


def _maxpool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2), (1, 2, 1), "SAME")


def _complex_inputs():
    g = np.random.default_rng(7)
    return g.standard_normal((2, 4, 5)), g.standard_normal((3, 4)) + 1j * g.standard_normal((3, 4))


def _custom_jvp():
    @jax.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))
    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))
    return softplus


def _custom_vjp():
    @jax.custom_vjp
    def clip_grad(x):
        return x * 2.0
    clip_grad.defvjp(lambda x: (x * 2.0, None), lambda _, g: (jnp.clip(g, -1, 1),))
    return clip_grad


def _rnn(h0, xs, w):
    def step(h, x):
        h = jnp.tanh(h @ w + x)
        return h, h.sum()
    return lax.scan(step, h0, xs, reverse=True)


X = normal(5, 4, 3)
# --- linear algebra: lax.linalg in a jaxpr, LAPACK custom calls in StableHLO and HLO ----------

def _spd(*shape):
    a = normal(*shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


A = normal(2, 4, 4) + 4 * np.eye(4)  # triangles well away from singular


def _triangular_solves(a, b, c):
    """Each side, triangle and transpose; b (.., 4, 3) on the left of x, c (.., 3, 4) on the right."""
    out = [lax.linalg.triangular_solve(a, b, left_side=True, lower=lower, transpose_a=transpose)
           for lower in (True, False) for transpose in (False, True)]
    return (*out, lax.linalg.triangular_solve(a, c, left_side=False, lower=True, unit_diagonal=True),
            lax.linalg.triangular_solve(a, c, left_side=False, lower=False, transpose_a=True, conjugate_a=True))


def _linear_solve(a, b):
    return lax.custom_linear_solve(lambda x: a @ x, b, lambda mv, x: jnp.linalg.solve(a, x))


LINALG_CASES = {
    # the factor, and cholesky_p itself: potrf's factor below the input's upper triangle
    "cholesky": (lambda x: (lax.linalg.cholesky(x), lax.linalg.cholesky_p.bind(x)), (_spd(2, 5, 5),), ALL),
    "cholesky_not_positive_definite": (lambda x: lax.linalg.cholesky(x), (-_spd(3, 3),), ALL),  # NaN
    "lu": (lambda x, y: (*lax.linalg.lu(x), *lax.linalg.lu(y)), (normal(2, 4, 4), normal(3, 5)), ("jaxpr",)),
    "lu_factors": (lambda x: lax.linalg.lu(x)[:2], (normal(5, 3),), ("hlo",)),  # StableHLO: the permutation's while
    "qr": (lambda x, y: (*lax.linalg.qr(x, full_matrices=False), *lax.linalg.qr(x), *lax.linalg.qr(y)),
           (normal(5, 3), normal(2, 3, 5)), ALL),
    "geqrf_householder_product": (lambda x: (*geqrf(x), lax.linalg.householder_product(*geqrf(x))),
                                  (normal(2, 5, 3),), ALL),
    "eigenvalues": (lambda x: (lax.linalg.eigh(x)[1], lax.linalg.eigh(x, lower=False, symmetrize_input=False)[1]),
                    (normal(2, 6, 6),), ALL),
    "eigh_of_empty_matrices": (lambda x: lax.linalg.eigh(x), (normal(3, 0, 0),), ALL),  # no vector, no sign
    "singular_values": (lambda x, y: (lax.linalg.svd(x, compute_uv=False), lax.linalg.svd(y, full_matrices=False)[1]),
                        (normal(5, 3), normal(2, 3, 6)), ALL),
    "triangular_solve": (_triangular_solves, (A, normal(2, 4, 3), normal(2, 3, 4)), ALL),
    "tridiagonal_solve": (lambda dl, d, du, b: lax.linalg.tridiagonal_solve(dl, d, du, b),
                          (normal(2, 5), normal(2, 5) + 4, normal(2, 5), normal(2, 5, 3)), ALL),
    "custom_linear_solve": (_linear_solve, (A[0], normal(4)), ("jaxpr",)),  # StableHLO: lu's permutation loop
}

CASES = {
    # gather: rows, a dim, several dims, batching (take_along_axis), modes, windows
    "take_rows": (lambda x, i: x[i], (X, np.array([0, 4, 1, -2])), ALL),
    "take_dim1_fill": (lambda x, i: jnp.take(x, i, axis=1), (X, np.array([0, 3, -1, 7])), ALL),
    "take_dim1_clip": (lambda x, i: jnp.take(x, i, axis=1, mode="clip"), (X, np.array([0, 7, -9, 2])), ALL),
    "index_points": (lambda x, i: x[i, :, i], (X, np.array([0, 2, 1])), ALL),
    "take_along_axis": (lambda x, j: jnp.take_along_axis(x, j[:, :, None], axis=1), (X[:2], ints(0, 4, 2, 2)), ALL),
    "gather_fill_value": (lambda x, i: jnp.asarray(x).at[i].get(mode="fill", fill_value=-1.0), (X, np.array([1, 9])),
                          ALL),
    "gather_window": (lambda x, i: jnp.asarray(x)[jnp.arange(3) + i], (normal(8), 2), ALL),
    "gather_sliding_windows": (jax.vmap(lambda x, i: lax.dynamic_slice(x, (i,), (2,))), (normal(3, 6),
                                                                                         np.array([0, 3, 5])), ALL),
    # scatter: add / set / mul / min / max / sub, one dim or several, batching, modes, one window
    "scatter_add_rows": (lambda x, i: jnp.asarray(x).at[i].add(1.0), (X, np.array([0, 4, 4, -1])), ALL),
    "scatter_set_drop": (lambda x, i: jnp.asarray(x).at[i].set(2.0), (X, np.array([0, 9, 1])), ALL),
    "scatter_max_dim1": (lambda x, i: jnp.asarray(x).at[:, i].max(0.5), (X, np.array([0, 3, 1, 3])), ALL),
    "scatter_mul_points": (lambda x, i: jnp.asarray(x).at[i, i].multiply(3.0), (X, np.array([0, 3, 1, 3])), ALL),
    "scatter_add_points": (lambda x, i: jnp.asarray(x).at[i, :, i].add(3.0), (X, np.array([0, 2, 1, 2])), ALL),
    "scatter_min_clip": (lambda x, i: jnp.asarray(x).at[i].min(-0.5, mode="clip"), (X, np.array([0, 7, -9])), ALL),
    "scatter_sub": (lambda x, i: jnp.asarray(x).at[i].subtract(1.5), (X, np.array([1, 1, 3])), ALL),
    "scatter_window_add": (lambda x, i: jnp.asarray(x).at[i].add(jnp.ones((4, 3))), (X, 7), ALL),
    "put_along_axis": (lambda x, i, v: jnp.put_along_axis(x, i, v, axis=1, inplace=False),
                       (normal(3, 4), ints(0, 4, 3, 1), normal(3, 1)), ALL),
    "scatter_batched": (jax.vmap(lambda x, i: x.at[i].add(1.0)), (normal(3, 5), ints(0, 5, 3, 2)), ALL),
    # windows: pooling, padding, dilation, the scans XLA writes as windows, the pair jax differentiates with
    "maxpool": (_maxpool, (X,), ALL),
    "avgpool_dilated": (lambda x: lax.reduce_window(x, 0.0, lax.add, (1, 2, 2), (1, 1, 2), ((0, 0), (1, 1), (0, 1)),
                                                    base_dilation=(1, 2, 1), window_dilation=(1, 1, 2)), (X,), ALL),
    "minpool_int": (lambda x: lax.reduce_window(x, np.iinfo(np.int64).max, lax.min, (2, 2), (1, 1), "VALID"),
                    (ints(-9, 9, 4, 5),), ALL),
    "maxpool_grad": (jax.grad(lambda x: (_maxpool(x) ** 2).sum()), (X,), ALL),
    "maxpool_jvp": (lambda x, t: jax.jvp(_maxpool, (x,), (t,)), (X, normal(5, 4, 3)), ALL),
    "minpool_jvp_dilated": (lambda x, t: jax.jvp(lambda v: lax.reduce_window(v, jnp.inf, lax.min, (2, 2, 1), (1, 1, 1),
                                                                             "VALID", window_dilation=(2, 1, 1)),
                                                 (x,), (t,)), (X, normal(5, 4, 3)), ALL),
    "maxpool_grad_valid": (jax.grad(lambda x: (lax.reduce_window(x, -jnp.inf, lax.max, (2, 2, 2), (1, 2, 1), "VALID")
                                               ** 2).sum()), (X,), ALL),
    "generic_reduce_window": (lambda x: lax.reduce_window(x, 1.0, lax.mul, (2, 1, 1), (1, 1, 1), "VALID"), (X,),
                              ALL),
    "cumsum": (lambda x: jnp.cumsum(x, axis=1), (X,), ALL),
    "cumprod_reverse": (lambda x: lax.cumprod(x, axis=0, reverse=True), (X,), ALL),
    "cummax_cummin": (lambda x: (lax.cummax(x, axis=2, reverse=True), lax.cummin(x, axis=1)), (X,), ALL),
    "cumlogsumexp": (lambda x: (lax.cumlogsumexp(x, axis=0, reverse=True), lax.cumlogsumexp(x, axis=1)), (X,), ALL),
    # a window keeping the (value, tangent) its max selects, padding included (a window of -inf
    # selects the fill): jax's select_and_gather_add written out, as lax.reduce_window of two operands
    "select_window_padded": (lambda x, t: lax.reduce_window((x, t), (-jnp.inf, 0.0), _keep_max_pair, (2, 3), (1, 2),
                                                            ((1, 1), (1, 0))),
                             (np.where(R.uniform(size=(4, 5)) > 0.6, -np.inf, normal(4, 5)), normal(4, 5)),
                             ("stablehlo", "hlo")),
    "logsumexp_window": (lambda x: lax.reduce_window(x, -jnp.inf, jnp.logaddexp, (2, 2, 1), (2, 1, 1),
                                                     ((1, 0), (0, 1), (0, 0)), window_dilation=(1, 2, 1)), (X,),
                         ("stablehlo", "hlo")),
    "logical_windows": (lambda m: (lax.reduce_window(m, True, lax.bitwise_and, (2, 2), (1, 1), "SAME"),
                                   lax.reduce_window(m, False, lax.bitwise_or, (1, 3), (1, 2), "VALID")),
                        (R.uniform(size=(4, 6)) > 0.3,), ALL),
    "pad_interior": (lambda x: lax.pad(x, -1.0, ((1, 2, 1), (0, -1, 2), (2, 0, 0))), (X,), ALL),
    # sort, argsort, several operands, several keys, top_k
    "sort": (lambda x: jnp.sort(x, axis=1), (X,), ALL),
    "sort_descending": (lambda x: jnp.sort(x, axis=0, descending=True), (X,), ALL),
    "argsort": (lambda x: jnp.argsort(x, axis=-1), (X,), ALL),
    "sort_payload": (lambda k, v: lax.sort((k, v), dimension=0, num_keys=1), (normal(6), normal(6)), ALL),
    "lexsort": (lambda a, b: jnp.lexsort((a, b)), (ints(0, 3, 9), ints(0, 3, 9)), ("jaxpr",)),
    "top_k": (lambda x: lax.top_k(x, 2), (X,), ALL),
    "argmax_argmin": (lambda x: (jnp.argmax(x, axis=1), jnp.argmin(x, axis=0)), (X,), ALL),
    # windows at computed offsets
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x, (i, 1, 0), (2, 2, 3)), (X, 4), ALL),
    "dynamic_update_slice": (lambda x, i: lax.dynamic_update_slice(x, jnp.ones((2, 2, 3)), (i, 1, 0)), (X, 4), ALL),
    # selections and elementwise forms whose params matter
    "select_n_bool": (lambda c, a, b: lax.select_n(c, a, b), (R.uniform(size=5) > 0.5, normal(5), normal(5)), ALL),
    "select_n_int": (lambda p, a, b, c: lax.select_n(p, a, b, c), (ints(0, 3, 4, dtype=np.int32), normal(4), normal(4),
                                                                   normal(4)), ALL),
    "clamp_rev": (lambda x: (lax.clamp(-0.5, x, 0.5), jnp.flip(x, (0, 2))), (X,), ALL),
    "rem_trunc_div_int": (lambda a, b, c, d: (lax.rem(a, b), lax.div(c, d)), (np.array([-5.5, 5.5, 7.0]),
                          np.array([2.0, -2.0, 3.0]), np.array([-7, 7, 9]), np.array([2, -2, 4])), ALL),
    "remainder_floor_divide": (lambda a, b, c, d: (jnp.remainder(a, b), c // d), (np.array([-5.5, 5.5]),
                               np.array([2.0, -2.0]), np.array([-7, 7]), np.array([2, -2])), ALL),
    "round_methods": (lambda x: (lax.round(x), jnp.round(x)), (np.array([0.5, 1.5, -2.5, 2.4999, -0.5]),), ALL),
    "reduce_precision": (lambda x: (lax.reduce_precision(x, 5, 10), lax.reduce_precision(x, 8, 7),
                                    lax.reduce_precision(x, 4, 3)),
                         (np.array([1e-40, 3e-5, 1.0 / 3, -65519.0, 7e5, np.inf, -np.nan, 0.0]),), ALL),
    "nextafter_isfinite": (lambda a, b: (jnp.nextafter(a, b), jnp.isfinite(a / b)), (normal(5), normal(5)), ALL),
    "special_functions": (lambda x: (lax.erf_inv(x / 4), lax.lgamma(x + 3), lax.digamma(x + 3), lax.bessel_i0e(x),
                                     lax.bessel_i1e(x), lax.igamma(x + 3, x + 4), lax.igammac(x + 3, x + 4),
                                     jnp.cbrt(x)), (normal(6),), ("jaxpr",)),
    "incomplete_beta_polygamma": (lambda a, b, x: (jax.scipy.special.betainc(a, b, x),
                                                   jax.scipy.special.polygamma(1, a), jax.scipy.special.zeta(b + 1, a)),
                                  (R.uniform(0.5, 3, 4), R.uniform(0.5, 3, 4), R.uniform(size=4)), ("jaxpr",)),
    "integer_pow_square": (lambda x: (x ** 3, lax.integer_pow(x, -2), lax.square(x)), (normal(5),), ALL),
    # bits: bitwise on integers, logical on bool; shifts past the width; counting; bitcasts; unsigned
    "bitwise_ints": (lambda a, b: (a & b, a | b, a ^ b, ~a), (np.array([5, -3, 12]), np.array([3, 6, -1])), ALL),
    "logical_bools": (lambda a, b: (a & b, a | b, a ^ b, ~a), (R.uniform(size=4) > 0.5, R.uniform(size=4) > 0.5), ALL),
    "shifts_int32": (lambda a, b: (a << b, a >> b, lax.shift_right_logical(a, b)),
                     (np.array([5, -3, 12, -1], np.int32), np.array([1, 2, 33, 31], np.int32)), ALL),
    "shifts_int64": (lambda a, b: (lax.shift_right_logical(a, b), lax.shift_right_logical(a, 3)),
                     (np.array([-5, 9, -1, 7]), np.array([1, 0, 70, 63])), ALL),
    "shifts_uint32": (lambda a, b: (a << b, a >> b, lax.shift_right_arithmetic(a, b)),
                      (np.array([5, 2**31 + 3, 12], np.uint32), np.array([1, 2, 33], np.uint32)), ALL),
    "unsigned_arithmetic": (lambda a, b: (a + b, a * b, a < b, ~a, a // b), (np.array([1, 2**31 + 7, 5], np.uint32),
                            np.array([2**32 - 1, 3, 9], np.uint32)), ALL),
    "unsigned_arithmetic_uint64": (lambda a, b: (a + b, a * b, a - b, a ^ b, ~a, a == b, a << 3),
                                   (np.array([1, 2**63 + 5, 2**64 - 1], np.uint64),
                                    np.array([2**64 - 1, 3, 2**62], np.uint64)), ALL),
    "iota_2x32_shape": (lambda: _prng_iota_2x32((3, 4, 5)), (), ALL),
    "popcount_clz_mulhi": (lambda a, b: (lax.population_count(a), lax.clz(a), lax.mulhi(a, b)),
                           (np.array([5, -3, 12, 0], np.int32), np.array([3, 6, 987654321, 7], np.int32)), ALL),
    "bitcast": (lambda x: (lax.bitcast_convert_type(x, jnp.int64), lax.bitcast_convert_type(x.astype(jnp.float32),
                                                                                          jnp.int16)), (normal(3),),
                ALL),
    "reductions_bitwise": (lambda a, m: (lax.reduce_and(a, (0,)), lax.reduce_or(a, (0,)), lax.reduce_xor(a, (0,)),
                                         jnp.all(m), jnp.any(m, axis=0)), (ints(0, 16, 3, 2), R.uniform(size=(3, 2)) > .3),
                           ALL),
    "generic_reduce": (lambda x: lax.reduce(x, 2.0, lax.add, (1,)), (X,), ALL),
    # the plain renames, each run once
    "elementwise_unary": (lambda x: (jnp.abs(x), jnp.arccos(x / 4), jnp.arccosh(x * x + 1), jnp.arcsin(x / 4),
                                     jnp.arcsinh(x), jnp.arctan(x), jnp.arctanh(x / 4), jnp.ceil(x), jnp.cos(x),
                                     jnp.cosh(x), lax.erf(x), lax.erfc(x), jnp.exp2(x), jnp.expm1(x), jnp.floor(x),
                                     jnp.log(x * x), jnp.log1p(x * x), jax.nn.sigmoid(x), -x, lax.rsqrt(x * x),
                                     jnp.sin(x), jnp.sinh(x), jnp.sqrt(x * x), jnp.tan(x), jnp.tanh(x), jnp.sign(x),
                                     jnp.cbrt(x), lax.copy_p.bind(x)), (normal(7),), ALL),
    "elementwise_binary": (lambda x, y: (jnp.arctan2(x, y), lax.pow(x * x, y), x >= y, x > y, x <= y, x < y,
                                         x == y, x != y, jnp.maximum(x, y), jnp.minimum(x, y), x - y, x / y),
                           (normal(6), normal(6)), ALL),
    "reductions": (lambda x: (x.max(axis=1), x.min(axis=(0, 2)), x.prod(axis=2), x[1:4:2, ::-1].sum()), (X,), ALL),
    "add_any_grad": (jax.grad(lambda x: (jnp.sin(x) * jnp.cos(x)).sum()), (normal(5),), ("jaxpr",)),
    # contractions
    "dot_general_batched": (lambda a, b: lax.dot_general(a, b, (((2,), (1,)), ((0,), (0,)))), (normal(2, 3, 4),
                                                                                              normal(2, 4, 5)), ALL),
    "dot_preferred": (lambda a, b: lax.dot_general(a, b, (((1,), (0,)), ((), ())), preferred_element_type=jnp.float64),
                      (normal(3, 4).astype(np.float32), normal(4, 2).astype(np.float32)), ("jaxpr",)),
    "vdot_scalar": (jnp.vdot, (normal(3, 4), normal(3, 4)), ALL),
    "conv_depthwise_causal": (lambda x, w: lax.conv_general_dilated(x, w, (1,), [(3, 0)],
                                                                    dimension_numbers=("NWC", "WIO", "NWC"),
                                                                    feature_group_count=3), (X, normal(4, 1, 3)), ALL),
    "conv_depthwise_grad": (jax.grad(lambda x, w: (lax.conv_general_dilated(
        x, w, (1,), [(3, 0)], dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=3) ** 2).sum(),
        argnums=(0, 1)), (X, normal(4, 1, 3)), ALL),
    "conv2d_dilated_strided": (lambda x, w: lax.conv_general_dilated(x, w, (2, 1), [(1, 2), (0, 1)], lhs_dilation=(1, 2),
                                                                     rhs_dilation=(2, 1)),
                               (normal(2, 3, 7, 6), normal(4, 3, 2, 3)), ALL),
    "conv2d_grad": (jax.grad(lambda x, w: (lax.conv_general_dilated(x, w, (2, 1), [(1, 2), (0, 1)],
                                                                    rhs_dilation=(2, 1)) ** 2).sum(), argnums=(0, 1)),
                    (normal(2, 3, 7, 6), normal(4, 3, 2, 3)), ALL),
    # shape ops, calls, creation
    "tile_stack_unstack_split": (lambda x: (jnp.tile(x, (2, 1, 3)), jnp.stack([x, x], 1), *jnp.unstack(x, axis=1),
                                            *jnp.split(x, [1, 3], axis=1)), (X,), ALL),
    "reshape_dimensions": (lambda x: lax.reshape(x, (12, 5), dimensions=(1, 2, 0)), (X,), ALL),
    "one_hot_repeat_iota": (lambda i, x: (jax.nn.one_hot(i, 6), jnp.repeat(x, 2, axis=0)), (np.array([1, 4, 0]), X),
                            ALL),
    "scan_unrolled": (_rnn, (normal(3), normal(5, 3), normal(3, 3)), ("jaxpr",)),
    "scan_unrolled_grad": (jax.grad(lambda h, xs, w: _rnn(h, xs, w)[1].sum(), argnums=(0, 2)),
                           (normal(3), normal(5, 3), normal(3, 3)), ("jaxpr",)),
    "custom_jvp_vjp_inlined": (lambda x: _custom_jvp()(x) + _custom_vjp()(x), (normal(4),), ("jaxpr",)),
    "custom_vjp_grad": (jax.grad(lambda x: _custom_vjp()(x).sum()), (normal(4),), ("jaxpr",)),
    "array_constants": (lambda x: x * np.arange(12.0).reshape(3, 4) + np.array([[1.5], [np.inf], [-0.0]]),
                        (normal(3, 4),), ("stablehlo", "hlo")),
    "insert": (lambda x: jnp.insert(x, 1, 5.0, axis=1), (normal(3, 4),), ALL),
    # Fourier transforms (each type) and complex parts, compared part by part (inputs from their own
    # generator: the others' draws stay as they were)
    "fft_forms": (lambda x, z: (jnp.fft.fftn(x, axes=(1, 2)).real, jnp.fft.fftn(x, axes=(1, 2)).imag,
                                jnp.fft.ifft(z).real, jnp.fft.ifft(z).imag, jnp.fft.rfftn(x).imag,
                                jnp.fft.irfftn(jnp.fft.rfft2(x), s=(4, 5)), jnp.real(lax.complex(x, x * 2)),
                                jnp.imag(jnp.conj(z)), jnp.imag(z)),
                  _complex_inputs(), ALL),
    # complex constants: scalars (whole parts too), a splat, inf; the scalings of fft's other norms
    "complex_constants": (lambda x, z: (jnp.real(z * (1.5 + 2j)), jnp.imag(z * 2j), jnp.imag(z + lax.full(z.shape, 1 + 2j, z.dtype)),
                                        jnp.real(z * complex(np.inf, 0)), jnp.fft.fft(z, norm="ortho").real,
                                        jnp.fft.ifft(z, norm="forward").imag),
                          _complex_inputs(), ALL),
    # control flow (more in test_control_flow.py)
    "fori_loop_trip_count_input": (lambda x, n: lax.fori_loop(0, n, lambda i, v: jnp.tanh(v) * i + v, x),
                                   (normal(4), 6), ALL),
    "gcd_while": (jnp.gcd, (ints(-20, 20, 6), ints(-20, 20, 6)), ALL),
    "switch": (lambda i, x: lax.switch(i, [jnp.sin, jnp.cos, lambda v: -v], x), (2, normal(4)), ALL),
    **LINALG_CASES,
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_form_is_faithful_at_every_level(name):
    fn, args, levels = CASES[name]
    assert_faithful(fn, args, levels)


# Handlers that no case reaches on jax 0.10 on a CPU, and why.
NOT_REACHED = {
    "one_minus_square": "jax >= 0.11 (test_jax.py binds a stand-in)",
    "copy_p": "older jax's name of copy",
    "expand_dims": "no primitive of its own (a reshape)", "empty2": "internal (scratch buffers)",
    "eq_to": "dynamic shapes", "le_to": "dynamic shapes", "lt_to": "dynamic shapes",
    "zeros_like": "symbolic zeros, instantiated before a jaxpr is staged", "device_put": "eager placement",
    "stage": "lifting a literal into a trace", "empty": "uninitialized memory (empty_like)",
    "scatter_add": "older jax's name of scatter-add",
}


@functools.cache
def reached_primitives() -> set[str]:
    found = set()
    for fn, args, _ in CASES.values():
        found |= primitives_of(fn, args)
    return found


def test_every_jaxpr_handler_is_checked_by_a_case():
    """Every name-table entry of the jaxpr adapter is run by a case above against JAX in float64,
    so each entry's params are checked against the canonical op's meaning."""
    missed = set(jaxpr_eqn.HANDLERS) - reached_primitives() - set(NOT_REACHED)
    assert not missed, f"handlers no case checks: {sorted(missed)}"
    assert not set(NOT_REACHED) & reached_primitives(), "a NOT_REACHED entry is reached now: move it out"


# HLO opcodes no case produces on a CPU, and where they are checked instead.
HLO_NOT_REACHED = {
    "triangular-solve": "jax lowers it to LAPACK's trsm for the dtypes LAPACK has: test_xla_triangular_solve",
    "topk": "XLA's top-k opcode (GPU); the CPU lowers top_k to a TopK custom call",
    "clz": "an alias of count-leading-zeros", "is-inf": "chlo's, expanded before StableHLO is emitted",
    "lgamma": "chlo, expanded", "digamma": "chlo, expanded", "igamma": "chlo, expanded",
    "igammac": "chlo, expanded", "polygamma": "chlo, expanded", "zeta": "chlo, expanded",
    "bessel-i1e": "chlo, expanded", "erf-inv": "chlo, expanded",
    "logistic": "jax lowers logistic to exp and divide",
    "map": "XLA's CPU writes a bf16 scatter-add of one whole window as a map: test_hlo_gpu_bodies.py's map test",
    "if": "jax lowers lax.cond to stablehlo.case: test_control_flow.py reads an if from StableHLO text",
}


def test_every_hlo_handler_is_checked_by_a_case():
    """Every opcode the HLO / StableHLO adapters convert appears in a case's module (so it is run
    against JAX in float64), or is listed with where it is checked."""
    seen = set()
    for fn, args, levels in CASES.values():
        for level in ("stablehlo", "hlo"):
            if level in levels:
                g, _ = graphs(fn, args, (level,))[level]
                seen |= {hlo_names.stablehlo_opcode(n.native) if "." in n.native else n.native for n in g.nodes}
    missed = set(xla_op.HANDLERS) - seen - set(HLO_NOT_REACHED)
    assert not missed, f"HLO handlers no case checks: {sorted(missed)}"
    assert not set(HLO_NOT_REACHED) & seen, "an HLO_NOT_REACHED entry is reached now: move it out"


def _all_lax_primitives() -> dict[str, str]:
    """Every Primitive object jax's lax, random, and call/derivative modules define."""
    import jax._src.lax as lax_pkg
    import jax._src.random as random_pkg
    from jax._src import core

    modules = [m.name for m in pkgutil.walk_packages(lax_pkg.__path__, "jax._src.lax.")]
    modules += [m.name for m in pkgutil.walk_packages(random_pkg.__path__, "jax._src.random.")]
    modules += ["jax._src.ad_util", "jax._src.custom_derivatives", "jax._src.pjit", "jax._src.ad_checkpoint",
                "jax._src.dispatch", "jax._src.callback", "jax._src.debugging"]
    found = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception:  # an optional backend's module (mosaic, cudnn) that does not import here
            continue
        for value in vars(module).values():
            if isinstance(value, core.Primitive):
                found.setdefault(value.name, name)
    return found


def test_every_lax_primitive_is_accounted_for():
    """The primitive level is closed: each of jax's primitives is converted, inlined, passed
    through, or kept unknown with a stated reason."""
    j = jaxpr_names
    known = set(jaxpr_eqn.HANDLERS) | set(j.CALLS) | set(j.SOLVES) | set(j.IDENTITIES) | set(j.CLASSIFIED)
    prims = _all_lax_primitives()
    assert len(prims) > 200
    assert sorted(set(prims) - known) == []
    assert not set(jaxpr_eqn.HANDLERS) & set(j.CLASSIFIED)


# --- never a wrong meaning ------------------------------------------------------------------

def test_an_unmapped_param_keeps_the_primitive_unknown():
    closed = jax.make_jaxpr(lambda x: lax.exp(x) + 1.0)(jnp.ones(3))
    eqn = closed.jaxpr.eqns[0]
    jaxpr = closed.jaxpr.replace(eqns=[eqn.replace(params={**eqn.params, "new_knob": 3}), *closed.jaxpr.eqns[1:]])
    g = jaxpr_to_graph(closed.replace(jaxpr=jaxpr), name="t")
    assert g.nodes[0].op == "unknown:exp" and g.nodes[0].attrs["reason"] == "params not mapped: new_knob"
    assert g.nodes[1].op == "add"


def test_intermediates_take_their_rules_metadata():
    """A value an adapter adds between the nodes of one op has the shape and dtype its op's rule
    gives; one the rule refuses (operands that do not fit) leaves the op unmapped, saying why."""
    e = xla_forms.Emitter("n", "dot", known={"a": TensorMeta("a", (2, 3), "bfloat16"),
                                             "b": TensorMeta("b", (4, 5), "float32")})
    moved = e.permute("a", [1, 0])
    wide = e.emit("convert", [moved], dtype="float32")
    assert (e.meta(moved).shape, e.meta(moved).dtype) == ((3, 2), "bfloat16")
    assert (e.meta(wide).shape, e.meta(wide).dtype) == ((3, 2), "float32")
    with pytest.raises(xla_forms.Unmapped, match="its rule does not give"):
        e.emit("matmul", [wide, "b"])


def test_an_unmapped_hlo_attribute_keeps_the_instruction_unknown():
    meta = TensorMeta("y", (3,), "float32")
    op = xla_op.XlaOp("y", "add", "add", "", ["a", "b"], [meta, meta], [meta], "", {}, {}, {},
                           {"metadata", "new_attribute"})
    (node,) = xla_op.convert(op)
    assert node.op == "unknown:add" and node.attrs["reason"] == "attributes not mapped: new_attribute"


def test_random_bits_are_classified_not_mapped():
    """jax.random draws bits from a key (a deterministic counter-based generator): no canonical op
    means that, so the bits stay unknown with the reason; the float arithmetic after them maps."""
    g = jaxpr_to_graph(jax.make_jaxpr(lambda k: jax.random.normal(k, (3,)))(jax.random.key(0)), name="t")
    unknown = {n.op: n.attrs["reason"] for n in g.nodes if n.is_unknown}
    assert set(unknown) == {"unknown:random_bits"} and "random bits" in unknown["unknown:random_bits"]
    assert {"bitwise_right_shift", "bitwise_or", "bitcast", "erfinv"} <= set(g.op_counts())
    assert "rand" not in g.op_counts()


def test_a_long_scan_stays_unknown_with_the_reason():
    """A scan longer than the adapter unrolls stays unknown with why (while loops and
    conditionals are known: tests/integration/test_control_flow.py)."""
    g = jaxpr_to_graph(jax.make_jaxpr(lambda x: lax.scan(lambda c, v: (c + v, c), 0.0, x))(jnp.ones(100)), name="t")
    assert g.unknown_ops() == Counter({"unknown:scan": 1}) and "64 steps" in g.nodes[-1].attrs["reason"]


def test_total_order_float_compare_outside_a_sort_is_unknown():
    meta, pred = TensorMeta("a", (3,), "float32"), TensorMeta("p", (3,), "bool")
    op = xla_op.XlaOp("p", "compare", "compare", "", ["a", "b"], [meta, meta], [pred],
                           "direction=LT, type=TOTALORDER", {}, {}, {}, {"direction", "type"})
    assert xla_op.convert(op)[0].attrs["reason"].startswith("a total-order compare of floats")


# --- linear algebra: the ops each form becomes, and what stays unknown -----------------------

def _ops(fn, args, level) -> Counter:
    return graphs(fn, args, (level,))[level][0].op_counts()


def test_linalg_forms_become_the_canonical_ops():
    """jax's result conventions made explicit: lu's 0-based pivots and permutation from ATen's
    1-based pivots, cholesky's NaN on failure; the LAPACK calls as their routines (qr as geqrf
    and the Householder product)."""
    x = normal(4, 4)
    lu = _ops(lax.linalg.lu, (x,), "jaxpr")
    assert {"lu_factor", "sub", "lu_unpack", "argmax", "convert"} <= set(lu) and not any(k.startswith("unknown:") for k in lu)
    assert {"cholesky", "triu", "add", "eq", "where"} <= set(_ops(lax.linalg.cholesky, (_spd(4, 4),), "jaxpr"))
    assert {"cholesky", "triu", "add"} <= set(_ops(lax.linalg.cholesky, (_spd(4, 4),), "stablehlo"))
    assert _ops(lax.linalg.qr, (x,), "jaxpr")["qr"] == 1
    for level in ("stablehlo", "hlo"):
        ops = _ops(lax.linalg.qr, (x,), level)
        assert ops["geqrf"] == 1 and ops["householder_product"] == 1 and "qr" not in ops
    g = graphs(lambda a, b: lax.linalg.triangular_solve(a, b, left_side=False, lower=True, transpose_a=True),
               (A[0], normal(3, 4)),
               ("jaxpr",))["jaxpr"][0]
    (solve,) = [n for n in g.nodes if n.op == "solve_triangular"]
    assert solve.attrs == {"upper": True, "left": False, "unitriangular": False}  # a lower a, transposed: upper
    values = graphs(lambda a: lax.linalg.eigh(a)[1], (x,), ("stablehlo",))["stablehlo"][0]
    (eigh,) = [n for n in values.nodes if n.op == "eigh"]
    assert eigh.attrs["compute_v"] is False and len(eigh.outputs) == 1


@pytest.mark.parametrize("name", sorted(LINALG_CASES))
def test_linalg_values_are_written_once(name):
    """The several nodes a linear-algebra form becomes write fresh values apart from each other
    and from the reader's own (HLO's `<instruction>.<k>` tuple results)."""
    fn, args, levels = LINALG_CASES[name]
    for level, (g, _) in graphs(fn, args, levels).items():
        written = Counter(o.name for n in g.nodes for o in n.outputs)
        assert max(written.values()) == 1, f"{level}: values written twice: {written.most_common(3)}"


@pytest.mark.parametrize("level", ALL)
def test_eigen_and_singular_vectors_stay_unknown(level):
    """Vectors unique only up to sign, which torch's LAPACK and jaxlib's pick differently (a
    symmetric 12x12 matrix; a 7x5 one): no canonical meaning, so eigh and svd stay unknown
    where their vectors are read."""
    a = normal(12, 12)
    for fn, arg, native in ((lambda x: lax.linalg.eigh(x), a + a.T, "eigh"),
                            (lambda x: lax.linalg.svd(x, full_matrices=False), normal(7, 5), "svd")):
        with jax.enable_x64(True):
            v = np.asarray(fn(arg)[0 if native == "eigh" else 0])
        want = (torch.linalg.eigh(torch.from_numpy(arg))[1] if native == "eigh" else
                torch.linalg.svd(torch.from_numpy(arg), full_matrices=False)[0]).numpy()
        assert np.allclose(np.abs(v), np.abs(want)) and not np.allclose(v, want)  # the signs, and only they, differ
        unknown = [n for n in graphs(fn, (arg,), (level,))[level][0].nodes if n.is_unknown]
        assert len(unknown) == 1 and "signs are implementation-defined" in unknown[0].attrs["reason"], level


def _lapack_op(target, spec, inputs, outs, unused=frozenset()):
    metas = [TensorMeta(f"i{k}", shape, "float32") for k, shape in enumerate(inputs)]
    outputs = [TensorMeta(f"o{k}", shape, dtype) for k, (shape, dtype) in enumerate(outs)]
    return xla_op.XlaOp("c", "custom-call", "custom-call", "", [m.name for m in metas], metas, outputs,
                             f'custom_call_target="{target}", {spec}', {}, {}, {}, {"custom_call_target", "backend_config"},
                             target, unused=frozenset(unused))


def test_unmapped_linalg_params_and_results_stay_unknown():
    """A param, a LAPACK option or a result the adapters do not map keeps the node unknown."""
    x = normal(5, 3)
    closed = jax.make_jaxpr(lambda a: lax.linalg.qr(a, pivoting=True))(x)
    assert "column-pivoted" in [n for n in jaxpr_to_graph(closed, name="t").nodes if n.is_unknown][0].attrs["reason"]
    closed = jax.make_jaxpr(lambda a: lax.linalg.eigh(a, subset_by_index=(0, 2))[1])(normal(4, 4))
    (node,) = [n for n in jaxpr_to_graph(closed, name="t").nodes if n.is_unknown]
    assert node.op == "unknown:eigh" and "(0, 2)" in node.attrs["reason"]
    matrix, info = ((4, 4), "float32"), ((), "int32")
    cases = [
        ("lapack_spotrf_ffi", "backend_config={uplo = 76 : ui8, unit = 78 : ui8}", [(4, 4)], [matrix, info], (),
         "options not mapped: unit"),
        ("lapack_spotrf_ffi", "backend_config={uplo = 88 : ui8}", [(4, 4)], [matrix, info], (), "uplo"),
        ("lapack_spotrf_ffi", "backend_config={uplo = 76 : ui8, lwork = 16 : i64}", [(4, 4)], [matrix, info], (),
         "options not mapped: lwork"),  # an option that is no letter code is seen too
        ("lapack_spotrf_ffi", "backend_config={uplo = 76 : i32}", [(4, 4)], [matrix, info], (), "uplo='?76 : i32'"),
        ("lapack_cpotrf_ffi", "backend_config={uplo = 76 : ui8}", [(4, 4)], [matrix, info], (), "complex"),
        ("lapack_sgesdd_ffi", "backend_config={mode = 78 : ui8}", [(4, 4)],
         [matrix, ((4,), "float32"), matrix, matrix, info], {2, 3}, "result 0 read"),
        ("lapack_sgeev_ffi", "backend_config={}", [(4, 4)], [matrix], (), "no canonical op for LAPACK's geev"),
    ]
    for target, spec, inputs, outs, unused, reason in cases:
        (node,) = xla_op.convert(_lapack_op(target, spec, inputs, outs, unused))
        assert node.op == "unknown:custom-call" and reason in node.attrs["reason"], (target, node.attrs["reason"])
    nodes = xla_op.convert(_lapack_op("lapack_sgesdd_ffi", "backend_config={mode = 78 : ui8}", [(4, 4)],
                                           [matrix, ((4,), "float32"), matrix, matrix, info], {0, 2, 3}))
    assert [n.op for n in nodes] == ["svdvals", "full"]  # info: 0 where the meaning runs (torch raises elsewhere)
    op = xla_op.XlaOp("l", "cholesky", "cholesky", "", ["a"], [TensorMeta("a", (4, 4), "float32")],
                           [TensorMeta("l", (4, 4), "float32")], "lower=true", {}, {}, {}, {"lower"})
    assert "implementation-defined" in xla_op.convert(op)[0].attrs["reason"]  # XLA's own Cholesky


def test_approx_top_k_stays_unknown():
    """approx_top_k's result is any one with the recall it asks for (exact top-k on the CPU, not
    on a TPU): no one function of its input, so it stays unknown."""
    closed = jax.make_jaxpr(lambda x: lax.approx_max_k(x, 2))(normal(3, 8))
    (node,) = [n for n in jaxpr_to_graph(closed, name="t").nodes if n.is_unknown]
    assert node.op == "unknown:approx_top_k" and "approximate" in node.attrs["reason"]


def test_xla_triangular_solve():
    """XLA's own TriangularSolve (jax's CPU lowering for float16, which LAPACK lacks), in float64:
    each side, triangle, transpose and unit diagonal."""
    from jax._src.interpreters import mlir

    a, b = A[0], normal(3, 4)
    for left, lower, transpose, unit in ((False, True, True, True), (True, False, False, False)):
        rhs = b.T if left else b
        fn = functools.partial(lax.linalg.triangular_solve, left_side=left, lower=lower, transpose_a=transpose,
                               unit_diagonal=unit)
        text = jax.jit(fn).lower(a.astype(np.float16), rhs.astype(np.float16)).as_text()
        assert "stablehlo.triangular_solve" in text
        with mlir.make_ir_context() as context:
            module = mlir.ir.Module.parse(text.replace("f16", "f64"), context=context)
            g = stablehlo_to_graph(module, name="t")
        assert not g.unknown_ops() and g.op_counts()["solve_triangular"] == 1
        (got,) = interpret(g, [torch.from_numpy(a), torch.from_numpy(rhs)])
        with jax.enable_x64(True):
            want = np.asarray(fn(a, rhs))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)


def test_top_k_hlo():
    """On the CPU, top_k of float32 is a TopK custom call with a greater-than comparator."""
    x = normal(6, 5).astype(np.float32)
    lowered = jax.jit(lambda x: lax.top_k(x, 2)).lower(x)
    g = hlo_to_graph(lowered.compile().runtime_executable().hlo_modules()[0], name="t")
    (node,) = [n for n in g.nodes if n.op == "topk"]
    assert node.native == "custom-call" and node.attrs["k"] == 2 and node.attrs["largest"]
    values, indices = interpret(g, [torch.from_numpy(x)])
    want = torch.topk(torch.from_numpy(x).double(), 2)
    torch.testing.assert_close(values, want.values)
    assert torch.equal(indices.long(), want.indices)


# --- ordinary model code: no unknown op at any stage ------------------------------

def _moe(x, router, w_in, w_out, experts=4, k=2):
    n, d = x.shape
    capacity = math.ceil(1.25 * n * k / experts)
    probs = jax.nn.softmax(x @ router, axis=-1)
    weights, chosen = lax.top_k(probs, k)
    weights = weights / weights.sum(axis=-1, keepdims=True)
    flat = chosen.reshape(-1)
    onehot = jax.nn.one_hot(flat, experts, dtype=jnp.int32)
    position = ((jnp.cumsum(onehot, axis=0) - 1) * onehot).sum(axis=-1)
    slot = jnp.where(position < capacity, flat * capacity + position, experts * capacity)
    buf = jnp.zeros((experts * capacity + 1, d), x.dtype).at[slot].set(jnp.repeat(x, k, axis=0))
    h = jax.nn.silu(buf[:-1].reshape(experts, capacity, d) @ w_in)
    y = jnp.concatenate([(h @ w_out).reshape(experts * capacity, d), jnp.zeros((1, d), x.dtype)])
    return jnp.zeros((n, d), x.dtype).at[jnp.repeat(jnp.arange(n), k)].add(y[slot] * weights.reshape(-1, 1))


def _lm_loss(logits, targets):
    valid = targets != -100
    logp = jax.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, jnp.where(valid, targets, 0)[..., None], axis=-1)[..., 0]
    return -jnp.sum(jnp.where(valid, picked, 0.0)) / jnp.sum(valid)


def _mamba_conv(x, w):
    return jax.nn.silu(lax.conv_general_dilated(x, w, (1,), [(w.shape[0] - 1, 0)],
                                                dimension_numbers=("NWC", "WIO", "NWC"), feature_group_count=x.shape[-1]))


def _embedding(table, ids):
    return jnp.tanh(table[ids]).sum(axis=1)


ORDINARY = {
    "moe_topk": (_moe, lambda: (normal(8, 16), normal(16, 4), normal(4, 16, 8) / 4, normal(4, 8, 16) / 4), (0, 1, 2, 3)),
    "lm_cross_entropy": (_lm_loss, lambda: (normal(2, 5, 7), np.array([[1, 2, -100, 3, 0], [0, 1, 2, 3, 4]])), (0,)),
    "mamba_conv": (_mamba_conv, lambda: (normal(2, 8, 6), normal(4, 1, 6)), (0, 1)),
    "embedding": (_embedding, lambda: (normal(10, 4), np.array([[1, 2, 3], [9, 0, 9]])), (0,)),
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "moe_topk" else n
                                  for n in sorted(ORDINARY)])  # moe_topk: its twin goes through every JAX stage in test_corpus
def test_ordinary_code_has_no_unknown_op_and_is_faithful(name):
    """The JAX unknowns once found in ordinary model code (jaxpr gather / scatter-add; HLO reduce-window, gather, scatter) in
    ordinary code: the forward and value_and_grad at jaxpr, StableHLO and HLO, in float32 (no
    unknown op) and in float64 (faithful)."""
    fn, make, argnums = ORDINARY[name]
    args = make()

    def loss(*xs):
        return jnp.sum(fn(*xs) ** 2)
    grad = jax.value_and_grad(loss, argnums=argnums)
    for program in (fn, grad):
        f32 = [a.astype(np.float32) if a.dtype == np.float64 else a for a in args]
        lowered = jax.jit(program).lower(*f32)
        views = [jaxpr_to_graph(jax.make_jaxpr(program)(*f32), name=name),
                 stablehlo_to_graph(lowered.compiler_ir("stablehlo"), name=name),
                 hlo_to_graph(lowered.compile().runtime_executable().hlo_modules()[0], name=name)]
        for g in views:
            assert not g.unknown_ops(), f"{g.stage}: {dict(g.unknown_ops())}"
        assert_faithful(program, args, rtol=1e-8, atol=1e-10)


# --- a fixed slice of lax_ops() and jax.numpy, measured as the sweep measures ----------------

LAX_SLICE = ("round", "nextafter", "is_finite", "rem", "div", "erf_inv", "population_count", "clz", "mulhi",
             "bitwise_and", "bitwise_not", "sign", "atan2", "max", "cbrt", "lgamma")
JNP_SLICE = {
    "take": (lambda x, i: jnp.take(x, i, axis=1), lambda: (normal(3, 4), np.array([0, 3, 1, -1]))),
    "take_along_axis": (lambda x, i: jnp.take_along_axis(x, i, axis=1), lambda: (normal(3, 4), ints(0, 4, 3, 2))),
    "pad": (lambda x: jnp.pad(x, ((1, 2), (0, 1))), lambda: (normal(3, 4),)),
    "roll": (lambda x: jnp.roll(x, 1, axis=1), lambda: (normal(3, 4),)),
    "sort": (lambda x: jnp.sort(x, axis=1), lambda: (normal(3, 4),)),
    "argsort": (lambda x: jnp.argsort(x, axis=1), lambda: (normal(3, 4),)),
    "cumsum": (lambda x: jnp.cumsum(x, axis=0), lambda: (normal(3, 4),)),
    "einsum": (lambda x, y: jnp.einsum("ij,kj->ik", x, y), lambda: (normal(3, 4), normal(5, 4))),
    "percentile": (lambda x: jnp.percentile(x, 30.0, axis=1), lambda: (normal(3, 4),)),
    "remainder": (jnp.remainder, lambda: (normal(3, 4), R.uniform(0.5, 2, (3, 4)))),
    "floor_divide": (jnp.floor_divide, lambda: (normal(3, 4), R.uniform(0.5, 2, (3, 4)))),
    "tril": (jnp.tril, lambda: (normal(4, 4),)),
    "diff": (lambda x: jnp.diff(x, axis=1), lambda: (normal(3, 4),)),
    "insert": (lambda x: jnp.insert(x, 1, 5.0, axis=1), lambda: (normal(3, 4),)),
    "convolve": (jnp.convolve, lambda: (normal(8), normal(3))),
    "argmax": (lambda x: jnp.argmax(x, axis=0), lambda: (normal(3, 4),)),
    "polyadd": (jnp.polyadd, lambda: (normal(4), normal(3))),
    "logaddexp": (jnp.logaddexp, lambda: (normal(3, 4), normal(3, 4))),
}


def _lax_slice():
    from jax._src.internal_test_util import lax_test_util

    rng = np.random.RandomState(0)
    for rec in lax_test_util.lax_ops():
        if rec.op not in LAX_SLICE or any(np.issubdtype(d, np.complexfloating) for d in rec.dtypes[:1]):
            continue
        dtype = np.float64 if np.float32 in rec.dtypes else rec.dtypes[0]
        yield rec.op, getattr(lax, rec.op), [rec.rng_factory(rng)((3, 4), dtype) for _ in range(rec.nargs)]


def _with_grad(fn, args):
    """fn, and where it has floating inputs and outputs, its vector-Jacobian product for a fixed cotangent."""
    yield fn, list(args)
    floating = tuple(i for i, a in enumerate(args) if np.issubdtype(np.asarray(a).dtype, np.floating))
    with jax.enable_x64(True):
        outs = jax.tree_util.tree_leaves(jax.eval_shape(fn, *args))
        try:
            jax.make_jaxpr(jax.vjp, static_argnums=0)(fn, *args)
        except (NotImplementedError, TypeError):  # no derivative
            return
    if floating and all(np.issubdtype(o.dtype, np.floating) for o in outs):
        cots = [normal(*o.shape) for o in outs]

        def vjp(*xs):
            primals, cotangents = xs[:len(args)], xs[len(args):]

            def loss(*v):
                return sum(jnp.sum(y * c) for y, c in zip(jax.tree_util.tree_leaves(fn(*v)), cotangents))
            return jax.grad(loss, argnums=floating)(*primals)
        yield vjp, [*args, *cots]


@pytest.mark.parametrize("name", sorted(LAX_SLICE))
def test_lax_ops_slice(name):
    """lax_ops() records (the sweep's JAX corpus): faithful with no unknown op at every level,
    forward and gradient."""
    (case,) = [(fn, args) for op, fn, args in _lax_slice() if op == name] or [(None, None)]
    if case[0] is None:
        pytest.skip(f"{name} has no real-valued record")
    for fn, args in _with_grad(*case):
        levels = ALL if fn is case[0] else ("jaxpr",)
        assert_faithful(fn, args, levels, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", sorted(JNP_SLICE))
def test_jax_numpy_slice(name):
    fn, make = JNP_SLICE[name]
    args = make()
    for program, program_args in _with_grad(fn, args):
        levels = ALL if program is fn else ("jaxpr",)
        assert_faithful(program, program_args, levels, rtol=1e-7, atol=1e-9)



LOWERED = ("maxpool", "maxpool_grad", "maxpool_jvp", "avgpool_dilated", "generic_reduce_window", "dynamic_slice",
           "dynamic_update_slice", "reduce_precision", "bitcast", "conv_depthwise_causal", "pad_interior",
           "cummax_cummin", "round_methods", "popcount_clz_mulhi", "special_functions", "incomplete_beta_polygamma",
           "array_constants")


@pytest.mark.parametrize("name", LOWERED)
def test_jax_lowering_of_the_new_ops(name):
    """The JAX lowerings declared beside the new ops (window, reduce_precision, bitcast, ...) run
    a case's common view through jax and give what the original function gives."""
    from irlens.backends.xla.lower import to_jax_function

    fn, args, levels = CASES[name]
    level = "jaxpr" if "jaxpr" in levels else "stablehlo"
    g, consts = graphs(fn, args, (level,))[level]
    with jax.enable_x64(True):
        got = to_jax_function(g)(*[np.asarray(a) for a in [*consts, *args]])
        want = jax.tree_util.tree_leaves(fn(*args))
    for o, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(o, dtype=np.float64), np.asarray(w, dtype=np.float64), rtol=1e-9,
                                   atol=1e-12, equal_nan=True)


def test_uint64_is_exact_modulo_2_64_and_refused_where_int64_bits_misread_it():
    """The interpreter carries uint64 in int64's bits: wrap-around arithmetic is exact on every
    value (bit for bit, past 2**63); an op that reads order or magnitude (a comparison, a
    division) is exact below 2**63 and raises above, never a wrong value."""
    a, b = np.array([1, 2**63 + 5, 2**64 - 1], np.uint64), np.array([2**64 - 1, 3, 2**62], np.uint64)
    with jax.enable_x64(True):
        want = [np.asarray(w) for w in (a + b, a * b, a - b, a ^ b)]
        g = jaxpr_to_graph(jax.make_jaxpr(lambda a, b: (a + b, a * b, a - b, a ^ b))(a, b), name="t")
        order = jaxpr_to_graph(jax.make_jaxpr(lambda a, b: (a < b, a // b))(a, b), name="t")
    got = interpret(g, [torch.from_numpy(a), torch.from_numpy(b)])
    for o, w in zip(got, want):
        assert o.dtype == torch.uint64 and o.numpy().tolist() == w.tolist()
    small = [torch.from_numpy(a[:1]), torch.from_numpy(b[2:])]
    assert [o.numpy().tolist() for o in interpret(order, small)] == [[True], [0]]
    with pytest.raises(NotImplementedError, match="2\\*\\*63"):
        interpret(order, [torch.from_numpy(a), torch.from_numpy(b)])
