"""Common view -> a JAX function of jax.numpy / lax ops, compiled by XLA under `jax.jit`.

The function walks the graph once at trace time, each node through `JAX_OPS` (the primitive
ops; a graph with anything else is `Unsupported`). Inputs and outputs are torch tensors,
exchanged through DLPack on their device. Matmuls trace at `irlens.frontends.jax.MATMUL_PRECISION`, as the xla
backend's do. Kernels are read from the optimized HLO, one per launching ENTRY instruction,
as the xla backend reads them (`irlens.backends.xla`).
"""
from __future__ import annotations

from typing import Callable

import torch

from irlens.ir import Graph, Kernel
from irlens.lower import check_supported
from irlens.workload import to_jax

_UNARY = {"neg": "negative", "abs": "abs", "exp": "exp", "exp2": "exp2", "log": "log", "log1p": "log1p",
          "expm1": "expm1", "tanh": "tanh", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "sign": "sign",
          "floor": "floor", "ceil": "ceil", "round": "round", "logical_not": "logical_not", "isnan": "isnan",
          "reciprocal": "reciprocal"}
_BINARY = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
           "maximum": "maximum", "minimum": "minimum", "remainder": "remainder", "atan2": "arctan2", "eq": "equal",
           "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater", "ge": "greater_equal",
           "logical_and": "logical_and", "logical_or": "logical_or", "bitwise_and": "bitwise_and"}
_REDUCTIONS = {"sum": "sum", "amax": "max", "amin": "min", "prod": "prod"}


def _table() -> dict[str, Callable]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    def dims(a, x):
        d = a.get("dims")
        return tuple(range(x.ndim)) if d is None else tuple(d)

    def reduction(name):
        fn = getattr(jnp, name)
        return lambda a, x: fn(x, axis=dims(a, x), keepdims=a.get("keepdim", False)) if dims(a, x) else x

    def dtype(a, default):
        return jnp.dtype(a.get("dtype", default))

    def matmul(a, x, y):
        if "contract" not in a:
            return jnp.matmul(x, y)
        (lc, rc), (lb, rb) = a["contract"], a.get("batch", [[], []])
        return lax.dot_general(x, y, ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))))

    def broadcast(a, x):
        bdims = a.get("broadcast_dims")
        shape = tuple(a["shape"])
        if bdims is None:
            return jnp.broadcast_to(x, shape)
        return lax.broadcast_in_dim(x, shape, tuple(bdims))

    def slice_(a, x):
        step = a.get("step") or [1] * len(a["start"])
        return x[tuple(slice(s, l, st) for s, l, st in zip(a["start"], a["limit"], step))]

    def gather(a, table, idx):
        dim = a.get("dim", 0)
        return jnp.take(table, idx, axis=dim)

    def scatter_add(a, base, idx, src):
        dim = a.get("dim", 0)
        return base.at[(slice(None),) * dim + (idx.reshape(-1),)].add(src.reshape(base.shape[:dim] + (-1,) + base.shape[dim + 1:]))

    def iota(a):
        return lax.broadcasted_iota(dtype(a, "int64"), tuple(a["shape"]), a.get("dim", 0))

    table = {op: (lambda fn: lambda a, x: fn(x))(getattr(jnp, name)) for op, name in _UNARY.items()}
    table.update({op: (lambda fn: lambda a, x, y: fn(x, y))(getattr(jnp, name)) for op, name in _BINARY.items()})
    table.update({op: reduction(name) for op, name in _REDUCTIONS.items()})
    table.update({
        "rsqrt": lambda a, x: lax.rsqrt(x),
        "erf": lambda a, x: jax.scipy.special.erf(x),
        "sigmoid": lambda a, x: jax.nn.sigmoid(x),
        "where": lambda a, c, x, y: jnp.where(c, x, y),
        "argmax": lambda a, x: jnp.argmax(x, axis=dims(a, x)[0], keepdims=a.get("keepdim", False)),
        "cumsum": lambda a, x: jnp.cumsum(x, axis=a["dim"]),
        "matmul": matmul,
        "reshape": lambda a, x: jnp.reshape(x, tuple(a["shape"])),
        "permute": lambda a, x: jnp.transpose(x, tuple(a["perm"])),
        "broadcast": broadcast,
        "slice": slice_,
        "concat": lambda a, *xs: jnp.concatenate([x for x in xs if x is not None], axis=a["dim"]),
        "gather": gather,
        "scatter_add": scatter_add,
        "copy": lambda a, x: x,
        "convert": lambda a, x: x.astype(dtype(a, "float32")),
        "full": lambda a: jnp.full(tuple(a["shape"]), a.get("value", 0.0), dtype(a, "float32")),
        "iota": iota,
    })
    return table


SUPPORTED = frozenset(set(_UNARY) | set(_BINARY) | set(_REDUCTIONS) | {
    "rsqrt", "erf", "sigmoid", "where", "argmax", "cumsum", "matmul", "reshape", "permute", "broadcast",
    "slice", "concat", "gather", "scatter_add", "copy", "convert", "full", "iota"})


def to_jax_function(graph: Graph) -> Callable:
    """`fn(*inputs) -> tuple of outputs` over jax arrays."""
    check_supported(graph, SUPPORTED, "jax")
    table = _table()

    def fn(*inputs):
        env = dict(zip((t.name for t in graph.inputs), inputs))
        for node in graph.nodes:
            args = [env[a] if isinstance(a, str) else a for a in node.inputs]
            result = table[node.op](node.attrs, *args)
            results = result if isinstance(result, (tuple, list)) else (result,)
            env.update(zip((o.name for o in node.outputs), results))
        return tuple(env[o] if isinstance(o, str) else o for o in graph.outputs)

    return fn


class XlaLowered:
    """A graph as a jitted JAX function; compiled on the first call, for the inputs' shapes."""

    def __init__(self, graph: Graph, device: str, tag: str, kernel_record: Callable):
        from irlens.frontends.jax import jax_device

        self.graph, self.tag = graph, tag
        self.kernel_record = kernel_record  # the xla backend's: an optimized-HLO entry op -> Kernel
        self.fn = to_jax_function(graph)
        self.jax_device = jax_device(device)
        self.device = device
        self.compiled = None

    def _compile(self, args) -> None:
        import jax

        from irlens.frontends.jax import MATMUL_PRECISION

        with jax.default_matmul_precision(MATMUL_PRECISION):
            self.compiled = jax.jit(self.fn).lower(*args).compile()

    def __call__(self, inputs: list) -> list:
        import jax

        args = [self._to_jax(x) for x in inputs]
        if self.compiled is None:
            self._compile(args)
        outputs = jax.block_until_ready(self.compiled(*args))
        return [torch.from_dlpack(o) for o in outputs]

    def _to_jax(self, t: torch.Tensor):
        """Through DLPack, on the tensor's device (no host round trip on a GPU); int64 without
        JAX's 64-bit mode is narrowed on the host, as `irlens.workload.to_jax` does."""
        import jax

        if t.dtype == torch.int64 and not jax.config.jax_enable_x64:
            return jax.device_put(to_jax(t), self.jax_device)
        return jax.dlpack.from_dlpack(t.detach().contiguous())

    def _hlo(self):
        from irlens.ir_adapters.hlo import read_hlo

        module = self.compiled.runtime_executable().hlo_modules()[0]
        return read_hlo(module, name=self.graph.name, stage=f"{self.tag}:jax.hlo")

    def graphs(self) -> list[Graph]:
        return [self._hlo().graph]

    def kernels(self) -> list[Kernel]:
        hlo = self._hlo()
        kernels = [self.kernel_record(op, hlo.graph, "xla") for op in hlo.entry_ops]
        for k in kernels:
            k.stage = hlo.graph.stage
        return kernels


def lower(graph: Graph, device: str, tag: str, kernel_record: Callable) -> XlaLowered:
    return XlaLowered(graph, device, tag, kernel_record)
