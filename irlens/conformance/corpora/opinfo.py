"""PyTorch's OpInfo database: every op that supports float32 on the CPU, through Dynamo and Thunder.

`torch.testing._internal.common_methods_invocations.op_db` (importing it needs `expecttest` and
`hypothesis`). An op is keyed `name[.variant_test_name]` (`div.floor_rounding`); its samples
come from its sample generator (what `op.sample_inputs("cpu", dtype)` yields) drawn after
seeding, so a worker
rebuilds the same sample. The bitwise and logical ops are swept in int64 and bool too (where
the op supports them), since float32 alone says little about them.
"""
from __future__ import annotations

import functools
import itertools
import random

import torch

from irlens.conformance.corpus import CORPORA, Case, Corpus, Subject, torch_subject

# OpInfo runs its random ops through `wrapper_set_seed`, which seeds the generator inside the
# call (so two runs agree) and which Dynamo cannot trace: the wrapper itself marks them random.
SEEDED_BY = "wrapper_set_seed"
# Their outputs are uninitialized memory: only shapes and dtypes are defined.
UNDEFINED_VALUES = {"empty", "empty_like", "empty_permuted", "empty_strided", "new_empty", "new_empty_strided"}
INTEGER_DTYPES = ("int64", "bool")


def _key(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.cache
def op_table() -> dict:
    from torch.testing._internal.common_methods_invocations import op_db

    return {_key(op): op for op in op_db}


def _bitwise_or_logical(name: str) -> bool:
    return name.startswith(("bitwise_", "logical_")) or name in ("__rand__", "__ror__", "__rxor__")


def _dtypes(op) -> list[str]:
    dtypes = ["float32"] if op.supports_dtype(torch.float32, "cpu") else []
    if _bitwise_or_logical(op.name):
        dtypes += [d for d in INTEGER_DTYPES if op.supports_dtype(getattr(torch, d), "cpu")]
    return dtypes


def _samples(op, dtype: str, start: int, stop: int) -> list:
    """Samples start..stop-1, drawn after seeding torch's, numpy's and Python's generators (a few
    sample functions draw from the latter two). From the op's own generator: `op.sample_inputs`
    wraps it in test-tracking machinery that walks the Python stack (`inspect.stack()`) per
    call, about 0.2 s each with irlens, JAX and Thunder loaded."""
    import numpy as np

    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    return list(itertools.islice(op.sample_inputs_func(op, "cpu", getattr(torch, dtype), False), start, stop))


class OpInfoCorpus(Corpus):
    name = "opinfo"
    description = ("PyTorch OpInfo (op_db): every op supporting float32 on the CPU, its first samples; "
                   "bitwise and logical ops also in int64 and bool")
    frontends = ("dynamo", "thunder")

    def cases(self, samples: int) -> list[Case]:
        cases = []
        for key, op in op_table().items():
            for dtype in _dtypes(op):
                n = len(_samples(op, dtype, 0, samples))
                cases += [Case(self.name, key, dtype, k) for k in range(n)]
        return cases

    def subject(self, case: Case) -> Subject:
        op = op_table()[case.op]
        (sample,) = _samples(op, case.dtype, case.sample, case.sample + 1)
        seeded = SEEDED_BY in getattr(getattr(op.op, "__code__", None), "co_names", ())
        return torch_subject(case.id, op.op, (sample.input, *sample.args), dict(sample.kwargs),
                             undefined_values=op.name in UNDEFINED_VALUES,
                             random=f"OpInfo runs it through {SEEDED_BY}" if seeded else "")


CORPORA.register(OpInfoCorpus())
