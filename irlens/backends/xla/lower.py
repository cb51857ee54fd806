"""Common view -> a JAX function of jax.numpy / lax ops, compiled by XLA under `jax.jit`.

The function walks the graph once at trace time, each node through the JAX lowering declared
with its op in `irlens.core.ops` (a graph with an op that has none is `Unsupported`); a while
loop becomes `lax.while_loop` of its cond and body, each lowered the same way. Inputs and
outputs are torch tensors, exchanged through DLPack on their device. Matmuls trace at the run's
float32 policy (`irlens.core.precision.jax_matmul_precision`), as the xla backend's do. Kernels are read from the optimized HLO, one per launching ENTRY instruction,
as the xla backend reads them (`irlens.backends.xla.backend`).
"""
from __future__ import annotations

import weakref

from typing import Callable

import torch

from irlens.core.ir import Graph, Kernel, canonical_dtype
from irlens.core import precision
from irlens.backends.lowering import check_supported
from irlens.core.ops import OPS


def _resolve(name: str) -> Callable:
    """A lowering given by name: `jnp.<name>`, or a dotted path under `jax` (`lax.rsqrt`, `nn.sigmoid`)."""
    import jax
    import jax.numpy as jnp

    if "." not in name:
        return getattr(jnp, name)
    obj = jax
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def jax_lowering(op: str) -> Callable:
    """`op`'s declared JAX lowering as fn(attrs with defaults, *inputs)."""
    impl = OPS[op].lowerings["jax"]
    if isinstance(impl, str):  # a library function of the inputs alone (the op has no attrs)
        fn = _resolve(impl)
        return lambda a, *xs: fn(*xs)
    return impl


SUPPORTED = frozenset(name for name, op in OPS.items() if "jax" in op.lowerings)


def to_jax_function(graph: Graph, strict: bool = False) -> Callable:
    """`fn(*inputs) -> tuple of outputs` over jax arrays. A control-flow node's subgraphs reach
    its lowering as such functions (lax.while_loop traces them). Each node's results take their
    declared dtypes (`as_declared`; `strict`: any other dtype is an error)."""
    check_supported(graph, SUPPORTED, "jax", backend="jax")
    table = {op: jax_lowering(op) for op in {n.op for n in graph.nodes}}
    subgraphs = {n.id: {role: to_jax_function(g, strict) for role, g in n.subgraphs.items()}
                 for n in graph.nodes if n.subgraphs}

    def fn(*inputs):
        env = dict(zip((t.name for t in graph.inputs), inputs))
        for node in graph.nodes:
            args = [env[a] if isinstance(a, str) else a for a in node.inputs]
            result = table[node.op]({**OPS[node.op].attrs_of(node.attrs), **subgraphs.get(node.id, {})}, *args)
            results = as_declared(node, result if isinstance(result, (tuple, list)) else (result,), strict)
            env.update(zip((o.name for o in node.outputs), results))
        return tuple(env[o] if isinstance(o, str) else o for o in graph.outputs)

    return fn


# without JAX's 64-bit mode, 64-bit values are computed in 32 bits (inputs narrowed likewise)
_NARROWED = {"int64": "int32", "float64": "float32", "uint64": "uint32", "complex128": "complex64"}


class LoweringDtypeError(RuntimeError):
    """A lowering computed a value of another kind (float, integer, bool, complex) than the
    graph's, or, checked strictly, of another dtype at all."""


def _kind(dtype: str) -> str:
    return "float" if "float" in dtype else "integer" if "int" in dtype else dtype


def as_declared(node, results, strict: bool = False) -> tuple:
    """`node`'s lowered results, each in the dtype the graph gives it. JAX promotes where torch
    does not (a 0-d float32 tensor times bf16 is float32 in JAX, bf16 in torch, computed in float and
    rounded): a result of the declared kind is converted to the declared dtype, as torch rounds it.
    A weakly typed result (of literals only) takes the declared dtype. Another kind is the
    lowering's error; `strict` (irlens's own decomposition rules, in the tests) also refuses any
    dtype the graph does not declare."""
    import jax

    x64 = jax.config.jax_enable_x64
    checked = []
    for meta, value in zip(node.outputs, results):
        if not hasattr(value, "dtype") or not meta.dtype:
            checked.append(value)
            continue
        got, want = canonical_dtype(value.dtype), meta.dtype
        target = want if x64 else _NARROWED.get(want, want)
        weak = getattr(getattr(value, "aval", None), "weak_type", False)
        if got != target and not weak and (strict or _kind(got) != _kind(want)):
            raise LoweringDtypeError(
                f"the jax lowering of {node.op} ({meta.name}) computed {got} where the graph has {want}")
        checked.append(value.astype(target) if got != target or weak else value)
    return (*checked, *results[len(checked):])


def _key(t: torch.Tensor) -> tuple:
    """What a tensor's JAX array is known by: its memory and layout, and its version (an in-place
    write since makes it another value)."""
    return (t.data_ptr(), tuple(t.shape), t.stride(), t.dtype, t.device, t._version)


# The JAX arrays of lowered graphs' outputs, by their tensors' keys, until another lowered graph takes
# them as arguments (a forward's saved activations, which its backward takes) or their tensors go:
# converting them back through DLPack was most of XLA's fwd+bwd step on GraphNet's small graphs (0.2 ms
# a tensor on the CPU). The tensor is a view of the array's own memory, so the array is that tensor's value.
_PRODUCED: dict[tuple, object] = {}


class XlaLowered:
    """A graph as a jitted JAX function; compiled on the first call, for the inputs' shapes."""

    def __init__(self, graph: Graph, device: str, tag: str, kernel_record: Callable):
        from irlens.frontends.jax.frontend import jax_device

        self.graph, self.tag = graph, tag
        self.kernel_record = kernel_record  # the xla backend's: an optimized-HLO entry op -> Kernel
        self.fn = to_jax_function(graph)
        self.jax_device = jax_device(device)
        self.device = device
        self.compiled = None
        self._read = None  # the optimized HLO, read once
        # arguments seen again from one call to the next, converted (`_arguments`); the last call's others
        self._arrays: dict[tuple, tuple[torch.Tensor, object]] = {}
        self._seen: set[tuple] = set()

    def _compile(self, args) -> None:
        import jax

        with jax.default_matmul_precision(precision.jax_matmul_precision()):
            self.compiled = jax.jit(self.fn).lower(*args).compile()

    def __call__(self, inputs: list) -> list:
        args = self._arguments(inputs)
        if self.compiled is None:
            self._compile(args)
        # not waited for: torch.from_dlpack hands JAX its current stream to order the outputs after (on
        # the CPU, JAX's export waits for them itself), and JAX orders its reads of torch's tensors the
        # same way; a host wait per lowered graph cost ~0.8 ms a graph on the GPU
        outputs = self.compiled(*args)
        # a graph output may be None (AOTAutograd's gradient of an input that gets none)
        tensors = [None if o is None else torch.from_dlpack(o) for o in outputs]
        for t, o in zip(tensors, outputs):
            if t is not None:
                key = _key(t)
                _PRODUCED[key] = o
                weakref.finalize(t, _PRODUCED.pop, key, None)  # held no longer than its tensor
        return tensors

    def _arguments(self, inputs: list) -> list:
        """The inputs as JAX arrays. A tensor that comes back unchanged (the same storage, shape,
        strides and version: a weight, a step's input) from one call to the next keeps its array
        from then on: converting each of a GraphNet sample's hundreds of weights again on every call
        was most of XLA's timed step on small models (10 to 150 us a tensor through DLPack, a host
        round trip for int64), time a JAX program, its arrays made once, does not spend. A lowered
        graph's output (a forward's saved activation) is its own array (`_PRODUCED`). The others (a
        backward's cotangents, new every step) are converted each call and not held; of them only
        their keys are remembered, for one call. A kept array holds its tensor, so that no
        other tensor takes its storage, until a call passes it no more."""
        arrays, seen, args = {}, set(), []
        for t in inputs:
            key = _key(t)
            produced = _PRODUCED.pop(key, None)
            if produced is not None:  # another lowered graph's output (a forward's, saved for the backward)
                args.append(produced)
                continue
            kept = self._arrays.get(key) or (t, self._to_jax(t))
            if key in self._arrays or key in self._seen:
                arrays[key] = kept
            else:
                seen.add(key)
            args.append(kept[1])
        self._arrays, self._seen = arrays, seen
        return args

    def _to_jax(self, t: torch.Tensor):
        """Through DLPack, on the tensor's device (no host round trip on a GPU); int64 without
        JAX's 64-bit mode narrowed to int32 there, and only where its values fit (JAX itself would
        wrap the others silently: a LoweringDtypeError instead)."""
        import jax

        t = t.detach()
        if t.dtype == torch.int64 and not jax.config.jax_enable_x64:
            narrow = t.to(torch.int32)
            if not torch.equal(narrow.to(torch.int64), t):
                raise LoweringDtypeError(f"an int64 argument of shape {tuple(t.shape)} holds values outside int32, "
                                         "which JAX without 64-bit types cannot hold")
            t = narrow
        return jax.dlpack.from_dlpack(t.contiguous())

    def _hlo(self):
        from irlens.backends.xla.kernels import read_hlo

        if self._read is None:
            module = self.compiled.runtime_executable().hlo_modules()[0]
            self._read = read_hlo(module, name=self.graph.name, stage=f"{self.tag}:jax.hlo")
        return self._read

    def graphs(self) -> list[Graph]:
        return [self._hlo().graph]

    def kernels(self, cupti_taken: bool) -> list[Kernel]:
        hlo = self._hlo()
        kernels = [self.kernel_record(op, hlo.graph, "xla") for op in hlo.entry_ops]
        for k in kernels:
            k.stage = hlo.graph.stage
        return kernels


def lower(graph: Graph, device: str, tag: str, kernel_record: Callable) -> XlaLowered:
    return XlaLowered(graph, device, tag, kernel_record)
