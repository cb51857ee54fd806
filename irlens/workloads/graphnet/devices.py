"""A GraphNet graph's device constants, rewritten for the device it runs on.

A graph captured on a GPU names it inside (`torch.arange(..., device=device(type="cuda",
index=0))`, `.to(device(type="cuda", index=0))`, `_enter_autocast("cuda", ...)`), one captured on
the CPU names `device(type="cpu")`: run elsewhere, such a tensor lands on the wrong device. The
source is rewritten before it is compiled, once per device: every `device(...)` /
`torch.device(...)` call of constant arguments becomes the run's device, and every string constant
that is a device name ("cuda", "cuda:0", "cpu") becomes the run's (its type where it named only a
type). A rewrite of the source, not a TorchFunctionMode that moves tensors at run time: every stack
(Dynamo, thunder.jit, which interprets the bytecode, irlens repro's captured source) then reads
plain constants, with nothing active around the call that a stack may not trace through, and
methods a mode would not see (`Tensor.to`) are covered alike.
"""
from __future__ import annotations

import ast
import re

import torch

_DEVICE_NAME = re.compile(r"^(cuda|cpu)(:\d+)?$")


def for_device(source: str, device: torch.device) -> str:
    """model.py's source with its device constants naming `device`."""
    tree = _Rewrite(torch.device(device)).visit(ast.parse(source))
    return ast.unparse(ast.fix_missing_locations(tree))


class _Rewrite(ast.NodeTransformer):
    def __init__(self, device: torch.device):
        self.device = device

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        named = (isinstance(func, ast.Name) and func.id == "device") or (
            isinstance(func, ast.Attribute) and func.attr == "device" and isinstance(func.value, ast.Name)
            and func.value.id == "torch")
        constant = all(isinstance(a, ast.Constant) for a in [*node.args, *(k.value for k in node.keywords)])
        if named and constant and (node.args or node.keywords):
            return ast.Call(func=node.func, args=[ast.Constant(str(self.device))], keywords=[])
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str) and _DEVICE_NAME.match(node.value):
            return ast.Constant(str(self.device) if ":" in node.value else self.device.type)
        return node
