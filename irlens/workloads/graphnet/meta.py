"""A GraphNet sample's description, read without running anything: its tensors from
`weight_meta.py` and `input_meta.py` (classes of literals: name, shape, dtype, device, mean, std,
min_val/max_val, data), its source from graph_net.json, and the arguments of model.py's forward.

The files are parsed (`ast`), never imported: a corpus is selected by size from the meta of
thousands of samples, and a malformed one is a `BadSample` (exit 2) saying which file and why.
"""
from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import torch

from irlens.core.dtypes import TORCH_DTYPES
from irlens.errors import UsageError

MODEL, WEIGHT_META, INPUT_META, JSON = "model.py", "weight_meta.py", "input_meta.py", "graph_net.json"
REQUIRED = (MODEL, WEIGHT_META)  # input_meta.py is empty in GraphNet's torch samples: every argument is in weight_meta


class BadSample(UsageError):
    """A folder that is not a GraphNet sample, or one whose files cannot be read; the message says which and why."""


@dataclass(frozen=True)
class TensorMeta:
    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype
    mean: float | None = None
    std: float | None = None
    min_val: float | None = None
    max_val: float | None = None
    data: tuple | None = None  # the values themselves (small tensors), flattened

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def bytes(self) -> int:
        return self.elements * self.dtype.itemsize


@dataclass(frozen=True)
class Argument:
    """One argument of the graph's forward: its name and annotation (Parameter, Tensor, SymInt, or "")."""

    name: str
    annotation: str


@dataclass(frozen=True)
class SampleMeta:
    path: Path
    tensors: dict[str, TensorMeta]  # by name

    @property
    def elements(self) -> int:
        return sum(t.elements for t in self.tensors.values())

    @property
    def bytes(self) -> int:
        return sum(t.bytes for t in self.tensors.values())


def missing_files(path: Path) -> list[str]:
    """The files a sample needs that `path` lacks (GraphNet's copy may lack large ones)."""
    return [f for f in REQUIRED if not (path / f).is_file()]


def read_meta(path: Path) -> SampleMeta:
    """The tensors a sample's meta files describe; BadSample if it is not a sample or a file is malformed."""
    path = Path(path)
    if not path.is_dir():
        raise BadSample(f"{path} is not a folder (a GraphNet sample is a folder with {MODEL} and {WEIGHT_META})")
    missing = missing_files(path)
    if missing:
        raise BadSample(f"{path} is not a GraphNet sample: it has no {' or '.join(missing)}")
    tensors: dict[str, TensorMeta] = {}
    for file in (WEIGHT_META, INPUT_META):
        if (path / file).is_file():
            for t in _tensors(path / file):
                tensors[t.name] = t
    return SampleMeta(path, tensors)


_SHAPE = re.compile(r"^\s+shape = \[([^\]]*)\]", re.M)
_DTYPE = re.compile(r"^\s+dtype = [\"'](?:torch\.)?([a-z0-9_]+)[\"']", re.M)


def sizes(path: Path) -> tuple[int, int]:
    """(elements, bytes) of the tensors the meta files describe, read from their `shape` and `dtype`
    lines alone: a corpus of thousands of samples holds hundreds of MB of meta, which `read_meta`
    parses whole. BadSample where the lines do not pair up or name an unknown dtype."""
    elements = nbytes = 0
    for file in (WEIGHT_META, INPUT_META):
        if not (Path(path) / file).is_file():
            continue
        text = (Path(path) / file).read_text()
        shapes, dtypes = _SHAPE.findall(text), _DTYPE.findall(text)
        if len(shapes) != len(dtypes) or len(shapes) != text.count("\nclass ") + text.startswith("class "):
            raise BadSample(f"{Path(path) / file}: its classes do not each give one shape and one dtype")
        for shape, dtype in zip(shapes, dtypes):
            if dtype not in TORCH_DTYPES:
                raise BadSample(f"{Path(path) / file}: unknown dtype 'torch.{dtype}'")
            n = math.prod(int(d) for d in shape.split(",") if d.strip())
            elements, nbytes = elements + n, nbytes + n * TORCH_DTYPES[dtype].itemsize
    return elements, nbytes


def read_source(path: Path) -> str:
    """The sample's source as graph_net.json names it ("" where it names none or is absent)."""
    try:
        return str(json.loads((Path(path) / JSON).read_text()).get("source") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def forward_arguments(source: str, where: str) -> list[Argument]:
    """The arguments (after self) of `class GraphModule`'s forward in model.py's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError as e:
        raise BadSample(f"{where}: not Python: {e.msg} (line {e.lineno})") from None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "GraphModule":
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    args = fn.args.args[1:] + fn.args.kwonlyargs
                    return [Argument(a.arg, ast.unparse(a.annotation) if a.annotation else "") for a in args]
            raise BadSample(f"{where}: class GraphModule has no forward")
    raise BadSample(f"{where}: defines no class GraphModule")


def _tensors(file: Path) -> list[TensorMeta]:
    try:
        tree = ast.parse(file.read_text())
    except SyntaxError as e:
        raise BadSample(f"{file}: not Python: {e.msg} (line {e.lineno})") from None
    return [_tensor(node, file) for node in tree.body if isinstance(node, ast.ClassDef)]


def _tensor(cls: ast.ClassDef, file: Path) -> TensorMeta:
    where = f"{file}: class {cls.name}"
    fields = {}
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            fields[stmt.targets[0].id] = _literal(stmt.value, where)
    for key in ("name", "shape", "dtype"):
        if key not in fields:
            raise BadSample(f"{where}: no {key}")
    dtype_name = str(fields["dtype"]).removeprefix("torch.")
    if dtype_name not in TORCH_DTYPES:
        raise BadSample(f"{where}: unknown dtype {fields['dtype']!r}; irlens knows: "
                        f"{', '.join('torch.' + d for d in TORCH_DTYPES)}")
    shape = fields["shape"]
    if not isinstance(shape, (list, tuple)) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise BadSample(f"{where}: shape {shape!r} is not a list of sizes")
    data = fields.get("data")
    if data is not None:
        data = tuple(data) if isinstance(data, (list, tuple)) else (data,)
        if len(data) != math.prod(shape) or not all(isinstance(v, (int, float, bool)) for v in data):
            raise BadSample(f"{where}: data holds {len(data)} values for shape {list(shape)}")
    return TensorMeta(str(fields["name"]), tuple(shape), TORCH_DTYPES[dtype_name], _number(fields.get("mean"), where),
                      _number(fields.get("std"), where), _number(fields.get("min_val"), where),
                      _number(fields.get("max_val"), where), data)


def _number(value, where: str) -> float | None:
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return value
    raise BadSample(f"{where}: {value!r} is not a number")


def _literal(node: ast.expr, where: str):
    """A literal, with GraphNet's spellings of non-finite floats: float('nan'), float('inf'), float('-inf')."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return float(node.args[0].value)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e, where) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal(node.operand, where)
        if isinstance(value, (int, float)):
            return -value
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise BadSample(f"{where}: {ast.unparse(node)[:80]} is not a literal") from None
