"""The one kind of error that means "bad input": the CLI prints it in one line and exits 2.

Library errors about what a user asked for derive from `UsageError` (an unknown name, a bad
reference, a JAX twin that disagrees, a malformed results document, a kernel that is not
there), so `irlens.cli` turns every one of them into exit status 2 in a single place. It is a
ValueError: Python callers that catch ValueError around `irlens.compare(...)` keep working.
"""
from __future__ import annotations


class UsageError(ValueError):
    """Bad input from the user; the message says what is wrong and, where there are choices, lists them."""
