"""A jaxpr as plain JAX source: one `lax.<primitive>_p.bind(...)` per equation, in order.

A standalone file cannot import the workload's twin (it lives in irlens), and `jax.export`'s
serialized artifacts need the `flatbuffers` package, which JAX does not depend on. So the file
gets the jaxpr itself written out: every equation binds its primitive with the parameters it
was traced with, so jitting the function gives XLA the program the xla backend compiled.
A nested `jit` stays a nested `jax.jit` of a function named as it was (XLA rounds differently
across a call boundary than inside one fusion: inlined, a bf16 result can skip its rounding);
custom derivative rules are inlined (their bodies are what runs).

A primitive is named by its public `jax.lax` name; `add_any` (the sum of two cotangents) binds
`lax.add_p`, its meaning on arrays. A parameter is written as source where its type allows
(numbers, tuples, dtypes, lax's enums and dimension-number tuples); any other primitive or
parameter raises `NotExpressible`, naming it, rather than writing a file that means something else.
A sharding over a mesh without axes (one device) is written as None, which means the same.
"""
from __future__ import annotations

import enum
import math
from typing import Any

NESTED_JIT = {"pjit", "jit"}
INLINED = {"closed_call", "core_call", "custom_jvp_call", "custom_vjp_call", "custom_vjp_call_jaxpr", "remat",
           "checkpoint"}
EQUIVALENT = {"add_any": "add_p"}  # same meaning on arrays, public name


class NotExpressible(RuntimeError):
    """A jaxpr holds something this writer cannot put in source form."""


def _public_primitives() -> dict[int, str]:
    from jax import lax

    return {id(getattr(lax, name)): name for name in dir(lax) if name.endswith("_p")}


def jaxpr_source(closed, name: str, arg_names: list[str]) -> str:
    """`def name(*args)` computing `closed` (a ClosedJaxpr) on its flat arguments; returns a tuple."""
    writer = _Writer()
    args = [writer.fresh("a") for _ in closed.jaxpr.invars]
    consts = [writer.literal(c) for c in closed.consts]
    env = dict(zip(closed.jaxpr.constvars, consts)) | dict(zip(closed.jaxpr.invars, args))
    outs = writer.body(closed.jaxpr, env)
    head = [f"def {name}({', '.join(args)}):",
            "    # arguments: " + ", ".join(f"{a}={n}" for a, n in zip(args, arg_names))]
    return "\n".join(head + [f"    {line}" for line in writer.lines] + [f"    return ({''.join(o + ', ' for o in outs)})"]) + "\n"


class _Writer:
    def __init__(self):
        self.lines: list[str] = []
        self.count = 0
        self.names = _public_primitives()

    def fresh(self, prefix: str = "v") -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def body(self, jaxpr, env: dict) -> list[str]:
        from jax._src import core

        def read(v):
            return self.literal(v.val, v.aval.dtype) if isinstance(v, core.Literal) else env[v]

        for eqn in jaxpr.eqns:
            args = [read(v) for v in eqn.invars]
            inner = _inner_jaxpr(eqn)
            if eqn.primitive.name in NESTED_JIT:
                results = self.nested_jit(eqn, inner, args)
            elif inner is not None:
                sub_env = dict(zip(inner.jaxpr.constvars, (self.literal(c) for c in inner.consts)))
                sub_env.update(zip(inner.jaxpr.invars, args[len(args) - len(inner.jaxpr.invars):]))
                results = self.body(inner.jaxpr, sub_env)
            else:
                results = self.bind(eqn, args)
            env.update(zip(eqn.outvars, results))
        return [read(v) for v in jaxpr.outvars]

    def bind(self, eqn, args: list[str]) -> list[str]:
        prim = eqn.primitive
        ref = EQUIVALENT.get(prim.name) or self.names.get(id(prim))
        if ref is None:
            raise NotExpressible(f"primitive {prim.name!r} has no public jax.lax name")
        params = ", ".join(f"{k}={self.param(prim.name, k, v)}" for k, v in eqn.params.items())
        call = f"lax.{ref}.bind({', '.join(args)}{', ' if args and params else ''}{params})"
        outs = [self.fresh() for _ in eqn.outvars]
        if prim.multiple_results:
            self.lines.append(f"{', '.join(outs)}{',' if len(outs) == 1 else ''} = {call}")
        else:
            self.lines.append(f"{outs[0]} = {call}")
        return outs

    def literal(self, value, dtype=None) -> str:
        import numpy as np

        array = np.asarray(value)
        dtype = str(dtype or array.dtype)
        if array.ndim == 0:
            return f"jnp.asarray({_number(array.item())}, dtype=jnp.dtype({dtype!r}))"
        name = self.fresh("const")
        data = array.astype(np.float32) if dtype == "bfloat16" else array
        self.lines.append(f"{name} = jnp.asarray(np.array({_number_list(data.tolist())}), dtype=jnp.dtype({dtype!r}))")
        return name

    def param(self, prim: str, key: str, value: Any) -> str:
        import numpy as np
        from jax import lax
        from jax._src import core

        if isinstance(value, np.generic) and not isinstance(value, np.datetime64):
            value = value.item()  # numpy's scalars (an int64 dimension) as Python's
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            return _number(value)
        if _unsharded(value):
            return "None"
        if isinstance(value, np.dtype):
            return f"jnp.dtype({str(value)!r})"
        if isinstance(value, enum.Enum):
            cls = type(value)
            if getattr(lax, cls.__name__, None) is cls:
                return f"lax.{cls.__name__}.{value.name}"
        elif isinstance(value, tuple) and hasattr(value, "_fields"):  # lax's dimension-number tuples
            cls = type(value)
            if getattr(lax, cls.__name__, None) is cls:
                fields = ", ".join(f"{f}={self.param(prim, key, getattr(value, f))}" for f in value._fields)
                return f"lax.{cls.__name__}({fields})"
        elif isinstance(value, (tuple, list)):
            items = [self.param(prim, key, v) for v in value]
            inner = ", ".join(items) + ("," if len(items) == 1 and isinstance(value, tuple) else "")
            return f"({inner})" if isinstance(value, tuple) else f"[{inner}]"
        elif isinstance(value, core.Jaxpr):  # a combiner (scatter-add's update_jaxpr): made again from its source
            return self.jaxpr_param(value)
        raise NotExpressible(f"{prim}: parameter {key}={value!r} ({type(value).__name__}) has no source form")

    def nested_jit(self, eqn, inner, args: list[str]) -> list[str]:
        """`jax.jit` of the nested jaxpr written as a function of its own name (inline and
        keep_unused as traced; shardings, layouts and donation do not change one device's results)."""
        if eqn.params.get("compiler_options_kvs"):
            raise NotExpressible(f"a nested jit with compiler options {eqn.params['compiler_options_kvs']}")
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in str(eqn.params.get("name", "jitted")))
        name = f"{name}_{self.fresh('')}"
        sub = _Writer()
        sub.count = self.count
        params = [sub.fresh("a") for _ in inner.jaxpr.invars]
        env = dict(zip(inner.jaxpr.constvars, (sub.literal(c) for c in inner.consts))) | dict(zip(inner.jaxpr.invars, params))
        outs = sub.body(inner.jaxpr, env)
        self.count = sub.count
        self.lines.append(f"def {name}({', '.join(params)}):")
        self.lines += [f"    {line}" for line in sub.lines] + [f"    return ({''.join(o + ', ' for o in outs)})"]
        options = ", ".join(f"{k}={eqn.params[k]!r}" for k in ("inline", "keep_unused") if k in eqn.params)
        results = [self.fresh() for _ in eqn.outvars]
        self.lines.append(f"{', '.join(results)}{',' if len(results) == 1 else ''} = "
                          f"jax.jit({name}{', ' if options else ''}{options})({', '.join(args)})")
        return results

    def jaxpr_param(self, jaxpr) -> str:
        if jaxpr.constvars:
            raise NotExpressible("a jaxpr-valued parameter with constants")
        name = self.fresh("combiner")
        inner = _Writer()
        inner.count = self.count
        args = [inner.fresh("a") for _ in jaxpr.invars]
        outs = inner.body(jaxpr, dict(zip(jaxpr.invars, args)))
        self.count = inner.count
        self.lines.append(f"def {name}({', '.join(args)}):")
        self.lines += [f"    {line}" for line in inner.lines] + [f"    return ({''.join(o + ', ' for o in outs)})"]
        specs = ", ".join(f"jax.ShapeDtypeStruct({tuple(v.aval.shape)}, jnp.dtype({str(v.aval.dtype)!r}))"
                          for v in jaxpr.invars)
        return f"jax.make_jaxpr({name})({specs}).jaxpr"


def _inner_jaxpr(eqn):
    """The closed jaxpr a nested or inlined call runs, or None for a primitive to bind."""
    if eqn.primitive.name not in INLINED | NESTED_JIT:
        return None
    from jax._src import core

    for key in ("jaxpr", "call_jaxpr", "fun_jaxpr"):
        inner = eqn.params.get(key)
        if isinstance(inner, core.ClosedJaxpr):
            return inner
        if isinstance(inner, core.Jaxpr):
            return core.ClosedJaxpr(inner, ())
    raise NotExpressible(f"{eqn.primitive.name}: no inner jaxpr among its parameters {sorted(eqn.params)}")


def _number(x) -> str:
    if isinstance(x, float) and not math.isfinite(x):
        return f"float({str(x)!r})"
    return repr(x)


def _number_list(x) -> str:
    return "[" + ", ".join(_number_list(v) for v in x) + "]" if isinstance(x, list) else _number(x)


def _unsharded(value) -> bool:
    """A sharding over a mesh without axes (what tracing outside any mesh records on some
    primitives): one device, unsharded, which the primitives also take as None."""
    mesh = getattr(value, "mesh", None)
    return type(value).__name__ == "NamedSharding" and mesh is not None and not tuple(getattr(mesh, "axis_names", ()))


