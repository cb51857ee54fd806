"""Control flow: ops that run graphs of their own (`Node.subgraphs`), as lax's while_loop and
switch do.

`while(*init)` runs `cond` and `body`, two closed graphs over the loop's carried values (the
node's operands, in order): `body` maps them to their next values (same count, shapes and
dtypes), `cond` to one bool scalar; the loop runs `body` while `cond` holds and gives the last
values. Values a frontend passes alongside the carry (a jaxpr's consts) are carried too, the body
returning them unchanged, as XLA's while does. Operands are values (a literal one is made a
`full` first): the carry is tensors.

`cond(index, *operands)` runs one of its `branch0`, `branch1`, ... graphs, each over all the
operands (a branch may leave some unread: XLA's conditional gives each branch its own), picked
by an integer index; a bool predicate is the index 0 (false) or 1 (true), as jax writes lax.cond.
"""
from __future__ import annotations

from irlens.core.ops.core import OTHER, declare, lowering, meaning

while_ = declare("while", OTHER, "*init", outputs="*out", subgraphs="cond body",
                 doc="body applied to the carry while cond holds (lax.while_loop)")


@meaning(while_)
def _while(a, *init):
    carry = list(init)
    while bool(a["cond"](*carry)[0]):
        carry = list(a["body"](*carry))
    return tuple(carry)


@lowering(while_, "jax")
def _while_jax(a, *init):
    from jax import lax

    return lax.while_loop(lambda c: a["cond"](*c)[0], lambda c: tuple(a["body"](*c)), tuple(init))


cond = declare("cond", OTHER, "index *operands", outputs="*out", subgraphs="*branch",
               doc="branch<index> applied to the operands (lax.switch); an index out of range takes the "
                   "last branch, as XLA's case does")


def _branches(a) -> list:
    return [a[f"branch{k}"] for k in range(sum(1 for key in a if key.startswith("branch")))]


@meaning(cond)
def _cond(a, index, *operands):
    branches = _branches(a)
    k = int(index)
    return tuple(branches[k if 0 <= k < len(branches) else -1](*operands))


@lowering(cond, "jax")
def _cond_jax(a, index, *operands):
    from jax import lax

    branches = _branches(a)
    last = len(branches) - 1
    index = lax.select((index < 0) | (index > last), lax.full_like(index, last), index)  # lax.switch clamps
    return lax.switch(index, [lambda *xs, b=b: tuple(b(*xs)) for b in branches], *operands)
