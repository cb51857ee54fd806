"""The conformance sweep: external op corpora (PyTorch's OpInfo, JAX's lax test ops and
primitive harnesses, jax.numpy) through the frontends, each op's common view run by the
float64 interpreter against eager float64, per frontend, stage and level.

    from irlens.conformance import SweepConfig, run, table_text
    doc = run(SweepConfig(corpora=["opinfo"], frontends=["dynamo"], patterns=["^opinfo:add:"]))
    print(table_text(doc))         # or markdown(doc): the results page

`irlens conformance` is the command line (irlens/cli/conformance.py); corpora are one file
each in irlens/conformance/corpora/. Importing this package is cheap: the names below load
their modules on first use.
"""
from irlens.conformance.config import BadConfig, SweepConfig  # noqa: F401

_LAZY = {"run": "irlens.conformance.runner", "table_text": "irlens.conformance.summary",
         "markdown": "irlens.conformance.summary"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'irlens.conformance' has no attribute {name!r}")
