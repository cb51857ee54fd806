"""Thunder symbols that stand for a torch function Thunder does not decompose, expanded by
torch's own decomposition.

Thunder runs many torch functions whole: its torch fallback (`OpTags.AUTO_REGISTERED`: linear
algebra, special functions, pooling, losses, ...) and a few torch-level symbols without
subsymbols (argsort, cumprod). Their bound symbols say only which torch function they call:
the one the symbol was registered for (`torch_function`; symbol ids are not unique).
That call, on fake tensors of the symbol's shapes and dtypes, is traced by `make_fx` down to
core ATen with torch's core-ATen decompositions, and the FX adapter reads the ATen graph
(`irlens.frontends.dynamo.fx`, the vocabulary the Dynamo frontend's ATen graphs use). The nodes it
gives keep their ATen native names; their scope names the Thunder symbol. A call that does not
trace (data-dependent shapes, an argument torch rejects) gives nothing, and the symbol stays
unknown.

Two more kinds of symbols are read this way. An operator an executor registered with an ATen
op as its implementation (`max_pool2d_with_indices_backward`, run as
`torch.ops.aten.max_pool2d_with_indices_backward`) stands for that op. And a symbol in
`KEPT_WHOLE` is read as its torch function although Thunder decomposes it: its decomposition
is never what runs (Thunder's torch executor runs the function whole) and computes something
else (see there).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

from irlens.core.ir import Graph, Node, TensorMeta
from irlens.frontends.thunder.call import dtype_name, is_tensor, tensor_meta
from irlens.wording import article


# Symbols whose Thunder decomposition means something other than the function, read as the
# function instead. max pooling pads with -inf and takes each window's elements by a one-hot
# convolution (thunder/torch `_max_pool_helper`): 0 * -inf is NaN, so every window that
# touches the padding is NaN, where torch (which Thunder runs) gives the window's max.
# Called by parameter name: Thunder's max_pool puts return_indices before ceil_mode, torch the reverse.
KEPT_WHOLE = frozenset(f"torch.nn.functional.max_pool{n}d" for n in (1, 2, 3))


@functools.cache
def torch_functions() -> dict[str, Callable]:
    """thunder symbol id -> the torch function it stands for (the first Thunder registered)."""
    from irlens._compat import import_thunder

    mapping = import_thunder().torch._torch_to_thunder_function_map
    found: dict[str, Callable] = {}
    for fn, sym in mapping.items():
        if isinstance(getattr(sym, "id", None), str):
            found.setdefault(sym.id, fn)
    return found


@functools.cache
def _by_symbol() -> dict[int, Callable]:
    """id(thunder symbol) -> the torch function it was registered for (the first)."""
    from irlens._compat import import_thunder

    found: dict[int, Callable] = {}
    for fn, sym in import_thunder().torch._torch_to_thunder_function_map.items():
        found.setdefault(id(sym), fn)
    return found


def torch_function(sym, key: str) -> Callable | None:
    """The torch function a symbol stands for. Symbol ids are not unique: Thunder gives
    torch.Tensor.unfold's symbol the id of torch.nn.functional.unfold's. So: the function the
    symbol itself was registered for; an executor operator's by its module and name (the torch
    fallback's `torch.nn.functional.unfold`); else the first registered under `key`."""
    fn = _by_symbol().get(id(sym))
    if fn is not None:
        return fn
    module = getattr(sym, "module", None)
    fn = getattr(module, sym.name, None) if module is not None else None
    if fn is not None and torch_functions().get(f"{module.__name__}.{sym.name}") is not None:
        return fn
    return torch_functions().get(key)


def implementation(bsym) -> Callable | None:
    """The ATen op an executor operator calls, where it was registered with one
    (`register_operator(name, fn=torch.ops.aten...)`: the bound symbol's call context)."""
    import torch

    fns = list((getattr(bsym, "_call_ctx", None) or {}).values())
    if len(fns) == 1 and isinstance(fns[0], (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        return fns[0]
    return None


def expansion(bsym, key: str, scope: str) -> list[Node] | None:
    """The nodes torch's decomposition of the call gives, named into the trace: inputs are the
    symbol's tensor arguments, outputs its tensor outputs; None when it does not trace."""
    call = _torch_call(bsym, key)
    if call is None:
        return None
    fn, args, kwargs = call
    from thunder.core.pytree import tree_flatten

    leaves, spec = tree_flatten((args, kwargs))
    slots = [i for i, leaf in enumerate(leaves) if is_tensor(leaf)]
    try:
        constants = tuple(_torch_value(leaf) for leaf in leaves)
    except ValueError:
        return None
    metas = tuple((tuple(int(d) for d in leaves[i].shape), dtype_name(leaves[i].dtype)) for i in slots)
    try:
        graph = _decomposed(fn, spec, constants, tuple(slots), metas)
    except TypeError:  # an argument that cannot be a cache key (a slice): traced each time
        graph = _decomposed.__wrapped__(fn, spec, constants, tuple(slots), metas)
    if graph is None:
        return None
    outs = [p for p in bsym.flat_proxy_outs if is_tensor(p)]
    if [tuple(t.shape) for t in _output_metas(graph)] != [tuple(int(d) for d in p.shape) for p in outs]:
        return None
    names = {t.name: leaves[i].name for t, i in zip(graph.inputs, slots)}
    return _renamed(graph, names, [tensor_meta(p) for p in outs], bsym.name_with_module(), scope)


def _torch_call(bsym, key: str) -> tuple[Callable, tuple, dict] | None:
    """(torch function, args, kwargs) of the call the symbol stands for. A KEPT_WHOLE symbol's
    arguments are passed by their names (its first, the tensor, positionally), which are torch's."""
    if key in KEPT_WHOLE:
        from irlens.frontends.thunder.call import bind

        named, _ = bind(bsym)
        first = next(iter(named))
        return _functional(key), (named[first],), {k: v for k, v in named.items() if k != first}
    fn = implementation(bsym) or torch_function(bsym.sym, key)
    return None if fn is None else (fn, bsym.args, bsym.kwargs)


def _functional(key: str) -> Callable:
    import torch

    return getattr(torch.nn.functional, key.rsplit(".", 1)[1])


def _torch_value(leaf) -> Any:
    """An argument as torch takes it: tensors are filled in later; numbers, dtypes and devices
    become torch's; a symbolic value it cannot hold is a ValueError."""
    from thunder.core.devices import Device
    from thunder.core.dtypes import dtype as thunder_dtype
    from thunder.core.proxies import NumberProxy, Proxy

    import torch

    if is_tensor(leaf):
        return None
    if isinstance(leaf, NumberProxy):
        if leaf.value is None:
            raise ValueError("a symbolic number")
        return leaf.value
    if isinstance(leaf, thunder_dtype):
        return getattr(torch, dtype_name(leaf))
    if isinstance(leaf, Device):
        return torch.device(leaf.device_str())
    if isinstance(leaf, Proxy):
        raise ValueError(f"{article(type(leaf).__name__)} argument")
    return leaf


@functools.lru_cache(maxsize=512)
def _decomposed(fn: Callable, spec, constants: tuple, slots: tuple, metas: tuple) -> Graph | None:
    """The call traced down to core ATen on fake tensors (functionalized: decompositions may
    write in place), as the FX adapter reads it; None when it does not trace."""
    import torch
    from torch._decomp import core_aten_decompositions
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx
    from thunder.core.pytree import tree_flatten, tree_unflatten

    from irlens.frontends.dynamo.fx import fx_to_graph
    from irlens.core.ops._torch import torch_dtype

    def call(*tensors):
        values = list(constants)
        for i, t in zip(slots, tensors):
            values[i] = t
        args, kwargs = tree_unflatten(values, spec)
        result = fn(*args, **kwargs)
        return tuple(t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor))

    try:
        with FakeTensorMode():
            tensors = [torch.empty(shape, dtype=torch_dtype(dtype)) for shape, dtype in metas]
            gm = make_fx(call, decomposition_table=core_aten_decompositions())(*tensors)
            gm = make_fx(torch.func.functionalize(gm, remove="mutations"))(*tensors)
        return fx_to_graph(gm, name="", frontend="thunder", stage="")
    except Exception:  # noqa: BLE001  (a call that does not trace, or that the adapter rejects, stays unknown)
        return None


def _output_metas(graph: Graph) -> list[TensorMeta]:
    values = graph.values()
    return [values[o] for o in graph.outputs if isinstance(o, str) and o in values]


def _renamed(graph: Graph, inputs: dict[str, str], outputs: list[TensorMeta], native: str,
             scope: str) -> list[Node]:
    """The graph's nodes with its inputs and outputs named as in the trace, every other value
    and id prefixed by the first output's name (unique in the trace)."""
    prefix = f"{outputs[0].name}." if outputs else f"{native}."
    names = dict(inputs)
    copies = []
    for out, meta in zip(graph.outputs, outputs):
        if out in names or not isinstance(out, str):  # an input (or a literal) returned as it is: a copy
            copies.append(Node(meta.name, "copy", [names.get(out, out)], [meta], {}, native, scope))
        else:
            names[out] = meta.name

    def name(v):
        return v if not isinstance(v, str) else names.get(v, prefix + v)

    nodes = [Node(prefix + n.id, n.op, [name(i) for i in n.inputs],
                  [TensorMeta(name(o.name), o.shape, o.dtype) for o in n.outputs], dict(n.attrs), n.native,
                  f"{scope}/{native}" if scope else native)
             for n in graph.nodes]
    return nodes + copies

