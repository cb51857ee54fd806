"""HLO / StableHLO handlers of structured opcodes, through `xla_forms` / `xla_gather` / `linalg`:
dot, reductions and arg-reductions, reduce-window and select-and-scatter,
gather and scatter, sort and top-k, triangular solve and LAPACK custom calls, convolution,
while loops and conditionals; the GPU libraries' custom calls are in gpu_calls.py."""
from __future__ import annotations

import re

from irlens.core.ir import TensorMeta
from irlens.frontends.jax import linalg
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.xla import gather as xla_gather
from irlens.frontends.jax.hlo.gpu_bodies import (narrowed, sort_params, stable_tie_break, unrounded, unrounding,
                                                  unrounding_scatter)
from irlens.frontends.jax.hlo.names import OPCODES
from irlens.frontends.jax.hlo.text import int_list
from irlens.frontends.jax.jaxpr.eqn import matmul_attrs
from irlens.frontends.jax.xla.op import Body, XlaOp, formula, logaddexp_trees, register
from irlens.frontends.jax.xla.forms import Emitter, Unmapped


def _dot(e: Emitter, x: XlaOp) -> None:
    if "dot_dimension_numbers" in x.spec:
        dn = x.spec[x.spec.index("dot_dimension_numbers"):]
        field_ = lambda key: int_list(m.group(1)) if (m := re.search(key + r"\s*=\s*\[([^\]]*)\]", dn)) else []
        lc, rc = field_("lhs_contracting_dimensions"), field_("rhs_contracting_dimensions")
        lb, rb = field_("lhs_batching_dimensions"), field_("rhs_batching_dimensions")
    else:
        lc, rc = x.ints("lhs_contracting_dims") or [], x.ints("rhs_contracting_dims") or []
        lb, rb = x.ints("lhs_batch_dims") or [], x.ints("rhs_batch_dims") or []
    out = x.outs[0]
    emit_matmul(e, x.inputs, x.metas, lc, rc, lb, rb, out.dtype, out)


def emit_matmul(e: Emitter, inputs: list, metas: list[TensorMeta], lc, rc, lb, rb, dtype: str,
                out: TensorMeta | None = None) -> str:
    """A dot of the first two operands by its dimension numbers, accumulated in `dtype` (the result's)."""
    inputs = [v if m.dtype == dtype or not isinstance(v, str) else e.emit("convert", [v], dtype=dtype)
              for v, m in zip(inputs[:2], metas[:2])]
    attrs = matmul_attrs(len(metas[0].shape), len(metas[1].shape), lc, rc, lb, rb)
    return e.emit("matmul", inputs, out, **attrs)


def _reduce(e: Emitter, x: XlaOp) -> None:
    """A reduction whose body is one add/multiply/maximum/minimum (and/or: logical or bitwise):
    the canonical reduction, and its init combined in unless it is the op's identity."""
    if len(x.outs) == 2:
        _arg_reduce(e, x)
        return
    if len(x.outs) != 1:
        raise Unmapped("a reduction of several operands")
    body = x.bodies.get("to_apply")
    op = body.binary() if body else None
    value, init = x.inputs
    out = x.outs[0]
    dims = sorted(x.ints("dimensions") or [])
    if op in ("and", "or", "xor"):
        reduce = {"and": ("all", "reduce_and"), "or": ("any", "reduce_or"), "xor": ("", "reduce_xor")}[op]
        reduce = reduce[0] if out.dtype == "bool" and reduce[0] else reduce[1]
        identity = {"and": True if out.dtype == "bool" else -1, "or": False if out.dtype == "bool" else 0,
                    "xor": False if out.dtype == "bool" else 0}[op]
        combine = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor"}[op]
    else:
        reduce = forms.REDUCTION_BY_BODY.get(op or "")
        if reduce is None:
            raise Unmapped("a reduction body other than one add, multiply, maximum, minimum, and, or, xor")
        identity = forms.identity_of(reduce, out.dtype)
        combine = {"sum": "add", "prod": "mul", "amax": "maximum", "amin": "minimum"}[reduce]
    if not isinstance(init, str) and init == identity:
        forms.emit_accumulating(e, reduce, [value], out, dims=dims, keepdim=False)
        return
    part = forms.emit_accumulating(e, reduce, [value], None, dims=dims, keepdim=False)
    e.emit(combine, [part, init], out)


def _arg_reduce(e: Emitter, x: XlaOp) -> None:
    """jax's argmax / argmin: a reduction of (values, an iota along the dim) whose body keeps the
    greater (smaller) value, a NaN first, the lower index on ties; inits -inf (inf) and 0. It
    gives the max (min) and its first index."""
    body = x.bodies.get("to_apply")
    values, index, value_init, index_init = x.inputs
    dims = x.ints("dimensions") or []
    if body is None or len(dims) != 1 or x.iotas.get(index) != dims[0] or index_init != 0:
        raise Unmapped("a reduction of several operands other than an argmax / argmin")
    compares = {(o.direction, o.operands) for o in body.ops if o.opcode == "compare"}
    kinds = {o.opcode for o in body.ops}
    tie = ("LT", ("p1", "p3")) in compares and ("EQ", ("p0", "p2")) in compares
    which = [d for d in ("GT", "LT") if (d, ("p0", "p2")) in compares]
    if not tie or len(which) != 1 or not kinds <= {"compare", "or", "and", "select"} or len(body.roots) != 2:
        raise Unmapped("a reduction of several operands other than an argmax / argmin")
    reduce, arg = ("amax", "argmax") if which[0] == "GT" else ("amin", "argmin")
    if value_init != forms.identity_of(reduce, x.metas[0].dtype):
        raise Unmapped(f"an {arg} whose initial value is not the identity")
    best, where = x.outs
    e.emit(reduce, [values], best, dims=dims, keepdim=False)
    e.emit(arg, [values], where, dim=dims[0], keepdim=False)


def _window(x: XlaOp, rank: int, reversible: bool = False) -> tuple[list[int], list[int], list[list[int]], list[int],
                                                                      list[int]]:
    """(size, stride, [lo, hi] padding, base dilation, window dilation) of HLO's `window={...}`
    or StableHLO's attributes; a reversed window only where `reversible` (`_reversal` reads it)."""
    found = re.search(r"window=\{([^}]*)\}", x.spec)
    if found:
        fields = dict(re.findall(r"(\w+)=([\w\-]+)", found.group(1)))
        per_dim = lambda key, default: [int(v) for v in fields[key].split("x")] if key in fields else [default] * rank
        size = per_dim("size", 1)
        pads = [[int(v) for v in p.split("_")] for p in fields["pad"].split("x")] if "pad" in fields else [[0, 0]] * rank
        if "rhs_reversal" in fields and "1" in fields["rhs_reversal"] and not reversible:
            raise Unmapped("a reversed window")
        return size, per_dim("stride", 1), pads, per_dim("lhs_dilate", 1), per_dim("rhs_dilate", 1)
    size = x.ints("window_dimensions") or [1] * rank
    pads = x.ints("padding") or [0]
    pads = pads * (2 * rank) if len(pads) == 1 else pads  # a splat: dense<0>
    pads = [pads[i:i + 2] for i in range(0, len(pads), 2)]
    return (size, x.ints("window_strides") or [1] * rank, pads, x.ints("base_dilations") or [1] * rank,
            x.ints("window_dilations") or [1] * rank)


def _reversal(x: XlaOp, rank: int) -> tuple[bool, ...]:
    """Which dims of HLO's `window={... rhs_reversal=0x1}` run reversed."""
    found = re.search(r"window=\{[^}]*rhs_reversal=([\dx]+)", x.spec)
    return tuple(v == "1" for v in found.group(1).split("x")) if found else (False,) * rank


def _reduce_window(e: Emitter, x: XlaOp) -> None:
    body = x.bodies.get("to_apply")
    size, stride, pads, base, dil = _window(x, len(x.metas[0].shape))
    if body is None:
        raise Unmapped("a windowed reduction without its body")
    if len(x.outs) > 1:
        _select_window(e, x, body, dict(window=size, strides=stride, padding=pads, base_dilation=base,
                                        window_dilation=dil))
        return
    reduce = _window_reducer(body, x.outs[0].dtype)
    value, init = x.inputs
    form = forms.WindowForm(reduce, tuple(size), tuple(stride), tuple(map(tuple, pads)), tuple(base), tuple(dil))
    forms.expand_reduce_window(e, value, x.metas[0], init, form, x.outs[0])


def _window_reducer(body: Body, dtype: str) -> str:
    """The canonical reducer of a window body: one add / multiply / maximum / minimum (a logical
    and / or of bools: their min / max), or jax's logaddexp of floats."""
    reduce = forms.window_reducer(body.binary(), dtype)
    if reduce:
        return reduce
    floating = dtype != "bool" and not dtype.startswith(("int", "uint"))
    if floating and body.returns() and body.tree(body.returns()) in logaddexp_trees():
        return "logsumexp"
    raise Unmapped("a window body other than one add, multiply, maximum, minimum, logaddexp or logical and/or")


def _select_window(e: Emitter, x: XlaOp, body: Body, window: dict) -> None:
    """A windowed reduction of m operands that keeps, per window, the whole tuple of the element
    the first operand selects (>= or <=): each output k is `select_and_gather_add` of operand k
    along the first. Two bodies do that: jax's select_and_gather_add (inits -inf / inf for the
    values, 0 for the rest: the canonical op's padding), and XLA's select-and-scatter rewrite on
    the CPU (the rest are iotas, init -1: an index that marks the init, never selected), exact
    where every window element is one of x's: no padding, no base dilation. The first output is
    the selected value itself."""
    m = len(x.outs)
    operands, inits = x.inputs[:m], x.inputs[m:]
    trees = [body.tree(r) for r in body.roots]
    chooser = trees[0][1] if len(trees) == m and trees[0][0] == "select" else None
    if chooser is None or trees != [formula("select", chooser, f"p{k}", f"p{m + k}") for k in range(m)]:
        raise Unmapped("a windowed reduction of several operands other than a selection by the first")
    real_only = all(list(p) == [0, 0] for p in window["padding"]) and all(b == 1 for b in window["base_dilation"])
    select = None
    for direction in ("GE", "LE"):
        compare = formula("compare", "p0", f"p{m}", direction=direction)
        flagged = formula("or", formula("and", compare, formula("compare", "p1", ("constant", -1), direction="NE")),
                          formula("not", formula("compare", f"p{m + 1}", ("constant", -1), direction="NE")))
        fill = float("-inf") if direction == "GE" else float("inf")
        if chooser == compare and inits[0] == fill and all(i == 0 for i in inits[1:]):
            select = direction.lower()  # jax's own: padding holds the fill, tangent 0
        elif chooser == flagged and real_only and x.iotas.get(operands[1]) is not None and inits[1] == -1:
            select = direction.lower()  # XLA's rewrite: operand 1 an iota, so only the init is flagged -1
    if select is None:
        raise Unmapped("a selecting window whose inits or padding the canonical select_and_gather_add does not hold")
    attrs = {key: [list(p) for p in v] if key == "padding" else list(v) for key, v in window.items()}
    attrs["select"] = select
    xm = x.metas[0]
    for k, out in enumerate(x.outs):
        if k or real_only:
            e.emit("select_and_gather_add", [operands[k], operands[0]], out, **attrs)
            continue
        # where the window selects padding the value is the fill (the init), where the canonical op
        # gives padding's tangent 0: the selection of ones tells the two apart
        ones = e.emit("full", [], shape=list(xm.shape), value=1.0, dtype=xm.dtype)
        real = e.emit("select_and_gather_add", [ones, operands[0]], **attrs)
        value = e.emit("select_and_gather_add", [operands[0], operands[0]], **attrs)
        e.emit("where", [e.emit("ne", [real, 0.0]), value, inits[0]], out)


def _select_and_scatter(e: Emitter, x: XlaOp) -> None:
    """select-and-scatter with a `>=` / `<=` selection of two parameters and an adding scatter
    into zeros: max (min) pooling's gradient."""
    select, scatter = x.bodies.get("select"), x.bodies.get("scatter")
    operand, source, init = x.inputs
    chooser = select.ops[0] if select and len(select.ops) == 1 and select.roots == ("o0",) else None
    if not (chooser and chooser.opcode == "compare" and chooser.operands == ("p0", "p1")
            and chooser.direction in ("GE", "LE") and scatter and scatter.binary() == "add"
            and not isinstance(init, str) and init == 0):
        raise Unmapped("a selection other than >= or <=, or a scatter other than an add into zeros")
    size, stride, pads, base, dil = _window(x, len(x.metas[0].shape))
    if any(d != 1 for d in base + dil):
        raise Unmapped("a dilated selection window")
    x.one(e, "select_and_scatter_add", [source, operand], select=chooser.direction.lower(), window=size, strides=stride,
          padding=pads)


def _gather(e: Emitter, x: XlaOp) -> None:
    indices = x.metas[1]
    vector_dim = x.ints("index_vector_dim")
    form = xla_gather.GatherForm(
        tuple(x.ints("offset_dims") or []), tuple(x.ints("collapsed_slice_dims") or []),
        tuple(x.ints("start_index_map") or []), tuple(x.ints("slice_sizes") or []),
        len(indices.shape) if vector_dim is None else vector_dim[0],
        tuple(x.ints("operand_batching_dims") or []), tuple(x.ints("start_indices_batching_dims") or []),
        mode="clip")  # XLA clamps a gather's start indices into the operand
    xla_gather.expand_gather(e, x.inputs[0], named(x, 0), x.inputs[1], named(x, 1), form, x.outs[0])


_SCATTER_BODIES = {"add": "add", "multiply": "mul", "maximum": "max", "minimum": "min"}


def _scatter(e: Emitter, x: XlaOp) -> None:
    if len(x.outs) != 1:
        raise Unmapped("a scatter of several operands")
    body = x.bodies.get("to_apply")
    kind = ("set" if body and body.returns() == "p1" else
            "sub" if body and body.binary() == "subtract" and body.ops[0].operands == ("p0", "p1") else
            _SCATTER_BODIES.get((body.binary() if body else None) or ""))
    if kind is None:
        raise Unmapped("a scatter body other than the update or one add, subtract, multiply, maximum, minimum")
    vector_dim = x.ints("index_vector_dim")
    form = xla_gather.ScatterForm(
        tuple(x.ints("update_window_dims") or []), tuple(x.ints("inserted_window_dims") or []),
        tuple(x.ints("scatter_dims_to_operand_dims") or []),
        len(x.metas[1].shape) if vector_dim is None else vector_dim[0], kind,
        tuple(x.ints("input_batching_dims") or []), tuple(x.ints("scatter_indices_batching_dims") or []),
        mode="drop")  # XLA skips an update whose window is out of bounds
    xla_gather.expand_scatter(e, x.inputs[0], named(x, 0), x.inputs[1], named(x, 1), x.inputs[2], named(x, 2), form,
                         x.outs[0])


def _map(e: Emitter, x: XlaOp) -> None:
    """A map of a computation over all dims: its body's ops on the whole operands, each an
    elementwise op or a convert (XLA's CPU writes a bf16 scatter-add of one window as a map of an
    add rounded through bf16). A body of other ops stays unknown."""
    body, (out,) = x.bodies.get("to_apply"), x.outs
    if body is None or len(body.roots) != 1 or body.roots[0] != f"o{len(body.ops) - 1}" or any(
            op.opcode not in OPCODES and op.opcode != "convert" or op.dtype is None for op in body.ops):
        raise Unmapped("a map of a body other than elementwise ops and converts, ending in its last")
    values: dict[str, object] = {f"p{k}": v for k, v in enumerate(x.inputs)}
    values.update({f"c{k}": c for k, c in enumerate(body.constants) if c is not None})
    if any(r not in values and not r.startswith("o") for op in body.ops for r in op.operands):
        raise Unmapped("a map whose body reads an array constant")
    if any(all(r.startswith("c") for r in op.operands) for op in body.ops):
        raise Unmapped("a map whose body computes on constants alone (their dtype is not kept)")
    for i, op in enumerate(body.ops):
        last = i == len(body.ops) - 1
        attrs = {"dtype": op.dtype} if op.opcode == "convert" else {}
        values[f"o{i}"] = e.emit(OPCODES.get(op.opcode, op.opcode), [values[r] for r in op.operands],
                                 out if last else None, **attrs)


def named(x: XlaOp, k: int) -> TensorMeta:
    meta = x.metas[k]
    return TensorMeta(x.inputs[k] if isinstance(x.inputs[k], str) else "", meta.shape, meta.dtype)


def _sort(e: Emitter, x: XlaOp) -> None:
    """A sort whose comparator compares the first operand's two elements (LT ascending, GT
    descending); the other operands follow the permutation. XLA's GPU rewrites (gpu_bodies.py):
    a comparator that rounds the elements down compares them rounded (the sort's key), and one
    whose ties go to the lower element of an iota along the sort dim is a stable sort."""
    body = x.bodies.get("to_apply")
    dim = (x.ints("dimensions", "dimension") or [len(x.metas[0].shape) - 1])[0]
    stable = bool(re.search(r"is_stable\s*=\s*true", x.spec))
    key = x.metas[0]
    rounded = unrounded(body, key.dtype, sort_params(x.metas, key.dtype)) if body else None
    body = rounded.body if rounded else body
    tie = stable_tie_break(body, len(x.inputs)) if body else None
    root = tie[0] if tie and x.iotas.get(x.inputs[tie[1]]) == dim else None
    cmp = body.comparison(root) if body else None
    if cmp is None or {cmp[1], cmp[2]} != {0, 1}:
        raise Unmapped("a comparator other than < or > of the first operand's elements")
    descending = (cmp[0] == "GT") == (cmp[1] == 0)
    if not all(isinstance(v, str) for v in x.inputs):
        raise Unmapped("a sort of a literal")
    iotas = {v for v in x.inputs[1:] if x.iotas.get(v) == dim}
    floats = not key.dtype.startswith(("int", "uint", "bool"))
    operands, metas, outs = x.inputs, x.metas, x.outs
    if rounded:  # sorted by the rounded elements, which the first output does not hold
        low = narrowed(e, x.inputs[0], rounded.dtype)
        operands, metas, outs = [low, *operands], [e.meta(low), *metas], [None, *outs]
    forms.expand_sort(e, operands, metas, outs, dim, descending, stable or root is not None, iotas,
                      total_order=floats and not body.canonicalizes_nan())


def _top_k(e: Emitter, x: XlaOp) -> None:
    """chlo.top_k / HLO topk, and the CPU's TopK custom call (its comparator: greater-than)."""
    comparator = x.bodies.get("called_computations")
    largest = True
    if comparator is not None:
        cmp = comparator.comparison()
        if cmp is None or {cmp[1], cmp[2]} != {0, 1}:
            raise Unmapped("a top-k comparator other than > or <")
        largest = (cmp[0] == "GT") == (cmp[1] == 0)
    if re.search(r"largest\s*=\s*false", x.spec):
        largest = not largest
    k = x.outs[0].shape[-1]
    e.node("topk", x.inputs, x.outs, final=True, k=k, dim=len(x.metas[0].shape) - 1, largest=largest, sorted=True)


def _fft(e: Emitter, x: XlaOp) -> None:
    forms.emit_fft(e, x.inputs, x.metas[0], x.outs[0], x.word("fft_type"), x.ints("fft_length"))


def _triangular_solve(e: Emitter, x: XlaOp) -> None:
    """XLA's TriangularSolve (what jax's CPU lowering emits where LAPACK has no routine for the dtype)."""
    flag = lambda key: x.word(key) == "true"
    transpose = x.word("transpose_a") or "NO_TRANSPOSE"
    if transpose not in ("NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"):
        raise Unmapped(f"triangular solve with transpose_a={transpose}")
    linalg.triangular_solve(e, x.inputs[0], x.metas[0], x.inputs[1], x.outs[0], left_side=flag("left_side"),
                            lower=flag("lower"), transpose_a=transpose != "NO_TRANSPOSE",
                            unit_diagonal=flag("unit_diagonal"))


def _custom_call(e: Emitter, x: XlaOp) -> None:
    handler, reads = CUSTOM_CALLS.get(x.target, (None, frozenset()))
    if linalg.is_lapack(x.target):
        linalg.lapack_call(e, x.target, x.inputs, x.metas, x.outs, linalg.lapack_options(x.spec), x.unused)
    elif handler is None:
        raise Unmapped(f"custom call {x.target or '(no target)'}: no canonical op")
    elif "mhlo.backend_config" in x.attr_keys:
        raise Unmapped(f"custom call {x.target}: attributes not mapped: mhlo.backend_config")
    elif unread := sorted(x.attr_keys & (TARGET_ATTRS - reads)):
        raise Unmapped(f"custom call {x.target}: attributes not mapped: {', '.join(unread)}")
    else:
        handler(e, x)


# attributes only some custom-call targets read (a cuDNN convolution's window and dimension labels)
TARGET_ATTRS = frozenset({"window", "dim_labels", "feature_group_count", "batch_group_count"})
# custom-call target -> (handler, the attributes of TARGET_ATTRS it reads); gpu_calls.py adds the
# GPU libraries' calls
CUSTOM_CALLS: dict[str, tuple] = {"TopK": (_top_k, frozenset())}


def _conv_labels(x: XlaOp) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """HLO's `dim_labels=b01f_01io->b01f` or StableHLO's `[b, 0, f]x[0, i, o]->[b, 0, f]` as
    (lhs, rhs, out) specs: dim indices of (batch / out feature, feature / in feature, *spatial)."""
    found = re.search(r"dim_labels=(\w+)_(\w+)->(\w+)", x.spec)
    if found:
        labels = [list(part) for part in found.groups()]
    else:
        found = re.search(r"\[([^\]]*)\]x\[([^\]]*)\]->\[([^\]]*)\]", x.spec)
        if found is None:
            raise Unmapped("no convolution dimension labels")
        labels = [[t.strip() for t in part.split(",")] for part in found.groups()]

    def spec(tokens, first, second):
        spatial = sorted((t for t in tokens if t.isdigit()), key=int)
        return tuple(tokens.index(t) for t in [first, second, *spatial])
    return spec(labels[0], "b", "f"), spec(labels[1], "o", "i"), spec(labels[2], "b", "f")


def conv_form(x: XlaOp) -> forms.ConvForm:
    """The convolution an HLO convolution (or a cuDNN call's window and dim_labels) or a
    StableHLO one describes."""
    lhs_spec, rhs_spec, out_spec = _conv_labels(x)
    n = len(lhs_spec) - 2
    size, stride, pads, lhs_dil, rhs_dil = _window(x, n, reversible=True)
    if "window_strides" in x.spec or "lhs_dilation" in x.spec:  # StableHLO's attributes
        stride = x.ints("window_strides") or [1] * n
        lhs_dil, rhs_dil = x.ints("lhs_dilation") or [1] * n, x.ints("rhs_dilation") or [1] * n
        if re.search(r"window_reversal\s*=\s*array<i1:[^>]*true", x.spec):
            raise Unmapped("a reversed window")
    return forms.ConvForm(lhs_spec, rhs_spec, out_spec, tuple(stride), tuple(map(tuple, pads)), tuple(lhs_dil),
                          tuple(rhs_dil), (x.ints("feature_group_count") or [1])[0],
                          (x.ints("batch_group_count") or [1])[0], _reversal(x, n))


def _convolution(e: Emitter, x: XlaOp) -> None:
    forms.expand_conv(e, x.inputs[0], named(x, 0), x.inputs[1], named(x, 1), conv_form(x), x.outs[0])


def _while(e: Emitter, x: XlaOp) -> None:
    if set(x.subgraphs) != {"cond", "body"}:
        raise Unmapped("a loop whose condition and body are not flat computations over its carried values "
                       "(a nested tuple, or a region reading values from outside it)")
    forms.emit_while(e, x.inputs, x.outs, x.subgraphs["cond"], x.subgraphs["body"])


def _conditional(e: Emitter, x: XlaOp) -> None:
    """HLO's conditional, StableHLO's case and if: the index (or predicate), then the operands
    every branch graph takes."""
    branches = [x.subgraphs.get(f"branch{k}") for k in range(len(x.subgraphs))]
    if not branches or None in branches:
        raise Unmapped("a conditional whose branches are not flat computations over its operands")
    forms.emit_cond(e, x.inputs[0], x.metas[0], x.inputs[1:], x.outs, branches)


register("dot", _dot, ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims",
                        "dot_dimension_numbers"))
register("reduce", unrounding(_reduce), ("dimensions", "to_apply"))
register("reduce-window", unrounding(_reduce_window), ("window", "to_apply", "window_dimensions", "window_strides",
                                                       "padding", "base_dilations", "window_dilations"))
register("select-and-scatter", _select_and_scatter, ("window", "select", "scatter", "window_dimensions",
                                                       "window_strides", "padding"))
register("gather", _gather, ("offset_dims", "collapsed_slice_dims", "start_index_map", "index_vector_dim",
                              "slice_sizes", "operand_batching_dims", "start_indices_batching_dims",
                              "dimension_numbers"))
register("scatter", unrounding_scatter(_scatter), (
    "update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims", "index_vector_dim",
    "input_batching_dims", "scatter_indices_batching_dims", "to_apply", "scatter_dimension_numbers"))


register("map", _map, ("dimensions", "to_apply"))
register("sort", _sort, ("dimensions", "dimension", "is_stable", "to_apply"))
register(["top-k", "topk"], _top_k, ("k", "largest"))
register("custom-call", _custom_call, ("custom_call_target", "called_computations", "call_target_name",
                                        "backend_config", "has_side_effect", "mhlo.backend_config", *TARGET_ATTRS))
register("fft", _fft, ("fft_type", "fft_length"))
register("triangular-solve", _triangular_solve, ("left_side", "lower", "transpose_a", "unit_diagonal",
                                                  "triangular_solve_options"))
register("convolution", _convolution, ("window", "dim_labels", "feature_group_count", "batch_group_count",
                                        "dimension_numbers", "window_strides", "padding", "lhs_dilation",
                                        "rhs_dilation", "window_reversal"))


register("while", _while, ("condition", "body"))
register(["conditional", "case", "if"], _conditional, ("branch_computations", "true_computation",
                                                       "false_computation"))
