"""A reference interpreter for the common view, in float64 on the CPU.

It gives every canonical op (both levels) one meaning, written once with torch ops
(`MEANINGS`), so that running a normalized graph checks the adapter that produced it
(faithfulness) and the decomposition rules (composite and primitive views of one graph must
agree). The same table is what `irlens.lower.fx` builds its GraphModules from.

The table preserves dtypes: an op computes in its operands' dtypes, and `convert`, `full` and
`iota` make the dtype their attrs name (creation ops also read a `device` attr, which a
lowering sets; the interpreter runs on the CPU). The interpreter runs it in float64: floating inputs
are cast up, and floating `dtype` attrs are read as float64 (`float64_attrs`); integer and
bool values keep their kinds. An op without a meaning here raises `Uninterpretable` naming it.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

import torch

from irlens.dtypes import TORCH_DTYPES
from irlens.ir import Graph, Node

F64 = torch.float64


class Uninterpretable(RuntimeError):
    def __init__(self, ops: Sequence[str]):
        self.ops = sorted(set(ops))
        super().__init__(f"the interpreter has no meaning for: {', '.join(self.ops)}")


def _dtype(name: str) -> torch.dtype:
    if name not in TORCH_DTYPES:
        raise ValueError(f"no torch dtype for {name!r}")
    return TORCH_DTYPES[name]


def float64_attrs(attrs: dict) -> dict:
    """`attrs` with a floating `dtype` read as float64: how the interpreter runs the table."""
    dtype = attrs.get("dtype")
    if dtype is None or not _dtype(dtype).is_floating_point:
        return attrs
    return {**attrs, "dtype": "float64"}


def _dims(a: dict, x: torch.Tensor) -> list[int]:
    dims = a.get("dims")
    return list(range(x.dim())) if dims is None else list(dims)


def _reduce(fn):
    def run(a, x):
        dims = _dims(a, x)
        if not dims:
            return x.clone()
        return fn(x, dims, a.get("keepdim", False))
    return run


def _amax(x, dims, keep):
    return torch.amax(x, dim=dims, keepdim=keep)


def _prod(x, dims, keep):
    for d in sorted(dims, reverse=True):  # highest first, so lower dims keep their index
        x = torch.prod(x, dim=d, keepdim=keep)
    return x


def _broadcast(a, x):
    shape, bdims = list(a["shape"]), a.get("broadcast_dims")
    if bdims is not None:  # place x's dims at bdims, size-1 elsewhere, then expand
        view = [1] * len(shape)
        for src, dst in enumerate(bdims):
            view[dst] = x.shape[src]
        x = x.reshape(view)
    return x.expand(shape).clone()


def _slice(a, x):
    idx = tuple(slice(s, l, st) for s, l, st in zip(a["start"], a["limit"], a.get("step") or [1] * len(a["start"])))
    return x[idx].clone()


def _matmul(a, x, y):
    if "contract" not in a:
        return torch.matmul(x, y)
    (lc, rc), (lb, rb) = a["contract"], a.get("batch", [[], []])
    # general dot: move batch dims first, contract, keep free dims in order (XLA's dot_general)
    lfree = [d for d in range(x.dim()) if d not in lc and d not in lb]
    rfree = [d for d in range(y.dim()) if d not in rc and d not in rb]
    xp = x.permute(*lb, *lfree, *lc).reshape(*[x.shape[d] for d in lb], math.prod([x.shape[d] for d in lfree]) if lfree else 1, -1)
    yp = y.permute(*rb, *rc, *rfree).reshape(*[y.shape[d] for d in rb], -1, math.prod([y.shape[d] for d in rfree]) if rfree else 1)
    out = torch.matmul(xp, yp)
    return out.reshape(*[x.shape[d] for d in lb], *[x.shape[d] for d in lfree], *[y.shape[d] for d in rfree])


def _gather(a, table, idx):
    dim = a.get("dim", 0)
    flat = torch.index_select(table, dim, idx.reshape(-1).long())
    return flat.reshape(*table.shape[:dim], *idx.shape, *table.shape[dim + 1:])


def _scatter_add(a, base, idx, src):
    dim = a.get("dim", 0)
    out = base.clone()
    moved = src.reshape(-1, *base.shape[dim + 1:]) if dim == 0 else src
    out.index_add_(dim, idx.reshape(-1).long(), moved)
    return out


def _iota(a):
    shape, dim = list(a["shape"]), a.get("dim", 0)
    r = torch.arange(shape[dim], dtype=_dtype(a.get("dtype", "int64")), device=a.get("device", "cpu"))
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return r.reshape(view).expand(shape).clone()


def _full(a):
    return torch.full(list(a["shape"]), a.get("value", 0.0), dtype=_dtype(a.get("dtype", "float64")),
                      device=a.get("device", "cpu"))


def _convert(a, x):
    return x.to(_dtype(a.get("dtype", "float64")))


def _causal_keep(L: int, S: int, device) -> torch.Tensor:
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()


def _sdpa(a, q, k, v, mask=None):
    return torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, is_causal=a.get("is_causal", False), scale=a.get("scale"))


def _sdpa_with_lse(a, q, k, v, mask=None):
    scale = a.get("scale") or 1.0 / math.sqrt(q.shape[-1])
    s = torch.matmul(q, k.transpose(-1, -2)) * scale
    if a.get("is_causal"):
        s = s.masked_fill(~_causal_keep(s.shape[-2], s.shape[-1], s.device), -math.inf)
    if mask is not None:
        s = s.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool else s + mask
    lse = torch.logsumexp(s, dim=-1)
    return torch.matmul(torch.exp(s - lse[..., None]), v), lse


def _layer_norm(a, x, w=None, b=None):
    dims = list(range(x.dim() - a.get("normalized_ndim", 1), x.dim()))
    mean = x.mean(dim=dims, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
    rstd = torch.rsqrt(var + a.get("eps", 1e-5))
    y = (x - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


def _rms_norm(a, x, w=None):
    dims = list(range(x.dim() - a.get("normalized_ndim", 1), x.dim()))
    y = x * torch.rsqrt((x * x).mean(dim=dims, keepdim=True) + a.get("eps", 1e-6))
    return y * w if w is not None else y


# The backward composites differentiate their forward meaning with autograd: grad mode is on
# even where the caller runs the table under no_grad (a lowered graph does).
def _with_grad(fn: Callable, n_diff: int):
    """A backward composite as autograd of its forward meaning: d(fn)/d(first n_diff args)."""
    @torch.enable_grad()
    def run(a, g, *args):
        leaves = [t.detach().requires_grad_(True) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
                  for t in args]
        out = fn(a, *leaves)
        diff = [t for t in leaves[:n_diff] if isinstance(t, torch.Tensor) and t.requires_grad]
        return torch.autograd.grad(out, diff, g, allow_unused=True)
    return run


@torch.enable_grad()
def _layer_norm_backward(a, g, x, mean, rstd, w=None, b=None):
    grads = a.get("grads", [True, w is not None, b is not None])
    leaves = [t.detach().requires_grad_(True) if t is not None else None for t in (x, w, b)]
    y, _, _ = _layer_norm(a, *leaves)
    wanted = [t for t, want in zip(leaves, grads) if want and t is not None]
    return tuple(torch.autograd.grad(y, wanted, g))


@torch.enable_grad()
def _sdpa_backward(a, go, q, k, v, out=None, lse=None):
    leaves = [t.detach().requires_grad_(True) for t in (q, k, v)]
    return tuple(torch.autograd.grad(_sdpa(a, *leaves), leaves, go))


def _embedding_backward(a, g, idx):
    out = torch.zeros(a["num_weights"], g.shape[-1], dtype=g.dtype, device=g.device)
    out.index_add_(0, idx.reshape(-1).long(), g.reshape(-1, g.shape[-1]))
    return out


def _scalar_tensor(v, like: torch.Tensor | None, device: str | None = None):
    """A literal operand as a 0-d tensor. A float is float64 (a 0-d operand does not promote a
    tensor operand, and the constant keeps its precision), unless the op's floating operand is
    0-d itself: then it takes that one's dtype, so that a float32 graph stays float32. It lives on
    `like`'s device, else on `device`."""
    if isinstance(v, torch.Tensor) or v is None:
        return v
    device = like.device if like is not None else device
    if isinstance(v, float):
        return torch.tensor(v, dtype=like.dtype if like is not None and like.dim() == 0 else F64, device=device)
    return torch.tensor(v, dtype=torch.bool if isinstance(v, bool) else torch.int64, device=device)


def _elementwise(fn):
    # torch's functional forms want a tensor first; literals become 0-d tensors. An op of literals
    # only computes where a lowering says (`a["device"]`, see node_attrs), else on the CPU.
    def run(a, *xs):
        like = next((x for x in xs if isinstance(x, torch.Tensor) and x.is_floating_point()), None)
        return fn(*[_scalar_tensor(x, like, a.get("device")) for x in xs])
    return run


_T = torch
MEANINGS: dict[str, Callable] = {
    **{op: _elementwise(getattr(_T, op)) for op in
       "neg abs exp exp2 log log1p expm1 tanh sqrt rsqrt reciprocal sin cos erf sigmoid sign floor ceil round "
       "logical_not isnan add sub mul div pow maximum minimum remainder atan2 eq ne lt le gt ge logical_and "
       "logical_or bitwise_and bitwise_or where".split()},
    "sum": _reduce(lambda x, d, k: torch.sum(x, dim=d, keepdim=k)),
    "amax": _reduce(_amax),
    "amin": _reduce(lambda x, d, k: torch.amin(x, dim=d, keepdim=k)),
    "prod": _reduce(_prod),
    "argmax": lambda a, x: torch.argmax(x, dim=_dims(a, x)[0], keepdim=a.get("keepdim", False)),
    "cumsum": lambda a, x: torch.cumsum(x, dim=a["dim"]),
    "matmul": _matmul,
    "reshape": lambda a, x: x.reshape(list(a["shape"])).clone(),
    "permute": lambda a, x: x.permute(*a["perm"]).clone(),
    "broadcast": _broadcast,
    "slice": _slice,
    "concat": lambda a, *xs: torch.cat([x for x in xs if x is not None], dim=a["dim"]),
    "stack": lambda a, *xs: torch.stack(xs, dim=a["dim"]),
    "gather": _gather,
    "scatter_add": _scatter_add,
    "scatter": lambda a, base, idx, src: (torch.scatter(base, a["dim"], idx.long(), src) if isinstance(src, torch.Tensor)
                                          else torch.scatter(base, a["dim"], idx.long(), float(src))),
    "copy": lambda a, x: x.clone(),
    "convert": _convert,
    "full": _full,
    "iota": _iota,
    "gelu": lambda a, x: torch.nn.functional.gelu(x, approximate=a.get("approximate", "none")),
    "relu": lambda a, x: torch.relu(x),
    "silu": lambda a, x: torch.nn.functional.silu(x),
    "dropout": lambda a, x: x.clone(),
    "softmax": lambda a, x: torch.softmax(x, dim=a["dim"]),
    "log_softmax": lambda a, x: torch.log_softmax(x, dim=a["dim"]),
    "layer_norm": _layer_norm,
    "rms_norm": _rms_norm,
    "linear": lambda a, x, w, b=None: torch.nn.functional.linear(x, w, b),
    "sdpa": _sdpa_with_lse,
    "embedding": lambda a, w, idx: torch.nn.functional.embedding(idx.long(), w),
    "mean": _reduce(lambda x, d, k: torch.mean(x, dim=d, keepdim=k)),
    "var": lambda a, x: torch.var(x, dim=_dims(a, x), correction=a.get("correction", 1), keepdim=a.get("keepdim", False)),
    "tril": lambda a, x: torch.tril(x, a.get("diagonal", 0)),
    "masked_fill": lambda a, x, m, v: x.masked_fill(m, v),
    "tanh_backward": lambda a, g, y: g * (1 - y * y),
    "sigmoid_backward": lambda a, g, y: g * y * (1 - y),
    "topk": lambda a, x: tuple(torch.topk(x, a["k"], dim=a.get("dim", -1), largest=a.get("largest", True))),
    "gelu_backward": _with_grad(lambda a, x: torch.nn.functional.gelu(x, approximate=a.get("approximate", "none")), 1),
    "silu_backward": _with_grad(lambda a, x: torch.nn.functional.silu(x), 1),
    "softmax_backward": lambda a, g, y: y * (g - (g * y).sum(dim=a["dim"], keepdim=True)),
    "log_softmax_backward": lambda a, g, y: g - torch.exp(y) * g.sum(dim=a["dim"], keepdim=True),
    "threshold_backward": lambda a, g, x: torch.where(x <= a.get("threshold", 0.0), torch.zeros_like(g), g),
    "layer_norm_backward": _layer_norm_backward,
    "sdpa_backward": _sdpa_backward,
    "embedding_backward": _embedding_backward,
}


def _as_value(t):
    if isinstance(t, torch.Tensor):
        return t.detach().to("cpu", F64 if t.is_floating_point() else t.dtype)
    return t


def interpret(graph: Graph, inputs: Sequence) -> list:
    """Run `graph` on `inputs` (one per graph input, in order); returns the graph's outputs."""
    missing = [n.op for n in graph.nodes if n.op not in MEANINGS]
    if missing:
        raise Uninterpretable(missing)
    if len(inputs) != len(graph.inputs):
        raise ValueError(f"graph {graph.stage} takes {len(graph.inputs)} inputs, got {len(inputs)}")
    env: dict[str, object] = {t.name: _as_value(v) for t, v in zip(graph.inputs, inputs)}
    for node in graph.nodes:
        args = [env[a] if isinstance(a, str) else a for a in node.inputs]
        _bind(node, MEANINGS[node.op](float64_attrs(node.attrs), *args), env)
    return [env[o] if isinstance(o, str) else o for o in graph.outputs]


def all_outputs(result, specs: list[tuple[tuple[int, ...], str]], device) -> list:
    """A meaning's result as one value per declared output (shape, dtype). Outputs past those it
    computes are zeros: the fused attention kernels' RNG state and sequence bookkeeping (philox
    seed and offset, cumulative lengths), which no canonical op reads."""
    results = list(result) if isinstance(result, (tuple, list)) else [result]
    return results + [torch.zeros(shape, dtype=_dtype(dtype), device=device) for shape, dtype in specs[len(results):]]


def output_specs(node: Node) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(o.shape), o.dtype) for o in node.outputs]


def _bind(node: Node, result, env: dict) -> None:
    results = all_outputs(result, output_specs(node), "cpu")
    for meta, value in zip(node.outputs, results):
        if isinstance(value, torch.Tensor) and value.is_floating_point():
            value = value.to(F64)
        env[meta.name] = value
