"""The zoo: real models from transformers and timm, random weights from configs, nothing
downloaded (an optional extra: `pip install 'irlens[zoo]'`). Each is an ordinary workload
tagged `zoo` (and `hf` or `timm`, and its kind), outside the set `irlens compare` runs when no
workload is named; `irlens zoo` runs them all. Importing this package imports neither library:
a model's factory does, and without them `Workload.missing()` says what to install."""
from __future__ import annotations

from irlens.workloads.zoo import hf, timm_models
from irlens.workloads.zoo.entry import FAMILIES, register_all
from irlens.workloads.workload import WORKLOADS, ZOO

register_all(hf.MODELS + timm_models.MODELS)


def zoo_names(family: str | None = None) -> list[str]:
    """The zoo's workloads (of one family: hf | timm), in registration order."""
    return [w.name for w in WORKLOADS.values() if ZOO in w.tags and (family is None or family in w.tags)]


__all__ = ["FAMILIES", "zoo_names"]
