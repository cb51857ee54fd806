"""Thunder traces -> the common view.

A Thunder trace (`TraceCtx`) is a list of bound symbols (`BoundSymbol`): a symbol (`bsym.sym`,
with a `name` and an `id`), its arguments (`bsym.args` / `bsym.kwargs`, holding proxies and
literals), its outputs (`bsym.flat_proxy_outs`) and the symbols it decomposes into
(`bsym.subsymbols`: Thunder's own decomposition, down to its primitives). Three kinds of symbols
appear in the traces Thunder keeps:

- torch-level symbols (`thunder.torch`, printed `ltorch.mul`), whose `id` is the torch name
  they stand for (`torch.mul`, `torch.nn.functional.gelu`, `torch.Tensor.view`);
- primitives (`thunder.core.prims`, printed `prims.mul`), whose `id` is a `PrimIDs` member;
- executor symbols in the execution traces (`torch.mul` run by the torch executor,
  `TorchCompile0` / `nvFusion0` fusion regions). An executor symbol stands for the thunder
  symbol it implements: its only subsymbol, or the symbol (or primitive) it was registered
  like; a fusion region (`sym.is_fusion`) keeps the fused ops as its subsymbols, which become
  nodes whose `scope` is the region's name, so a backend can map its kernels onto them.

A symbol becomes the canonical op its name table entry (`ops.py`) says, when the entry
maps every argument of the call. Otherwise it is expanded into its subsymbols, recursively:
their nodes keep their own native name, and `scope` names the symbols they were expanded from
(`ltorch.cross_entropy/ltorch.nll_loss`); one with no subsymbols, or whose decomposition is not
what Thunder runs (`torch_fallback.KEPT_WHOLE`), by torch's decomposition of the torch function it
stands for (`torch_fallback`). Only a symbol with none of these becomes
`unknown:<native>`, its reason in attrs `reason`. Bookkeeping symbols (unpacking arguments,
return, del, comments, checks) become the graph's inputs and outputs or are dropped.

A `prims.copy_` (an in-place update) gives the tensor it writes a new value, read from there on;
through a view, the view's base and every other tensor sharing its memory too (views.py).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from irlens.core.ir import LEVELS, Arg, Graph, Node, TensorMeta
from irlens.frontends.thunder import torch_fallback
from irlens.frontends.thunder.call import (Call, Spec, Unmapped, arg, dtype_name, is_node_output, is_symbolic,
                                           is_tensor, is_value, output_metas, tensor_meta)
from irlens.frontends.thunder.normalize_movement import convert
from irlens.frontends.thunder.ops import (  # noqa: F401  (NAME_TABLE, TORCH_OPS, PRIMS_OPS: the tables)
    NAME_TABLE, PRIMS_OPS, TABLE, TORCH, TORCH_OPS, normalize)
from irlens.frontends.thunder.views import Views, chain_of
from irlens.core.ops import conform, node_problem

# Symbols that carry no computation: argument unpacking (-> Graph.inputs), return (-> Graph.outputs),
# deletes, comments, checks and collection bookkeeping.
_BOOKKEEPING_PREFIXES = ("unpack_", "check_", "assert_", "pack_")
_BOOKKEEPING = {
    "python_return", "python_del", "del", "comment", "python_print", "python_vars", "sink", "put_grad",
    "clear_mutable_collection", "construct_tuple", "shape", "python_dataclass_new",
}
# The cotangent handed to the backward in the grad-transform trace: a graph input.
_GRAD_INPUTS = {"get_grad"}


@dataclass
class ExecutionGroup:
    """What one top-level bound symbol of a trace runs as: a fusion region (`TorchCompile0`,
    `nvFusion0`) or one op outside any fusion, and the common-view nodes it produced."""

    name: str  # the region's name, or the op as printed (torch.matmul)
    fusion: bool
    node_ids: list[str]
    bsym: Any  # the bound symbol (a fusion's callable is in its call context)


def trace_to_graph(trace, *, name: str, frontend: str = "thunder", stage: str, level: str = "composite") -> Graph:
    """The common view of one Thunder trace (`level` composite, or primitive via decompose)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    graph, _ = trace_to_graph_and_groups(trace, name=name, frontend=frontend, stage=stage)
    if level == "composite":
        return graph
    from irlens.core.decompose import to_primitive  # lazily: the decomposition pass is optional here

    return to_primitive(graph)


def trace_to_graph_and_groups(trace, *, name: str, frontend: str = "thunder",
                              stage: str) -> tuple[Graph, list[ExecutionGroup]]:
    """The composite common view of a trace, and what each top-level bound symbol became."""
    builder = _GraphBuilder()
    groups: list[ExecutionGroup] = []
    returned: Any = None
    for bsym in trace.bound_symbols:
        sym_name = bsym.sym.name
        if sym_name == "python_return":
            returned = bsym.args[0] if len(bsym.args) == 1 else bsym.args
        elif sym_name.startswith("unpack_") or sym_name in _GRAD_INPUTS:
            builder.add_inputs(bsym.flat_proxy_outs)
        elif _is_bookkeeping(sym_name):
            continue
        elif bsym.sym.is_fusion:
            ids = [i for sub in bsym.subsymbols for i in builder.add(sub, scope=sym_name)]
            groups.append(ExecutionGroup(sym_name, True, ids, bsym))
        else:
            ids = builder.add(bsym, scope="")
            groups.append(ExecutionGroup(bsym.name_with_module(), False, ids, bsym))
    outputs = builder.finish(_output_names(returned))
    graph = Graph(name, frontend, stage, "composite", builder.inputs, builder.nodes, outputs)
    return graph, groups


def native_name(bsym) -> str:
    """The key a bound symbol is looked up by: primitives `prims.<name>`, torch-level and executor
    symbols their string id (`torch.mul`, `sdpaex_...`)."""
    from thunder.core.prims import PrimIDs

    sym = bsym.sym
    if isinstance(sym.id, PrimIDs):
        return f"prims.{sym.name}"
    return sym.id if isinstance(sym.id, str) else bsym.name_with_module()


def resolve(bsym) -> tuple[Any, str]:
    """(the bound symbol to normalize, its table key). An executor symbol stands for what it
    implements: its only subsymbol when that one gives the same outputs (`torch.mul` around
    `ltorch.mul`), else the symbol it was registered like, or the primitive whose meta it
    shares (`torch_pad_prim_impl`); its arguments follow that symbol's signature."""
    while True:
        key = native_name(bsym)
        if key in TABLE or bsym.sym.executor is None:
            return bsym, key
        subs = bsym.subsymbols
        if len(subs) == 1 and _names(subs[0].flat_proxy_outs) == _names(bsym.flat_proxy_outs):
            bsym = subs[0]
            continue
        implemented = _implemented(bsym.sym)
        return bsym, implemented if implemented is not None else key


def _implemented(sym) -> str | None:
    """The table key of the thunder symbol an executor operator implements: the symbol it was
    registered like (its meta); else the torch function of its name in its module (Thunder's
    torch fallback names its operators so: `norm` in torch.linalg stands for torch.linalg.norm);
    else the one symbol it is registered as the implementation of."""
    from thunder.core.symbol import Symbol

    if isinstance(sym.meta, Symbol):
        return native_name(_Bare(sym.meta))
    module = getattr(sym.module, "__name__", None)
    if module is not None and f"{module}.{sym.name}" in torch_fallback.torch_functions():
        return f"{module}.{sym.name}"
    return _implementations().get(sym.id)


@dataclass
class _Bare:
    """A symbol in the place of a bound symbol, for `native_name`."""

    sym: Any

    def name_with_module(self) -> str:
        return self.sym.name


@functools.cache
def _implementations() -> dict[str, str]:
    """executor operator id -> the table key of the one symbol it implements (operators that
    implement several are left out: their meta or their subsymbol says which)."""
    from thunder.core import prims
    from thunder.core.prims import PrimIDs
    from thunder.core.symbol import Symbol
    from thunder.extend import get_all_executors

    prim_names = {s.id: f"prims.{s.name}" for s in vars(prims).values() if isinstance(s, Symbol)
                  and isinstance(s.id, PrimIDs)}
    found: dict[str, set[str]] = {}
    for ex in get_all_executors():
        for sym_id, info in getattr(ex, "implmap", {}).items():
            if getattr(info, "symbol", None) is not None:
                key = prim_names.get(sym_id, sym_id)
                if isinstance(key, str):
                    found.setdefault(info.symbol.id, set()).add(key)
    return {op: next(iter(keys)) for op, keys in found.items() if len(keys) == 1}


# --- building the graph -------------------------------------------------------------------

@dataclass
class _GraphBuilder:
    inputs: list = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    _ids: set[str] = field(default_factory=set)
    _defined: set[str] = field(default_factory=set)
    # every 0-d value by name: the metadata of a symbolic number (`prims.item`'s), which later symbols read
    _numbers: dict[str, TensorMeta] = field(default_factory=dict)
    # what in-place writes (`prims.copy_`) did: each written tensor's new value (the acquired trace
    # reads a tensor an in-place op updated, `y.add_(v)`, `y[i] = v`, by its old name, Thunder's later
    # passes by the new), and the tensors that share memory with it (views.py)
    _views: Views = field(default_factory=Views)

    def read(self, name: Arg) -> Arg:
        """The name of a tensor's value now: a view of memory written since re-derived (views.py)."""
        return self._views.read(name, self._emit) if isinstance(name, str) else name

    def finish(self, outputs: list[Arg]) -> list[Arg]:
        """The graph's outputs (their values now); a write whose effect a read could not see, unknown."""
        names = list(dict.fromkeys(self.read(n) for n in outputs))
        for at, reason in self._views.flags.items():
            node = self.nodes[at]
            node.op, node.attrs = f"unknown:{node.native}", {"reason": reason}
        return names

    def _note_views(self, bsym, inner, key: str, mark: int, scope: str) -> None:
        """Record which tensors `bsym` (`inner`, `key`: what it stands for; `scope` empty where the trace
        calls it) makes share memory, and how: a view op's outputs its first input's (a conversion, `to`,
        `type_as`, `double`, that changes nothing: the input itself; reshape, flatten, contiguous: a view
        or a copy, not known here); update_aliases' new names their tensors', all of its tensors one
        memory (as Thunder's alias analysis found)."""
        args = [a for a in bsym.flat_proxy_args if is_tensor(a)]
        outs = [o for o in bsym.flat_proxy_outs if is_tensor(o)]
        if bsym.sym.name in _FRESH:  # a new allocation: Thunder's alias groups (conservative) cannot join it
            for out in outs:
                self._views.own(out.name)
            return
        kind = _view_kind({bsym.sym.id, inner.sym.id, key}) or (None if scope else _CALLED_VIEWS.get(key))
        converts = inner.sym.name == "to" or (key in TORCH and TORCH[key].normalize is convert)
        if bsym.sym.name == "update_aliases":
            pairs = list(zip(args, outs))
        elif (kind is not None or converts) and args:
            pairs = [(args[0], o) for o in outs]
        else:
            return
        for source, out in pairs:
            steps = chain_of(self.nodes[mark:], self._views.value(source.name), source.shape, out.name)
            if converts:  # torch's conversions give their input itself unless they change it
                call = Call(inner).args
                if (call.get("copy") or dtype_name(source.dtype) != dtype_name(out.dtype)
                        or str(source.device) != str(out.device)):
                    self._views.own(out.name)
                    continue
                if _sets_layout(call.get("memory_format")):  # itself or a copy, as its strides decide
                    steps = None
            elif kind == "maybe":
                steps = None
            self._views.note(source.name, out.name, steps)
        if bsym.sym.name == "update_aliases":
            self._views.join([t.name for t in args + outs])

    def _emit(self, op: str, inputs: list[Arg], attrs: dict, shape: tuple, dtype: str, native: str, hint: str) -> str:
        """One node the adapter adds to follow a write (views.py); the name of its output."""
        name, k = hint, 0
        while name in self._defined or name in self._ids:
            k += 1
            name = f"{hint}_{k}"
        self._commit([Node(name, op, list(inputs), [TensorMeta(name, tuple(shape), dtype)], dict(attrs), native)])
        return name

    def add_inputs(self, proxies) -> None:
        for p in proxies:
            meta = tensor_meta(p)
            if meta is not None and meta.name not in self._defined:
                self.inputs.append(meta)
                self._defined.add(meta.name)

    def add(self, bsym, scope: str) -> list[str]:
        """Append the nodes `bsym` normalizes to (and those re-deriving the views it reads); returns their ids."""
        mark = len(self.nodes)
        inner, key = resolve(bsym)
        if self._add(bsym, inner, key, scope) and len(self.nodes) > mark:
            self._note_views(bsym, inner, key, mark, scope)
        return [n.id for n in self.nodes[mark:]]

    def _add(self, bsym, inner, key: str, scope: str) -> bool:
        """Append the nodes of `bsym` (`inner`, `key`: what it stands for); False where it has none."""
        printed = bsym.name_with_module()
        if _is_bookkeeping(inner.sym.name):  # a shape query inside a fusion region computes nothing
            return False
        outs = [p for p in inner.flat_proxy_outs if is_node_output(p)]
        if all(o.name in self._defined for o in outs) and (outs or not _tensor_args(inner)):
            return False  # nothing new (an input or an alias of one), or constant numbers only
        reason = f"{key} has no entry in the Thunder name tables"
        if key in TABLE:
            try:
                nodes = self._nodes(normalize(key, inner), printed, scope, inner)
                problem = next((p for p in map(node_problem, nodes) if p), None)
                if problem is None:
                    self._commit(nodes)
                    if key == "prims.copy_":  # its output is copy_to's value from here on, and its views' base's
                        self._views.write(Call(inner).get("copy_to").name, outs[0].name, len(self.nodes) - 1,
                                          printed, self._emit)
                    return True
                reason = problem
            except Unmapped as e:
                reason = str(e)
        if inner.subsymbols and key not in torch_fallback.KEPT_WHOLE:
            if self._expand(inner, f"{scope}/{printed}" if scope else printed):
                return True
            reason += "; its subsymbols do not give its outputs"
        decomposed = torch_fallback.expansion(inner, key, scope)
        if decomposed is not None:
            args = {a.name for a in _tensor_args(inner)}
            for node in decomposed:  # its inputs are the symbol's arguments as named in the trace
                node.inputs = [self.read(i) if i in args else i for i in node.inputs]
            self._commit(decomposed)
            return True
        spec = Spec(f"unknown:{printed}", [arg(a) for a in inner.flat_args if is_value(a)], {"reason": reason},
                    list(inner.flat_proxy_outs))
        self._commit([self._node(spec, printed, scope)])
        return True

    def _expand(self, bsym, scope: str) -> bool:
        """Thunder's decomposition of `bsym` (its subsymbols, recursively) appended; False (nothing
        kept) when it does not define every tensor `bsym` gives."""
        mark, saved = len(self.nodes), (set(self._defined), set(self._ids), self._views.snapshot())
        for sub in bsym.subsymbols:
            self.add(sub, scope)
        if all(o.name in self._defined for o in bsym.flat_proxy_outs if is_node_output(o)):
            return True
        del self.nodes[mark:]
        self._defined, self._ids, self._views = saved
        return False

    def _nodes(self, specs: list[Spec], native: str, scope: str, bsym) -> list[Node]:
        """The nodes of one symbol's specs; a value one derives is known to those after it."""
        known = {m.name: m for m in map(tensor_meta, bsym.flat_args) if m is not None}
        known |= {a.name: self._numbers[a.name] for a in bsym.flat_args if is_symbolic(a) and a.name in self._numbers}
        nodes = []
        for spec in specs:
            nodes.append(self._node(spec, native, scope, known))
            known.update((o.name, o) for o in nodes[-1].outputs)
        return nodes

    def _node(self, spec: Spec, native: str, scope: str, known: dict | None = None) -> Node:
        outputs = output_metas(spec, known or {})
        return Node(outputs[0].name if outputs else native, spec.op, [self.read(i) for i in spec.inputs], outputs,
                    spec.attrs, native, scope)

    def _commit(self, nodes: list[Node]) -> list[str]:
        ids = []
        for node in nodes:
            while node.id in self._ids:  # ids are output names, unique in SSA traces; guard anyway
                node.id += "'"
            self._ids.add(node.id)
            self.nodes.append(conform(node))
            self._defined.update(o.name for o in node.outputs)
            self._numbers.update((o.name, o) for o in node.outputs if not o.shape)
            ids.append(node.id)
        return ids


@functools.cache
def _view_ids() -> dict[Any, str]:
    """Symbol ids (torch names, as table keys) of view ops: "always" where torch gives a view of the
    first input, "maybe" where a view or a copy as the input's strides decide (reshape, contiguous,
    to), as Thunder lists them. torch.nn.functional.unfold, which Thunder lists as a view under
    Tensor.unfold's id, is a copy (im2col): "maybe"."""
    import thunder.torch as ltorch

    ids = {s.id: "always" for s in ltorch._syms_returning_views}
    return ids | {s.id: "maybe" for s in ltorch._syms_that_may_return_views} | {"torch.nn.functional.unfold": "maybe"}


def _sets_layout(memory_format) -> bool:
    """A memory format other than the input's own (torch.preserve_format, or none given)."""
    import torch

    return memory_format is not None and memory_format != torch.preserve_format


# Primitives a trace calls itself that give views: Thunder's `.mT` and `.T` are a prims.transpose, which
# torch (and its executor: permute) makes a view; inside a fusion or a decomposition their output is the region's own.
_CALLED_VIEWS = {"prims.transpose": "always"}
# symbols whose tensors are new allocations, never views of another's memory: update_aliases may group
# them with others (six `torch.full` tensors written through setitem_, then stacked), but nothing shares
# their memory but the views made of them later
_FRESH = frozenset({"full", "full_like", "zeros", "zeros_like", "ones", "ones_like", "empty", "empty_like",
                    "new_full", "new_zeros", "new_ones", "new_empty", "arange", "iota", "tensor_from_sequence"})


def _view_kind(ids: set) -> str | None:
    kinds = {_view_ids().get(i) for i in ids} - {None}
    return "maybe" if "maybe" in kinds else next(iter(kinds), None)


def _tensor_args(bsym) -> list:
    return [a for a in bsym.flat_args if is_tensor(a)]


# --- values ---------------------------------------------------------------------------------

def _names(proxies) -> list[str]:
    return [p.name for p in proxies]


def _is_bookkeeping(sym_name: str) -> bool:
    return sym_name in _BOOKKEEPING or sym_name.startswith(_BOOKKEEPING_PREFIXES)


def _output_names(returned: Any) -> list[Arg]:
    """The tensors a trace returns. The jitted computation returns a dict ({'output': ...,
    'flat_args': ...}; the grad transform's also 'fw_flat_out', the forward's outputs beside
    the gradients in 'output'), and once split for autograd (that dict, saved-for-backward).
    Outputs are the forward outputs, then gradients and saved tensors; never the echoed args."""
    from thunder.core.pytree import tree_flatten

    parts = list(returned) if _is_split_return(returned) else [returned]
    leaves: list[Any] = []
    for part in parts:
        if isinstance(part, dict):
            keys = sorted((k for k in part if k != "flat_args"), key=lambda k: k != "fw_flat_out")
            for k in keys:
                leaves += tree_flatten(part[k])[0]
        else:
            leaves += tree_flatten(part)[0]
    names: list[Arg] = []
    for leaf in leaves:
        if is_tensor(leaf) and leaf.name not in names:
            names.append(leaf.name)
    return names


def _is_split_return(returned: Any) -> bool:
    return isinstance(returned, tuple) and len(returned) == 2 and isinstance(returned[0], dict)
