"""Frontends: importing a module registers it (one line per file)."""
from irlens.frontends.base import FRONTENDS, Frontend, get_frontend  # noqa: F401
from irlens.frontends import thunder  # noqa: F401
from irlens.frontends import dynamo  # noqa: F401
from irlens.frontends import jax  # noqa: F401
