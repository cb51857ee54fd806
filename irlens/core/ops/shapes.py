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


def transpose_last2(e, a: str) -> str:
    """Emit a's last two dims swapped (for decomposition rules); returns the value's name."""
    nd = len(e.meta(a).shape)
    return e.emit("permute", [a], perm=list(range(nd - 2)) + [nd - 1, nd - 2])


def literal(value, dtype: str):
    """A Python scalar of dtype's kind, so that an elementwise op with it keeps dtype (a float
    literal beside an int tensor would promote it)."""
    if dtype == "bool":
        return bool(value)
    if dtype.startswith(("int", "uint")):
        return int(value)
    return float(value)
