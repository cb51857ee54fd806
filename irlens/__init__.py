"""irlens: one workload through torch.compile/Dynamo, Thunder and JAX, side by side."""
import os
import sys
import types

__version__ = "0.1.0"

# JAX otherwise takes 75% of GPU memory at its first use, starving torch in the same process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


# The public API (irlens.api), imported on first use so that `import irlens` stays cheap.
_API = ("Workload", "register", "compare", "compare_table", "dump", "report")


def __getattr__(name: str):
    if name in _API:
        from irlens import api

        return getattr(api, name)
    raise AttributeError(f"module 'irlens' has no attribute {name!r}")


class _CallableModule(types.ModuleType):
    """A submodule that shares its name with an API function (irlens.compare, irlens.report).

    Importing a submodule sets it as an attribute of the package, which would shadow the
    function `irlens.compare(...)`; a module of this class calls the function instead."""

    def __call__(self, *args, **kwargs):
        from irlens import api

        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


def _callable_submodule(module_name: str) -> None:
    sys.modules[module_name].__class__ = _CallableModule
