"""GraphNet's samples as workloads: `graphnet:PATH` names a sample folder (or a folder of them)
wherever a workload name goes (PaddlePaddle/GraphNet, arXiv 2510.24035; docs/graphnet.md).

A sample is a folder with model.py (`class GraphModule`, whose forward takes inputs and weights
as arguments), weight_meta.py and input_meta.py (each tensor's shape, dtype and statistics, or
its values) and graph_net.json. `sample_workload` reads the meta and the forward's arguments
(nothing runs: a malformed sample is a BadSample, exit 2); building the module compiles model.py
(irlens.workloads.graphnet.module). The workload's name is its reference, `graphnet:<absolute
path>`, which any process resolves; its default dtype is the one most of its floating-point
elements have. Its size is the sample's own: both presets are the same.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import torch

from irlens.core.dtypes import COMPUTE_DTYPES, TORCH_DTYPES
from irlens.workloads.graphnet.meta import JSON, MODEL, BadSample, SampleMeta, forward_arguments, missing_files, read_meta
from irlens.workloads.graphnet.module import CONSTANT, INPUT, GraphNetModule, cast_input, draw, role
from irlens.workloads.user_code import GRAPHNET as PREFIX
from irlens.workloads.workload import PRESETS, Workload

TAG = "graphnet"
SAMPLES = "samples"  # the folder of a GraphNet clone that holds samples/<source>/<name>/


def is_graphnet(name: str) -> bool:
    return name.startswith(PREFIX)


def sample_dirs(folder: Path) -> list[Path]:
    """The sample folders at or under `folder` (`folder` itself where it has a model.py; below it,
    those with a model.py beside GraphNet's graph_net.json, which every sample has: another
    package's model.py is no sample), sorted; GraphNet nests some (transformers-auto-model/<org>/<name>)."""
    folder = Path(folder)
    if (folder / MODEL).is_file():
        return [folder]
    return sorted(p.parent for p in folder.rglob(MODEL) if (p.parent / JSON).is_file())


def label(path: str | Path) -> tuple[str, str]:
    """(source, short name) of a sample path or workload name: the folders below GraphNet's
    `samples/` (the first is the source), else the last two."""
    parts = Path(str(path).removeprefix(PREFIX)).parts
    below = parts[len(parts) - 1 - parts[::-1].index(SAMPLES) + 1:] if SAMPLES in parts else parts[-2:]
    return (below[0] if len(below) > 1 else ""), "/".join(below)


def portable_name(workload: str) -> str:
    """A workload's name as files, tables and cell lists write it: a sample's `source/name` (the
    same under any clone), any other workload's own name."""
    return label(workload)[1] if is_graphnet(str(workload)) else str(workload)


def file_stem(text: str) -> str:
    """`text` as one file name: what a path or a shell would read otherwise ('/', ':', '+') becomes '_'."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def sample_workload(name_or_path: str | Path) -> Workload:
    """The workload of one sample folder (`graphnet:PATH` or PATH); BadSample if it is not one."""
    path = Path(os.path.abspath(str(name_or_path).removeprefix(PREFIX)))
    inside = sample_dirs(path) if path.is_dir() and not (path / MODEL).is_file() else []
    if inside:
        raise BadSample(f"{path} is a folder of {len(inside)} GraphNet samples, not one: name each, "
                        f"or run them with `irlens graphnet --root {path}`")
    meta = read_meta(path)
    source = (path / MODEL).read_text()
    arguments = forward_arguments(source, str(path / MODEL))
    undescribed = [a.name for a in arguments if a.name not in meta.tensors]
    if undescribed:
        raise BadSample(f"{path / MODEL}: forward takes {', '.join(undescribed[:3])}"
                        f"{' ...' if len(undescribed) > 3 else ''}, which the meta files do not describe")
    roles = [(a.name, role(a, meta.tensors[a.name])) for a in arguments]
    constants = {n: _constant(meta, n) for n, r in roles if r == CONSTANT}
    inputs = [meta.tensors[n] for n, r in roles if r == INPUT]

    def build(cfg: dict) -> GraphNetModule:
        state = {n: draw(meta.tensors[n]) for n, r in roles if r not in (INPUT, CONSTANT)}
        return GraphNetModule(source, path / MODEL, roles, state, constants, inputs)

    def example_inputs(cfg: dict, dtype: torch.dtype, gen: torch.Generator) -> tuple:
        drawn = [draw(m, gen) for m in inputs]
        return tuple(cast_input(t, dtype) for t in drawn)

    src, short = label(path)
    return Workload(f"{PREFIX}{path}", build, example_inputs, {p: {} for p in PRESETS}, dtype=own_dtype(meta),
                    description=f"GraphNet sample {short}", tags=(TAG, src) if src else (TAG,), training=False)


def own_dtype(meta: SampleMeta) -> str:
    """The compute dtype most floating-point elements have (float32 where none is one)."""
    counts = Counter()
    for t in meta.tensors.values():
        name = next((n for n in COMPUTE_DTYPES if TORCH_DTYPES[n] == t.dtype), None)
        if name and name != "float64":
            counts[name] += t.elements
    return counts.most_common(1)[0][0] if counts else "float32"


def _constant(meta: SampleMeta, name: str) -> int:
    t = meta.tensors[name]
    if t.data is None or len(t.data) != 1:
        raise BadSample(f"{meta.path}: the int argument {name} has no value in the meta (data)")
    return int(t.data[0])


__all__ = ["BadSample", "PREFIX", "TAG", "is_graphnet", "label", "missing_files", "read_meta", "sample_dirs",
           "sample_workload"]
