"""A reference interpreter for the common view, in float64 on the CPU.

Every canonical op (both levels) has one meaning, declared with the op in `irlens.core.ops` and
written with torch ops, so that running a normalized graph checks the adapter that produced
it (faithfulness) and the decomposition rules (composite and primitive views of one graph must
agree). `MEANINGS` is that table; `irlens.backends.inductor.lower` builds its GraphModules from it.

The meanings preserve dtypes: an op computes in its operands' dtypes. The interpreter runs them
in float64: floating inputs are cast up, creation ops make floating tensors in float64
(`float64_attrs`), and every floating result is carried on in float64; integer and bool values
keep their kinds. torch computes little on unsigned integers: uint16/32 values are computed on in
int64 and wrapped back; uint64 ones in int64's bits, exact for wrap-around arithmetic on every
value and for other ops below 2**63, refused above (`irlens.core.ops._torch.elementwise`). A cast
to a dtype narrower than float32 (`convert` to float16, bfloat16, float8) rounds: its value is
the input rounded to that dtype's precision, carried on in float64, as eager torch rounds at
`.half()` when the program runs in float64. A cast to float32 (or complex64) does not: that is
the precision the interpreter's float64 stands in for. An op without a meaning (in a loop body
too) raises `Uninterpretable` naming it; an index input (the op's schema declares which:
`irlens.core.ops.IndexOf`) holding a position outside what it indexes raises `IndexOutOfRange`
naming the node. A control-flow node's subgraphs (a while loop's cond
and body) are interpreted in turn, each time its meaning runs one.
"""
from __future__ import annotations

import functools
from typing import Callable, Sequence

import torch

from irlens.core.ir import Graph, Node
from irlens.core.ops import CAST, OPS, index_bounds
from irlens.core.ops._torch import F64, TORCH_DTYPES, torch_dtype  # noqa: F401  (TORCH_DTYPES: re-exported)

MEANINGS: dict[str, Callable] = {name: op.meaning for name, op in OPS.items() if op.meaning is not None}


class IndexOutOfRange(ValueError):
    """An index input holds a position outside what it indexes (the op's schema says which)."""


class Uninterpretable(RuntimeError):
    def __init__(self, ops: Sequence[str]):
        self.ops = sorted(set(ops))
        super().__init__(f"the interpreter has no meaning for: {', '.join(self.ops)}")


def run_attrs(node: Node) -> dict:
    """The attrs a node's meaning runs with: its own, the declared defaults filled in."""
    return OPS[node.op].attrs_of(node.attrs)


# The precisions the interpreter stands in for (float32, complex64) and its own: run as float64 / complex128.
_WIDENED = {"float32": "float64", "float64": "float64", "complex64": "complex128", "complex128": "complex128"}


def float64_attrs(op: str, attrs: dict) -> dict:
    """`attrs` as the interpreter runs them: a floating `dtype` is float64 (complex: complex128),
    except where a cast names a narrower one (float16, bfloat16, float8): there it rounds."""
    dtype = attrs.get("dtype")
    if dtype is None or op == "bitcast" or not (torch_dtype(dtype).is_floating_point or torch_dtype(dtype).is_complex):
        return attrs  # a bitcast reads bits: its dtypes are the bits' own
    if OPS[op].category == CAST and dtype not in _WIDENED:
        return attrs
    return {**attrs, "dtype": _WIDENED.get(dtype, "float64")}


def _as_value(t):
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu", F64 if t.is_floating_point() else t.dtype)
    return t


def interpret(graph: Graph, inputs: Sequence) -> list:
    """Run `graph` on `inputs` (one per graph input, in order); returns the graph's outputs."""
    missing = [n.op for n in graph.all_nodes() if n.op not in MEANINGS]
    if missing:
        raise Uninterpretable(missing)
    return _run(graph, inputs)


def _run(graph: Graph, inputs: Sequence) -> list:
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"graph {graph.name} ({graph.stage}) takes {len(graph.inputs)} inputs, got {len(inputs)}")
    env: dict[str, object] = {t.name: _as_value(v) for t, v in zip(graph.inputs, inputs)}
    for node in graph.nodes:
        args = [env[a] if isinstance(a, str) else a for a in node.inputs]
        if OPS[node.op].index_of:
            _check_indices(node, args)
        attrs = float64_attrs(node.op, run_attrs(node))
        if node.subgraphs:  # each a function of values, as the op's meaning runs it
            attrs = {**attrs, **{role: functools.partial(_run_values, g) for role, g in node.subgraphs.items()}}
        _bind(node, MEANINGS[node.op](attrs, *args), env)
    return [env[o] if isinstance(o, str) else o for o in graph.outputs]


def _check_indices(node: Node, args: list) -> None:
    """Each index input within what it indexes: a clear error naming the node, not torch's."""
    shapes = {a: tuple(v.shape) for a, v in zip(node.inputs, args) if isinstance(a, str) and isinstance(v, torch.Tensor)}
    for b in index_bounds(node.op, node.inputs, node.attrs, shapes):
        value = args[b.input]
        if not isinstance(value, torch.Tensor) or value.dtype == torch.bool or value.is_floating_point():
            continue
        positions = (value if b.keep is None else value[value != b.keep]).long()  # JAX's uint32 has no min in torch
        if positions.numel() and (positions.min() < -b.bound or positions.max() >= b.bound):
            raise IndexOutOfRange(
                f"{node.id} ({node.op}): input {node.inputs[b.input]} holds positions {positions.min().item()} to "
                f"{positions.max().item()}, outside [{-b.bound}, {b.bound})")


def _run_values(graph: Graph, *values) -> list:
    return _run(graph, values)


def all_outputs(result, specs: list[tuple[tuple[int, ...], str]], device) -> list:
    """A meaning's result as one value per declared output (shape, dtype). Outputs past those it
    computes are zeros: the fused attention kernels' RNG state and sequence bookkeeping (philox
    seed and offset, cumulative lengths), which no canonical op reads."""
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    return results + [torch.zeros(shape, dtype=torch_dtype(dtype), device=device) for shape, dtype in specs[len(results):]]


def output_specs(node: Node) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(o.shape), o.dtype) for o in node.outputs]


def _bind(node: Node, result, env: dict) -> None:
    results = all_outputs(result, output_specs(node), "cpu")
    for meta, value in zip(node.outputs, results):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value = value.to(F64)
        env[meta.name] = value
