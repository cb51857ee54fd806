"""How Dynamo's graphs bind to the workload: AOTAutograd's forward and backward by what its
descriptors say each input and output is, and Dynamo's own FX graph (fwd) by its placeholders."""
from __future__ import annotations

import torch

from irlens.frontends.base import Acquisition, Program, Step, Unavailable
from irlens.frontends.bindings import EFFECT, grad_key, updated_key, value_keys
from irlens.frontends.dynamo.aot import new_token
from irlens.workload import Instance


def dynamo_program(acq: Acquisition, inst: Instance) -> Program:
    """AOTAutograd's graphs of the first Dynamo graph, bound by what AOTAutograd says each of
    their inputs and outputs is (`notes["roles"]`, from its descriptors; not by position). The
    forward reads the Dynamo graph's inputs (placeholders in first-use order,
    `notes["graph_inputs"]`) and an effect token per kind of side effect it orders (the program
    supplies it: the empty tensor AOTAutograd's runtime passes); it returns the tokens again, the
    new values of the inputs it updates in place, the outputs, then the tensors saved for the
    backward. The backward takes those and one cotangent per output, and returns one gradient
    (or None) per Dynamo graph input."""
    if acq.notes.get("graphs", 1) != 1:
        reasons = "; ".join(acq.notes.get("break_reasons") or [])
        raise Unavailable(f"{acq.workload}: Dynamo made {acq.notes['graphs']} graphs (graph breaks"
                          f"{': ' + reasons if reasons else ''}); a program runs one")
    keys = acq.notes["graph_inputs"][0]
    # Dynamo's graph output j: the module's out<i>, or a tensor its bytecode stores (a cache) and
    # the module does not return, which is no result (`effect:<j>`)
    returned = acq.notes.get("graph_outputs")
    if isinstance(returned, str):
        raise Unavailable(f"{acq.workload}: {returned}")

    def out(j: int) -> str:
        return f"out{j}" if returned is None else f"out{returned[j]}" if returned[j] is not None else f"{EFFECT}{j}"

    key_of = {"arg": keys.__getitem__, "mutated": lambda i: updated_key(keys[i], inst), "out": out,
              "saved": "saved:{}".format, "cotangent": lambda j: f"cotangent:{out(j)}",
              "grad": lambda i: grad_key(keys[i], inst), "none": lambda i: None}
    tokens: dict[str, torch.Tensor] = {}

    def key(stage: str, side: str, j: int, role) -> str | None:
        if role.kind == "token":  # fed a fresh token; the one a graph returns is no result
            if side == "output":
                return None
            name = f"token:{role.what.strip('_')}"
            tokens[name] = new_token().to(inst.device)
            return name
        if role.kind not in key_of:
            raise ValueError(f"{acq.workload}: {stage} {side} {j} is {role}, which irlens does not bind")
        return key_of[role.kind](role.index)

    def step(stage: str) -> Step:
        inputs, outputs = acq.notes["roles"][stage]
        return Step(acq.stage(stage), [key(stage, "input", j, r) for j, r in enumerate(inputs)],
                    [key(stage, "output", j, r) for j, r in enumerate(outputs)])

    fwd = step("aot.forward")
    if acq.mode == "fwd":
        return Program("dynamo", "fwd", fwd, values=tokens)
    bwd = step("aot.backward")
    return Program("dynamo", "fwdbwd", fwd, bwd, values=tokens)


def fx_program(acq: Acquisition, inst: Instance, program: Program) -> dict[str, Program]:
    """In fwd mode, Dynamo's FX graph as a program of its own: it reads its inputs and returns
    the outputs, then the inputs it updates in place."""
    if acq.mode != "fwd":
        return {}
    keys = acq.notes["graph_inputs"][0]
    graph = acq.stage("dynamo.fx").common()
    position = {t.name: i for i, t in enumerate(graph.inputs)}
    outputs = [k for k in program.forward.outputs if k is not None and k.startswith(("out", EFFECT))]
    outputs += [updated_key(keys[position[name]], inst) for name in graph.updates.values()]
    return {"dynamo.fx": Program("dynamo", "fwd", Step(acq.stage("dynamo.fx"), keys, outputs))}


def dynamo_input_keys(example_inputs: list[list], inst: Instance) -> list[list[str] | None]:
    """`value_keys` of each Dynamo graph's example inputs; None for a graph whose inputs are not
    all workload values (a graph after a break reads intermediate tensors)."""
    keys = []
    for tensors in example_inputs:
        try:
            keys.append(value_keys(tensors, inst))
        except ValueError:
            keys.append(None)
    return keys
