"""Converters of elementwise ops, reductions, scans and selections, and matrix products."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
import torch.fx as fx

from irlens.core import ops
from irlens.frontends.dynamo.call import Call, Unmapped, converts, dim_list, operand
from irlens.frontends.dynamo.names import BINARY, SPECIAL, SPECIAL_BINARY, SPECIAL_UNARY, UNARY
from irlens.core.ir import Arg, Node, canonical_dtype


# --- elementwise ------------------------------------------------------------------------------

# The operands of elementwise ops by schema name and torch-level position.
_OPERANDS = {"where": ("condition", "self", "other"), "clamp": ("self", "min", "max"), "pow": ("self", "exponent"),
             **{n: ("x", "n") for n in ops.special.POLYNOMIALS}}
_ELEMENTWISE_UNARY = set(UNARY) | {SPECIAL.get(f"special_{n}") for n in SPECIAL_UNARY} | {"bessel_i0"}


@converts(ops_=tuple(_ELEMENTWISE_UNARY | set(BINARY) | set(SPECIAL_BINARY) | {"where"}))
def _elementwise(c: Call) -> list[Node]:
    names = _OPERANDS.get(c.op, ("self",) if c.op in _ELEMENTWISE_UNARY else ("self", "other"))
    if c.op == "where" and c.node.op == "call_method":
        raise Unmapped("x.where(cond, y): self is not the condition")
    if c.node.op == "call_function" and getattr(c.node.target, "__module__", "") in ("_operator", "operator"):
        inputs = [c.value(a) for a in c.read_all()[0]]  # operator.add(a, b): both positional
    else:
        inputs = [operand(c, n, i) for i, n in enumerate(names)]
    attrs = {}
    if c.op == "div":
        mode = c.arg("rounding_mode", default="floor" if c.bare in ("floor_divide", "floordiv") else None)
        if c.key == "prims.div" and not c.outputs[0].dtype.startswith("float"):
            mode = "trunc"  # prims.div: C division for integers
        attrs = {"rounding_mode": mode} if mode is not None else {}
    elif c.op == "round" and c.arg("decimals", 1):
        attrs = {"decimals": int(c.arg("decimals", 1))}
    alpha = c.arg("alpha", default=1) if c.op in ("add", "sub") else 1
    if c.bare == "rsub":  # other - alpha * self
        inputs = inputs[::-1]
        if alpha != 1:
            scaled = c.emit("mul", [inputs[1], alpha], suffix="0")
            return [scaled, c.emit("sub", [inputs[0], scaled.outputs[0].name])]
    if alpha != 1:  # x + alpha * y
        scaled = c.emit("mul", [inputs[1], alpha], suffix="0")
        return [scaled, c.emit(c.op, [inputs[0], scaled.outputs[0].name])]
    return c.one(inputs, attrs)


@converts(ops_=("clamp",))
def _clamp(c: Call) -> list[Node]:
    x = operand(c, "self", 0)
    if c.bare == "clamp_min":
        return c.one([x, operand(c, "min", 1), None])
    if c.bare == "clamp_max":
        return c.one([x, None, operand(c, "max", 1)])
    return c.one([x, operand(c, "min", 1, required=False), operand(c, "max", 2, required=False)])


@converts("square")
def _square(c: Call) -> list[Node]:
    x = operand(c, "self", 0)
    return c.one([x, x])


@converts("prims.fma")
def _fma(c: Call) -> list[Node]:
    """prims.fma(a, b, c) = a * b + c (Inductor's decompositions emit it)."""
    a, b, addend = (c.value(c.arg(n)) for n in ("a", "b", "c"))
    prod = c.emit("mul", [a, b], suffix="0")
    return [prod, c.emit("add", [prod.outputs[0].name, addend])]


@converts("polygamma")
def _polygamma(c: Call) -> list[Node]:
    return c.one([operand(c, "self", 1)], {"n": int(c.arg("n", 0))})


# --- reductions -----------------------------------------------------------------------------

def then_reduce(c: Call, x: Any, op: str, attrs: dict, dtype: Any = None) -> list[Node]:
    """`op` over x, converted first to the call's `dtype` when it names one (torch.sum(x, dtype=...))."""
    dtype = c.arg("dtype") if dtype is None else dtype
    if dtype is None:
        return c.one([c.value(x)], attrs, op=op)
    cast = c.emit("convert", [c.value(x)], {"dtype": canonical_dtype(dtype)}, suffix="0")
    return [cast, c.emit(op, [cast.outputs[0].name], attrs)]


@converts(ops_=("sum", "prod", "mean", "var", "any", "all", "amax", "amin"))
def _reduction(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.bare in ("max", "min"):
        return _max_min(c, x)
    keepdim_pos = 3 if c.op == "var" and c.schema is None else 2
    dim = c.arg("dim", 1)
    if isinstance(dim, (bool, torch.dtype)):
        raise Unmapped(f"{c.bare}(x, {dim}): not a dim")
    attrs = {"dims": dim_list(dim, c.rank(x)), "keepdim": bool(c.arg("keepdim", keepdim_pos, False))}
    if c.op == "var":
        correction = c.arg("correction")
        unbiased = True if c.key.startswith("prims.") else c.arg("unbiased", 1 if c.overload == "default" else 2, True)
        attrs["correction"] = correction if correction is not None else int(bool(unbiased))
    return then_reduce(c, x, c.op, attrs)


def _max_min(c: Call, x) -> list[Node]:
    """torch.max / min: of everything (x), elementwise (x, y), or along a dim: values and indices."""
    reduce, arg, elementwise = ("amax", "argmax", "maximum") if c.bare == "max" else ("amin", "argmin", "minimum")
    other = c.arg("other", 1) if c.schema is not None or not isinstance(c.arg("dim", 1), int) else None
    if isinstance(other, fx.Node):
        return c.one([c.value(x), c.value(other)], op=elementwise)
    dim = c.arg("dim", 1)
    if dim is None:
        return c.one([c.value(x)], {"dims": None, "keepdim": False}, op=reduce)
    dim, keepdim = c.dim(dim, x), bool(c.arg("keepdim", 2, False))
    values, indices = c.outputs
    return [c.emit(reduce, [c.value(x)], {"dims": [dim], "keepdim": keepdim}, suffix="0", outputs=[values]),
            c.emit(arg, [c.value(x)], {"dim": dim, "keepdim": keepdim}, outputs=[indices])]


@converts(ops_=("argmax", "argmin"))
def _arg_reduction(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    dim = c.arg("dim", 1)
    return c.one([c.value(x)], {"dim": None if dim is None else c.dim(dim, x), "keepdim": bool(c.arg("keepdim", 2, False))})


@converts(ops_=("cumsum", "cumprod", "logcumsumexp"))
def _scan(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    return then_reduce(c, x, c.op, {"dim": c.dim(c.arg("dim", 1), x)})


@converts(ops_=("cummax", "cummin"))
def _running(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    return c.one([c.value(x)], {"dim": c.dim(c.arg("dim", 1), x)})


@converts("var_mean")
def _var_mean(c: Call) -> list[Node]:
    """var_mean: a var node (`<node>.0`) and a mean node over the same dims."""
    (var,) = _reduction(c)
    var.id, var.op, var.outputs = f"{c.conv.name_of(c.node)}.0", "var", c.outputs[:1]
    attrs = {k: v for k, v in var.attrs.items() if k != "correction"}
    return [var, c.emit("mean", list(var.inputs), attrs, outputs=c.outputs[1:])]


@converts("prims.prepare_softmax_online")
def _prepare_softmax_online(c: Call) -> list[Node]:
    """Inductor's online-softmax statistics (GPU): max and sum(exp(x - max)) along dim, kept."""
    x = c.arg("a")
    meta = c.meta(x)
    dim = c.arg("dim") % len(meta.shape)
    row_max, total = c.outputs
    keep = {"dims": [dim], "keepdim": True}
    nodes = [c.emit("amax", [c.value(x)], keep, suffix="0", outputs=[row_max])]
    nodes.append(c.emit("sub", [c.value(x), row_max.name], suffix="1"))
    nodes.append(c.emit("exp", [nodes[-1].outputs[0].name], suffix="2"))
    return nodes + [c.emit("sum", [nodes[-1].outputs[0].name], keep, outputs=[total])]


@converts("topk", "sort")
def _select_k(c: Call) -> list[Node]:
    x = c.arg("self", 0)
    if c.op == "topk":
        attrs = {"k": int(c.arg("k", 1)), "dim": c.dim(c.arg("dim", 2, -1), x), "largest": bool(c.arg("largest", 3, True)),
                 "sorted": bool(c.arg("sorted", 4, True))}
    else:
        attrs = {"dim": c.dim(c.arg("dim", 1, -1), x), "descending": bool(c.arg("descending", 2, False)),
                 "stable": bool(c.arg("stable", default=False))}
    return c.one([c.value(x)], attrs)


# --- matmul -----------------------------------------------------------------------------------

@converts("matmul", "mm", "bmm")
def _matmul(c: Call) -> list[Node]:
    return c.one([operand(c, "self", 0), operand(c, "mat2" if c.bare in ("mm", "bmm") else "other", 1)], op="matmul")


@converts("addmm", "baddbmm")
def _addmm(c: Call) -> list[Node]:
    bias = c.arg("self", 0)
    a = c.arg("mat1", 1) if c.bare == "addmm" else c.arg("batch1", 1)
    b = c.arg("mat2", 2) if c.bare == "addmm" else c.arg("batch2", 2)
    beta, alpha = c.arg("beta", default=1), c.arg("alpha", default=1)
    nodes = [c.emit("matmul", [c.value(a), c.value(b)], suffix="0")]
    if alpha != 1:
        nodes.append(c.emit("mul", [nodes[-1].outputs[0].name, alpha], suffix="1"))
    lhs: Arg = nodes[-1].outputs[0].name
    if beta == 0:  # bias ignored, NaNs included (torch's rule)
        nodes[-1] = replace(nodes[-1], id=c.conv.name_of(c.node), outputs=c.outputs)
        return nodes
    bias_in = c.value(bias)
    if beta != 1:
        nodes.append(c.emit("mul", [bias_in, beta], suffix="2"))
        bias_in = nodes[-1].outputs[0].name
    nodes.append(c.emit("add", [lhs, bias_in]))
    return nodes


@converts("addbmm")
def _addbmm(c: Call) -> list[Node]:
    """addbmm(x, b1, b2, beta, alpha) = beta * x + alpha * sum over the batch of b1 @ b2."""
    x, b1, b2 = c.arg("self", 0), c.arg("batch1", 1), c.arg("batch2", 2)
    beta, alpha = c.arg("beta", default=1), c.arg("alpha", default=1)
    prods = c.emit("matmul", [c.value(b1), c.value(b2)], suffix="0")
    summed = c.emit("sum", [prods.outputs[0].name], {"dims": [0], "keepdim": False}, suffix="1")
    scaled_x = c.emit("mul", [c.value(x), beta], suffix="2")
    scaled = c.emit("mul", [summed.outputs[0].name, alpha], suffix="3")
    if beta == 0:  # x ignored, NaNs included (torch's rule)
        return [prods, summed, replace(scaled, id=c.conv.name_of(c.node), outputs=c.outputs)]
    return [prods, summed, scaled_x, scaled, c.emit("add", [scaled_x.outputs[0].name, scaled.outputs[0].name])]
