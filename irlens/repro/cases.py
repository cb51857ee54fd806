"""What the reducer starts from: the cell's program in the common view, one graph per step, with
the value of everything each graph reads or computes.

The program is the one `irlens compare --cross` runs (`irlens.bindings`) for the path's
frontend: Dynamo's ATen forward (and backward) graphs for the torch paths, the jaxpr for xla;
each graph at the primitive level (what the lowerings take). Its inputs get the cell's values
(weights and inputs in the cell's dtype; a backward graph's saved tensors and cotangents as the
forward computes them). Every other value a graph computes is kept too, from the float64
interpreter and rounded to its declared dtype: when the reducer drops a node, its outputs become
inputs with the values a correct backend would have given them.
"""
from __future__ import annotations

import dataclasses
import json
import os

import torch

from irlens.interpret import TORCH_DTYPES, interpret
from irlens.ir import Graph


@dataclasses.dataclass
class Case:
    stage: str  # the graph's stage (aot.forward, aot.backward, jax.grad, ...)
    graph_path: str  # the primitive graph, JSON
    values_path: str  # {value name: tensor} on the CPU: its inputs and everything it computes

    def graph(self) -> Graph:
        with open(self.graph_path) as f:
            return Graph.from_json(json.load(f))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def declared(value, dtype: str):
    """`value` in the dtype the graph declares for it (floating ones rounded, integers narrowed)."""
    if isinstance(value, torch.Tensor) and dtype in TORCH_DTYPES:
        return value.detach().cpu().to(TORCH_DTYPES[dtype])
    return value


def all_values(graph: Graph, inputs: list) -> dict:
    """Every value of `graph` on `inputs`, computed by the float64 interpreter."""
    names = [t.name for t in graph.inputs] + [o.name for n in graph.nodes for o in n.outputs]
    results = interpret(dataclasses.replace(graph, outputs=names), inputs)
    return dict(zip(names, results))


def prepare(workload: str, frontend: str, mode: str, dtype: str | None, device: str, preset: str,
            directory: str) -> list[dict]:
    """Write one Case per step of the program into `directory`; returns them as JSON."""
    from irlens.bindings import loss_and_cotangents, program_for, workload_values
    from irlens.frontends import get_frontend
    from irlens.lower import LEVEL
    from irlens.user_workload import resolve_workload

    inst = resolve_workload(workload).instantiate(preset, dtype, device)
    program = program_for(get_frontend(frontend).acquire(inst, mode), inst)
    env = {k: v.detach().cpu() if isinstance(v, torch.Tensor) else v for k, v in workload_values(inst).items()}
    cases = []
    for index, step in enumerate(program.steps):
        if step is program.backward:
            n_out = sum(1 for k in env if k.startswith("out") and k[3:].isdigit())
            loss, cotangents = loss_and_cotangents(inst, [env[f"out{i}"] for i in range(n_out)])
            env.update({f"cotangent:out{i}": c for i, c in enumerate(cotangents)}, loss=loss)
        graph = step.graph(LEVEL)
        inputs = [declared(env[k], t.dtype) for k, t in zip(step.inputs, graph.inputs)]
        values = {name: declared(v, meta.dtype) for (name, v), meta in
                  zip(all_values(graph, inputs).items(), [*graph.inputs, *(o for n in graph.nodes for o in n.outputs)])}
        env.update({k: values[name] for k, name in zip(step.outputs, graph.outputs)
                    if k is not None and isinstance(name, str)})
        case = Case(step.stage.name, os.path.join(directory, f"case{index}.json"),
                    os.path.join(directory, f"case{index}.values.pt"))
        with open(case.graph_path, "w") as f:
            json.dump(graph.to_json(), f)
        torch.save(values, case.values_path)
        cases.append(case.to_json())
    return cases
