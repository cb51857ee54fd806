"""A graph pass as declared (`GraphPass`: its phase and what it needs), the two Registries the
passes are listed in (catalog.py fills them) and the errors of a pass list."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch

from irlens.core.registry import Registry

FUSE, TRANSFORM, COMPILE, CUDAGRAPH = 1, 2, 3, 4
PHASE_NAMES = {FUSE: "collective-matmul fusion", TRANSFORM: "graph transform (bucketing)", COMPILE: "compilation",
               CUDAGRAPH: "cudagraph"}


@dataclass(frozen=True)
class GraphPass:
    name: str
    fn: Callable[..., Any]  # joint/transform: (gm, ctx) -> gm; compile/cudagraph: (gm or callable, ctx) -> callable
    description: str
    phase: int = 0  # 0 for joint passes
    changes_numerics: bool = False
    needs_gpu: str = ""  # why it needs a CUDA GPU, if it does
    requires_joint: tuple[str, ...] = ()
    fuses_graph: bool = False  # compiles the whole graph into fused kernels (recomputation then costs little)
    # pipelines TP's collectives through symmetric memory: needs --tp > 1 with sequence parallelism,
    # and CUDA ranks where symmetric memory works (probed at run time: async_tp.require_symmetric_memory)
    needs_symmetric_memory: bool = False


class PassError(ValueError):
    """An unknown, ill-ordered or unsatisfiable pass list (a user error: the CLI exits 2)."""


class NeedsGPU(PassError):
    """A pass that only works on a CUDA device was asked for on the CPU."""


def require_gpu(p: GraphPass) -> None:
    if p.needs_gpu and not torch.cuda.is_available():
        raise NeedsGPU(f"pass {p.name!r} needs a CUDA GPU: {p.needs_gpu}. This machine has none; drop it from --passes.")


JOINT_PASSES: Registry[GraphPass] = Registry("joint pass")
GRAPH_PASSES: Registry[GraphPass] = Registry("graph pass")
