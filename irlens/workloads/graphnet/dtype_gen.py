"""A sample's graph in a half dtype, as GraphNet's dtype generalization passes make it
(graph_net/torch/dtype_gen_passes): the sample's float32 inputs and weights are cast to the
target dtype, except the normalization statistics and parameters it keeps in float32
(`keeps_float32`), and each float32 tensor argument of an op that autocast runs in low precision
(`AMP_FUNCTIONS`, `AMP_METHODS`) gets a `.to(target)` before it, where it is still float32 when
the graph runs in the target dtype. A graph that builds a float32 tensor itself (a rotary table
made with `torch.arange(..., dtype=torch.float32)`, an explicit `.float()`) then multiplies it
with half ones instead of failing on the mix.

A copy of such a run in another dtype (the float64 reference) keeps the casts, to its own dtype:
it computes the same graph, not one that mixes float32 with float64 where the run cast to half.

`generalize` finds those arguments by running the graph once on fake tensors (shapes and dtypes,
no values) with the casts applied as it goes, and inserts a `.to` node for each: an argument
that is already in the target dtype gets none, as GraphNet drops the redundant ones. A graph
that fx cannot trace (functorch's vmap calls) is left as it is.
"""
from __future__ import annotations

import operator

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from irlens.core.dtypes import HALF_DTYPES, TORCH_DTYPES

HALF = tuple(TORCH_DTYPES[n] for n in HALF_DTYPES)
AMP_FUNCTIONS = frozenset({torch.matmul, torch.mm, torch.bmm, operator.matmul, F.linear, F.conv1d, F.conv2d,
                           F.conv3d, F.scaled_dot_product_attention, torch.addmm, torch.einsum})
AMP_METHODS = frozenset({"matmul", "mm", "bmm"})
# GraphNet keeps a weight in float32 where its name holds one of these (BatchNorm's and LayerNorm's)
KEPT_FLOAT32 = ("running_mean", "running_var", "num_batches_tracked", "bn_parameters_weight", "bn_parameters_bias",
                "ln_parameters_weight", "ln_parameters_bias")


def keeps_float32(name: str, t: torch.Tensor, dtype: torch.dtype | None) -> bool:
    """Whether the weight `name` stays float32 in a run in `dtype`."""
    return dtype in HALF and t.dtype == torch.float32 and any(p in name for p in KEPT_FLOAT32)


def generalize(graph: nn.Module, args: list, dtype: torch.dtype | None, device: torch.device) -> nn.Module:
    """`graph` (called with `args` in its forward's order: tensors and ints; a tensor on the meta
    device stands for one of its shape and dtype on `device`) with a `.to(dtype)` before each
    float32 tensor argument of an AMP op; `graph` itself for float32 (or None), where no
    argument needs one, or where fx cannot trace it."""
    if dtype in (None, torch.float32):
        return graph
    try:
        traced = fx.GraphModule(graph, _Tracer().trace(graph))
    except Exception:  # noqa: BLE001 (a graph fx cannot trace runs as it was written)
        return graph
    finder = _Float32Arguments(traced, dtype)
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    try:
        with mode:
            finder.run(*[_fake(a, mode, device) for a in args])
    except Exception:  # noqa: BLE001 (the run itself says why; the casts found before it still hold)
        pass
    if not finder.found:
        return graph
    for node, key in finder.found:
        arg = node.args[key] if isinstance(key, int) else node.kwargs[key]
        with traced.graph.inserting_before(node):
            cast = traced.graph.call_method("to", (arg, dtype))
        if isinstance(key, int):
            node.update_arg(key, cast)
        else:
            node.update_kwarg(key, cast)
    traced.recompile()
    return traced


class _Tracer(fx.Tracer):
    """symbolic_trace's tracer, except that a torch call on no traced value (a graph's
    `torch.arange(...)`, `torch.full(...)`) is a node of the graph, as in the sample, and not a
    constant computed once while tracing; and a tensor it makes may be assigned into."""

    def trace(self, root, concrete_args=None):
        with _Recorded(self):
            return super().trace(root, concrete_args)

    def proxy(self, node: fx.Node) -> fx.Proxy:
        return _SettableProxy(node, self)


class _Recorded(TorchFunctionMode):
    def __init__(self, tracer: fx.Tracer):
        super().__init__()
        self.tracer = tracer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if any(isinstance(a, fx.Proxy) for a in tree_leaves((args, kwargs))):
            return func(*args, **kwargs)  # the proxy records it
        return self.tracer.create_proxy("call_function", func, args, kwargs)


class _SettableProxy(fx.Proxy):
    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})


def _fake(arg, mode: FakeTensorMode, device: torch.device):
    if not isinstance(arg, torch.Tensor):
        return arg
    if arg.is_meta:
        return torch.empty(arg.shape, dtype=arg.dtype, device=device)  # under `mode`: no storage
    return mode.from_tensor(arg.detach())


def is_amp(node: fx.Node) -> bool:
    return (node.op == "call_function" and node.target in AMP_FUNCTIONS) or \
        (node.op == "call_method" and node.target in AMP_METHODS)


class _Float32Arguments(fx.Interpreter):
    """Runs the graph with each float32 tensor argument of an AMP op cast to `dtype`, noting
    (node, position or keyword) of each it cast."""

    def __init__(self, module: fx.GraphModule, dtype: torch.dtype):
        super().__init__(module)
        self.dtype, self.found = dtype, []

    def run_node(self, n: fx.Node):
        if not is_amp(n):
            return super().run_node(n)
        with self._set_current_node(n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            args = tuple(self._cast(n, i, v, n.args[i]) for i, v in enumerate(args))
            kwargs = {k: self._cast(n, k, v, n.kwargs[k]) for k, v in kwargs.items()}
            return getattr(self, n.op)(n.target, args, kwargs)

    def _cast(self, n: fx.Node, key, value, arg):
        # only a node's own value, as GraphNet's pass: a tensor inside a list argument is left as it is
        if isinstance(arg, fx.Node) and isinstance(value, torch.Tensor) and value.dtype == torch.float32:
            self.found.append((n, key))
            return value.to(self.dtype)
        return value
