"""Conformance corpora: importing a module registers it (one line per file, at the end)."""
from irlens.conformance.corpus import CORPORA, Corpus


def get_corpus(name: str) -> Corpus:
    """A corpus by name; UnknownName lists them."""
    return CORPORA.get(name)


def corpus_names() -> list[str]:
    return CORPORA.names()


from irlens.conformance.corpora import opinfo  # noqa: E402, F401
from irlens.conformance.corpora import lax  # noqa: E402, F401
from irlens.conformance.corpora import lax_harness  # noqa: E402, F401
from irlens.conformance.corpora import jnp  # noqa: E402, F401
