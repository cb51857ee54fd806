"""What a jaxpr handler reads of one equation (`Eqn`), the registry of handlers (`HANDLERS`:
primitive -> (handler, the params it reads); `register`), and the small readers handlers share."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from irlens.core.ir import Arg, TensorMeta
from irlens.frontends.jax.xla.forms import Emitter


def matmul_attrs(lhs_rank: int, rhs_rank: int, lhs_contract, rhs_contract, lhs_batch, rhs_batch) -> dict:
    """`contract`/`batch` attrs of a dot_general, empty when it is a plain a[..,m,k] @ b[..,k,n]."""
    lc, rc, lb, rb = (tuple(int(d) for d in dims) for dims in (lhs_contract, rhs_contract, lhs_batch, rhs_batch))
    plain = (
        lhs_rank >= 2 and rhs_rank == lhs_rank
        and lc == (lhs_rank - 1,) and rc == (rhs_rank - 2,)
        and lb == rb == tuple(range(lhs_rank - 2))
    )
    return {} if plain else {"contract": [list(lc), list(rc)], "batch": [list(lb), list(rb)]}


def ints(v) -> list[int]:
    return [int(d) for d in v]


def dim_tuple(v) -> tuple[int, ...]:
    return tuple(int(d) for d in v)


def scalar_of(val) -> Arg:
    """A literal or scalar constant as a plain Python bool/int/float (jax has typed wrappers)."""
    import numpy as np

    return np.asarray(val).item()


def dtype_kind(dtype: str) -> int:
    """0 bool, 1 integer, 2 floating (BY_DTYPE's columns)."""
    return 0 if dtype == "bool" else 1 if dtype.startswith(("int", "uint")) else 2


@dataclass
class Eqn:
    """What a handler reads of one equation."""

    prim: str
    params: dict
    inputs: list[Arg]  # value names or literals
    metas: list[TensorMeta]  # per input: its shape and dtype (literals too)
    outs: list[TensorMeta]
    iotas: dict[str, int]  # value name -> the dim an iota counts along (argsort's second operand)
    # (role, closed jaxpr, graph inputs, the inputs its invars take, output metas) -> a closed graph
    subgraph: Callable | None = None
    dropped: frozenset = frozenset()  # the outputs nothing in the jaxpr reads (`_`, or a var no equation reads)

    def one(self, e: Emitter, op: str, inputs: list[Arg] | None = None, **attrs) -> None:
        e.node(op, self.inputs if inputs is None else inputs, self.outs, final=True, **attrs)


# primitive -> (handler, the params it reads)
HANDLERS: dict[str, tuple[Callable[[Emitter, Eqn], None], frozenset]] = {}


def register(prims, handler, params=()):
    for prim in ([prims] if isinstance(prims, str) else prims):
        HANDLERS[prim] = (handler, frozenset(params))
