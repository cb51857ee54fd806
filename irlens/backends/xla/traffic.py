"""What one launching ENTRY instruction of an optimized HLO module reads and writes, in bytes.

The memory a launch touches, never more than the buffers it is handed (`io_bytes`):
- it reads each operand once, and of an operand its fused computation only part of uses, that
  part (`demand`): a slice, a dynamic slice or a gather reads its share of its operand (q, k
  and v sliced out of one qkv buffer are a third of it each; a gather of one logit per row of
  an [N, V] buffer reads N elements, not N x V);
- it writes each result once, except a result its computation updates in place: a
  dynamic-update-slice or a scatter whose operand is a parameter of the fusion (XLA gives that
  result the operand's buffer) writes only the elements it updates, and reads of that operand
  only those elements, and only where its combiner reads the old value (scatter-add does, an
  assignment does not);
- a library GEMM's trailing s8/u8 result is its scratch workspace and does not count.
"""
from __future__ import annotations

import math
from typing import Callable

from irlens.frontends.jax.hlo.text import Instruction
from irlens.core.ir import dtype_size

# opcodes whose every result element depends on operand elements at other positions, or on all of them
_READS_WHOLE = {"reduce", "dot", "convolution", "scatter", "sort", "reduce-window", "select-and-scatter",
                "custom-call", "fusion", "call", "while", "conditional", "concatenate", "pad", "broadcast", "iota",
                "reduce-precision", "rng", "cholesky", "triangular-solve", "fft", "all-reduce", "all-gather"}
# opcodes that read of their first operand only as many elements as they produce
_READS_ITS_SHARE = {"slice", "dynamic-slice", "gather"}
# opcodes that pass a value through unchanged in memory (the in-place result may sit behind one)
_SAME_BUFFER = {"bitcast", "copy"}


def numel(ins: Instruction) -> int:
    return math.prod(ins.shapes[0][1]) if ins.shapes else 1


def shape_bytes(shapes: list[tuple[str, tuple[int, ...]]]) -> int:
    return sum(math.prod(dims) * dtype_size(dtype) for dtype, dims in shapes)


def demand(body: list[Instruction], root: Instruction) -> dict[str, float]:
    """Per instruction of a fused computation, the fraction of its value the computation needs,
    from the root (all of it) backwards: a slice, dynamic slice or gather needs its share of its
    first operand (the elements it produces); an op that maps elements one to one (elementwise,
    bitcast, copy, transpose, convert) passes its own fraction on; any other op needs all of
    its operands. Several users' needs add up, to at most all."""
    need = {root.name: 1.0}
    size = {i.name: numel(i) for i in body}
    for ins in reversed(body):
        mine = min(need.get(ins.name, 0.0), 1.0)
        for o in ins.operands:
            if ins.opcode in _READS_ITS_SHARE and ins.operands[0] == o:
                share = mine * size[ins.name] / max(size.get(o, 1), 1)
            elif ins.opcode in _READS_ITS_SHARE or ins.opcode == "tuple" or ins.opcode in _READS_WHOLE \
                    or size.get(o) != size[ins.name]:
                share = 1.0 if mine > 0 or ins.opcode == "tuple" else 0.0
            else:
                share = mine
            need[o] = need.get(o, 0.0) + share
    return {name: min(v, 1.0) for name, v in need.items()}


class InPlace:
    """A result of a fusion that updates one of its parameters in place: which parameters, and
    the bytes it reads of them and writes."""

    def __init__(self, params: list[str], read: int, written: int):
        self.params, self.read, self.written = params, read, written


def in_place_update(result: Instruction, by_name: dict[str, Instruction],
                    computation: Callable[[str], list[Instruction]]) -> InPlace | None:
    """The in-place update a fusion's result is (a dynamic-update-slice or a scatter, maybe
    behind a bitcast), where the buffers it updates are parameters of the fusion; else None."""
    while result.opcode in _SAME_BUFFER and result.operands and result.operands[0] in by_name:
        result = by_name[result.operands[0]]
    if result.opcode == "dynamic-update-slice":
        operand, update = by_name.get(result.operands[0]), by_name.get(result.operands[1])
        if operand is None or operand.opcode != "parameter" or update is None:
            return None
        return InPlace([operand.name], 0, shape_bytes(update.shapes))
    if result.opcode == "scatter":
        n = len(result.operands) // 2  # scatter(operands..., indices, updates...)
        operands = [by_name.get(o) for o in result.operands[:n]]
        updates = [by_name.get(o) for o in result.operands[n + 1:]]
        if any(o is None or o.opcode != "parameter" for o in operands) or any(u is None for u in updates):
            return None
        # each update element lands on one element of its operand: the elements touched
        touched = sum(numel(u) * dtype_size(o.shapes[0][0]) for o, u in zip(operands, updates))
        return InPlace([o.name for o in operands], touched if _combiner_reads_old(result, computation) else 0,
                       touched)
    return None


def _combiner_reads_old(scatter: Instruction, computation: Callable[[str], list[Instruction]]) -> bool:
    """Whether a scatter's combiner reads the operand's old value: every combiner but the one
    that returns the update (its second parameter) as it is."""
    name = scatter.attrs.get("to_apply", "").lstrip("%")
    try:
        body = computation(name)
    except KeyError:
        return True
    params = {i.name: int(i.args_text) for i in body if i.opcode == "parameter"}
    used = {o for i in body for o in i.operands}
    root = [i for i in body if i.name not in used][-1]  # as HLO's ROOT: the last instruction no other uses
    returned = root.operands if root.opcode == "tuple" else [root.name]
    return not all(params.get(r, -1) >= len(params) // 2 for r in returned)


def io_bytes(ins: Instruction, entry: dict[str, Instruction], body: list[Instruction],
             root: "Instruction | None", computation: Callable[[str], list[Instruction]]) -> tuple[int, int]:
    """(bytes read, bytes written) by an ENTRY instruction (see the module docstring): `entry`
    the ENTRY computation's instructions by name, `body` and `root` the fused computation of a
    fusion (empty and None for any other instruction), `computation(name)` any computation's."""
    by_name = {i.name: i for i in body}
    results = (root.operands if root.opcode == "tuple" else [root.name]) if root is not None else []
    updates = [in_place_update(by_name[r], by_name, computation) if r in by_name else None for r in results]
    in_place = {p for u in updates if u is not None for p in u.params}
    need = demand(body, root) if root is not None else {}
    params = {int(i.args_text): i.name for i in body if i.opcode == "parameter"}

    read, seen = 0.0, set()
    for index, name in enumerate(ins.operands):
        if name in seen or name not in entry:
            continue
        seen.add(name)
        param = params.get(index)
        if param in in_place:
            continue  # its buffer is the result's, updated in place: read where the update says
        read += shape_bytes(entry[name].shapes) * (need.get(param, 1.0) if param is not None else 1.0)
    read += sum(u.read for u in updates if u is not None)

    shapes = ins.shapes
    if ins.opcode == "custom-call" and len(shapes) > 1 and shapes[-1][0] in ("int8", "uint8"):
        shapes = shapes[:-1]
    if not any(updates) or len(updates) != len(shapes):
        return round(read), shape_bytes(shapes)
    return round(read), sum(u.written if u is not None else shape_bytes([s]) for u, s in zip(updates, shapes))
