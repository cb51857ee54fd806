"""How Dynamo's graphs bind to the workload: AOTAutograd's forward and backward by what its
descriptors say each input and output is, and Dynamo's own FX graph (fwd) by its placeholders;
several graphs (graph breaks) by Dynamo itself (graph_breaks.py)."""
from __future__ import annotations

import torch

from irlens.frontends.base import Acquisition, Program, Step, Unavailable
from irlens.frontends.bindings import EFFECT, grad_key, updated_key, value_keys, workload_values
from irlens.frontends.dynamo.aot import new_token
from irlens.frontends.dynamo.graph_breaks import several_graphs_program
from irlens.workloads.workload import Instance


def dynamo_program(acq: Acquisition, inst: Instance) -> Program:
    """AOTAutograd's graphs of Dynamo's one graph, bound by what AOTAutograd says each of
    their inputs and outputs is (`notes["roles"]`, from its descriptors; not by position). The
    forward reads the Dynamo graph's inputs (placeholders in first-use order,
    `notes["graph_inputs"]`) and an effect token per kind of side effect it orders (the program
    supplies it: the empty tensor AOTAutograd's runtime passes); it returns the tokens again, the
    new values of the inputs it updates in place, the outputs, then the tensors saved for the
    backward. The backward takes those and one cotangent per output (zero for an updated input's
    new value, which the loss does not read), and returns one gradient (or None) per Dynamo
    graph input. Several Dynamo graphs (graph breaks) make a program that runs the workload
    itself (graph_breaks.py)."""
    graphs = acq.notes.get("graphs", 1)
    if graphs == 0:
        raise Unavailable(f"{acq.workload}: Dynamo made no graph of it")
    if graphs > 1:
        return several_graphs_program(acq)
    keys = acq.notes["graph_inputs"][0]
    if keys is None:
        raise Unavailable(f"{acq.workload}: Dynamo's graph reads a tensor that is no input, parameter or buffer of "
                          "the workload")
    out = output_key(acq)
    supplied: dict[str, torch.Tensor] = {}  # the values no workload holds: effect tokens, zero cotangents

    def zero_cotangent(i: int) -> str:
        name = f"cotangent:updated:{keys[i]}"
        supplied[name] = torch.zeros_like(workload_values(inst)[keys[i]])
        return name

    key_of = {"arg": keys.__getitem__, "mutated": lambda i: updated_key(keys[i], inst), "out": out,
              "saved": "saved:{}".format, "cotangent": lambda j: f"cotangent:{out(j)}",
              "mutation_cotangent": zero_cotangent, "grad": lambda i: grad_key(keys[i], inst), "none": lambda i: None}

    def key(stage: str, side: str, j: int, role) -> str | None:
        if role.kind == "token":  # fed a fresh token; the one a graph returns is no result
            if side == "output":
                return None
            name = f"token:{role.what.strip('_')}"
            supplied[name] = new_token().to(inst.device)
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
        return Program("dynamo", "fwd", fwd, values=supplied)
    bwd = step("aot.backward")
    return Program("dynamo", "fwdbwd", fwd, bwd, values=supplied)


def output_key(acq: Acquisition):
    """Dynamo's graph output j -> the result it is: the module's `out<i>`, a buffer the module
    reassigned (`buffer:<name>`, compared like one updated in place), or a tensor its bytecode
    stores elsewhere (a cache) and the module does not return: no result (`effect:<j>`)."""
    returned = acq.notes.get("graph_outputs")
    if isinstance(returned, str):
        raise Unavailable(f"{acq.workload}: {returned}")
    if returned is None:  # not recorded: the module's outputs, in order
        return "out{}".format
    return lambda j: returned[j] or f"{EFFECT}{j}"


def fx_program(acq: Acquisition, inst: Instance) -> dict[str, Program]:
    """In fwd mode, Dynamo's FX graph as a program of its own: it reads its inputs and returns
    the outputs, then the inputs it updates in place. None after graph breaks: the first FX
    graph is not the workload."""
    if acq.mode != "fwd" or acq.notes.get("graphs", 1) != 1:
        return {}
    keys = acq.notes["graph_inputs"][0]
    graph = acq.stage("dynamo.fx").common()
    position = {t.name: i for i, t in enumerate(graph.inputs)}
    out = output_key(acq)
    outputs = [out(r.index) for r in acq.notes["roles"]["aot.forward"][1] if r.kind == "out"]
    outputs += [updated_key(keys[position[name]], inst) for name in graph.updates.values()]
    return {"dynamo.fx": Program("dynamo", "fwd", Step(acq.stage("dynamo.fx"), keys, outputs))}


def dynamo_input_keys(example_inputs: list[list], inst: Instance,
                      module: dict[str, torch.Tensor] | None = None) -> list[list[str] | None]:
    """`value_keys` of each Dynamo graph's example inputs (the module's tensors as `module` holds
    them: before the call); None for a graph whose inputs are not all workload values (a graph
    after a break reads intermediate tensors)."""
    keys = []
    for tensors in example_inputs:
        try:
            keys.append(value_keys(tensors, inst, module))
        except ValueError:
            keys.append(None)
    return keys
