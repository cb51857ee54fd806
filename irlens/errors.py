"""The one kind of error that means "bad input": the CLI prints it in one line and exits 2.

Library errors about what a user asked for derive from `UsageError` (an unknown name, a bad
reference, a JAX twin that disagrees, a malformed results document, a kernel that is not
there), so `irlens.cli` turns every one of them into exit status 2 in a single place. It is a
ValueError: Python callers that catch ValueError around `irlens.compare(...)` keep working.
"""
from __future__ import annotations


class UsageError(ValueError):
    """Bad input from the user; the message says what is wrong and, where there are choices, lists them."""


class Unavailable(RuntimeError):
    """A frontend or backend that cannot run here; the message says why (the CLI: exit 2, as bad input)."""


class NoNativePath(RuntimeError):
    """A backend's own frontend cannot take this workload (no JAX twin; Thunder can trace none of
    it). Not bad input: the cell runs the backend through the common view's lowering of another
    frontend's graphs instead, and its row says so (`via`)."""


class CaptureFailed(NoNativePath):
    """The frontend tried the workload and its own stack failed on it (Thunder: thunder.jit and
    ThunderFX both raised; the last failure is the cause). A backend with a lowering runs the
    common view of another frontend's graphs instead; one without fails with that cause: a
    stack's failure counts against the stack, never as `unavailable`."""
