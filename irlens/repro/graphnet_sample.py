"""A GraphNet sample's model in a cell's file: the sample's own model.py, not Dynamo's capture of it.

A sample already is standalone PyTorch: model.py's `GraphModule.forward` takes its inputs and
weights as arguments. The file embeds that source (GraphNet is MIT; it comes from the user's own
clone, irlens holds no sample), with its device constants naming the cell's device as irlens
compiles it (irlens.workloads.graphnet.devices), calls it with the sample's int arguments as
literals, and draws a value too large to embed from the sample's meta as irlens draws it
(`irlens.repro.tensors.Draw`).

This is how every sample's file is written, not only one that Dynamo splits into several graphs
(an `.item()`, a print: a Dynamo capture is one function, so such a sample had no file). The file
is then the sample itself, which GraphNet's users and a stack's maintainers recognize; each stack
takes it as it takes the cell's module (the same forward, graph breaks and all, where a capture
would hand it Dynamo's rewrite); and a sample has one kind of file, whatever Dynamo makes of it.
In a half dtype where GraphNet's dtype generalization cast arguments of matmuls and convolutions
(irlens.workloads.graphnet.dtype_gen), the module runs the generalized graph, and the file holds
that graph's code as fx writes it: the sample's calls with the casts between them.
"""
from __future__ import annotations

import ast
import copy
from pathlib import Path

import torch

from irlens.frontends.bindings import workload_values
from irlens.repro.tensors import Draw
from irlens.repro.torch_source import NotExpressible, TorchFunction, check_same, graph_source
from irlens.workloads.graphnet import PREFIX, label, read_meta
from irlens.workloads.graphnet.module import CONSTANT, INPUT, GraphNetModule, replay
from irlens.workloads.workload import Instance, as_tuple

GRAPH = "SAMPLE_GRAPH"  # the file's instance of the sample's GraphModule


def sample_code(inst: Instance, name: str, grad: bool) -> tuple[TorchFunction, tuple]:
    """The sample's graph as a function `name` of the workload's values (`input<i>`, weights by name),
    checked to compute what the module computes, and what the module returned."""
    module: GraphNetModule = inst.module
    source, imports, callee = _graph_code(module, name)
    given = [n for n, r in module.arguments if r != CONSTANT]
    call = "".join(f"\n        {n}={module.constants[n]!r}," if r == CONSTANT else f"\n        {n}={n},"
                   for n, r in module.arguments)
    wrapper = (f"def {name}(" + "".join(f"\n    {n}," for n in given) + f"\n):\n    out = {callee}({call}\n    )\n"
               "    return tuple(out) if isinstance(out, (tuple, list)) else (out,)\n")
    keys = _argument_keys(module)
    function = TorchFunction(name, f"{source.rstrip()}\n\n\n{wrapper}", [keys[n] for n in given], imports)
    with torch.set_grad_enabled(grad):
        returned = as_tuple(module(*inst.fresh_inputs(grad)))
    values = workload_values(inst)
    check_same(function, [values[k] for k in function.args], returned)
    return function, returned


def _graph_code(module: GraphNetModule, name: str) -> tuple[str, list[str], str]:
    """(source, the imports it needs, what to call): model.py's own code and an instance of its
    GraphModule, or the generalized graph's code as a function `<name>_graph`."""
    if isinstance(module.graph, torch.fx.GraphModule):
        graph = copy.deepcopy(module.graph)
        attrs = [str(n.target) for n in graph.graph.nodes if n.op == "get_attr"]
        if attrs:
            raise NotExpressible(f"the sample's generalized graph reads {attrs[0]}, an attribute, not an argument")
        source, imports = graph_source(graph, f"{name}_graph")
        return source, imports, f"{name}_graph"
    tree = ast.parse(module.sample_source())
    imports = [ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))
               and ast.unparse(s) != "import torch"]  # which every file has
    body = [ast.unparse(s) for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    return "\n\n\n".join([*body, f"{GRAPH} = GraphModule()"]), imports, GRAPH


def _argument_keys(module: GraphNetModule) -> dict[str, str]:
    """The workload value each tensor argument takes: `input<i>` for an input, a weight's own name."""
    inputs = iter(range(len(module.input_names)))
    return {n: f"input{next(inputs)}" if r == INPUT else n for n, r in module.arguments if r != CONSTANT}


def sample_draws(inst: Instance) -> dict[str, Draw]:
    """How irlens drew each value of the workload, by key, from the sample's meta (not those the
    meta gives as data: those are embedded, or regenerated from their own values)."""
    module: GraphNetModule = inst.module
    meta = read_meta(Path(inst.workload.name.removeprefix(PREFIX))).tensors
    draws = {}
    for name, key in _argument_keys(module).items():
        t = meta[name]
        if t.data is not None:
            continue
        if t.dtype.is_floating_point:
            mean, std, low, high = replay(t)
            draws[key] = Draw(low, high, mean, std)
        elif t.min_val is not None and t.max_val is not None:
            draws[key] = Draw(t.min_val, t.max_val)
    return draws


def describe(inst: Instance, mode: str) -> str:
    """The file's header paragraph on its model."""
    generalized = isinstance(inst.module.graph, torch.fx.GraphModule)
    code = ("the code of its graph as GraphNet's dtype generalization makes it for this dtype (fx's code: the "
            "sample's calls, float32 arguments of matmuls and convolutions cast)" if generalized else
            "its model.py as it is (class GraphModule), device constants naming DEVICE")
    return (f"The model: GraphNet sample {label(inst.workload.name)[1]} (PaddlePaddle/GraphNet, MIT; from the "
            f"clone the command read), {code}, called with its inputs and weights as arguments and its int "
            "arguments as the meta gives them" + ("; the workload's loss is Dynamo's graph of it." if mode == "fwdbwd"
                                                   else "."))
