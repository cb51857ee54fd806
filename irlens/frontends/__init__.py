"""Frontends: importing a module registers it (one line per file)."""
from irlens.frontends.base import FRONTENDS, Frontend, get_frontend  # noqa: F401
