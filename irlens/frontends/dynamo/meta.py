"""What an FX node carries: its example value (concrete sizes where symbolic), its TensorMeta,
a graph input's name; and the graph's attributes and nested arguments as the walk reads them."""
from __future__ import annotations

import functools
from typing import Any

import torch
import torch.fx as fx

from irlens.frontends.dynamo import aot
from irlens.core.ir import Arg, TensorMeta, canonical_dtype


def input_name(node: fx.Node) -> str:
    """A graph input's name: an AOTAutograd effect token is named so (it is no tensor of the program)."""
    desc = node.meta.get("desc")
    return aot.token_name(desc) if aot.is_token(desc) else node.name


def example_value(node: fx.Node) -> Any:
    m = node.meta
    return m["val"] if "val" in m else m.get("example_value")


def data_dependent(val: Any) -> bool:
    """A symbolic scalar with no value behind it (an unbacked SymInt from .item(), nonzero, ...)."""
    return isinstance(val, (torch.SymInt, torch.SymFloat, torch.SymBool)) and val.node.hint is None


def has_tensor(val: Any) -> bool:
    if isinstance(val, torch.Tensor):
        return True
    return isinstance(val, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in val)


def concrete(v: Any) -> Any:
    if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        try:
            return type(v.node.hint)(v.node.hint) if v.node.hint is not None else str(v)
        except Exception:
            return str(v)
    if isinstance(v, torch.Size):
        return tuple(concrete(d) for d in v)
    if isinstance(v, (list, tuple)):
        return type(v)(concrete(x) for x in v)
    return v


def tensor_meta(name: str, t: torch.Tensor) -> TensorMeta:
    shape = tuple(concrete(d) for d in t.shape)
    return TensorMeta(name, tuple(d if isinstance(d, int) else -1 for d in shape), canonical_dtype(t.dtype))


def get_attr(gm: fx.GraphModule, target: str) -> Any:
    return functools.reduce(getattr, target.split("."), gm)


def flatten(v: Any) -> list[Arg]:
    if isinstance(v, dict):
        return [x for item in v.values() for x in flatten(item)]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in flatten(item)]
    return [v]
