"""What a sweep is asked to do (light: `irlens --help` imports it)."""
from __future__ import annotations

from dataclasses import dataclass, field

from irlens.errors import UsageError

DEFAULT_TIMEOUT_S = 30.0
# Float64 results must agree to this norm-wise relative error. What differs without a wrong
# meaning: reassociation, the float32 constants a jaxpr holds (~1e-8), and the float32
# approximations XLA expands some functions into in its optimized HLO (digamma, bessel_i1e:
# ~4e-7). A wrong meaning shows at 1e-3 and above. A result eager computes in a lower
# precision (an explicit cast) is judged at irlens.numerics.verdicts' tolerance for that dtype.
RTOL = 1e-6


class BadConfig(UsageError):
    """A sweep configuration that cannot run; the message says why and what is valid."""


@dataclass
class SweepConfig:
    corpora: list[str] | None = None  # default: all
    frontends: list[str] | None = None  # default: every frontend the corpora feed
    patterns: list[str] = field(default_factory=list)  # regular expressions; a case runs when one matches its id
    limit: int | None = None  # at most this many cases of each corpus (after the patterns)
    samples: int = 1  # samples per op and dtype
    jobs: int = 1  # worker processes
    timeout: float = DEFAULT_TIMEOUT_S  # seconds per case and frontend
    rtol: float = RTOL
    isolate: bool = True  # False: run in this process (no timeouts; for tests and debugging)
    progress: bool = False  # one line per finished case on stderr
