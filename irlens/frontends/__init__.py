"""Frontends: a folder per stack (dynamo, thunder, jax) that acquires a workload's native IRs,
stage by stage, reads them into the common view, and owns everything else about its stack: how
its graphs bind to the workload's values (its `binding.py`, run by `bindings.py`), which stages
the conformance sweep checks, and the settings it offers. Code outside a frontend's folder calls
the hooks of `base.Frontend` and never branches on its name. Importing a frontend's module
registers it; irlens.names.FRONTENDS names each and its module (one line per folder, read without
torch by the command line)."""
from irlens import names
from irlens.frontends.base import FRONTENDS, Frontend

names.import_declared(names.FRONTENDS)


def get_frontend(name: str) -> Frontend:
    """A registered frontend; UnknownName lists them."""
    return FRONTENDS.get(name)


def work_frontend() -> Frontend:
    """The frontend a step's work is counted from (`Frontend.counts_work`): one for every workload,
    so that every backend's row is judged against the same work."""
    (counting,) = [fe for fe in FRONTENDS.values() if fe.counts_work]
    return counting
