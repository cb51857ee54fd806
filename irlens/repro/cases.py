"""What the reducer starts from: the cell's program in the common view, one graph per step, with
the values of its inputs.

The program is the one `irlens compare --cross` runs (`irlens.frontends.bindings`) for the path's
frontend: Dynamo's ATen forward (and backward) graphs for the torch paths, the jaxpr for xla;
each graph at the primitive level (what the lowerings take). Its inputs get the cell's values
(weights and inputs in the cell's dtype; a backward graph's saved tensors and cotangents as the
forward computes them). Every other value of a graph is derived where the candidates run
(`case_values`): computed in float64 on the device and rounded to its declared dtype, so when
the reducer drops a node its outputs become inputs with the values a correct backend gives them.
"""
from __future__ import annotations

import dataclasses
import json
import os

import torch

from irlens.backends import Backend
from irlens.core.interpret import TORCH_DTYPES
from irlens.core.ir import Graph
from irlens.matrix.spec import CellSpec
from irlens.workloads.workload import Workload


@dataclasses.dataclass
class Case:
    stage: str  # the graph's stage (aot.forward, aot.backward, jax.grad, ...)
    graph_path: str  # the primitive graph, JSON
    values_path: str  # {input name: tensor} on the CPU

    def graph(self) -> Graph:
        with open(self.graph_path) as f:
            return Graph.from_json(json.load(f))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def declared(value, dtype: str):
    """`value` in the dtype the graph declares for it (floating ones rounded, integers narrowed)."""
    if isinstance(value, torch.Tensor) and dtype in TORCH_DTYPES:
        return value.detach().to(TORCH_DTYPES[dtype])
    return value


def float64_values(graph: Graph, inputs: list, device: str) -> dict:
    """Every value of `graph` on `inputs` (inputs included), computed in float64 on `device` by
    the interpreter's meanings: the module `irlens.backends.inductor.lower` makes of the graph's float64 form
    (`irlens.repro.graphs.as_float64`)."""
    from irlens.backends.inductor.lower import to_graph_module
    from irlens.repro.graphs import as_float64

    wide = as_float64(graph)
    names = [o.name for n in wide.nodes for o in n.outputs]
    module = to_graph_module(dataclasses.replace(wide, outputs=names), device)
    args = [v.detach().to(device, torch.float64 if v.is_floating_point() else v.dtype)
            if isinstance(v, torch.Tensor) else v for v in inputs]
    with torch.no_grad():
        results = module(*args)
    return dict(zip((t.name for t in graph.inputs), args)) | dict(zip(names, results))


def all_values(graph: Graph, inputs: list, device: str) -> dict:
    """Every value of `graph` on `inputs`, in its declared dtype (from `float64_values`)."""
    metas = graph.values()
    return {name: declared(v, metas[name].dtype) for name, v in float64_values(graph, inputs, device).items()}


_CASE_VALUES: dict[str, dict] = {}


def case_values(case: "Case", device: str) -> dict:
    """Every value of the case's graph, on `device` in its declared dtype; derived once per process."""
    if case.values_path not in _CASE_VALUES:
        _CASE_VALUES.clear()  # one case at a time: a large graph's values take room
        graph = case.graph()
        inputs = torch.load(case.values_path, weights_only=True)
        _CASE_VALUES[case.values_path] = all_values(graph, [inputs[t.name] for t in graph.inputs], device)
    return _CASE_VALUES[case.values_path]


def save_case(graph: Graph, inputs: dict, stage: str, graph_path: str, values_path: str) -> dict:
    with open(graph_path, "w") as f:
        json.dump(graph.to_json(), f)
    torch.save({t.name: declared(inputs[t.name], t.dtype).cpu() for t in graph.inputs}, values_path)
    return Case(stage, graph_path, values_path).to_json()


def prepare(s: CellSpec, wl: Workload, backend: Backend, directory: str) -> list[dict]:
    """(a worker: irlens.worker.entry's `cases`) Write one Case per step of the program `s.frontend`
    acquires (the backend's repro path's: its graphs are what the reducer lowers) into `directory`,
    in the order the program runs them (after Dynamo's graph breaks, each graph as the program traces
    it); returns them as JSON."""
    from irlens.frontends.bindings import program_for, run_program
    from irlens.frontends import get_frontend
    from irlens.backends.lowering import LEVEL

    inst = wl.instantiate(s.preset, s.dtype, s.device)
    program = program_for(get_frontend(s.frontend).acquire(inst, s.mode), inst)
    cases = []

    def saved(step, values: list) -> list:  # the program's executor: each graph saved as a case, then computed
        graph = step.graph(LEVEL)
        inputs = {t.name: declared(v, t.dtype) for t, v in zip(graph.inputs, values)}
        computed = all_values(graph, [inputs[t.name] for t in graph.inputs], s.device)
        index = len(cases)
        cases.append(save_case(graph, inputs, step.stage.name, os.path.join(directory, f"case{index}.json"),
                               os.path.join(directory, f"case{index}.values.pt")))
        return [computed[name] if isinstance(name, str) else name for name in graph.outputs]

    run_program(program, inst, saved)
    return cases
