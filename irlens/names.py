"""The names the command line offers, importable without torch: `irlens compare --help` and a bad
argument answer in a fraction of a second because nothing here imports more than the standard library.

The built-in backends and frontends are declared here, each name with the module whose import
registers it (`Registry.register` in that module); `irlens.backends` and `irlens.frontends` import
these modules, in this order, and a test checks that they register exactly these names. Adding a
backend or frontend is its module and one line here.
"""
from __future__ import annotations

import importlib

BACKENDS = {
    "eager": "irlens.backends.eager",
    "inductor": "irlens.backends.inductor.backend",
    "thunder+torchcompile": "irlens.backends.thunder.backend",
    "nvfuser": "irlens.backends.thunder.backend",
    "xla": "irlens.backends.xla.backend",
}
FRONTENDS = {
    "dynamo": "irlens.frontends.dynamo.frontend",
    "thunder": "irlens.frontends.thunder.frontend",
    "jax": "irlens.frontends.jax.frontend",
}

MODES = ("fwd", "fwdbwd")  # what one step computes: the outputs, or also the loss and its gradients
PRESETS = ("tiny", "bench")
COMPUTE_DTYPES = ("float32", "bfloat16", "float16", "float64")  # the dtypes a workload may be instantiated in


def import_declared(declared: dict[str, str]) -> None:
    """Import each module of `declared` once, in order: each registers its entries."""
    for module in dict.fromkeys(declared.values()):
        importlib.import_module(module)
