"""Named run configurations (docs/configs.md): each a frozen dataclass (irlens.runs.kinds), registered
by name in irlens.runs.catalog; `irlens bench|zoo|compare --config NAME` runs one (irlens.runs.plan)."""
from irlens.runs.catalog import CONFIGS

__all__ = ["CONFIGS"]
