"""Frontends: importing a module registers it (one line per file)."""
from irlens.frontends.base import FRONTENDS, Frontend
from irlens.frontends import thunder  # noqa: F401
from irlens.frontends import dynamo  # noqa: F401
from irlens.frontends import jax  # noqa: F401


def get_frontend(name: str) -> Frontend:
    """A registered frontend; UnknownName lists them."""
    return FRONTENDS.get(name)
