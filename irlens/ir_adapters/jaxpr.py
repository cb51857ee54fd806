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
from irlens.ops import check_vocabulary, conform

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
    "gather": "take", "scatter-add": "index_add", "scatter_add": "index_add",
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


def matmul_attrs(lhs_rank: int, rhs_rank: int, lhs_contract, rhs_contract, lhs_batch, rhs_batch) -> dict:
    """`contract`/`batch` attrs of a dot_general, empty when it is a plain a[..,m,k] @ b[..,k,n]."""
    lc, rc, lb, rb = (tuple(int(d) for d in dims) for dims in (lhs_contract, rhs_contract, lhs_batch, rhs_batch))
    plain = (
        lhs_rank >= 2 and rhs_rank == lhs_rank
        and lc == (lhs_rank - 1,) and rc == (rhs_rank - 2,)
        and lb == rb == tuple(range(lhs_rank - 2))
    )
    return {} if plain else {"contract": [list(lc), list(rc)], "batch": [list(lb), list(rb)]}


def _matmul(eqn) -> dict:
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lhs, rhs = (len(v.aval.shape) for v in eqn.invars)
    return matmul_attrs(lhs, rhs, lc, rc, lb, rb)


def _slice(eqn) -> dict:
    p = eqn.params
    start = [int(s) for s in p["start_indices"]]
    return {"start": start, "limit": [int(s) for s in p["limit_indices"]],
            "step": [int(s) for s in p["strides"]] if p.get("strides") else [1] * len(start)}


def _out_shape(eqn) -> dict:
    return {"shape": list(eqn.outvars[0].aval.shape)}


# primitive -> attrs builder (params -> irlens.ops conventions)
_ATTRS: dict[str, Callable[[Any], dict]] = {
    **{p: _axes for p in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod")},
    **{p: lambda e: {"dim": int(e.params["axes"][0]), "keepdim": False} for p in ("argmax", "argmin")},
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
}


def is_row_gather(operand_shape, indices_shape, offset_dims, collapsed_dims, start_index_map, slice_sizes,
                  index_vector_dim: int) -> bool:
    """A gather that is `operand[indices]` along dim 0 (an embedding lookup): the form the
    canonical `gather` (attrs dim=0) means. Indices may carry a trailing index-vector dim of 1;
    the size-1 row dim may be collapsed (jax) or kept as an offset dim (XLA's rewrite)."""
    batch_rank = len(indices_shape) - (index_vector_dim < len(indices_shape))
    kept = not tuple(collapsed_dims)
    return (
        tuple(collapsed_dims) in ((0,), ()) and tuple(start_index_map) == (0,)
        and tuple(slice_sizes) == (1, *operand_shape[1:])
        and tuple(offset_dims) == tuple(range(batch_rank, batch_rank + len(operand_shape) - 1 + kept))
        and (index_vector_dim == len(indices_shape) or indices_shape[index_vector_dim] == 1)
    )


def is_row_scatter_add(operand_shape, indices_shape, update_window_dims, inserted_window_dims,
                       scatter_dims_to_operand_dims, index_vector_dim: int) -> bool:
    """The transpose of `is_row_gather`: rows of updates added into operand[indices] (dim 0)."""
    batch_rank = len(indices_shape) - (index_vector_dim < len(indices_shape))
    kept = not tuple(inserted_window_dims)
    return (
        tuple(inserted_window_dims) in ((0,), ()) and tuple(scatter_dims_to_operand_dims) == (0,)
        and tuple(update_window_dims) == tuple(range(batch_rank, batch_rank + len(operand_shape) - 1 + kept))
        and (index_vector_dim == len(indices_shape) or indices_shape[index_vector_dim] == 1)
    )


def _meta(name: str, aval) -> TensorMeta:
    return TensorMeta(name, tuple(int(d) for d in aval.shape), canonical_dtype(aval.dtype))


def full_attrs(shape, value: Arg, dtype: str) -> dict:
    """A literal broadcast (or converted) to a tensor is a `full`."""
    if dtype == "bool":
        value = bool(value)
    elif dtype.startswith(("int", "uint")):
        value = int(value)
    elif not isinstance(value, bool):
        value = float(value)
    return {"shape": list(shape), "value": value, "dtype": dtype}


def _scalar(val) -> Arg:
    """A literal or scalar constant as a plain Python bool/int/float (jax has typed wrappers)."""
    import numpy as np

    return np.asarray(val).item()


@dataclass
class _Builder:
    """Walks a jaxpr (and the bodies it inlines), binding jaxpr vars to common-view values."""

    names: Any  # jax's JaxprPpContext: the var names jaxpr's printer uses
    nodes: list[Node] = field(default_factory=list)
    inputs: list[TensorMeta] = field(default_factory=list)
    env: dict = field(default_factory=dict)  # jaxpr Var -> Arg
    taken: set = field(default_factory=set)  # value names in use
    origins: dict[str, "EqnOrigin"] = field(default_factory=dict)  # node id -> the equation it came from
    origin: "EqnOrigin | None" = None  # of the equation being emitted

    def read(self, atom) -> Arg:
        from jax.extend.core import Literal

        if isinstance(atom, Literal):
            return _scalar(atom.val)
        return self.env[atom]

    def bind_input(self, var, name: str) -> None:
        self.env[var] = name
        self.taken.add(name)
        self.inputs.append(_meta(name, var.aval))

    def bind_consts(self, constvars, consts) -> None:
        """Scalar constants become literals; array constants graph inputs (`const<k>`)."""
        for var, val in zip(constvars, consts):
            if getattr(val, "shape", None) == ():
                self.env[var] = _scalar(val)
            else:
                self.bind_input(var, f"const{sum(t.name.startswith('const') for t in self.inputs)}")

    def walk(self, jaxpr, scope: str, caller: "EqnOrigin | None" = None) -> None:
        for eqn in jaxpr.eqns:
            self.origin = EqnOrigin.of(eqn, caller)
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
        self.walk(inner, f"{scope}/{name}" if scope else str(name), self.origin)
        for outer, var in zip(eqn.outvars, inner.outvars):
            self.env[outer] = self.read(var)

    def outputs(self, outvars, node_id: str) -> list[TensorMeta]:
        from jax.extend.core import DropVar

        metas = []
        for i, var in enumerate(outvars):
            name = f"{node_id}_dropped{i}" if isinstance(var, DropVar) else var.pretty_print(self.names)
            if name in self.taken:  # a shared sub-jaxpr inlined twice binds the same vars again
                name = f"{name}_{node_id}"
            self.taken.add(name)
            self.env[var] = name
            metas.append(_meta(name, var.aval))
        return metas

    def emit(self, eqn, scope: str) -> None:
        prim = eqn.primitive.name
        inputs = [self.read(a) for a in eqn.invars]
        op = PRIMITIVES.get(prim, UNKNOWN_PREFIX + prim)
        attrs = _ATTRS[prim](eqn) if prim in _ATTRS else {}
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
        elif prim in ("broadcast_in_dim", "convert_element_type") and not isinstance(inputs[0], str):
            out = _meta("", eqn.outvars[0].aval)
            op, attrs, inputs = "full", full_attrs(out.shape, inputs[0], out.dtype), []
        elif prim in ("gather", "scatter-add"):
            op, attrs, inputs = self.indexing(eqn, inputs, scope)
        elif prim == "one_minus_square":  # jax >= 0.11, in tanh's derivative: 1 - x*x
            node_id = f"e{len(self.nodes)}"
            square = _meta(f"{node_id}_square", eqn.outvars[0].aval)
            self.taken.add(square.name)
            self.add(Node(node_id, "mul", [inputs[0], inputs[0]], [square], native=prim, scope=scope))
            op, inputs = "sub", [1.0, square.name]
        self.append(eqn.outvars, op, inputs, attrs, prim, scope)

    def append(self, outvars, op: str, inputs: list[Arg], attrs: dict, native: str, scope: str) -> None:
        node_id = f"e{len(self.nodes)}"
        self.add(Node(node_id, op, inputs, self.outputs(outvars, node_id), attrs, native=native, scope=scope))

    def add(self, node: Node) -> None:
        self.nodes.append(conform(node))
        self.origins[node.id] = self.origin

    def indexing(self, eqn, inputs: list[Arg], scope: str) -> tuple[str, dict, list[Arg]]:
        """gather / scatter-add along dim 0 as canonical `take` / `index_add` (dim=0, indices
        without jax's trailing index-vector dim); any other form stays `unknown:` with its params."""
        p = eqn.params
        dn = p["dimension_numbers"]
        operand, indices = eqn.invars[0].aval.shape, eqn.invars[1].aval.shape
        vector_dim = len(indices) - 1  # jax keeps the index vector last
        if eqn.primitive.name == "gather":
            rows = is_row_gather(operand, indices, dn.offset_dims, dn.collapsed_slice_dims, dn.start_index_map,
                                 p["slice_sizes"], vector_dim)
            op = "take"
        else:
            rows = is_row_scatter_add(operand, indices, dn.update_window_dims, dn.inserted_window_dims,
                                      dn.scatter_dims_to_operand_dims, vector_dim)
            op = "index_add"
        if not rows:
            return UNKNOWN_PREFIX + eqn.primitive.name, {"dimension_numbers": str(dn)}, inputs
        node_id = f"e{len(self.nodes)}"
        index_meta = TensorMeta(f"{node_id}_index", tuple(indices[:-1]), canonical_dtype(eqn.invars[1].aval.dtype))
        self.add(Node(node_id, "reshape", [inputs[1]], [index_meta], {"shape": list(index_meta.shape)},
                      native=eqn.primitive.name, scope=scope))
        return op, {"dim": 0}, [inputs[0], index_meta.name, *inputs[2:]]

    def split(self, eqn, scope: str) -> None:
        """`split` (one input, several outputs) as one `slice` node per output."""
        axis = int(eqn.params["axis"])
        src = self.read(eqn.invars[0])
        shape = list(eqn.invars[0].aval.shape)
        offset = 0
        for var, size in zip(eqn.outvars, eqn.params["sizes"]):
            start, limit = [0] * len(shape), list(shape)
            start[axis], limit[axis] = offset, offset + int(size)
            offset += int(size)
            self.append([var], "slice", [src], {"start": start, "limit": limit, "step": [1] * len(shape)}, "split", scope)


def _call_body(eqn):
    for param in CALLS.get(eqn.primitive.name, ()):
        if eqn.params.get(param) is not None:
            return eqn.params[param]
    return None


def source_span(file: str, line: int, column: int, end_line: int, end_column: int) -> str:
    """One spelling of a source range for jaxpr frames and HLO stack frames, so they compare."""
    return f"{file}:{line}:{column}-{end_line}:{end_column}"


@dataclass(frozen=True)
class EqnOrigin:
    """Where an equation came from, as XLA's op_name/source metadata can name it too: the
    primitive, whether it is on the backward pass (a `transpose(...)` name stack) and the
    user source frame. Equations inlined from a call without a frame take the call's."""

    primitive: str
    backward: bool
    source: str  # source_span(...), "" when unknown

    @classmethod
    def of(cls, eqn, caller: "EqnOrigin | None") -> "EqnOrigin":
        from jax._src import source_info_util

        frame = source_info_util.user_frame(eqn.source_info.traceback)
        stack = str(eqn.source_info.name_stack)
        source = source_span(frame.file_name, frame.start_line, frame.start_column, frame.end_line,
                             frame.end_column) if frame else ""
        backward = "transpose(" in stack
        if caller is not None:
            source = source or caller.source
            backward = backward or caller.backward
        return cls(eqn.primitive.name, backward, source)


def _build(closed_jaxpr, input_names: list[str] | None) -> tuple[_Builder, list[Arg]]:
    from jax._src.core import JaxprPpContext

    jaxpr = closed_jaxpr.jaxpr
    b = _Builder(JaxprPpContext())
    b.bind_consts(jaxpr.constvars, closed_jaxpr.consts)
    if input_names is not None and len(input_names) != len(jaxpr.invars):
        raise ValueError(f"{len(input_names)} input names for a jaxpr with {len(jaxpr.invars)} inputs")
    for i, var in enumerate(jaxpr.invars):
        b.bind_input(var, input_names[i] if input_names else var.pretty_print(b.names))
    b.walk(jaxpr, "")
    return b, [b.read(v) for v in jaxpr.outvars]


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
    b, outputs = _build(closed_jaxpr, input_names)
    return at_level(Graph(name, frontend, stage, "composite", b.inputs, b.nodes, outputs), level)


def jaxpr_origins(closed_jaxpr) -> dict[str, EqnOrigin]:
    """Node id (as in `jaxpr_to_graph`'s composite graph) -> the equation's origin."""
    return _build(closed_jaxpr, None)[0].origins


def at_level(graph: Graph, level: str) -> Graph:
    """`graph` (composite) at `level`: primitive goes through the decomposition pass."""
    if level == "primitive":
        from irlens.ir_adapters.decompose import to_primitive

        return to_primitive(graph)
    return graph
