"""Thunder's own nvFuser regions, for a cell that crashes or raises inside nvFuser.

A crash in nvFuser (an illegal memory access, say) kills the process, and with it whatever
Thunder knew about the region that ran. So the cell runs once more in a worker with a flight
recorder: before each region executes, its FusionDefinition (as nvFuser prints it, the form
nvFuser's own repro scripts use) and its inputs (as source, `irlens.repro.tensors`) are written
to disk; after it ran (and the device synchronized, so an asynchronous fault surfaces there)
it is marked done. The region that started and never finished is the culprit. Thunder's
execution traces are built before anything runs (`get_computation_and_inputs`), so each region
is also known as a piece of the common view: its nodes and which values its inputs are.

`region_file` writes the culprit as a standalone nvFuser script: the definition and its
inputs, executed once. Such a file checks whether the fusion runs, not its numerics (a region
of Thunder's has no float64 meaning outside the trace); `region_case` hands the region's nodes
to the reducer, whose candidates do have one.
"""
from __future__ import annotations

import glob
import json
import os
import sys
import textwrap

from irlens.backends import Backend
from irlens.matrix.spec import CellSpec
from irlens.workloads.workload import Workload


def record(s: CellSpec, wl: Workload, backend: Backend, directory: str, embed_max: int) -> dict:
    """(a worker: irlens.worker.entry's `record`) Run the cell through Thunder with `backend`'s (nvFuser's)
    executors and the flight recorder writing into `directory`. Returns how many regions ran, if the
    run ends at all."""
    import torch

    from irlens.frontends.thunder.frontend import import_thunder_or_raise
    from irlens.repro.tensors import tensor_source
    from irlens.workloads.workload import as_tuple

    thunder = import_thunder_or_raise()
    from thunder.executors.nvfuserex_impl import FusionDefinitionWrapper

    inst = wl.instantiate(s.preset, s.dtype, s.device)
    jfn = thunder.jit(inst.module, executors=backend.executors(thunder))
    train = s.mode == "fwdbwd"
    inputs = inst.fresh_inputs(requires_grad=train)
    try:  # the regions as common-view nodes, for the finer reduction; the recording does not depend on them
        parts = trace_parts(thunder, jfn, inputs, inst.name, s.mode)
    except Exception as e:  # noqa: BLE001
        parts = {"error": f"{type(e).__name__}: {e}"}
    with open(os.path.join(directory, "traces.json"), "w") as f:
        json.dump(parts, f)

    state = {"part": "forward", "count": 0}
    original = FusionDefinitionWrapper.__call__

    def described(make, instead):
        """What the recorder writes down must never change how the run ends: where it cannot
        write something down, the file says so when it runs."""
        try:
            return make()
        except Exception as e:  # noqa: BLE001
            return instead(f"{type(e).__name__}: {e}")

    def recording(wrapper, *args):
        index = state["count"]
        state["count"] += 1
        definition = described(lambda: repr(wrapper.get_fd(wrapper.to_descriptors(args))),
                               lambda why: f"def nvfuser_fusion(fd):\n    unrecorded({why!r})\n")
        inputs = [described(lambda a=a, i=i: tensor_source(a, i, embed_max) if isinstance(a, torch.Tensor) else repr(a),
                            lambda why: f"unrecorded({why!r})") for i, a in enumerate(args)]
        # the wrapper's name is Thunder's annotation, "nvFusion0: (add, mul, ...)": the region's name leads it
        name = wrapper.name.partition(":")[0].strip()
        entry = {"index": index, "part": state["part"], "name": name, "definition": definition,
                 "inputs": inputs, "devices": [str(a.device) if isinstance(a, torch.Tensor) else None for a in args]}
        with open(os.path.join(directory, f"region{index:05d}.json"), "w") as f:
            json.dump(entry, f)
        print(f"[irlens] nvFuser region {index}: {state['part']} {name}", file=sys.stderr, flush=True)
        result = original(wrapper, *args)
        torch.cuda.synchronize()  # an asynchronous fault of this region's kernels surfaces here
        open(os.path.join(directory, f"region{index:05d}.done"), "w").close()
        return result

    FusionDefinitionWrapper.__call__ = recording
    try:
        with torch.set_grad_enabled(train):
            outs = as_tuple(jfn(*inputs))
            if train:
                state["part"] = "backward"
                inst.loss(outs).backward()
        torch.cuda.synchronize()
    finally:
        FusionDefinitionWrapper.__call__ = original
    return {"regions": state["count"]}


def trace_parts(thunder, jfn, inputs: tuple, name: str, mode: str) -> dict:
    """Thunder's final forward (and backward) execution traces for `inputs`, built without running
    them: each part's common view (composite) and its fusion regions, by name, with their nodes
    and the values their arguments are."""
    import torch

    from irlens.frontends.thunder.frontend import final_traces
    from irlens.frontends.thunder.trace import trace_to_graph_and_groups

    with torch.set_grad_enabled(mode == "fwdbwd"):
        thunder.compile_data(jfn).get_computation_and_inputs(*inputs)
    parts = {}
    for stage, trace in final_traces(thunder, jfn, mode):
        graph, groups = trace_to_graph_and_groups(trace, name=name, stage=stage)
        parts["backward" if stage.startswith("thunder.backward") else "forward"] = {
            "graph": graph.to_json(),
            "regions": {g.name: {"nodes": g.node_ids, "args": [getattr(a, "name", None) for a in g.bsym.args]}
                        for g in groups if g.fusion}}
    return parts


def culprit(directory: str) -> dict | None:
    """The region that started and never finished (the last one recorded without its mark)."""
    started = sorted(glob.glob(os.path.join(directory, "region*.json")))
    unfinished = [p for p in started if not os.path.exists(p.removesuffix(".json") + ".done")]
    if not unfinished:
        return None
    with open(unfinished[-1]) as f:
        return json.load(f)


def region_file(entry: dict, title: str, notes: list[str]) -> str:
    """A standalone nvFuser script of one recorded region: its definition, its inputs, one run."""
    from irlens.repro.tensors import HELPERS, on_device

    inputs = "\n".join(f"        {expr if device is None or expr.startswith('unrecorded(') else on_device(expr, device)},"
                       for expr, device in zip(entry["inputs"], entry["devices"]))
    header = "\n".join(textwrap.fill(line, 96, break_on_hyphens=False, break_long_words=False) if line else "" for line in [title, "", *[
        x for note in notes for x in (note, "")]])
    return f'''"""{header.rstrip()}

Exit status: 0 the fusion ran, 2 it raised (its first line is printed); a crash ends the process.
"""
import base64
import math
import sys
import traceback

import torch
from nvfuser_direct import DataType, FusionDefinition  # noqa: F401  (the definition uses them)

{HELPERS}


def unrecorded(why):
    raise RuntimeError("the flight recorder could not write this down: " + why)


{entry["definition"].strip()}


def make_inputs():
    return [
{inputs}
    ]


def main():
    with FusionDefinition() as fd:
        {_definition_name(entry["definition"])}(fd)
    inputs = make_inputs()
    try:
        outputs = fd.execute(inputs)
        torch.cuda.synchronize()
    except Exception as e:
        text = str(e).strip()
        print(f"exception: {{type(e).__name__}}: {{text.splitlines()[0] if text else ''}}", flush=True)
        traceback.print_exc()
        return 2
    print(f"ok: the fusion ran ({{len(outputs)}} outputs; its numerics are not checked here)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _definition_name(definition: str) -> str:
    import re

    found = re.search(r"def (\w+)\(\s*fd", definition)
    if not found:
        raise ValueError("no `def <name>(fd ...)` in the FusionDefinition's text")
    return found.group(1)


def region_case(directory: str, entry: dict) -> dict | None:
    """The culprit region as a reducer Case (its nodes of the execution trace's common view at
    the primitive level, and its recorded inputs), or None when the traces do not name it."""
    import torch

    from irlens.core.interpret import MEANINGS
    from irlens.core.ir import Graph
    from irlens.core.decompose import to_primitive
    from irlens.repro.cases import save_case
    from irlens.repro.graphs import subgraph
    from irlens.repro.tensors import HELPERS

    with open(os.path.join(directory, "traces.json")) as f:
        parts = json.load(f)
    if "error" in parts:
        raise ValueError(f"Thunder's traces could not be read as the common view: {parts['error']}")
    part = parts.get(entry["part"])
    if part is None or entry["name"] not in part["regions"]:
        return None
    region = part["regions"][entry["name"]]
    graph = to_primitive(subgraph(Graph.from_json(part["graph"]), region["nodes"]))
    meaningless = sorted({n.op for n in graph.nodes if n.op not in MEANINGS})
    if meaningless:
        raise ValueError(f"the region's common view holds ops without a float64 meaning: {', '.join(meaningless)}")
    namespace: dict = {"torch": torch}
    exec("import base64\nimport math\n" + HELPERS, namespace)
    # the recorded inputs, rebuilt on the CPU (the reducer's workers move them where they run)
    recorded = {name: eval(expr, namespace) for name, expr in zip(region["args"], entry["inputs"]) if name}
    if any(t.name not in recorded for t in graph.inputs):
        return None  # the region reads a value its recorded arguments do not name
    return save_case(graph, recorded, f"{entry['part']} region {entry['name']}",
                     os.path.join(directory, "region_case.json"), os.path.join(directory, "region_case.values.pt"))
