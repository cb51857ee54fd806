"""Normalizers of compute: elementwise ops, reductions, scans and selections, and the nn
composites (norms, sdpa, embedding, convolution, softmax, losses). A normalizer reads a call's
arguments into the canonical op's inputs and attrs (`Spec`s); `ordered` and `with_dim` make one
from parameter names."""
from __future__ import annotations

from typing import Callable

from irlens.core.dtypes import HALF_DTYPES
from irlens.frontends.thunder.call import (Call, Derived, Spec, Unmapped, arg, dim, dims, dtype_name, is_exact,
                                           is_value, plain)


Normalizer = Callable[[str, Call], list[Spec]]
_ATTR_PARAMS = ("alpha", "rounding_mode")


def values(op: str, c: Call) -> list[Spec]:
    """Elementwise: every tensor or number argument is an input, in order; `alpha` scales the
    second operand (add, sub), `rounding_mode` is div's."""
    inputs = []
    for name, v in c.args.items():
        if name in _ATTR_PARAMS:
            continue
        if is_value(v):
            inputs.append(arg(c.get(name)))
        elif v is None:
            c.get(name)  # an absent optional operand; the op's arity decides
    attrs = {}
    mode = c.get("rounding_mode") if op == "div" else None
    if mode is not None:
        attrs["rounding_mode"] = mode
    if op == "pow" and len(inputs) == 1:  # torch.square
        inputs.append(2)
    alpha = plain(c.get("alpha", default=1)) if op in ("add", "sub") else 1
    if alpha not in (1, None):
        # a + alpha * b: the scaling is a node of its own
        out = c.outs[0]
        scaled = Derived(f"{out.name}_alpha")
        return [Spec("mul", [inputs[1], alpha], {}, [scaled]), Spec(op, [inputs[0], scaled.name], attrs, c.outs)]
    return c.spec(op, inputs, **attrs)


def prim_div(op: str, c: Call) -> list[Spec]:
    """prims.div truncates when both operands are exact (integers or bools), as its torch
    implementation does; else it is true division."""
    a, b = c.get("a"), c.get("b")
    if is_exact(a) and is_exact(b):
        return c.spec(op, [arg(a), arg(b)], rounding_mode="trunc")
    return c.spec(op, [arg(a), arg(b)])


def reduction(op: str, c: Call) -> list[Spec]:
    x = c.first()
    if op in ("argmax", "argmin"):  # one dim, or None: over the flattened input
        d = c.get("dim")
        return c.spec(op, [x.name], dim=None if d is None else dim(d, c.in_ndim),
                      keepdim=bool(plain(c.get("keepdim", default=False))))
    attrs = {"dims": dims(c.get("dim", "dims"), c.in_ndim), "keepdim": bool(plain(c.get("keepdim", default=False)))}
    if op == "var":
        attrs["correction"] = correction(c)
    return c.spec(op, [x.name], **attrs)


def correction(c: Call) -> float:
    corr = plain(c.get("correction"))
    unbiased = plain(c.get("unbiased"))
    if corr is None:
        corr = 0 if unbiased is False else 1
    return corr


def var_mean(op: str, c: Call) -> list[Spec]:
    """var_mean gives (var, mean): two nodes."""
    x = c.first()
    ds = dims(c.get("dim", "dims"), c.in_ndim)
    keep = bool(plain(c.get("keepdim", default=False)))
    return [Spec("var", [x.name], {"dims": ds, "keepdim": keep, "correction": correction(c)}, [c.outs[0]]),
            Spec("mean", [x.name], {"dims": ds, "keepdim": keep}, [c.outs[1]])]


def std(op: str, c: Call) -> list[Spec]:
    """prims.std: the square root of var."""
    x, out = c.first(), c.outs[0]
    v = Derived(f"{out.name}_var")
    return [Spec("var", [x.name], {"dims": dims(c.get("dims"), c.in_ndim), "keepdim": False,
                                   "correction": correction(c)}, [v]),
            Spec("sqrt", [v.name], {}, c.outs)]


def along_dim(op: str, c: Call) -> list[Spec]:
    return c.spec(op, [c.first().name], dim=dim(c.get("dim"), c.in_ndim))


def ordered(inputs: str, **attrs: str) -> Normalizer:
    """Inputs in the canonical op's order, each from the parameter(s) named ("a|input": the first
    present; an absent optional input is None); attrs from the named parameters."""
    params = [alternatives.split("|") for alternatives in inputs.split()]

    def normalize(op: str, c: Call) -> list[Spec]:
        ins = [arg(c.get(*names)) for names in params]
        return c.spec(op, ins, **{k: plain(c.get(*v.split("|"))) for k, v in attrs.items()})

    return normalize


def with_dim(inputs: str, **attrs: str) -> Normalizer:
    """`ordered` with a non-negative `dim` from the parameter `dim`."""
    base = ordered(inputs, **attrs)

    def normalize(op: str, c: Call) -> list[Spec]:
        ndim = c.in_ndim
        (spec,) = base(op, c)
        spec.attrs["dim"] = dim(c.get("dim"), max(ndim, 1))
        return [spec]

    return normalize


def norm(op: str, c: Call) -> list[Spec]:
    shape = plain(c.get("normalized_shape", default=()))
    ndim = 1 if isinstance(shape, int) else len(shape)
    x = c.first()
    inputs = [arg(x), arg(c.get("weight"))]
    if op == "layer_norm":
        inputs.append(arg(c.get("bias")))
    eps = plain(c.get("eps"))
    if eps is None:  # torch's rms_norm: the machine epsilon of the (float32 or wider) compute dtype
        import torch

        name = dtype_name(x.dtype)
        eps = torch.finfo(torch.float32 if name in HALF_DTYPES else getattr(torch, name)).eps
    return c.spec(op, inputs, normalized_ndim=ndim, eps=float(eps))


# Parameters of the sdpa executor's operators that carry no meaning for the values: RNG state
# and the sequence bookkeeping of the flash kernel.
_SDPA_BOOKKEEPING = ("philox_seed", "philox_offset", "cum_seq_q", "cum_seq_k", "max_q", "max_k")


def sdpa(op: str, c: Call) -> list[Spec]:
    # torch's and the sdpa executor's parameter names; the executor's forward-for-grad also
    # returns logsumexp and philox state, its backward takes them (and returns [dq, dk, dv]).
    names = "query key value attn_mask" if op == "sdpa" else "grad_out query key value out logsumexp attn_mask"
    inputs = [arg(c.get(n)) for n in names.split()]
    for n in _SDPA_BOOKKEEPING:
        c.get(n)
    scale, dropout_p = plain(c.get("scale")), float(plain(c.get("dropout_p", default=0.0)) or 0.0)
    attrs = {"is_causal": bool(plain(c.get("is_causal", default=False))),
             "scale": None if scale is None else float(scale)}
    if op == "sdpa":
        attrs["dropout_p"] = dropout_p
    elif dropout_p:
        raise Unmapped("sdpa backward with dropout")
    if op == "sdpa_backward" and inputs[-1] is None:
        inputs.pop()
    return c.spec(op, inputs, **attrs)


def topk(op: str, c: Call) -> list[Spec]:
    x = c.first()
    d = c.get("dim")
    return c.spec(op, [x.name], k=plain(c.get("k")), dim=dim(-1 if d is None else d, max(len(x.shape), 1)),
                  largest=bool(plain(c.get("largest", default=True))), sorted=bool(plain(c.get("sorted", default=True))))


def sort(op: str, c: Call) -> list[Spec]:
    """prims.sort(a, dim, descending, stable): the last parameter is named `sorted` in its meta."""
    x = c.first()
    d = c.get("dim")
    return c.spec(op, [x.name], dim=dim(-1 if d is None else d, max(len(x.shape), 1)),
                  descending=bool(plain(c.get("descending", default=False))),
                  stable=bool(plain(c.get("stable", "sorted", default=False))))


def argsort(op: str, c: Call) -> list[Spec]:
    """argsort is sort's indices (Thunder runs it whole)."""
    x, out = c.first(), c.outs[0]
    d = c.get("dim")
    values = Derived(f"{out.name}_values")
    return [Spec(op, [x.name], {"dim": dim(-1 if d is None else d, max(len(x.shape), 1)),
                                "descending": bool(plain(c.get("descending", default=False))),
                                "stable": bool(plain(c.get("stable", default=False)))}, [values, out])]


def embedding(op: str, c: Call) -> list[Spec]:
    """The forward's values do not depend on padding_idx, scale_grad_by_freq or sparse (they
    shape the gradient); max_norm renormalizes the weight, which the canonical op does not."""
    for neutral in ("padding_idx", "scale_grad_by_freq", "sparse", "norm_type"):
        c.get(neutral)
    if plain(c.get("max_norm")) is not None:
        raise Unmapped("embedding with max_norm")
    return c.spec(op, [arg(c.get("weight")), arg(c.get("a", "input"))])


def embedding_backward(op: str, c: Call) -> list[Spec]:
    """padding_idx -1 (what torch passes for none) is none: indices are non-negative."""
    if plain(c.get("sparse")):
        raise Unmapped("a sparse embedding gradient")
    padding_idx = plain(c.get("padding_idx"))
    return c.spec(op, [arg(c.get("grad")), arg(c.get("indices"))], num_weights=plain(c.get("num_weights")),
                  padding_idx=None if padding_idx is None or padding_idx < 0 else padding_idx,
                  scale_grad_by_freq=bool(plain(c.get("scale_grad_by_freq"))))


def convolution(op: str, c: Call) -> list[Spec]:
    weight = c.get("weight")
    spatial = len(weight.shape) - 2

    def seq(name):
        v = plain(c.get(name))
        v = [v] if isinstance(v, int) else list(v)
        return v * spatial if len(v) == 1 else v

    return c.spec(op, [c.first().name, weight.name, arg(c.get("bias"))], stride=seq("stride"), padding=seq("padding"),
                  dilation=seq("dilation"), transposed=bool(plain(c.get("transposed"))),
                  output_padding=seq("output_padding"), groups=plain(c.get("groups")))


def nll_loss_backward(op: str, c: Call) -> list[Spec]:
    return c.spec(op, [arg(c.get("g")), arg(c.get("a")), arg(c.get("target")), arg(c.get("weight")),
                       arg(c.get("total_weight"))],
                  reduction=plain(c.get("reduction")), ignore_index=plain(c.get("ignore_index")))


def softmax_like(op: str, c: Call) -> list[Spec]:
    """softmax / log_softmax(a, dim, dtype=None); a dtype is a cast the canonical op lacks."""
    if c.get("dtype") is not None:
        raise Unmapped(f"{op} with a dtype")
    return along_dim(op, c)


def log_softmax_backward(op: str, c: Call) -> list[Spec]:
    """dtype is the forward input's dtype, the gradient's: a cast unless it is the output's."""
    if dtype_name(c.get("dtype")) != c.out_dtype():
        raise Unmapped("log_softmax_backward into another dtype")
    return ordered("g output", dim="dim")(op, c)


def cumsum(op: str, c: Call) -> list[Spec]:
    """cumsum(a, dim, dtype): a dtype casts the input first (torch's semantics)."""
    x, d = c.first(), dim(c.get("dim"), max(c.in_ndim, 1))
    dtype = c.get("dtype")
    if dtype is None:
        return c.spec(op, [x.name], dim=d)
    cast = Derived(f"{c.outs[0].name}_cast")
    return [Spec("convert", [x.name], {"dtype": dtype_name(dtype)}, [cast]), Spec(op, [cast.name], {"dim": d}, c.outs)]
