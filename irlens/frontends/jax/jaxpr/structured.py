"""jaxpr handlers of structured primitives, through `xla_forms` / `xla_gather` / `linalg`: while
loops and conditionals, reductions and scans, reduce-window and select-and-scatter, dot_general,
convolution, gather and scatter, sort and top_k, linear-algebra decompositions and solves."""
from __future__ import annotations


from irlens.core.ir import TensorMeta
from irlens.frontends.jax import linalg
from irlens.frontends.jax.xla import forms
from irlens.frontends.jax.xla import gather as xla_gather
from irlens.frontends.jax.jaxpr.eqn import Eqn, dim_tuple, ints, matmul_attrs, register, scalar_of
from irlens.frontends.jax.jaxpr.elementwise import as_dtype
from irlens.frontends.jax.jaxpr.names import SCANS
from irlens.frontends.jax.xla.forms import Emitter, Unmapped


def _while(e: Emitter, q: Eqn) -> None:
    """lax.while_loop: operands [cond consts, body consts, carry]. Canonically the consts are
    carried too (the body returns them unchanged), so cond and body take every operand."""
    nc, nb = int(q.params["cond_nconsts"]), int(q.params["body_nconsts"])
    n, carry = len(q.inputs), list(range(nc + nb, len(q.inputs)))
    ins = [TensorMeta(f"in{i}", m.shape, m.dtype) for i, m in enumerate(q.metas)]
    cond = q.subgraph("cond", q.params["cond_jaxpr"], ins, [*range(nc), *carry], [TensorMeta("", (), "bool")])
    body = q.subgraph("body", q.params["body_jaxpr"], ins, [*range(nc, n)], ins[nc + nb:])
    body.outputs = [t.name for t in ins[:nc + nb]] + body.outputs
    forms.emit_while(e, q.inputs, [*([None] * (nc + nb)), *q.outs], cond, body)


def _cond(e: Emitter, q: Eqn) -> None:
    """lax.cond / lax.switch: branch k of `branches` on the operands, k the integer index."""
    ins = [TensorMeta(f"in{i}", m.shape, m.dtype) for i, m in enumerate(q.metas[1:])]
    branches = [q.subgraph(f"branch{k}", b, ins, list(range(len(ins))), q.outs)
                for k, b in enumerate(q.params["branches"])]
    forms.emit_cond(e, q.inputs[0], q.metas[0], q.inputs[1:], q.outs, branches)


def _reduce(op: str):
    def handle(e: Emitter, q: Eqn) -> None:
        forms.emit_accumulating(e, op, q.inputs, q.outs[0], dims=sorted(ints(q.params["axes"])), keepdim=False)
    return handle


def _bitwise_reduce(logical: str, bitwise: str):
    def handle(e: Emitter, q: Eqn) -> None:
        q.one(e, logical if q.metas[0].dtype == "bool" and logical else bitwise,
              dims=sorted(ints(q.params["axes"])), keepdim=False)
    return handle


def _arg_reduce(e: Emitter, q: Eqn) -> None:
    (axis,) = q.params["axes"]
    q.one(e, q.prim, dim=int(axis), keepdim=False)


def _scan(e: Emitter, q: Eqn) -> None:
    forms.emit_scan(e, SCANS[q.prim], q.inputs[0], q.outs[0], int(q.params["axis"]),
                    bool(q.params["reverse"]))


def _body_op(closed) -> str | None:
    """A reduction body's one binary op (lax.add ...), None when it does more."""
    jaxpr = getattr(closed, "jaxpr", closed)
    if len(jaxpr.eqns) != 1 or len(jaxpr.outvars) != 1:
        return None
    eqn = jaxpr.eqns[0]
    return eqn.primitive.name if list(eqn.invars) == list(jaxpr.invars) else None


def _generic_reduce(e: Emitter, q: Eqn) -> None:
    """lax.reduce with a one-op body: the reduction, then the init combined in (skipped when it
    is the op's identity)."""
    if len(q.outs) != 1:
        raise Unmapped("a reduction of several operands")
    reduce = forms.REDUCTION_BY_BODY.get(_body_op(q.params["jaxpr"]) or "")
    if reduce is None:
        raise Unmapped("a reduction body other than add, mul, max, min")
    x, init = q.inputs
    out = q.outs[0]
    dims = sorted(ints(q.params["dimensions"]))
    if not isinstance(init, str) and init == forms.identity_of(reduce, out.dtype):
        forms.emit_accumulating(e, reduce, [x], out, dims=dims, keepdim=False)
        return
    part = forms.emit_accumulating(e, reduce, [x], None, dims=dims, keepdim=False)
    combine = {"sum": "add", "prod": "mul", "amax": "maximum", "amin": "minimum"}[reduce]
    e.emit(combine, [part, init], out)


def _window_form(p: dict, reduce: str) -> forms.WindowForm:
    rank = len(p["window_dimensions"])
    return forms.WindowForm(reduce, tuple(ints(p["window_dimensions"])), tuple(ints(p["window_strides"])),
                            tuple(tuple(ints(pad)) for pad in p["padding"]),
                            tuple(ints(p.get("base_dilation") or [1] * rank)),
                            tuple(ints(p.get("window_dilation") or [1] * rank)))


def _reduce_window_of(reduce: str):
    def handle(e: Emitter, q: Eqn) -> None:
        out = q.outs[0]
        forms.expand_reduce_window(e, q.inputs[0], q.metas[0], forms.identity_of(reduce, out.dtype),
                                   _window_form(q.params, reduce), out)
    return handle


def _reduce_window(e: Emitter, q: Eqn) -> None:
    reduce = forms.window_reducer(_body_op(q.params["jaxpr"]), q.outs[0].dtype)
    if reduce is None or len(q.outs) != 1 or q.params.get("consts"):
        raise Unmapped("a window body other than one add, mul, max, min or logical and/or")
    forms.expand_reduce_window(e, q.inputs[0], q.metas[0], q.inputs[1], _window_form(q.params, reduce), q.outs[0])


def _select_window(e: Emitter, q: Eqn) -> None:
    select = getattr(q.params["select_prim"], "name", str(q.params["select_prim"]))
    if select not in ("ge", "le"):
        raise Unmapped(f"window selection by {select}")
    p = q.params
    attrs = dict(select=select, window=ints(p["window_dimensions"]), strides=ints(p["window_strides"]),
                 padding=[ints(pad) for pad in p["padding"]])
    if q.prim == "select_and_gather_add":
        rank = len(attrs["window"])
        attrs.update(base_dilation=ints(p["base_dilation"] or [1] * rank),
                     window_dilation=ints(p["window_dilation"] or [1] * rank))
    q.one(e, q.prim, **attrs)


def _dot_general(e: Emitter, q: Eqn) -> None:
    (lc, rc), (lb, rb) = q.params["dimension_numbers"]
    out = q.outs[0]
    inputs = [as_dtype(e, v, m, out.dtype) for v, m in zip(q.inputs, q.metas)]
    attrs = matmul_attrs(len(q.metas[0].shape), len(q.metas[1].shape), lc, rc, lb, rb)
    e.emit("matmul", inputs, out, **attrs)


def _conv(e: Emitter, q: Eqn) -> None:
    p = q.params
    dn = p["dimension_numbers"]
    n = len(q.metas[0].shape) - 2
    if isinstance(p["padding"], str):
        raise Unmapped(f"padding {p['padding']!r} not resolved to numbers")
    form = forms.ConvForm(dim_tuple(dn.lhs_spec), dim_tuple(dn.rhs_spec), dim_tuple(dn.out_spec), dim_tuple(p["window_strides"]),
                          tuple(tuple(ints(pad)) for pad in p["padding"]),
                          tuple(ints(p["lhs_dilation"] or [1] * n)), tuple(ints(p["rhs_dilation"] or [1] * n)),
                          int(p["feature_group_count"]), int(p["batch_group_count"]))
    forms.expand_conv(e, q.inputs[0], q.metas[0], q.inputs[1], q.metas[1], form, q.outs[0])


_MODES = {"GatherScatterMode.CLIP": "clip", "GatherScatterMode.FILL_OR_DROP": "fill",
          "GatherScatterMode.PROMISE_IN_BOUNDS": "promise", "GatherScatterMode.ONE_HOT": "one_hot"}


def _mode(p: dict) -> str:
    return _MODES.get(str(p["mode"]), str(p["mode"]))


def _gather(e: Emitter, q: Eqn) -> None:
    dn, p = q.params["dimension_numbers"], q.params
    form = xla_gather.GatherForm(
        dim_tuple(dn.offset_dims), dim_tuple(dn.collapsed_slice_dims), dim_tuple(dn.start_index_map), dim_tuple(p["slice_sizes"]),
        len(q.metas[1].shape) - 1, dim_tuple(dn.operand_batching_dims), dim_tuple(dn.start_indices_batching_dims), _mode(p),
        None if p.get("fill_value") is None else scalar_of(p["fill_value"]))
    xla_gather.expand_gather(e, q.inputs[0], _value_meta(q, 0), q.inputs[1], _value_meta(q, 1), form, q.outs[0])


_SCATTER_KINDS = {"scatter": "set", "scatter-add": "add", "scatter_add": "add", "scatter-sub": "sub",
                  "scatter-mul": "mul", "scatter-min": "min", "scatter-max": "max"}


def _scatter(e: Emitter, q: Eqn) -> None:
    dn, p = q.params["dimension_numbers"], q.params
    if q.prim == "scatter" and p.get("update_jaxpr") is not None:
        raise Unmapped("a scatter applying its own update function")
    if len(q.outs) != 1:
        raise Unmapped("a scatter of several operands")
    mode = _mode(p)
    # XLA's scatter drops an out-of-bounds update, FILL_OR_DROP or PROMISE_IN_BOUNDS alike
    form = xla_gather.ScatterForm(
        dim_tuple(dn.update_window_dims), dim_tuple(dn.inserted_window_dims), dim_tuple(dn.scatter_dims_to_operand_dims),
        len(q.metas[1].shape) - 1, _SCATTER_KINDS[q.prim], dim_tuple(dn.operand_batching_dims),
        dim_tuple(dn.scatter_indices_batching_dims), "drop" if mode == "fill" else mode)
    xla_gather.expand_scatter(e, q.inputs[0], _value_meta(q, 0), q.inputs[1], _value_meta(q, 1), q.inputs[2],
                         _value_meta(q, 2), form, q.outs[0])


def _value_meta(q: Eqn, k: int) -> TensorMeta:
    meta = q.metas[k]
    return TensorMeta(q.inputs[k] if isinstance(q.inputs[k], str) else "", meta.shape, meta.dtype)


def _sort(e: Emitter, q: Eqn) -> None:
    dim = int(q.params["dimension"])
    if not all(isinstance(v, str) for v in q.inputs):
        raise Unmapped("a sort of a literal")
    keys = int(q.params["num_keys"])
    iotas = {v for v in q.inputs[keys:] if q.iotas.get(v) == dim}
    forms.expand_sort(e, q.inputs, q.metas, q.outs, dim, False, bool(q.params["is_stable"]), iotas, keys)


def _top_k(e: Emitter, q: Eqn) -> None:
    axis = int(q.params.get("axis", len(q.metas[0].shape) - 1))
    e.node("topk", q.inputs, q.outs, final=True, k=int(q.params["k"]), dim=axis, largest=True, sorted=True)


def _fft(e: Emitter, q: Eqn) -> None:
    kind = q.params["fft_type"]
    kind = getattr(kind, "name", kind)  # lax.FftType (an IntEnum: its str is the number) or its name
    forms.emit_fft(e, q.inputs, q.metas[0], q.outs[0], kind, [int(n) for n in q.params["fft_lengths"]])


def _conj(e: Emitter, q: Eqn) -> None:
    if not q.metas[0].dtype.startswith("complex"):
        raise Unmapped("lax.conj of a real operand: a complex result, where the common view's conj keeps it real")
    q.one(e, "conj")


def _cholesky(e: Emitter, q: Eqn) -> None:
    linalg.cholesky_primitive(e, q.inputs[0], q.outs[0])


def _lu(e: Emitter, q: Eqn) -> None:
    linalg.lu_primitive(e, q.inputs[0], q.outs)


def _qr(e: Emitter, q: Eqn) -> None:
    linalg.qr_primitive(e, q.inputs[0], q.outs, bool(q.params["full_matrices"]), bool(q.params.get("pivoting")))


def _eigh(e: Emitter, q: Eqn) -> None:
    p = q.params
    linalg.eigh_primitive(e, q.inputs[0], q.metas[0], q.outs, q.dropped, bool(p["lower"]), bool(p["sort_eigenvalues"]),
                          p.get("subset_by_index"), p.get("algorithm"))


def _svd(e: Emitter, q: Eqn) -> None:
    p = q.params
    # full_matrices shapes u and vt only, which are mapped only where dropped (or not computed)
    linalg.svd_primitive(e, q.inputs[0], q.metas[0], q.outs, q.dropped, p.get("subset_by_index"), p.get("algorithm"))


def _triangular_solve(e: Emitter, q: Eqn) -> None:
    p = q.params
    if p["conjugate_a"] and q.metas[0].dtype.startswith("complex"):
        raise Unmapped("the conjugate of a complex matrix")
    linalg.triangular_solve(e, q.inputs[0], q.metas[0], q.inputs[1], q.outs[0], left_side=bool(p["left_side"]),
                            lower=bool(p["lower"]), transpose_a=bool(p["transpose_a"]),
                            unit_diagonal=bool(p["unit_diagonal"]))


def _tridiagonal_solve(e: Emitter, q: Eqn) -> None:
    linalg.tridiagonal_solve_primitive(e, *q.inputs, q.metas[3], q.outs[0], bool(q.params["perturb_singular"]))


register(list(SCANS), _scan, ("axis", "reverse"))


register("gather", _gather, ("dimension_numbers", "slice_sizes", "mode", "fill_value"))
register(list(_SCATTER_KINDS), _scatter, ("dimension_numbers", "mode", "update_jaxpr", "update_consts"))
register("dot_general", _dot_general, ("dimension_numbers", "preferred_element_type"))
register("conv_general_dilated", _conv, ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                                          "dimension_numbers", "feature_group_count", "batch_group_count",
                                          "preferred_element_type"))
register("reduce_sum", _reduce("sum"), ("axes",))
register("reduce_max", _reduce("amax"), ("axes",))
register("reduce_min", _reduce("amin"), ("axes",))
register("reduce_prod", _reduce("prod"), ("axes",))
register("reduce_and", _bitwise_reduce("all", "reduce_and"), ("axes",))
register("reduce_or", _bitwise_reduce("any", "reduce_or"), ("axes",))
register("reduce_xor", _bitwise_reduce("", "reduce_xor"), ("axes",))
register(["argmax", "argmin"], _arg_reduce, ("axes", "index_dtype"))
register("reduce", _generic_reduce, ("computation", "jaxpr", "dimensions"))
register("reduce_window_sum", _reduce_window_of("sum"), ("window_dimensions", "window_strides", "padding",
                                                           "base_dilation", "window_dilation"))
register("reduce_window_max", _reduce_window_of("amax"), ("window_dimensions", "window_strides", "padding",
                                                            "base_dilation", "window_dilation"))
register("reduce_window_min", _reduce_window_of("amin"), ("window_dimensions", "window_strides", "padding",
                                                            "base_dilation", "window_dilation"))
register("reduce_window", _reduce_window, ("jaxpr", "consts", "window_dimensions", "window_strides", "padding",
                                            "base_dilation", "window_dilation"))
register("select_and_scatter_add", _select_window, ("select_prim", "window_dimensions", "window_strides",
                                                     "padding"))
register("select_and_gather_add", _select_window, ("select_prim", "window_dimensions", "window_strides", "padding",
                                                    "base_dilation", "window_dilation"))
register("sort", _sort, ("dimension", "is_stable", "num_keys"))
register("top_k", _top_k, ("k", "axis"))


register("while", _while, ("cond_jaxpr", "body_jaxpr", "cond_nconsts", "body_nconsts"))
register("cond", _cond, ("branches",))
register("fft", _fft, ("fft_type", "fft_lengths"))
register("conj", _conj, ("input_dtype",))
register("cholesky", _cholesky)
register("lu", _lu)
register("tridiagonal_solve", _tridiagonal_solve, ("perturb_singular",))
register("geqrf", lambda e, q: q.one(e, "geqrf"))
register("householder_product", lambda e, q: q.one(e, "householder_product"))
register("qr", _qr, ("full_matrices", "pivoting", "use_magma"))  # use_magma: which GPU library computes it
register("eigh", _eigh, ("lower", "sort_eigenvalues", "subset_by_index", "algorithm"))
register("svd", _svd, ("full_matrices", "compute_uv", "subset_by_index", "algorithm"))
register("triangular_solve", _triangular_solve, ("left_side", "lower", "transpose_a", "conjugate_a",
                                                  "unit_diagonal"))
