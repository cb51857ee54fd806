"""jaxpr -> common view: one node per equation, sub-jaxprs of call-like primitives inlined.

A jaxpr is already close to the primitive level (jax.nn.gelu traces to mul/tanh/...), so the
adapter mostly renames primitives and turns their params into the attrs conventions of
`irlens.ops`. Value names come from jaxpr's own pretty-printer names (`a`, `b`, ...), except
the graph inputs, which take the names the caller gives (parameter names, `input<i>`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from irlens.ir import UNKNOWN_PREFIX, Arg, Graph, Node, TensorMeta, canonical_dtype
from irlens.ops import check_vocabulary

# primitive name -> canonical op, for primitives whose params need no translation
# (or whose attrs `_ATTRS` below supplies).
PRIMITIVES: dict[str, str] = {
    "add": "add", "add_any": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg",
    "max": "maximum", "min": "minimum", "pow": "pow", "integer_pow": "pow", "square": "pow",
    "rem": "remainder", "atan2": "atan2",
    "exp": "exp", "exp2": "exp2", "log": "log", "log1p": "log1p", "expm1": "expm1", "tanh": "tanh",
    "logistic": "sigmoid", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "erf": "erf",
    "abs": "abs", "sign": "sign", "floor": "floor", "ceil": "ceil", "round": "round",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "and": "logical_and", "or": "logical_or", "not": "logical_not",
    "select_n": "where",
    "reduce_sum": "sum", "reduce_max": "amax", "reduce_min": "amin", "reduce_prod": "prod",
    "argmax": "argmax", "argmin": "argmin", "cumsum": "cumsum",
    "dot_general": "matmul",
    "broadcast_in_dim": "broadcast", "reshape": "reshape", "squeeze": "reshape", "expand_dims": "reshape",
    "transpose": "permute", "slice": "slice", "concatenate": "concat", "pad": "pad",
    "gather": "gather", "scatter-add": "scatter_add", "scatter_add": "scatter_add",
    "copy": "copy", "copy_p": "copy",
    # the identity in the forward; it only stops differentiation
    "stop_gradient": "copy",
    "convert_element_type": "convert", "iota": "iota",
}
check_vocabulary(PRIMITIVES)

# Call-like primitives whose body is inlined; value: the param holding the (closed) jaxpr.
CALLS: dict[str, tuple[str, ...]] = {
    "jit": ("jaxpr",), "pjit": ("jaxpr",), "closed_call": ("call_jaxpr",), "core_call": ("call_jaxpr",),
    "custom_jvp_call": ("call_jaxpr",), "custom_vjp_call": ("call_jaxpr", "fun_jaxpr"),
    "custom_vjp_call_jaxpr": ("fun_jaxpr",), "remat2": ("jaxpr",), "checkpoint": ("jaxpr",),
}


def _axes(eqn) -> dict:
    return {"dims": sorted(int(a) for a in eqn.params["axes"]), "keepdim": False}


def _matmul(eqn) -> dict:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = (len(v.aval.shape) for v in eqn.invars)
    nb = lhs - 2
    plain = (
        lhs >= 2 and rhs == lhs
        and tuple(lc) == (lhs - 1,) and tuple(rc) == (rhs - 2,)
        and tuple(lb) == tuple(rb) == tuple(range(nb))
    )
    if plain:
        return {}
    return {"contract": [list(map(int, lc)), list(map(int, rc))], "batch": [list(map(int, lb)), list(map(int, rb))]}


def _slice(eqn) -> dict:
    p = eqn.params
    start = [int(s) for s in p["start_indices"]]
    return {"start": start, "limit": [int(s) for s in p["limit_indices"]],
            "step": [int(s) for s in p["strides"]] if p.get("strides") else [1] * len(start)}


def _out_shape(eqn) -> dict:
    return {"shape": list(eqn.outvars[0].aval.shape)}


# primitive -> attrs builder (params -> irlens.ops conventions)
_ATTRS: dict[str, Callable[[Any], dict]] = {
    **{p: _axes for p in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "argmax", "argmin")},
    "cumsum": lambda e: {"dim": int(e.params["axis"]), "reverse": bool(e.params.get("reverse", False))},
    "dot_general": _matmul,
    "broadcast_in_dim": lambda e: {"shape": list(e.params["shape"]),
                                   "broadcast_dims": [int(d) for d in e.params["broadcast_dimensions"]]},
    "reshape": _out_shape, "squeeze": _out_shape, "expand_dims": _out_shape,
    "transpose": lambda e: {"perm": [int(d) for d in e.params["permutation"]]},
    "slice": _slice,
    "concatenate": lambda e: {"dim": int(e.params["dimension"])},
    "pad": lambda e: {"padding": [list(map(int, c)) for c in e.params["padding_config"]]},
    "convert_element_type": lambda e: {"dtype": canonical_dtype(e.params["new_dtype"])},
    "iota": lambda e: {"shape": list(e.params["shape"]), "dim": int(e.params["dimension"]),
                       "dtype": canonical_dtype(e.params["dtype"])},
    "gather": lambda e: {"dimension_numbers": str(e.params["dimension_numbers"]),
                         "slice_sizes": list(e.params["slice_sizes"])},
    "scatter-add": lambda e: {"dimension_numbers": str(e.params["dimension_numbers"])},
}


def _meta(name: str, aval) -> TensorMeta:
    return TensorMeta(name, tuple(int(d) for d in aval.shape), canonical_dtype(aval.dtype))


def _literal(lit) -> Arg:
    val = lit.val
    return val.item() if hasattr(val, "item") else val


@dataclass
class _Builder:
    """Walks a jaxpr (and the bodies it inlines), binding jaxpr vars to common-view values."""

    names: Any  # jax's JaxprPpContext: the var names jaxpr's printer uses
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)
    env: dict = field(default_factory=dict)  # jaxpr Var -> Arg

    def read(self, atom) -> Arg:
        from jax.extend.core import Literal

        if isinstance(atom, Literal):
            return _literal(atom)
        return self.env[atom]

    def bind_input(self, var, name: str) -> None:
        self.env[var] = name
        self.inputs.append(_meta(name, var.aval))

    def bind_consts(self, constvars, consts) -> None:
        """Scalar constants become literals; array constants graph inputs (`const<k>`)."""
        for var, val in zip(constvars, consts):
            if getattr(val, "shape", None) == ():
                self.env[var] = val.item() if hasattr(val, "item") else val
            else:
                self.bind_input(var, f"const{sum(t.name.startswith('const') for t in self.inputs)}")

    def walk(self, jaxpr, scope: str) -> None:
        for eqn in jaxpr.eqns:
            body = _call_body(eqn)
            if body is not None:
                self.inline(eqn, body, scope)
            elif eqn.primitive.name == "split":
                self.split(eqn, scope)
            else:
                self.emit(eqn, scope)

    def inline(self, eqn, body, scope: str) -> None:
        from jax.extend.core import ClosedJaxpr

        inner, consts = (body.jaxpr, body.consts) if isinstance(body, ClosedJaxpr) else (body, ())
        self.bind_consts(inner.constvars, consts)
        for var, atom in zip(inner.invars, eqn.invars):
            self.env[var] = self.read(atom)
        name = eqn.params.get("name") or getattr(getattr(inner, "debug_info", None), "func_name", "") or eqn.primitive.name
        self.walk(inner, f"{scope}/{name}" if scope else str(name))
        for outer, var in zip(eqn.outvars, inner.outvars):
            self.env[outer] = self.read(var)

    def outputs(self, outvars, node_id: str) -> list[TensorMeta]:
        from jax.extend.core import DropVar

        metas = []
        for i, var in enumerate(outvars):
            name = f"{node_id}_dropped{i}" if isinstance(var, DropVar) else var.pretty_print(self.names)
            self.env[var] = name
            metas.append(_meta(name, var.aval))
        return metas

    def emit(self, eqn, scope: str) -> None:
        prim = eqn.primitive.name
        node_id = f"e{len(self.nodes)}"
        inputs = [self.read(a) for a in eqn.invars]
        op = PRIMITIVES.get(prim, UNKNOWN_PREFIX + prim)
        if prim == "integer_pow":
            inputs.append(int(eqn.params["y"]))
        elif prim == "square":
            inputs.append(2)
        elif prim == "select_n":
            # select_n(pred, on_false, on_true) picks cases[pred]; only two cases make a `where`.
            if len(inputs) == 3:
                inputs = [inputs[0], inputs[2], inputs[1]]
            else:
                op = UNKNOWN_PREFIX + prim
        attrs = _ATTRS[prim](eqn) if prim in _ATTRS else {}
        self.nodes.append(Node(node_id, op, inputs, self.outputs(eqn.outvars, node_id), attrs, native=prim, scope=scope))

    def split(self, eqn, scope: str) -> None:
        """`split` (one input, several outputs) as one `slice` node per output."""
        axis = int(eqn.params["axis"])
        src = self.read(eqn.invars[0])
        shape = list(eqn.invars[0].aval.shape)
        offset = 0
        for var, size in zip(eqn.outvars, eqn.params["sizes"]):
            node_id = f"e{len(self.nodes)}"
            start, limit = [0] * len(shape), list(shape)
            start[axis], limit[axis] = offset, offset + int(size)
            offset += int(size)
            attrs = {"start": start, "limit": limit, "step": [1] * len(shape)}
            self.nodes.append(Node(node_id, "slice", [src], self.outputs([var], node_id), attrs,
                                   native="split", scope=scope))


def _call_body(eqn):
    for param in CALLS.get(eqn.primitive.name, ()):
        if eqn.params.get(param) is not None:
            return eqn.params[param]
    return None


def jaxpr_to_graph(
    closed_jaxpr,
    *,
    name: str,
    frontend: str = "jax",
    stage: str = "jax.jaxpr",
    level: str = "composite",
    input_names: list[str] | None = None,
) -> Graph:
    """The common view of a ClosedJaxpr. `input_names` name its invars in order (default: jaxpr's names)."""
    from jax._src.core import JaxprPpContext

    jaxpr = closed_jaxpr.jaxpr
    b = _Builder(JaxprPpContext())
    b.bind_consts(jaxpr.constvars, closed_jaxpr.consts)
    if input_names is not None and len(input_names) != len(jaxpr.invars):
        raise ValueError(f"{len(input_names)} input names for a jaxpr with {len(jaxpr.invars)} inputs")
    for i, var in enumerate(jaxpr.invars):
        b.bind_input(var, input_names[i] if input_names else var.pretty_print(b.names))
    b.walk(jaxpr, "")
    graph = Graph(name, frontend, stage, "composite", b.inputs, b.nodes, [b.read(v) for v in jaxpr.outvars])
    if level == "primitive":
        from irlens.ir_adapters.decompose import to_primitive

        return to_primitive(graph)
    return graph
