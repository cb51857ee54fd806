"""The built-in workloads: importing a module registers its workloads (one line per file, at the
end). `resolve_workload` finds any workload: a built-in by name, a user's own by reference."""
from irlens.user_code import resolve
from irlens.workload import WORKLOADS, Workload


def get_workload(name: str) -> Workload:
    """A built-in workload; UnknownName lists them."""
    return WORKLOADS.get(name)


def workload_names() -> list[str]:
    return WORKLOADS.names()


def resolve_workload(name_or_ref: str) -> Workload:
    """A built-in workload by name, or a user's by `path/to/file.py:NAME` (UnknownName, BadReference)."""
    return resolve(name_or_ref, WORKLOADS, Workload, "declare one with irlens.Workload.from_module(...)")


from irlens.models import gelu  # noqa: E402, F401
from irlens.models import tinyhead  # noqa: E402, F401
from irlens.models import attention  # noqa: E402, F401
from irlens.models import block  # noqa: E402, F401
from irlens.models import minigpt  # noqa: E402, F401
