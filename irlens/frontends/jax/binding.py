"""How JAX's graphs bind to the workload: one jaxpr over the flattened (params, inputs), and
the lowered modules over the arguments jit kept."""
from __future__ import annotations

from irlens.frontends.base import Acquisition, Program, Step


def jaxpr_program(acq: Acquisition) -> Program:
    """One jaxpr over the flattened (params, inputs): `notes["inputs"]` names its inputs,
    `notes["outputs"]` its results (in fwdbwd: outputs, loss and gradients)."""
    stage = acq.stage("jax.grad" if acq.mode == "fwdbwd" else "jax.jaxpr")
    return Program("jax", acq.mode, Step(stage, list(acq.notes["inputs"]), list(acq.notes["outputs"])))


def lowered_programs(acq: Acquisition, program: Program) -> dict[str, Program]:
    """JAX's StableHLO and optimized HLO modules (either mode): one function over the flattened
    arguments jit kept (`notes["lowered_inputs"]`: it drops those the function never reads),
    with the jaxpr's results."""
    inputs = list(acq.notes["lowered_inputs"])
    return {name: Program("jax", acq.mode, Step(acq.stage(name), inputs, program.forward.outputs))
            for name in ("jax.stablehlo", "jax.hlo")}
