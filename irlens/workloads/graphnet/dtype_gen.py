"""A sample's graph in a half dtype, as GraphNet's dtype generalization passes make it
(graph_net/torch/dtype_gen_passes): the sample's float32 inputs and weights are cast to the
target dtype, except the normalization statistics and parameters it keeps in float32
(`keeps_float32`), and each float32 tensor argument of an op that autocast runs in low precision
(`AMP_FUNCTIONS`, `AMP_METHODS`) gets a `.to(target)` before it, where it is still float32 when
the graph runs in the target dtype. A graph that builds a float32 tensor itself (a rotary table
made with `torch.arange(..., dtype=torch.float32)`, an explicit `.float()`) then multiplies it
with half ones instead of failing on the mix. Two rules go past GraphNet's letter, so that a graph
it would keep in float32 only by a module's name runs at all: a BatchNorm's weight and bias stay
float32 beside the statistics it keeps, whatever the module is called (`batch_norm_weights`), and
an AMP op's argument in another floating dtype than the target (a float16 sample's own float16
attention mask in a bfloat16 run) is cast like a float32 one.

A copy of such a run in another dtype (the float64 reference) keeps the casts, to its own dtype:
it computes the same graph, not one that mixes float32 with float64 where the run cast to half.

`generalize` finds those arguments by running the graph once on fake tensors (shapes and dtypes,
no values) with the casts applied as it goes, and inserts a `.to` node for each: an argument
that is already in the target dtype gets none, as GraphNet drops the redundant ones. A graph
whose run needs values (an `.item()` of a weight, a boolean mask's selection: shapes that depend
on values) runs once on real ones instead, as GraphNet's ShapeProp runs it. A graph that fx cannot
trace (functorch's vmap calls) is left as it is.
"""
from __future__ import annotations

import contextlib
import inspect
import operator
from typing import Callable
from unittest import mock

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


def keeps_float32(name: str, t: torch.Tensor, dtype: torch.dtype | None, beside: frozenset[str] = frozenset()) -> bool:
    """Whether the weight `name` stays float32 in a run in `dtype`: by GraphNet's names, or as one
    of `beside` (`batch_norm_weights`)."""
    return dtype in HALF and t.dtype == torch.float32 and (_kept_name(name) or name in beside)


def batch_norm_weights(graph: nn.Module) -> frozenset[str]:
    """The forward's arguments a batch_norm takes as its weight or bias beside running statistics
    GraphNet keeps in float32. Its names find such weights only where the module is called bn
    (`bn_parameters_weight`); timm's, torchvision's and transformers' BatchNorms
    (`base_layer_modules_1_parameters_weight_`, `normalization_parameters_weight_`) would be cast
    while their statistics stay float32, a mix batch_norm refuses (`expected scalar type BFloat16
    but found Float`). Empty where fx cannot trace the graph."""
    try:
        nodes = _Tracer().trace(graph).nodes
    except Exception:  # noqa: BLE001 (such a graph runs as written: names alone decide)
        return frozenset()
    found = set()
    for node in nodes:
        if node.op != "call_function" or node.target is not F.batch_norm:
            continue
        bound = _BATCH_NORM.bind(*node.args, **node.kwargs).arguments
        statistics = [bound.get(k) for k in ("running_mean", "running_var")]
        if any(isinstance(s, fx.Node) and s.op == "placeholder" and _kept_name(s.target) for s in statistics):
            found |= {bound[k].target for k in ("weight", "bias")
                      if isinstance(bound.get(k), fx.Node) and bound[k].op == "placeholder"}
    return frozenset(found)


_BATCH_NORM = inspect.signature(F.batch_norm)


def _kept_name(name: str) -> bool:
    return any(p in name for p in KEPT_FLOAT32)


def generalize(graph: nn.Module, args: list, dtype: torch.dtype | None, device: torch.device,
               valued: Callable[[], list] | None = None) -> nn.Module:
    """`graph` (called with `args` in its forward's order: tensors and ints; a tensor on the meta
    device stands for one of its shape and dtype on `device`) with a `.to(dtype)` before each
    tensor argument of an AMP op in another floating dtype; `graph` itself for float32 (or None),
    where no argument needs one, or where fx cannot trace it. `valued()` gives the same arguments
    with values, for a graph whose fake run stops where it needs them."""
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
    except Exception:  # noqa: BLE001 (a run with values, where one is given, goes past it)
        if valued is not None:
            finder = _Float32Arguments(traced, dtype)
            try:
                with torch.no_grad():
                    finder.run(*valued())
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
        with _Recorded(self), contextlib.ExitStack() as checks:
            for name in _CHECKS:
                checks.enter_context(mock.patch.object(torch, name, self._recording(getattr(torch, name))))
            return super().trace(root, concrete_args)

    def _recording(self, fn: Callable) -> Callable:
        def call(*args, **kwargs):
            if any(isinstance(a, fx.Proxy) for a in tree_leaves((args, kwargs))):
                return self.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return call

    def proxy(self, node: fx.Node) -> fx.Proxy:
        return _SettableProxy(node, self)


# Dynamo's checks of a size that depends on values (`torch._check_is_size(sym_size_int)`, torch_geometric's
# graphs after a boolean mask): plain functions that would test a proxy's truth, recorded as calls instead
_CHECKS = ("_check", "_check_is_size")


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
    """Runs the graph with each tensor argument of an AMP op in another floating dtype (float32,
    where GraphNet's pass looks) cast to `dtype`, noting (node, position or keyword) of each it cast."""

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
        if isinstance(arg, fx.Node) and isinstance(value, torch.Tensor) and value.is_floating_point() \
                and value.dtype != self.dtype:
            self.found.append((n, key))
            return value.to(self.dtype)
        return value
