"""How `irlens repro` runs a backend: a `ReproPath`, the backend's attribute `repro_path`.

Each backend declares its own, built-in (in its folder) or named by reference (`path/to/file.py:NAME`,
a test's deliberately broken one): irlens.repro reads the path and never a backend's name.

A cell's file runs the workload's torch code (`kind` torch) under `compile_fn(fn)`, defined by
`compile_source` (eager: `fn` itself; inductor: `torch.compile`; Thunder's executors: `thunder.jit`
with that fusion executor first, or ThunderFX where thunder.jit fails), or its JAX twin (`kind` jax:
`jax.jit` of the JAX program written out as source, `irlens.repro.jax_source`).

The reducer shrinks a graph of the common view acquired by `frontend` (Dynamo's ATen graphs for
the torch paths, the jaxpr for xla) and runs each candidate as `program` says:
  torch    the candidate's own standalone code (`irlens.backends.inductor.lower` builds its module,
           Dynamo's capture of that is the code) under the path's `compile_fn`: the reduced file runs
           exactly what the reducer tested;
  fusions  the backend's `lower` (`irlens.backends.thunder.lower`): fusion regions as nvFuser
           FusionDefinitions, the rest as torch; the reducer also tries the regions whole, and a
           crash or raise is looked for first among the regions a run of the cell records
           (`irlens.repro.nvfuser_regions`, with the backend's Thunder executors);
  jax      the backend's `lower` (`irlens.backends.xla.lower`): the candidate as a jitted JAX function.
"""
from __future__ import annotations

from dataclasses import dataclass

PROGRAMS = ("torch", "fusions", "jax")


@dataclass(frozen=True)
class ReproPath:
    name: str  # the backend's name
    kind: str  # torch | jax: the program a cell's file runs
    description: str  # for the file's header: what runs the model
    compile_source: str = ""  # torch: defines compile_fn(fn)
    frontend: str = "dynamo"  # whose common view the reducer shrinks
    # the lowering the reducer runs candidates by, as its log names it: source (the candidate's code
    # under compile_fn) or that of the backend's `lower`
    lowering: str = "source"
    program: str = "torch"  # what a candidate runs as, and a reduced file holds (PROGRAMS; above)

    def __post_init__(self):
        if self.program not in PROGRAMS:
            raise ValueError(f"ReproPath {self.name}: program {self.program!r}; choose from {', '.join(PROGRAMS)}")
