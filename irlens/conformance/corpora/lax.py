"""JAX's elementwise lax ops, as JAX's own tests sweep them, through the jax frontend.

`jax._src.internal_test_util.lax_test_util.lax_ops()` (needs `absl-py`): each record names a
`jax.lax` function, its arity, the dtypes it is tested in and the generator of its inputs
(`rand_positive` for log, `rand_nonzero` for div, ...). Each record is swept in each of
float32, int32 and bool that it lists (complex and the narrow or unsigned kinds are left out:
the common view has no complex values and torch's unsigned support is partial). Sample k uses
the k-th shape of `SHAPES` for every operand and the generator seeded with k.
"""
from __future__ import annotations

import functools

from irlens.conformance.corpus import CORPORA, Case, Corpus, Subject, jax_subject

DTYPES = ("float32", "int32", "bool")
SHAPES = ((3, 4), (2, 3, 4), (5,))


@functools.cache
def records() -> dict[tuple[str, str], object]:
    """(lax function, dtype) -> the first lax_ops record that tests it in that dtype."""
    import numpy as np
    from jax._src.internal_test_util import lax_test_util

    table: dict = {}
    for rec in lax_test_util.lax_ops():
        listed = {np.dtype(d).name for d in rec.dtypes}
        for dtype in DTYPES:
            if dtype in listed:
                table.setdefault((rec.op, dtype), rec)
    return table


class LaxCorpus(Corpus):
    name = "lax"
    description = "JAX lax_test_util.lax_ops(): the elementwise lax ops with their test dtypes and input generators"
    frontends = ("jax",)

    def cases(self, samples: int) -> list[Case]:
        return [Case(self.name, op, dtype, k) for (op, dtype) in records() for k in range(min(samples, len(SHAPES)))]

    def subject(self, case: Case) -> Subject:
        import numpy as np
        from jax import lax

        rec = records()[(case.op, case.dtype)]
        rng = rec.rng_factory(np.random.RandomState(case.sample))
        args = [rng(SHAPES[case.sample], np.dtype(case.dtype)) for _ in range(rec.nargs)]
        return jax_subject(case.id, getattr(lax, case.op), args)


CORPORA.register(LaxCorpus())
