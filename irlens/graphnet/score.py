"""GraphNet's Speedup Score S(t) and Error-aware Speedup Score ES(t), per stack, from a document's rows.

The definitions are the GraphNet technical report's (Li et al., arXiv 2510.24035: eq. 1-3 and
appendices B and C); the code is irlens's own. Per sample i a stack either ran, with speedup
s_i = eager's step time / its own (both timed in the same run) and correctness at tolerance t by
GraphNet's assert_close against eager (irlens.numerics.tolerance_ladder), or failed with an error code c_i:
1 an accuracy error (it ran, but fails at t), 2 a runtime crash, 3 a compilation failure.

    rectified speedup  r_t,i = s_i if correct and s_i >= 1;  s_i^(p+1) if correct and s_i < 1;  b otherwise
    S(t)  = (prod_i r_t,i)^(1/N)                        (= alpha^lambda beta^(lambda eta p) b^(1-lambda), eq. 1)
    ES(t) = S(t) for t <= 0; for t >= 1 a failure whose code c_i <= t counts 1 instead of b (eq. 2, 3)

with the report's defaults b = 0.1 and p = 0.1, t over -10..0 (numeric levels) and 1..3 (the error
codes ES tolerates). At t >= 1 the numeric check is the loosest level's (t = 0). Samples are
those whose eager row ran and was timed; a stack's row that is unavailable (not run here), or ran
without a time or a GraphNet level, is left out and counted as such.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from irlens.matrix.row import Row
from irlens.numerics.tolerance_ladder import ABOVE_ZERO, LEVELS, NOTE

B = 0.1  # the failure penalty (the report's default)
P = 0.1  # the slowdown penalty (the report's default; GraphNet's plotting scripts default to 0)
ERROR_LEVELS = (1, 2, 3)  # the ES(t) levels that tolerate accuracy errors, runtime crashes, compilation failures
ACCURACY, RUNTIME, COMPILATION = 1, 2, 3
# a failure of the compiler (or a timeout while compiling) rather than of the compiled program
_COMPILE = re.compile(r"BackendCompilerFailed|InductorError|LoweringException|CompilationError|Unsupported|"
                      r"\(compiling|acquire:")


@dataclass(frozen=True)
class Outcome:
    """One sample on one stack: its speedup and lowest passing level where it ran, else its error code."""

    sample: str
    speedup: float | None = None
    level: int | None = None  # tolerance_ladder.passing_level; ABOVE_ZERO: fails at every numeric level
    error: int | None = None  # RUNTIME or COMPILATION for a failed row

    def rectified(self, t: int, b: float = B, p: float = P, error_aware: bool = False) -> float:
        """r_t,i (S), or its error-aware form (ES: a failure tolerated at t counts 1)."""
        code = self.error if self.error is not None else (ACCURACY if self.level > min(t, 0) else None)
        if code is not None:
            return 1.0 if error_aware and t >= code else b
        return self.speedup if self.speedup >= 1 else self.speedup ** (p + 1)


@dataclass
class StackScore:
    backend: str
    outcomes: list[Outcome] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # sample -> why it is not scored

    def s(self, t: int, b: float = B, p: float = P) -> float | None:
        return _geomean([o.rectified(t, b, p) for o in self.outcomes])

    def es(self, t: int, b: float = B, p: float = P) -> float | None:
        return _geomean([o.rectified(t, b, p, error_aware=True) for o in self.outcomes])

    def correct(self, t: int) -> int:
        return sum(o.error is None and o.level <= t for o in self.outcomes)


def _geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def error_code(r: Row) -> int:
    """A failed row's code: a compilation failure where its reason names the compiler's failure
    (or a timeout while compiling), else a runtime crash."""
    return COMPILATION if _COMPILE.search(r.reason or "") else RUNTIME


def outcome(r: Row, eager_us: float) -> Outcome | str:
    """The row's Outcome, or why it is not scored."""
    if r.status == "unavailable":
        first = (r.reason or "unavailable").splitlines()[0]
        return first if first.startswith(("not run", "not finished")) else f"not run: {first}"
    if r.status == "failed":
        return Outcome(r.workload, error=error_code(r))
    level = (r.notes or {}).get(NOTE)
    if not r.run_us or level is None:
        return "ran, but without a step time or a GraphNet level"
    return Outcome(r.workload, eager_us / r.run_us, int(level))


def scores(rows: list[Row], mode: str = "fwd") -> list[StackScore]:
    """One StackScore per backend other than eager, over the samples whose eager row ran and was timed."""
    eager = {r.workload: r.run_us for r in rows if r.backend == "eager" and r.mode == mode and r.ran and r.run_us}
    by_backend: dict[str, StackScore] = {}
    for r in rows:
        if r.mode != mode or r.backend == "eager":
            continue
        score = by_backend.setdefault(r.backend, StackScore(r.backend))
        if r.workload not in eager:
            score.left_out[r.workload] = "eager did not run it (no speedup's base)"
            continue
        got = outcome(r, r.eager_us or eager[r.workload])
        if isinstance(got, Outcome):
            score.outcomes.append(got)
        else:
            score.left_out[r.workload] = got
    return list(by_backend.values())


LADDER = (*LEVELS, *ERROR_LEVELS)  # every t a score is given at
__all__ = ["ABOVE_ZERO", "B", "LADDER", "NOTE", "Outcome", "P", "StackScore", "scores"]
