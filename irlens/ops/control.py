"""Control flow: ops that run graphs of their own (`Node.subgraphs`), as lax's while_loop does.

`while(*init)` runs `cond` and `body`, two closed graphs over the loop's carried values (the
node's operands, in order): `body` maps them to their next values (same count, shapes and
dtypes), `cond` to one bool scalar; the loop runs `body` while `cond` holds and gives the last
values. Values a frontend passes alongside the carry (a jaxpr's consts) are carried too, the body
returning them unchanged, as XLA's while does. Operands are values (a literal one is made a
`full` first): the carry is tensors.
"""
from __future__ import annotations

from irlens.ops.core import OTHER, declare, lowering, meaning

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
