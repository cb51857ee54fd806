"""Shape arithmetic the decomposition rules share."""
from __future__ import annotations


def reduced(shape, dims, keepdim: bool) -> list[int]:
    if keepdim:
        return [1 if i in dims else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in dims]


def numel(shape, dims=None) -> int:
    n = 1
    for i in range(len(shape)) if dims is None else dims:
        n *= shape[i]
    return n


def last_dims(shape, n: int) -> list[int]:
    return list(range(len(shape) - n, len(shape)))
