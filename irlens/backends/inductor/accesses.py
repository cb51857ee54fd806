"""How many elements of each buffer a generated Triton kernel can touch, from its own body.

A launch is handed whole buffers, but a kernel that scatters (index_put, scatter_add, an
embedding's backward: `tl.atomic_add(out_ptr0 + (x0 + 512*tmp5), ...)`) or reads a few rows of a
large input touches far fewer elements than the buffer holds. Each `tl.load`, `tl.store` or
`tl.atomic_*` of a pointer runs once per point of the kernel's iteration space (its `xnumel`,
`r0_numel` ..., which Inductor writes into the body at static shapes), so a pointer used only
through N of them touches at most N x that many elements. `touch_bounds` gives that bound per
pointer parameter; a pointer used any other way (a block pointer, a tensor descriptor, passed
to a helper) gets none, and neither does any pointer of a kernel whose iteration space is not
a set of constants.
"""
from __future__ import annotations

import ast
import math

_ACCESSES = {"load", "store"}  # tl.load, tl.store, and every tl.atomic_*
_NUMELS = {"xnumel", "ynumel", "znumel", "rnumel", "r0_numel", "r1_numel"}


def _accessed_pointer(call: ast.Call) -> str | None:
    """The pointer parameter a `tl.load(ptr + offsets, ...)`-like call addresses, or None."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "tl"
            and (func.attr in _ACCESSES or func.attr.startswith("atomic_")) and call.args):
        return None
    address = call.args[0]
    while isinstance(address, ast.BinOp) and isinstance(address.op, ast.Add):
        address = address.left
    return address.id if isinstance(address, ast.Name) else None


def _jit_function(tree: ast.Module) -> ast.FunctionDef | None:
    return next((node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                 and any("jit" in ast.unparse(d) for d in node.decorator_list)), None)


def touch_bounds(source: str) -> dict[str, int]:
    """{pointer parameter: the most elements the kernel can touch through it} for a Triton
    kernel's source (see the module docstring); {} where it cannot be read."""
    try:
        fn = _jit_function(ast.parse(source))
    except SyntaxError:
        return {}
    if fn is None:
        return {}
    params = {a.arg for a in fn.args.args}
    numels: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in _NUMELS:
            value = node.value
            if not (isinstance(value, ast.Constant) and isinstance(value.value, int)):
                return {}  # a dynamic extent: no bound
            numels[node.targets[0].id] = value.value
    if not numels:
        return {}
    points = math.prod(numels.values())
    sites: dict[str, int] = {}
    addressed: set[int] = set()  # the Name nodes that are the base of an access
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            pointer = _accessed_pointer(node)
            if pointer in params:
                sites[pointer] = sites.get(pointer, 0) + 1
                base = node.args[0]
                while isinstance(base, ast.BinOp):
                    base = base.left
                addressed.add(id(base))
    other_uses = {node.id for node in ast.walk(fn) if isinstance(node, ast.Name) and node.id in sites
                  and isinstance(node.ctx, ast.Load) and id(node) not in addressed}
    return {p: n * points for p, n in sites.items() if p not in other_uses}
