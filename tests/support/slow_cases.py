"""Parameter sets of which a few are the long tail: those marked slow, so that `-m 'not slow'` (the
README's test command) leaves them out and `-m slow` runs them."""
import pytest


def marked_slow(cases, slow):
    """`cases` as parametrize takes them, each one that is in `slow` marked slow."""
    return [pytest.param(*(case if isinstance(case, tuple) else (case,)), marks=pytest.mark.slow) if case in slow
            else case for case in cases]
