"""In-place calls in an FX graph: which calls update their first argument, and when such an
update cannot be read as a new value of that tensor (it is a view, has views read afterwards, or
is a graph input the caller sees)."""
from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

from irlens.frontends.dynamo.meta import example_value
from irlens.frontends.dynamo.names import VIEWS


def in_place_aten(node: fx.Node) -> bool:
    t = node.target
    return (isinstance(t, torch._ops.OpOverload) and t._opname.endswith("_") and bool(t._schema.arguments)
            and t._schema.arguments[0].alias_info is not None and t._schema.arguments[0].alias_info.is_write)


def updates_in_place(node: fx.Node, key: str) -> bool:
    """An in-place call (x.add_(y), x += y, aten.add_) whose first argument it updates."""
    if isinstance(node.target, torch._ops.OpOverload):
        return in_place_aten(node)
    if node.op == "call_module":
        return False
    if getattr(node.target, "__module__", "") in ("_operator", "operator"):  # operator.and_ is not in place
        return key in ("setitem", "iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior",
                       "ixor", "ilshift", "irshift")
    return (key.endswith("_") and not key.startswith("__")) or node.kwargs.get("inplace") is True


INPUT_UPDATE = "in-place update of a graph input"


def mutation_hazard(node: fx.Node, key: str) -> str | None:
    """Why an in-place call cannot be read as a new value of the tensor it updates: that tensor
    is a view, or has views (they would change too), or is a graph input read afterwards (at
    the torch level, the caller sees any update of an input)."""
    if not updates_in_place(node, key) or not isinstance(node.args[0], fx.Node):
        return None
    target = node.args[0]
    aten = isinstance(node.target, torch._ops.OpOverload)
    if target.op in ("placeholder", "get_attr"):
        later = [u for u in target.users if u is not node and _after(u, node)]
        if not aten or later:
            return INPUT_UPDATE
    if _is_view(target) or any(_is_view(u) and (_after(u, node) or any(_after(r, node) for r in u.users))
                               for u in target.users if u is not node):
        return "in-place update through a view"  # a view of it read afterwards would see the update
    return None


def _after(a: fx.Node, b: fx.Node) -> bool:
    """Whether node a comes after node b in their graph."""
    n = b.next
    while n.op != "root":
        if n is a:
            return True
        n = n.next
    return False


def _is_view(node: fx.Node) -> bool:
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        returns = t._schema.returns
        return bool(returns) and returns[0].alias_info is not None and not returns[0].alias_info.is_write
    name = _native_name_of(node)
    if name in ("getitem", "__getitem__") and node.args and isinstance(node.args[0], fx.Node):
        return _item_is_view(node.args[0], node.args[1] if len(node.args) > 1 else None)
    return name in VIEWS


def _item_is_view(source: fx.Node, index: Any) -> bool:
    """x[index] shares x's memory where index is basic (ints, slices, None, ...): a tensor or a list
    in it (advanced indexing) copies. An item of a call's several results (topk's values) is a view
    only where that call gives views (chunk, split, unbind)."""
    if not isinstance(example_value(source), torch.Tensor):
        return _is_view(source)
    items = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(i, list) or (isinstance(i, fx.Node) and isinstance(example_value(i), torch.Tensor))
                   for i in items)


def _native_name_of(node: fx.Node) -> str:
    if node.op == "call_method":
        return node.target
    if node.op == "call_function":
        t = node.target
        if isinstance(t, torch._ops.OpOverload):
            return t._opname
        return getattr(t, "__name__", str(t))
    return ""
