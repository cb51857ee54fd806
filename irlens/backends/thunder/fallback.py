"""What Inductor ran for the regions ThunderFX did not give Thunder, and how to name what Inductor
generated (for these and for Thunder's torchcompile fusion regions alike).

A fallback region is compiled by `torch._inductor.compile` from its FX graph: a forward (or
inference) module, and a backward one where it computes a gradient (`thunderfx.py` attributes
them). Each kernel or extern call those modules launch is a Kernel of backend `inductor`, named
`<region>/<kernel>`, over the common view of the region's FX graph: which of the region's ops
each kernel holds is not mapped (Inductor's provenance is over its own post-grad graph), so the
region's nodes are listed once, on its first kernel, as for a Thunder fusion region.
"""
from __future__ import annotations

import re

from irlens.backends.inductor.code import kernel_definition, kernel_kind
from irlens.frontends.dynamo.fx import fx_to_graph
from irlens.frontends.dynamo.vmap import expand_vmap
from irlens.frontends.thunder.thunderfx import Region
from irlens.core.ir import Graph, Kernel

_INDUCTOR_KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.\w+\(", re.M)
_EXTERN_CALL = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(")


def inductor_kernel_names(code: str) -> list[str]:
    """What an Inductor-generated module launches, in order: its own kernels (cpp_fused_*,
    triton_*) and the extern / ATen calls of its `call()`."""
    defined = set(_INDUCTOR_KERNEL_DEF.findall(code))
    body = code[code.find("def call("):] if "def call(" in code else code
    names = []
    for line in body.splitlines():
        line = line.strip()
        if line.startswith("#"):
            continue
        head = line.split("(", 1)[0].removesuffix(".run")  # cpp kernels are called, triton ones .run()
        if head in defined:
            names.append(head)
        else:
            names += _EXTERN_CALL.findall(line)
    return names


def fallback_graph(region: Region, workload: str) -> Graph:
    """The common view of a fallback region's FX graph (its stage: `<region>.fx`), its vmap regions
    read as functorch batches them, as Dynamo's own view reads them (ThunderFX leaves vmap to Inductor)."""
    return fx_to_graph(expand_vmap(region.module), name=workload, frontend="dynamo", stage=f"{region.stage_prefix}.fx")


def fallback_kernels(region: Region, graph: Graph) -> list[Kernel]:
    """The region's Inductor kernels, forward then backward; one `fused` record for the whole
    region where its modules could not be attributed to it (`Region.codes` is None)."""
    ids = [n.id for n in graph.nodes]
    if region.codes is None:
        return [Kernel("inductor", region.key, "fused", ids, stage=graph.stage)]
    kernels = []
    for code in region.codes:
        for name in inductor_kernel_names(code):
            kernels.append(Kernel("inductor", f"{region.key}/{name}", kernel_kind(name), [] if kernels else ids,
                                  stage=graph.stage, source=kernel_definition(code, name) or ""))
    return kernels


def fallback_launches(modules: list[list[str]]) -> int:
    """Launches per step of the fallback regions: every kernel of the modules Inductor made for
    them (per Dynamo graph; attributed to regions or not, they are the same modules)."""
    return sum(len(inductor_kernel_names(code)) for graph in modules for code in graph)
