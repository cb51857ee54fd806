"""GraphNet's tolerance ladder: the correctness check its S(t) and ES(t) scores count with.

GraphNet (arXiv 2510.24035, section 3.2.1 and appendix A) calls a sample correct at tolerance
level t when every output passes `assert_close(compiled, eager, rtol(t), atol(t))` against eager
in the same dtype, with lg(atol) and lg(rtol) linear in t: atol(t) = 10^(a t), rtol(t) = 10^(r t),
(a, r) per dtype from its tables 1 and 2 (float32: atol(-5) = 1e-5, rtol(-5) = 1.3e-6; any t:
1 at t = 0). Integer and bool outputs ("others") must be equal.

`passing_level` is the lowest t of the ladder (LEVELS, -10..0) at which every result passes, or
ABOVE_ZERO where one fails even at t = 0 (or differs in shape or dtype): the check passes at every
t from there up, so one integer per row holds it (irlens.graphnet.score).

NaN and Inf as GraphNet's own check (graph_net_bench's `torch.allclose(compiled, eager, atol, rtol)`,
assert_close's rule with equal_nan off) treats them: an infinity equal to eager's passes, a NaN
never does (not even where eager has one), and a finite value where eager has an infinity fails,
however large rtol |eager| is.
"""
from __future__ import annotations

import math

import torch

from irlens.numerics.verdicts import float64_slices

LEVELS = tuple(range(-10, 1))  # the numeric tolerance levels t <= 0 GraphNet's plots span
NOTE = "graphnet_t"  # a row's note holding its passing_level against eager (irlens.matrix.cell)
ABOVE_ZERO = 1  # passing_level of results that fail even at t = 0: an accuracy error (code 1)

# dtype -> (a, r): atol(t) = 10^(a t), rtol(t) = 10^(r t) (GraphNet's tables 1 and 2)
EXPONENTS = {
    torch.float16: (1.0, 3 / 5),
    torch.bfloat16: (1.0, 1.796 / 5),
    torch.float32: (1.0, 5.886 / 5),
    torch.float64: (7 / 5, 7 / 5),
    torch.complex64: (1.0, 5.886 / 5),
    torch.complex128: (7 / 5, 7 / 5),
}


def tolerances(dtype: torch.dtype, t: int) -> tuple[float, float]:
    """(atol, rtol) at level t for a result of `dtype`; (0, 0), equality, for the others."""
    if dtype not in EXPONENTS:
        return 0.0, 0.0
    a, r = EXPONENTS[dtype]
    return 10.0 ** (a * t), 10.0 ** (r * t)


def passing_level(results: dict[str, torch.Tensor | None], baselines: dict[str, torch.Tensor]) -> int:
    """The lowest level of LEVELS at which every baseline's result passes, or ABOVE_ZERO."""
    level = LEVELS[0]
    for name, baseline in baselines.items():
        result = results.get(name)
        if result is None or result.shape != baseline.shape or result.dtype != baseline.dtype:
            return ABOVE_ZERO
        for x, y in float64_slices(result, baseline):
            level = _lowest_passing(x, y, baseline.dtype, level)
            if level == ABOVE_ZERO:
                return ABOVE_ZERO
    return level


def _lowest_passing(x: torch.Tensor, y: torch.Tensor, dtype: torch.dtype, lowest: int) -> int:
    """The lowest level from `lowest` on at which assert_close's check, x == y or a finite |x - y| <=
    atol + rtol |y|, passes everywhere; ABOVE_ZERO where none does. The check is monotone in t: bisection."""
    diff, size = (x - y).abs().where(x != y, 0.0), y.abs()
    diff = diff.where(diff.isfinite(), math.nan)  # NaN: no tolerance passes it (a NaN, an infinity off)
    low, high = LEVELS.index(lowest), len(LEVELS)
    while low < high:
        mid = (low + high) // 2
        atol, rtol = tolerances(dtype, LEVELS[mid])
        if bool((diff <= atol + rtol * size).all()):
            high = mid
        else:
            low = mid + 1
    return ABOVE_ZERO if low == len(LEVELS) else LEVELS[low]
