"""jax.numpy functions, through the jax frontend.

Two principled lists, so that no function is picked by hand for how it fares:
- every NumPy ufunc that jax.numpy implements, enumerated from numpy at run time (`np.ufunc`
  objects with a jax.numpy namesake; generalized ufuncs such as matmul are in the second list).
  Operand dtypes follow the ufunc's first loop over float32 / int32 / bool (`ldexp` takes a
  float32 and an int32; the bitwise ufuncs int32);
- the functions of the Python array API standard (2023.12) outside its elementwise group
  (statistical, utility, manipulation, searching, sorting, set, linear algebra, creation from
  arrays), with a few NumPy classics beside them (einsum, pad, take, take_along_axis, outer,
  dot, trace, diagonal, split, cumsum, cumprod), each called as `CALLS` writes it.
Inputs: float32 from a standard normal, int32 in [0, 8), bool uniform; sample k seeds the
generator with k.
"""
from __future__ import annotations

import functools

from irlens.conformance.corpus import CORPORA, Case, Corpus, Subject, jax_subject

_KINDS = {"f": "float32", "i": "int32", "?": "bool"}
F, I, B = "f", "i", "?"


def _calls() -> dict:
    """name -> (function of the operands, operand (kind, shape) specs)."""
    import jax.numpy as jnp

    m = (3, 4)
    return {
        # statistical
        "max": (lambda x: jnp.max(x, axis=1), [(F, m)]),
        "mean": (lambda x: jnp.mean(x, axis=1), [(F, m)]),
        "min": (lambda x: jnp.min(x, axis=0), [(F, m)]),
        "prod": (lambda x: jnp.prod(x, axis=1), [(F, m)]),
        "std": (lambda x: jnp.std(x, axis=1, ddof=1), [(F, m)]),
        "sum": (lambda x: jnp.sum(x, axis=1), [(F, m)]),
        "var": (lambda x: jnp.var(x, axis=0), [(F, m)]),
        "cumulative_sum": (lambda x: jnp.cumulative_sum(x, axis=1), [(F, m)]),
        "cumulative_prod": (lambda x: jnp.cumulative_prod(x, axis=1), [(F, m)]),
        # utility
        "all": (lambda x: jnp.all(x, axis=1), [(B, m)]),
        "any": (lambda x: jnp.any(x, axis=1), [(B, m)]),
        "diff": (lambda x: jnp.diff(x, axis=1), [(F, m)]),
        # manipulation
        "broadcast_to": (lambda x: jnp.broadcast_to(x, (2, 3, 4)), [(F, m)]),
        "concat": (lambda x, y: jnp.concat([x, y], axis=0), [(F, m), (F, (2, 4))]),
        "expand_dims": (lambda x: jnp.expand_dims(x, 1), [(F, m)]),
        "flip": (lambda x: jnp.flip(x, axis=1), [(F, m)]),
        "moveaxis": (lambda x: jnp.moveaxis(x, 0, 2), [(F, (2, 3, 4))]),
        "permute_dims": (lambda x: jnp.permute_dims(x, (1, 0)), [(F, m)]),
        "repeat": (lambda x: jnp.repeat(x, 2, axis=0), [(F, m)]),
        "reshape": (lambda x: jnp.reshape(x, (4, 3)), [(F, m)]),
        "roll": (lambda x: jnp.roll(x, 1, axis=1), [(F, m)]),
        "squeeze": (lambda x: jnp.squeeze(x, axis=1), [(F, (3, 1, 4))]),
        "stack": (lambda x, y: jnp.stack([x, y], axis=1), [(F, m), (F, m)]),
        "tile": (lambda x: jnp.tile(x, (2, 1)), [(F, m)]),
        "unstack": (lambda x: jnp.unstack(x, axis=0), [(F, m)]),
        # searching
        "argmax": (lambda x: jnp.argmax(x, axis=1), [(F, m)]),
        "argmin": (lambda x: jnp.argmin(x, axis=0), [(F, m)]),
        "count_nonzero": (lambda x: jnp.count_nonzero(x, axis=1), [(B, m)]),
        "nonzero": (jnp.nonzero, [(B, m)]),
        "searchsorted": (lambda a, v: jnp.searchsorted(jnp.sort(a), v), [(F, (6,)), (F, (4,))]),
        "where": (jnp.where, [(B, m), (F, m), (F, m)]),
        # sorting
        "argsort": (lambda x: jnp.argsort(x, axis=1), [(F, m)]),
        "sort": (lambda x: jnp.sort(x, axis=1), [(F, m)]),
        # set (data-dependent output shapes)
        "unique_all": (jnp.unique_all, [(I, (8,))]),
        "unique_counts": (jnp.unique_counts, [(I, (8,))]),
        "unique_inverse": (jnp.unique_inverse, [(I, (8,))]),
        "unique_values": (jnp.unique_values, [(I, (8,))]),
        # linear algebra
        "matmul": (jnp.matmul, [(F, (2, 3, 4)), (F, (4, 5))]),
        "matrix_transpose": (jnp.matrix_transpose, [(F, (2, 3, 4))]),
        "tensordot": (lambda x, y: jnp.tensordot(x, y, axes=1), [(F, m), (F, (4, 5))]),
        "vecdot": (jnp.vecdot, [(F, m), (F, m)]),
        # creation from arrays
        "astype": (lambda x: jnp.astype(x, jnp.float16), [(F, m)]),
        "empty_like": (jnp.empty_like, [(F, m)]),
        "full_like": (lambda x: jnp.full_like(x, 2.5), [(F, m)]),
        "ones_like": (jnp.ones_like, [(F, m)]),
        "zeros_like": (jnp.zeros_like, [(F, m)]),
        "tril": (lambda x: jnp.tril(x, -1), [(F, (4, 4))]),
        "triu": (lambda x: jnp.triu(x, 1), [(F, (4, 4))]),
        # NumPy classics
        "cumprod": (lambda x: jnp.cumprod(x, axis=0), [(F, m)]),
        "cumsum": (lambda x: jnp.cumsum(x, axis=1), [(F, m)]),
        "diagonal": (lambda x: jnp.diagonal(x, offset=1), [(F, m)]),
        "dot": (jnp.dot, [(F, m), (F, (4, 2))]),
        "einsum": (lambda x, y: jnp.einsum("ij,kj->ik", x, y), [(F, m), (F, (5, 4))]),
        "outer": (jnp.outer, [(F, (3,)), (F, (4,))]),
        "pad": (lambda x: jnp.pad(x, ((1, 1), (2, 0))), [(F, m)]),
        "split": (lambda x: jnp.split(x, 2, axis=1), [(F, m)]),
        "take": (lambda x: jnp.take(x, jnp.array([0, 2, 3]), axis=1), [(F, m)]),
        "take_along_axis": (lambda x: jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1), [(F, m)]),
        "trace": (jnp.trace, [(F, (4, 4))]),
    }


def _ufunc_kinds(ufunc) -> list[str]:
    """The operand kinds of the ufunc's first loop over float32, int32 and bool (float32 first)."""
    loops = [t.split("->")[0] for t in ufunc.types]
    fitting = [loop for loop in loops if set(loop) <= set(_KINDS)]
    for wanted in (F, I, B):
        for loop in fitting:
            if wanted in loop:
                return list(loop)
    return [F] * ufunc.nin  # float_power has float64 loops only


@functools.cache
def functions() -> dict[str, tuple]:
    """name -> (jax.numpy function, operand (kind, shape) specs), ufuncs then `_calls()`."""
    import jax.numpy as jnp
    import numpy as np

    table = {}
    for name in sorted(dir(np)):
        ufunc = getattr(np, name)
        if isinstance(ufunc, np.ufunc) and ufunc.signature is None and hasattr(jnp, name):
            table[name] = (getattr(jnp, name), [(k, (3, 4)) for k in _ufunc_kinds(ufunc)])
    table.update(_calls())
    return table


def _case_dtype(specs: list) -> str:
    """float32 where any operand is floating, else int32 where any is an integer, else bool."""
    kinds = {kind for kind, _ in specs}
    return _KINDS[next(k for k in (F, I, B) if k in kinds)]


def _operand(kind: str, shape: tuple, rng):
    import numpy as np

    if kind == F:
        return rng.standard_normal(shape).astype(np.float32)
    if kind == I:
        return rng.randint(0, 8, shape).astype(np.int32)
    return rng.rand(*shape) > 0.5


class JnpCorpus(Corpus):
    name = "jnp"
    description = ("jax.numpy: every NumPy ufunc it implements, and the array API standard's non-elementwise "
                   "functions with a few NumPy classics")
    frontends = ("jax",)

    def cases(self, samples: int) -> list[Case]:
        return [Case(self.name, name, _case_dtype(specs), k) for name, (_, specs) in functions().items()
                for k in range(samples)]

    def subject(self, case: Case) -> Subject:
        import numpy as np

        fn, specs = functions()[case.op]
        rng = np.random.RandomState(case.sample)
        return jax_subject(case.id, fn, [_operand(kind, shape, rng) for kind, shape in specs])


CORPORA.register(JnpCorpus())
