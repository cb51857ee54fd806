"""Thunder's symbols -> canonical ops: the name tables (the normalizers they name live in
`normalize_compute.py` and `normalize_movement.py`; how those read a call, in `call.py`).

Two tables, by the level a symbol lives at:
- `TORCH`: torch-level symbols (`thunder.torch`, printed `ltorch.mul`), keyed by their id, the
  torch name they stand for (`torch.mul`, `torch.nn.functional.gelu`, `torch.Tensor.view`);
- `PRIMS`: Thunder's primitives (`thunder.core.prims.PrimIDs`), keyed `prims.<name>`: every one
  that computes a tensor has an entry (`UNMAPPED_PRIMS` says why the few others have none).
Executor operators resolve to the symbol they implement (`trace.resolve`); the sdpa
executor's fused attention has entries of its own.

An entry is a canonical op and a normalizer, which reads the symbol's arguments (bound to their
parameter names) into the op's inputs and attrs in the conventions of `irlens.core.ops`. A normalizer
must account for every argument: one it leaves unread whose value is not the parameter's
default, and that is not `NEUTRAL` (it cannot change the values: device, memory format), makes
the call `Unmapped`. The graph builder then expands the symbol into Thunder's own decomposition
(its subsymbols) or, where it has none, makes it `unknown:`; a meaning is never dropped.
"""
from __future__ import annotations

from dataclasses import dataclass

from irlens.frontends.thunder.call import Call, Spec, Unmapped
from irlens.frontends.thunder.normalize_compute import (Normalizer, argsort, convolution, cumsum, embedding,
                                                        embedding_backward, log_softmax_backward, nll_loss_backward,
                                                        norm, ordered, prim_div, reduction, sdpa, softmax_like, sort,
                                                        std, topk, values, var_mean, with_dim)
from irlens.frontends.thunder.normalize_movement import (aliases, broadcast, concat, convert, copy, copy_into, empty,
                                                         flip, full, index_put, iota, item, pad, permute, randint, randn,
                                                         reshape, setitem, slice_, take, tensor_from_sequence, uniform,
                                                         unfold)
from irlens.core.ops import check_vocabulary


@dataclass(frozen=True)
class Entry:
    op: str
    normalize: Normalizer = values


def _same(names: str, normalize: Normalizer = values, prefix: str = "") -> dict[str, Entry]:
    return {f"{prefix}{n}": Entry(n, normalize) for n in names.split()}


_UNARY = ("abs acos acosh asin asinh atan atanh bitwise_not ceil cos cosh digamma erf erfc erfinv exp exp2 expm1 "
          "floor lgamma log log10 log1p log2 neg reciprocal round rsqrt sign sin sinh sqrt tan tanh trunc "
          "isfinite signbit erfcinv ndtri")
_BINARY = ("add sub mul pow maximum minimum remainder fmod atan2 eq ne lt le gt ge bitwise_and bitwise_or bitwise_xor "
           "bitwise_left_shift bitwise_right_shift nextafter zeta")

_PRIMS_ONLY = {"erfcinv", "ndtri", "zeta"}  # torch spells them torch.special.*, which Thunder decomposes

TORCH: dict[str, Entry] = {
    **_same(" ".join(n for n in f"{_UNARY} {_BINARY}".split() if n not in _PRIMS_ONLY)
            + " div where sigmoid logical_not logical_and logical_or logical_xor isnan isinf lerp", prefix="torch."),
    "torch.subtract": Entry("sub"), "torch.multiply": Entry("mul"), "torch.true_divide": Entry("div"),
    "torch.divide": Entry("div"), "torch.square": Entry("pow"), "torch.clamp": Entry("clamp", ordered("a min max")),
    # composites
    "torch.nn.functional.gelu": Entry("gelu", ordered("a", approximate="approximate")),
    "torch.relu": Entry("relu", ordered("a")), "torch.nn.functional.silu": Entry("silu", ordered("a")),
    "torch.softmax": Entry("softmax", softmax_like), "torch.log_softmax": Entry("log_softmax", softmax_like),
    "log_softmax_backward": Entry("log_softmax_backward", log_softmax_backward),
    "torch.layer_norm": Entry("layer_norm", norm), "torch.rms_norm": Entry("rms_norm", norm),
    "torch.nn.functional.linear": Entry("linear", ordered("a w bias")),
    "torch.nn.functional.scaled_dot_product_attention": Entry("sdpa", sdpa),
    "torch.nn.functional.embedding": Entry("embedding", embedding),
    "torch.ops.aten.embedding_backward": Entry("embedding_backward", embedding_backward),
    "nll_loss_backward": Entry("nll_loss_backward", nll_loss_backward),
    "torch.mean": Entry("mean", reduction), "torch.var": Entry("var", reduction),
    "torch.var_mean": Entry("var", var_mean),
    "torch.nn.functional.dropout": Entry("dropout", ordered("a", p="p", training="training")),
    "torch.tril": Entry("tril", ordered("a", diagonal="diagonal")),
    "torch.masked_fill": Entry("masked_fill", ordered("a mask value")),
    # reductions, scans, selections, matmul
    **{f"torch.{op}": Entry(op, reduction) for op in ("sum", "amax", "amin", "prod", "argmax", "argmin")},
    "torch.cumsum": Entry("cumsum", cumsum), "torch.topk": Entry("topk", topk), "torch.sort": Entry("sort", sort),
    "torch.argsort": Entry("sort", argsort),
    "torch.matmul": Entry("matmul", ordered("a b")), "torch.bmm": Entry("matmul", ordered("a b")),
    # torch.mm is torch.spmm's function: Thunder's torch-fallback symbol for both is torch.spmm
    "torch.spmm": Entry("matmul", ordered("args[0] args[1]")),
    # indexing
    "torch.index_select": Entry("take", take), "torch.gather": Entry("gather", with_dim("input index")),
    "torch.take_along_dim": Entry("gather", with_dim("a indices")),
    "torch.index_add": Entry("index_add", with_dim("a index source")),
    "torch.index_copy": Entry("index_copy", with_dim("a index source")),
    "torch.scatter_add": Entry("scatter_add", with_dim("a index src")),
    # data movement, casts, creation
    **{name: Entry("reshape", reshape) for name in (
        "torch.reshape", "torch.Tensor.view", "torch.Tensor.view_as", "torch.unsqueeze", "torch.squeeze",
        "torch.flatten", "torch.unflatten")},
    "torch.permute": Entry("permute", permute), "torch.transpose": Entry("permute", permute),
    "torch.Tensor.expand": Entry("broadcast", broadcast), "torch.Tensor.expand_as": Entry("broadcast", broadcast),
    "torch.cat": Entry("concat", concat), "torch.flip": Entry("flip", flip),
    "torch.Tensor.contiguous": Entry("copy", copy), "torch.clone": Entry("copy", copy),
    **{name: Entry("convert", convert) for name in (
        "torch.Tensor.to", "torch.Tensor.type_as", "Tensor.double", "Tensor.half", "Tensor.bfloat16")},
    "torch.full": Entry("full", full), "torch.arange": Entry("iota", iota),
    # the sdpa executor's fused attention (CUDA): forward-for-grad and backward
    **{name: Entry("sdpa", sdpa) for name in ("sdpaex_grad_forward_scaled_dot_product_efficient_attention",
                                              "sdpafx_grad_forward_scaled_dot_product_efficient_attention")},
    **{name: Entry("sdpa_backward", sdpa) for name in ("sdpaex_scaled_dot_product_efficient_attention_backward",
                                                       "sdpafx_scaled_dot_product_efficient_attention_backward")},
}

PRIMS: dict[str, Entry] = {
    **_same(_UNARY + " " + _BINARY + " where lerp frexp real imag", prefix="prims."),
    "prims.div": Entry("div", prim_div),
    # reductions and selections
    **{f"prims.{op}": Entry(op, reduction) for op in ("sum", "amax", "amin", "prod", "argmax", "argmin", "var")},
    "prims.var_mean": Entry("var", var_mean), "prims.std": Entry("var", std),
    "prims.topk": Entry("topk", topk), "prims.sort": Entry("sort", sort),
    # matmul and nn
    "prims.matmul": Entry("matmul", ordered("a b")), "prims.linear": Entry("linear", ordered("a w bias")),
    "prims.convolution": Entry("convolution", convolution),
    "prims.embedding": Entry("embedding", embedding), "prims.embedding_backward": Entry("embedding_backward",
                                                                                          embedding_backward),
    # indexing
    "prims.take": Entry("take", take), "prims.gather": Entry("gather", with_dim("a index")),
    "prims.take_along_axis": Entry("gather", with_dim("a index")),
    "prims.index_add": Entry("index_add", with_dim("a index value")),
    "prims.index_copy": Entry("index_copy", with_dim("a index value")),
    "prims.scatter": Entry("scatter", with_dim("a index src")),
    "prims.scatter_add": Entry("scatter_add", with_dim("a index value")),
    "prims.index_put": Entry("index_put", index_put), "prims.copy_with_setitem": Entry("index_put", setitem),
    # data movement and casts
    "prims.reshape": Entry("reshape", reshape), "prims.view": Entry("reshape", reshape),
    "prims.item": Entry("reshape", item),
    "prims.squeeze": Entry("reshape", reshape), "prims.broadcast_in_dim": Entry("broadcast", broadcast),
    "prims.transpose": Entry("permute", permute), "prims.slice_prim": Entry("slice", slice_),
    "prims.cat": Entry("concat", concat), "prims.flip": Entry("flip", flip), "prims.pad": Entry("pad", pad),
    "prims.unfold": Entry("unfold", unfold), "prims.convert_element_type": Entry("convert", convert),
    **{f"prims.{name}": Entry("copy", copy) for name in (
        "shallow_copy", "clone", "stride_order", "device_put", "numpy_array_to_torch_tensor")},
    "prims.copy_": Entry("copy", copy_into), "prims.update_aliases": Entry("copy", aliases),
    # creation
    "prims.full": Entry("full", full), "prims.iota": Entry("iota", iota), "prims.empty": Entry("empty", empty),
    "prims.tensor_from_sequence": Entry("constant", tensor_from_sequence),
    "prims.uniform": Entry("rand", uniform), "prims.uniform_philox": Entry("rand", uniform),
    "prims.randn": Entry("rand", randn), "prims.randint": Entry("rand", randint),
}

# Prims that compute no tensor the common view holds, or that it has no meaning for, and why.
UNMAPPED_PRIMS = {
    "bitcast": "reinterprets bits",
    "multinomial": "random sampling without a canonical op",
    "exogenous_like": "an intermediate of the grad transform",
    "_grouped_mm": "grouped matmul with data-dependent offsets",
    "py_abs": "numbers only", "py_floordiv": "numbers only", "get_and_update_rng_state": "RNG state (numbers)",
}

TORCH_OPS = {k: e.op for k, e in TORCH.items()}
PRIMS_OPS = {k: e.op for k, e in PRIMS.items()}
check_vocabulary(TORCH_OPS)
check_vocabulary(PRIMS_OPS)
TABLE: dict[str, Entry] = {**TORCH, **PRIMS}
NAME_TABLE = {k: e.op for k, e in TABLE.items()}


def normalize(key: str, bsym) -> list[Spec]:
    """The specs of `bsym` by its table entry; Unmapped if the entry cannot carry every argument."""
    entry = TABLE[key]
    c = Call(bsym)
    try:
        specs = entry.normalize(entry.op, c)
    except (AttributeError, TypeError, ValueError, IndexError, KeyError) as e:  # an argument of a form not handled
        raise Unmapped(f"{key}: {type(e).__name__}: {e}") from e
    left = c.unread()
    if left:
        raise Unmapped(f"{key}: argument(s) {', '.join(left)} not mapped")
    return specs
