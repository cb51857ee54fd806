"""Bodies that XLA's GPU (and CPU) passes rewrite, read back to what they compute.

- Float normalization (FloatNormalization with the GPU's float support) runs a bf16 / f16 op that
  the GPU does not support in that type (a reduce-window, a reduce, a sort) in f32; on the CPU a
  bf16 scatter too, its combiner's result rounded through bf16 (`unrounding_scatter`). Its operands
  are converted up, and its body is a clone that converts each float parameter down, computes in
  the narrow type and converts the result up. `unrounded` gives that body without the round
  trips, plus the narrow type. The op is then the narrow op on its operands converted down,
  with the result converted up. This is exact for any f32 operand because the conversion up is
  exact: down(up(v)) = v.
- The stable-sort expander makes a sort stable with a tie-break on an iota operand:
  cmp(a, b) == cmp(b, a) ? i_a < i_b : cmp(a, b). `stable_tie_break` finds cmp, and the operand
  that the tie-break reads.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from irlens.core.ir import Arg, TensorMeta
from irlens.frontends.jax.xla.forms import Emitter
from irlens.frontends.jax.xla.op import Body, BodyOp, XlaOp

# float type -> the wider ones that hold each of its values exactly (float normalization rounds
# through the narrow ones)
WIDENS = {"bfloat16": ("float32", "float64"), "float16": ("float32", "float64"), "float32": ("float64",)}


@dataclass(frozen=True)
class Unrounded:
    body: Body  # what the body computes in `dtype`, on its parameters converted down
    dtype: str  # the narrow float type


def unrounded(body: Body, wide: str, floats: set[int]) -> Unrounded | None:
    """The body of an op whose `floats` parameters (indices) are `wide` floats and whose body
    rounds them down: each of them it reads is read only through a convert to one narrow type,
    and each root of that type is converted back to `wide`. None for any other body."""
    down = {f"o{i}": op.operands[0] for i, op in enumerate(body.ops)
            if op.opcode == "convert" and op.operands[0].startswith("p")}
    narrow = {body.ops[int(r[1:])].dtype for r in down}
    if not down or not {int(p[1:]) for p in down.values()} <= floats or len(narrow) != 1 or \
            wide not in WIDENS.get(next(iter(narrow)) or "", ()):
        return None
    (dtype,) = narrow
    up = {}  # a root converted back -> the narrow value it converts
    for ref in body.roots:
        op = _op(body, ref)
        if op and op.opcode == "convert" and op.dtype == wide and getattr(_op(body, op.operands[0]), "dtype",
                                                                          None) == dtype:
            up[ref] = op.operands[0]
    kept = [(f"o{i}", op) for i, op in enumerate(body.ops) if f"o{i}" not in down and f"o{i}" not in up]
    reads = [r for _, op in kept for r in op.operands] + [r for r in body.roots if r not in up]
    if any(r in up or r.startswith("p") and int(r[1:]) in floats for r in reads):
        return None  # a wide parameter read as it is, or a value converted back read inside
    if any(getattr(_op(body, r), "dtype", None) == dtype for r in body.roots if r not in up):
        return None  # a narrow result left narrow
    refs = dict(down)
    ops = _without(body, set(down) | set(up), refs)
    roots = tuple(refs.get(up.get(r, r), up.get(r, r)) for r in body.roots)
    return Unrounded(Body(ops, roots, body.constants), dtype)


def rounded_results(body: Body, wide: str) -> Unrounded | None:
    """The other form float normalization's clone takes once simplified: the body computes in
    `wide` and rounds each float result through a narrow type, up(down(v)). The body without
    those round trips, and the narrow type; None for any other body."""
    trips = {}
    for ref in body.roots:
        op = _op(body, ref)
        inner = _op(body, op.operands[0]) if op and op.opcode == "convert" else None
        if inner and inner.opcode == "convert" and op.dtype == wide and op.dtype in WIDENS.get(inner.dtype or "", ()):
            trips[ref] = (inner.operands[0], inner.dtype)
    if not trips or len({d for _, d in trips.values()}) != 1:
        return None
    inside = {r for ref in trips for r in (ref, _op(body, ref).operands[0])}
    reads = [r for i, op in enumerate(body.ops) if f"o{i}" not in inside for r in op.operands]
    if any(r in inside for r in reads + [r for r in body.roots if r not in trips]):
        return None  # a round trip read inside the body
    refs = {}
    ops = _without(body, inside, refs)
    roots = tuple(refs.get(trips[r][0], trips[r][0]) if r in trips else refs.get(r, r) for r in body.roots)
    return Unrounded(Body(ops, roots, body.constants), next(iter(trips.values()))[1])


def _without(body: Body, dropped: set[str], refs: dict[str, str]) -> tuple[BodyOp, ...]:
    """The body's ops but the `dropped` ones, renumbered; `refs` (old ref -> new, seeded with what
    each dropped op stands for) gains the kept ones' new refs."""
    ops = []
    for i, op in enumerate(body.ops):
        if f"o{i}" not in dropped:
            refs[f"o{i}"] = f"o{len(ops)}"
            ops.append(BodyOp(op.opcode, op.direction, tuple(refs.get(r, r) for r in op.operands), op.dtype))
    return tuple(ops)


# ops that give one of their float operands (or none): on values a narrow type holds, what they
# give it holds too, so rounding through it changes nothing
_SELECTING = frozenset({"compare", "select", "and", "or", "not", "maximum", "minimum"})


def unrounding(handler):
    """A reduce / reduce-window `handler` that first reads a body rounding through a narrow
    float, as float normalization leaves it: the parameters rounded (`unrounded`), the same op in
    the narrow type: on the operands converted down, its float results converted back up; or the
    results rounded (`rounded_results`), exact as the op itself, its results rounded, for one
    max / min (rounding is monotone: max(r(a), r(b)) = r(max(a, b))), and as the op itself for a
    selecting body on values the narrow type holds (converted up from it)."""
    def read(e: Emitter, x: XlaOp) -> None:
        body, n, wide = x.bodies.get("to_apply"), len(x.outs), x.metas[0].dtype
        rounded = unrounded(body, wide, {k + j * n for k in range(n) if x.metas[k].dtype == wide
                                         for j in (0, 1)}) if body else None
        if rounded is None:
            _results_rounded(handler, e, x)
            return
        _in_narrow(handler, e, x, rounded)
    return read


def _in_narrow(handler, e: Emitter, x: XlaOp, rounded: Unrounded) -> None:
    """`handler` on `x` in the narrow type, applying the unrounded body: its wide operands
    converted down, its wide results converted back up."""
    wide, dtype = x.metas[0].dtype, rounded.dtype
    inputs = [narrowed(e, v, dtype) if m.dtype == wide else v for v, m in zip(x.inputs, x.metas)]
    metas = [(e.meta(v) if isinstance(v, str) else replace(m, name="", dtype=dtype)) if m.dtype == wide else m
             for v, m in zip(inputs, x.metas)]
    # the handler reads its results' metadata (an identity, a window's shape) before it emits them:
    # they are the op's own, in the narrow type, under fresh names
    outs = [e.fresh(o.shape, dtype) if o.dtype == wide else o for o in x.outs]
    handler(e, replace(x, inputs=inputs, metas=metas, outs=outs, bodies={**x.bodies, "to_apply": rounded.body}))
    for narrow, out in zip(outs, x.outs):
        if narrow is not out:
            e.emit("convert", [narrow.name], out, dtype=out.dtype)


def _narrow_held(x: XlaOp, dtype: str) -> bool:
    """Whether each wide input of `x` holds only values of the narrow `dtype`: converted up from it
    (`widened`), or a literal it holds."""
    wide = x.metas[0].dtype
    return all(x.widened.get(v) == dtype if isinstance(v, str) else holds(dtype, v)
               for v, m in zip(x.inputs, x.metas) if m.dtype == wide)


def _results_rounded(handler, e: Emitter, x: XlaOp) -> None:
    body, wide = x.bodies.get("to_apply"), x.metas[0].dtype
    rounded = rounded_results(body, wide) if body else None
    if rounded is None:
        handler(e, x)
        return
    exact = _narrow_held(x, rounded.dtype)
    unrounded_x = replace(x, bodies={**x.bodies, "to_apply": rounded.body})
    if exact and all(op.opcode in _SELECTING for op in rounded.body.ops):
        handler(e, unrounded_x)
    elif len(x.outs) == 1 and rounded.body.binary() in ("maximum", "minimum"):
        (out,) = x.outs
        value = e.fresh(out.shape, out.dtype)  # the op's own result under a fresh name, read as `_in_narrow` reads it
        handler(e, replace(unrounded_x, outs=[value]))
        low = e.emit("convert", [value.name], dtype=rounded.dtype)
        e.emit("convert", [low], out, dtype=out.dtype)
    else:
        handler(e, x)


# combiners whose wide result, rounded to a narrow type holding both operands, is the narrow op's own
# correctly rounded result: every pair in WIDENS has the 2p + 2 bits of precision that make rounding
# twice (to wide, then narrow) round once
_ROUNDS_ONCE = frozenset({"add", "multiply", "maximum", "minimum"})


def unrounding_scatter(handler):
    """A scatter `handler` that first reads a combiner computing in the wide type and rounding its
    result through a narrow one (`rounded_results`: XLA's CPU float normalization of a bf16
    scatter-add), on an operand and updates converted up from that narrow type: the narrow scatter
    on them (each combination rounded once, as the narrow op rounds it), its result converted up.
    Any other wide input leaves the scatter to `handler` as it is (unmapped)."""
    def read(e: Emitter, x: XlaOp) -> None:
        body, wide = x.bodies.get("to_apply"), x.metas[0].dtype
        rounded = rounded_results(body, wide) if body and len(x.outs) == 1 else None
        if rounded is None or rounded.body.binary() not in _ROUNDS_ONCE or not _narrow_held(x, rounded.dtype):
            handler(e, x)  # the operand's and the updates' values (the wide inputs; not the indices) decide
            return
        _in_narrow(handler, e, x, rounded)
    return read


def sort_params(metas: list[TensorMeta], wide: str) -> set[int]:
    """A comparator's parameters of the `wide` operands: operand k's elements are 2k and 2k + 1."""
    return {2 * k + j for k, m in enumerate(metas) if m.dtype == wide for j in (0, 1)}


def holds(dtype: str, value: float) -> bool:
    """Whether the float type `dtype` holds the literal `value` exactly."""
    return narrowed(None, value, dtype) == value


def narrowed(e: Emitter, value: Arg, dtype: str) -> Arg:
    """An operand converted down to `dtype` (a literal: rounded as XLA rounds it, to nearest even)."""
    if isinstance(value, str):
        return e.emit("convert", [value], dtype=dtype)
    import torch

    from irlens.core.ops._torch import torch_dtype

    return torch.tensor(float(value), dtype=torch.float64).to(torch_dtype(dtype)).double().item()


def stable_tie_break(body: Body, operands: int) -> tuple[str, int] | None:
    """A comparator the stable-sort expander wrote, select(cmp(a, b) == cmp(b, a), i_a < i_b,
    cmp(a, b)): (cmp's ref, the operand k whose elements i_a, i_b are parameters 2k, 2k + 1)."""
    root = _op(body, body.returns() or "")
    if root is None or root.opcode != "select":
        return None
    same, tie, cmp = root.operands
    same_op, tie_op = _op(body, same), _op(body, tie)
    swap = {f"p{i}": f"p{i ^ 1}" for i in range(2 * operands)}
    if not (same_op and same_op.opcode == "compare" and same_op.direction == "EQ" and tie_op
            and tie_op.opcode == "compare" and tie_op.direction == "LT" and cmp in same_op.operands):
        return None
    swapped = [r for r in same_op.operands if r != cmp] or [cmp]
    lhs, rhs = tie_op.operands
    if body.tree(swapped[0]) != body.tree(cmp, swap) or not (lhs.startswith("p") and rhs.startswith("p")):
        return None
    k = int(lhs[1:])
    return (cmp, k // 2) if k % 2 == 0 and int(rhs[1:]) == k + 1 else None


def _op(body: Body, ref: str) -> BodyOp | None:
    return body.ops[int(ref[1:])] if ref.startswith("o") else None
