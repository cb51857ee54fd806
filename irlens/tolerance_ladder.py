"""GraphNet's tolerance ladder: the correctness check its S(t) and ES(t) scores count with.

GraphNet (arXiv 2510.24035, section 3.2.1 and appendix A) calls a sample correct at tolerance
level t when every output passes `assert_close(compiled, eager, rtol(t), atol(t))` against eager
in the same dtype, with lg(atol) and lg(rtol) linear in t: atol(t) = 10^(a t), rtol(t) = 10^(r t),
(a, r) per dtype from its tables 1 and 2 (float32: atol(-5) = 1e-5, rtol(-5) = 1.3e-6; any t:
1 at t = 0). Integer and bool outputs ("others") must be equal.

`passing_level` is the lowest t of the ladder (LEVELS, -10..0) at which every result passes, or
ABOVE_ZERO where one fails even at t = 0 (or is not finite, or differs in shape or dtype): the
check passes at every t from there up, so one integer per row holds it (irlens.graphnet.score).
"""
from __future__ import annotations

import torch

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


def passes(result: torch.Tensor, baseline: torch.Tensor, t: int) -> bool:
    """assert_close's check: |result - baseline| <= atol + rtol |baseline| everywhere, in float64."""
    atol, rtol = tolerances(baseline.dtype, t)
    x = result.detach().to(device=baseline.device, dtype=torch.float64)
    y = baseline.detach().to(torch.float64)
    return bool(torch.isfinite(x).all()) and bool(((x - y).abs() <= atol + rtol * y.abs()).all())


def passing_level(results: dict[str, torch.Tensor | None], baselines: dict[str, torch.Tensor]) -> int:
    """The lowest level of LEVELS at which every baseline's result passes, or ABOVE_ZERO."""
    level = LEVELS[0]
    for name, baseline in baselines.items():
        result = results.get(name)
        if result is None or result.shape != baseline.shape or result.dtype != baseline.dtype:
            return ABOVE_ZERO
        # the check is monotone in t: the lowest passing level is found by bisection
        low, high = LEVELS.index(level), len(LEVELS)
        while low < high:
            mid = (low + high) // 2
            if passes(result, baseline, LEVELS[mid]):
                high = mid
            else:
                low = mid + 1
        if low == len(LEVELS):
            return ABOVE_ZERO
        level = LEVELS[low]
    return level
