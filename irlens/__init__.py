"""irlens: one workload through torch.compile/Dynamo, Thunder and JAX, side by side."""
import os

from irlens.version import __version__  # noqa: F401

# JAX otherwise takes 75% of GPU memory at its first use, starving torch in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


# The public API (irlens.api), imported on first use so that `import irlens` stays cheap. No
# submodule shares a name with these functions, so importing one never hides them.
_API = ("Workload", "register", "compare", "compare_table", "dump", "report")


def __getattr__(name: str):
    if name in _API:
        from irlens import api

        return getattr(api, name)
    raise AttributeError(f"module 'irlens' has no attribute {name!r}")
