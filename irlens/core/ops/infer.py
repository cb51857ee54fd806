"""What a node's outputs are (shape, dtype), inferred from its inputs' and its attributes: the
rule every op has, so that an adapter need not compute an output by hand and a recorded one can
be checked (`irlens.conformance.metadata`).

One generic rule, the meta rule: the op's meaning (the torch implementation the interpreter and
Inductor's lowering run, dtype-preserving) evaluated on fake tensors in the graph's own dtypes,
so the shapes and dtypes are torch's own for that computation. Explicit rules stand only where
that cannot work:
- control flow (`while`, `cond`): its meaning calls its subgraphs and reads a value (the loop's
  condition, the branch index); a while loop gives its carry's metas, a conditional its first
  branch's outputs (every branch gives the same);
- collectives: no meaning (their values depend on the other ranks); their shape rules are the
  functional collectives' own;
- `betainc`: its meaning leaves torch for scipy's values; an elementwise op's rule (operands
  broadcast, dtypes promoted) is what it computes;
- `dynamic_slice`, `dynamic_update_slice`: their meanings clamp the starts, reading their values;
  the shapes are the slice's sizes and the operand's.
Not inferred (`NotInferable`, saying why; a check lists such nodes apart):
- an op whose dtype comes from a literal (JAX's `1.0 / 512.0`, a loss's `where(keep, 1.0, 0.0)`,
  an integer tensor times 0.5): a literal has no dtype in the common view, the frontend's
  context gives it one (torch's default dtype, JAX's weak type, a float64 program's float64);
- an op whose meaning reads values (a data-dependent shape, a uint64 range check);
- outputs past those a meaning computes (a fused attention kernel's RNG state, which no
  canonical op reads): `infer` returns the ones it knows.
Inputs torch refuses for the op (shapes that do not contract, a dim out of range) raise `Misfit`:
the node is wrong, not the rule.
"""
from __future__ import annotations

import functools
import logging
from typing import Callable, Mapping, Sequence

import torch

from irlens.core.ops._torch import torch_dtype
from irlens.core.ops.core import CREATION, OPS, UNKNOWN_PREFIX
from irlens.logs import quiet_logger

Meta = tuple[tuple[int, ...], str]  # (shape, canonical dtype name)

_DTYPE_NAMES = {}  # torch dtype -> canonical name, filled from the one table on first use


class NotInferable(ValueError):
    """The op's outputs cannot be inferred from metadata alone; the message says why."""


class Misfit(ValueError):
    """The node's inputs do not fit its op (torch refuses them: a swapped operand, a wrong
    attribute); the message is torch's reason."""


def dtype_name(dtype: torch.dtype) -> str:
    if not _DTYPE_NAMES:
        from irlens.core.dtypes import TORCH_DTYPES

        _DTYPE_NAMES.update({v: k for k, v in TORCH_DTYPES.items()})
    return _DTYPE_NAMES[dtype]


def infer(op: str, inputs: Sequence, metas: Mapping[str, Meta], attrs: dict | None = None,
          subgraphs: Mapping | None = None) -> list[Meta]:
    """The outputs (shape, dtype) of a node `op(inputs, attrs)`: `inputs` are value names (looked
    up in `metas`), literals or None; `subgraphs` a control-flow node's graphs by role."""
    if op.startswith(UNKNOWN_PREFIX) or op not in OPS:
        raise NotInferable(f"{op!r} is not a canonical op")
    decl = OPS[op]
    missing = [a for a in inputs if isinstance(a, str) and a not in metas]
    if missing:
        raise NotInferable(f"no metadata for input {missing[0]!r}")
    args = [(tuple(metas[a][0]), metas[a][1]) if isinstance(a, str) else a for a in inputs]
    attrs = decl.attrs_of(dict(attrs or {}))
    rule = RULES.get(op)
    if rule is not None:
        return rule(args, attrs, subgraphs or {})
    if decl.meaning is None:
        raise NotInferable(f"{op} has no meaning and no explicit rule")
    if decl.category != CREATION and _dtype_from_literal(args):
        raise NotInferable(f"{op}: its dtype comes from a literal, which has none in the common view")
    return _meta_rule(decl.meaning, args, attrs, op)


_MEMO: dict = {}  # (op, args, attrs) -> outputs: one fake-tensor evaluation per distinct node (a few ms each)
_MEMO_SIZE = 100_000


def _meta_rule(meaning: Callable, args: list, attrs: dict, op: str) -> list[Meta]:
    try:
        key = (op, _frozen(args), _frozen(attrs))
        hash(key)
    except TypeError:  # an attribute with no value form (a callable): evaluated every time
        return _evaluate(meaning, args, attrs, op)
    if key not in _MEMO:
        if len(_MEMO) >= _MEMO_SIZE:
            _MEMO.clear()
        _MEMO[key] = _evaluate(meaning, args, attrs, op)
    return list(_MEMO[key])


def _frozen(value):
    """`value` with its lists and dicts as tuples, so that it keys the memo (types kept: 1 and 1.0
    and True give different dtypes)."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    return (type(value).__name__, value)


def _evaluate(meaning: Callable, args: list, attrs: dict, op: str) -> list[Meta]:
    from torch._subclasses.fake_tensor import FakeTensorMode

    # fake tensors log a traceback for every refused op before raising; the raise is the answer here
    with FakeTensorMode(allow_non_fake_inputs=True), quiet_logger("torch._subclasses.fake_tensor", logging.CRITICAL):
        values = [torch.empty(a[0], dtype=torch_dtype(a[1])) if _is_meta(a) else a for a in args]
        try:
            result = meaning(attrs, *values)
        except _value_reads() as e:
            raise NotInferable(f"{op}: its meaning reads values ({type(e).__name__})") from e
        except Exception as e:  # noqa: BLE001  (torch's refusal of these inputs is the finding)
            raise Misfit(f"{op}: {type(e).__name__}: {_first_line(e)}") from e
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    return [(tuple(int(d) for d in r.shape), dtype_name(r.dtype)) for r in results if isinstance(r, torch.Tensor)]


def _dtype_from_literal(args: list) -> bool:
    """Whether a literal, not a tensor, sets the result's kind: literals only, or a float literal
    beside no floating tensor."""
    tensors = [torch_dtype(a[1]) for a in args if _is_meta(a)]
    literals = [a for a in args if not _is_meta(a) and a is not None]
    if not tensors:
        return bool(literals)
    return any(isinstance(v, float) for v in literals) and not any(d.is_floating_point or d.is_complex
                                                                   for d in tensors)


def _first_line(e: BaseException) -> str:
    return next((s.strip() for s in str(e).splitlines() if s.strip()), "")[:200]


def _value_reads() -> tuple[type, ...]:
    """What fake tensors raise where a meaning reads a value or runs an op without a meta kernel."""
    from torch._subclasses.fake_tensor import (DataDependentOutputException, DynamicOutputShapeException,
                                               UnsupportedOperatorException)
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return (DataDependentOutputException, DynamicOutputShapeException, UnsupportedOperatorException,
            GuardOnDataDependentSymNode)


def _is_meta(a) -> bool:
    return isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], str)


# --- explicit rules: (input metas or literals, attrs with defaults, subgraphs) -> output metas ---

def _graph_outputs(graph) -> list[Meta]:
    values = graph.values()
    return [(tuple(values[o].shape), values[o].dtype) for o in graph.outputs if isinstance(o, str)]


def _while(args, attrs, subgraphs) -> list[Meta]:
    return [a for a in args if _is_meta(a)]  # the carry keeps its shapes and dtypes


def _cond(args, attrs, subgraphs) -> list[Meta]:
    if "branch0" not in subgraphs:
        raise NotInferable("cond: no branch graph given")
    return _graph_outputs(subgraphs["branch0"])


def _same(args, attrs, subgraphs) -> list[Meta]:
    return [args[0]]


def _dim0(scale: Callable[[int, dict], int]) -> Callable:
    def rule(args, attrs, subgraphs) -> list[Meta]:
        (shape, dtype) = args[0]
        return [((scale(shape[0], attrs), *shape[1:]), dtype)]
    return rule


def _elementwise(args, attrs, subgraphs) -> list[Meta]:
    tensors = [a for a in args if _is_meta(a)]
    shape = torch.broadcast_shapes(*(a[0] for a in tensors))
    dtype = functools.reduce(torch.promote_types, (torch_dtype(a[1]) for a in tensors))
    return [(tuple(shape), dtype_name(dtype))]


def _dynamic_slice(args, attrs, subgraphs) -> list[Meta]:
    (shape, dtype), sizes = args[0], tuple(attrs["sizes"])
    if len(sizes) != len(shape) or len(args) - 1 != len(shape) or any(not 0 <= s <= d for s, d in zip(sizes, shape)):
        raise Misfit(f"dynamic_slice: sizes {list(sizes)} at {len(args) - 1} starts do not fit a shape {list(shape)}")
    return [(sizes, dtype)]


def _dynamic_update_slice(args, attrs, subgraphs) -> list[Meta]:
    shape, update = args[0][0], args[1]
    sizes = update[0] if _is_meta(update) else ()
    if len(sizes) != len(shape) or len(args) - 2 != len(shape) or any(s > d for s, d in zip(sizes, shape)):
        raise Misfit(f"dynamic_update_slice: an update of shape {list(sizes)} at {len(args) - 2} starts does not "
                     f"fit {list(shape)}")
    return [args[0]]


def _all_to_all(args, attrs, subgraphs) -> list[Meta]:
    (shape, dtype) = args[0]
    sizes = attrs.get("output_split_sizes")
    return [((sum(sizes), *shape[1:]) if sizes else shape, dtype)]


RULES: dict[str, Callable] = {
    "while": _while,
    "cond": _cond,
    "betainc": _elementwise,
    "dynamic_slice": _dynamic_slice,
    "dynamic_update_slice": _dynamic_update_slice,
    "all_gather": _dim0(lambda n, a: n * a["group_size"]),
    "reduce_scatter": _dim0(lambda n, a: n // a["group_size"]),
    "all_reduce": _same,
    "wait": _same,
    "all_to_all": _all_to_all,
}
