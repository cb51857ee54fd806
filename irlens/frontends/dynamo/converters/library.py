"""Calls read whole by their schema: the ops declared from one ATen overload
(`irlens.core.ops.core.from_aten`; torch.cholesky resolves to one) and the functional collectives."""
from __future__ import annotations



from irlens.core import ops
from irlens.frontends.dynamo.call import BY_OP, Call, Unmapped, attr_value, converts, operand
from irlens.core.ir import Node


def library_call(c: Call) -> list[Node]:
    """An op declared from one ATen overload (irlens.core.ops.core.from_aten): its tensors the operands
    and its other arguments the attrs, by schema name; another overload of it is expanded."""
    decl = ops.OPS[c.op]
    if c.node.target is not decl.aten:
        raise Unmapped(f"{c.node.target} is not {decl.aten}")
    inputs, attrs = [], {}
    for a in c.schema.arguments:
        v = c.arg(a.name)
        if a.name in decl.attrs:
            attrs[a.name] = attr_value(c.value(v))
        elif isinstance(v, (list, tuple)):
            inputs.extend(c.value(t) for t in v)
        else:
            inputs.append(c.value(v))
    return c.one(inputs, attrs)


for _name, _op in ops.OPS.items():
    if _op.aten is not None:
        BY_OP[_name] = library_call


@converts("cholesky")
def _cholesky(c: Call) -> list[Node]:
    """torch.cholesky (deprecated): linalg_cholesky_ex's factor, errors unchecked."""
    if c.schema is not None and c.node.target is ops.OPS["cholesky"].aten:
        return library_call(c)
    return c.one([operand(c, "self", 0)], {"upper": bool(c.arg("upper", 1, False)), "check_errors": False})


@converts(ops_=("all_gather", "reduce_scatter", "all_reduce", "all_to_all", "wait"))
def _collective(c: Call) -> list[Node]:
    """The tensor is the input; group, sizes and reduce op are attrs (by schema name)."""
    args, _ = c.read_all()
    first = next(iter(c.named)) if c.named else None
    tensor = c.named[first] if first else args[0]
    attrs = {k: attr_value(c.value(v)) for k, v in c.named.items() if k != first}
    return c.one([c.value(tensor)], attrs)
