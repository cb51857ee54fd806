"""Conformance corpora: importing a module registers it (one line per file)."""
from irlens.conformance.corpora import opinfo  # noqa: F401
from irlens.conformance.corpora import lax  # noqa: F401
from irlens.conformance.corpora import lax_harness  # noqa: F401
from irlens.conformance.corpora import jnp  # noqa: F401
