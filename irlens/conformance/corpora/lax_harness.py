"""JAX's primitive test harnesses: one use of every lax primitive, through the jax frontend.

`jax._src.internal_test_util.test_harnesses.all_harnesses` (the harnesses JAX's jax2tf and
export tests run) covers the primitives beyond the elementwise ones: reshape, slice, gather,
scatter, dot_general, conv, reductions, cumulative ops, sort, top_k, linear algebra, RNG. Each
harness is a function, its arguments' descriptors and a dtype; harnesses are grouped by
primitive. Per group the harnesses that run on the CPU in float32 are taken (those of the
group's first dtype where it has no float32 one), in the order of their names; sample k is the
k-th of them, its arguments drawn with the generator seeded with 0.
"""
from __future__ import annotations

import dataclasses
import functools

from irlens.conformance.corpus import CORPORA, Case, Corpus, Subject, jax_subject


# the harness groups of JAX's random number generation (keys, bits, and the samplers built on them)
PRNG_GROUPS = ("random_", "rng_bit_generator")


@functools.cache
def groups() -> dict[str, tuple[str, list]]:
    """primitive group -> (dtype, its harnesses in that dtype that JAX implements on the CPU)."""
    import numpy as np
    from jax._src.internal_test_util import test_harnesses

    by_group: dict[str, list] = {}
    # by name: JAX builds some groups from sets of dtypes, whose order changes from process to process
    for h in sorted(test_harnesses.all_harnesses, key=lambda h: h.name):
        if h.filter("cpu"):
            by_group.setdefault(h.group_name, []).append(h)
    table = {}
    for group, harnesses in by_group.items():
        dtypes = [np.dtype(h.dtype).name for h in harnesses]
        dtype = "float32" if "float32" in dtypes else dtypes[0]
        table[group] = (dtype, [h for h, d in zip(harnesses, dtypes) if d == dtype])
    return table


def _float64_fun(harness):
    """`harness.dyn_fun` with its floating static arguments (an init value of the case's dtype,
    which JAX will not combine with float64 operands) in float64, as the inputs of the float64
    reference are: the same values, exactly."""
    import numpy as np
    from jax._src.internal_test_util.test_harnesses import StaticArg

    def widen(value):
        if isinstance(value, (np.ndarray, np.floating)) and np.issubdtype(value.dtype, np.floating):
            return np.asarray(value, np.float64)
        return value

    statics = [widen(d.value) for d in harness.arg_descriptors if isinstance(d, StaticArg)]

    def fun(*dyn_args):
        dyn, static = iter(dyn_args), iter(statics)
        return harness.fun(*(next(static) if isinstance(d, StaticArg) else next(dyn) for d in harness.arg_descriptors))
    return fun


class LaxHarnessCorpus(Corpus):
    name = "lax_harness"
    description = "JAX test_harnesses.all_harnesses: every lax primitive group, in float32 where it has it"
    frontends = ("jax",)

    def cases(self, samples: int) -> list[Case]:
        return [Case(self.name, group, dtype, k) for group, (dtype, harnesses) in groups().items()
                for k in range(min(samples, len(harnesses)))]

    def subject(self, case: Case) -> Subject:
        import numpy as np

        harness = groups()[case.op][1][case.sample]
        subject = jax_subject(f"{case.id} ({harness.name})", harness.dyn_fun,
                              harness.dyn_args_maker(np.random.RandomState(0)), _float64_fun(harness))
        if case.op.startswith(PRNG_GROUPS):  # as OpInfo's random ops are: classified, not acquired
            return dataclasses.replace(subject, random="a JAX PRNG primitive (random bits from a key)")
        return subject


CORPORA.register(LaxHarnessCorpus())
