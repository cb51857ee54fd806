"""Named run configurations (docs/configs.md): each a frozen dataclass (irlens.cli.configs.kinds), registered
by name in irlens.cli.configs.catalog; `irlens bench|zoo|compare --config NAME` runs one (irlens.cli.configs.plan)."""
from irlens.cli.configs.catalog import CONFIGS

__all__ = ["CONFIGS"]
