"""Thunder's closed vocabulary: every primitive is mapped (or bookkeeping, or named unmapped with
its reason), and every entry of the Thunder name tables is walked: called on sample inputs
inside `thunder.jit`, it must become its canonical op (not an expansion, not unknown), and the
float64 interpreter must reproduce the call in float64, in the acquired trace and in the
execution trace, at both levels. Calls with an argument an entry cannot carry must not become
that entry's op: Thunder's decomposition (or an unknown op) stands in for them."""
from __future__ import annotations

import functools
import re
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from irlens.frontends import get_frontend
from irlens.core.interpret import interpret
from irlens.core.ir import Graph, Node, TensorMeta
from irlens.frontends.thunder import ops as thunder_ops, trace as thunder_trace
from tests.support.output_metadata import assert_outputs_inferred
from tests.support.slow_cases import marked_slow

pytestmark = pytest.mark.skipif(not get_frontend("thunder").availability(), reason="lightning-thunder not importable")


@functools.cache
def thunder():
    from irlens._compat import import_thunder

    return import_thunder()


def prims():
    return thunder().core.prims


def dt():
    return thunder().dtypes


def cpu():
    return thunder().core.devices.cpu


def inputs() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)

    def unit(*shape):  # a domain every unary function is defined on
        return 0.1 + 0.8 * torch.rand(*shape, generator=g)

    s = torch.randn(4, 5, generator=g)
    b = torch.rand(4, 5, generator=g) > 0.5
    return {
        "sinf": s / b, "x": unit(4, 5), "y": unit(4, 5), "z": unit(4, 5), "s": torch.randn(4, 5, generator=g),
        "big": 1.5 + torch.rand(4, 5, generator=g), "i": torch.randint(0, 8, (4, 5), generator=g),
        "j": torch.randint(1, 4, (4, 5), generator=g), "b": torch.rand(4, 5, generator=g) > 0.5,
        "c": torch.rand(4, 5, generator=g) > 0.5, "v": unit(5), "m": unit(5, 3), "w": unit(3, 5), "bias": unit(3),
        "bx": unit(2, 4, 5), "bm": unit(2, 5, 3), "row": torch.tensor([2, 0, 3]), "col": torch.tensor([[1, 0, 4, 4, 2]] * 4),
        "perm": torch.tensor([3, 1, 0, 2]), "src": unit(3, 5), "emb": unit(8, 5), "ids": torch.tensor([[1, 7], [0, 1]]),
        "g": torch.randn(2, 2, 5, generator=g), "img": unit(1, 2, 6), "kw": unit(3, 2, 3), "kb": unit(3),
        "q": torch.randn(1, 2, 4, 3, generator=g), "k": torch.randn(1, 2, 6, 3, generator=g),
        "vv": torch.randn(1, 2, 6, 3, generator=g), "mask": torch.rand(4, 6, generator=g) > 0.3,
        "logp": torch.log_softmax(torch.randn(4, 3, generator=g), 1), "t": torch.tensor([0, 2, 1, 1]),
        "tw": torch.tensor(4.0), "g0": torch.tensor(1.0), "fw": unit(5), "fb": unit(5), "bx1": unit(1, 4, 5),
        "ineg": torch.randint(-8, 8, (4, 5), generator=g), "r0": torch.tensor(2), "xt": unit(5, 4).T,
        "buf": unit(4, 5), "lsm": torch.log_softmax(torch.randn(4, 5, generator=g), 1),
        "k4": torch.randn(1, 2, 4, 3, generator=g), "v4": torch.randn(1, 2, 4, 3, generator=g),
        "cs": torch.complex(torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)),  # real/imag's input
        "eps0": torch.tensor(0.3), "d0": torch.tensor(0.25, dtype=torch.float64),  # hyperparameters as 0-d tensors
    }


def _prim_samples():
    p, d = prims(), dt()
    unary = {u: (lambda u: lambda t: getattr(p, u)(t.big if u == "acosh" else t.i if u == "bitwise_not"
                                                   else t.s if u == "signbit" else t.x))(u)
             for u in thunder_ops._UNARY.split()}
    binary = {}
    for b in thunder_ops._BINARY.split():
        if b.startswith("bitwise"):
            binary[b] = (lambda b: lambda t: getattr(p, b)(t.i, t.j))(b)
        elif b == "zeta":
            binary[b] = lambda t: p.zeta(t.big, t.x)
        else:
            binary[b] = (lambda b: lambda t: getattr(p, b)(t.s if b in ("remainder", "fmod", "atan2") else t.x, t.y))(b)
    return {f"prims.{k}": [f] for k, f in {**unary, **binary}.items()} | {
        "prims.div": [lambda t: p.div(t.x, t.y), lambda t: p.div(t.ineg, t.j)],  # integers: truncation
        "prims.where": [lambda t: p.where(t.b, t.x, t.y)],
        "prims.frexp": [lambda t: p.frexp(t.s)],
        # complex parts (FNet's Fourier mixing keeps the real part), of a complex input (a sample is one call:
        # a conversion inside it would be a call of its own in the trace)
        "prims.real": [lambda t: p.real(t.cs)],
        "prims.imag": [lambda t: p.imag(t.cs)],
        "prims.sum": [lambda t: p.sum(t.x, (1,))], "prims.amax": [lambda t: p.amax(t.s, (0, 1))],
        "prims.amin": [lambda t: p.amin(t.s, (0,))], "prims.prod": [lambda t: p.prod(t.x, (1,))],
        "prims.argmax": [lambda t: p.argmax(t.s, 1), lambda t: p.argmax(t.s, None)],
        "prims.argmin": [lambda t: p.argmin(t.s, 0)],
        "prims.var": [lambda t: p.var(t.s, (1,), correction=1)],
        "prims.var_mean": [lambda t: p.var_mean(t.s, (0, 1), correction=0)],
        "prims.std": [lambda t: p.std(t.s, (1,), correction=1)],
        "prims.topk": [lambda t: p.topk(t.s, 2, 1, True, True), lambda t: p.topk(t.s, 3, 0, False, True)],
        "prims.sort": [lambda t: p.sort(t.s, 1, True, True)],
        "prims.matmul": [lambda t: p.matmul(t.x, t.m)], "prims.linear": [lambda t: p.linear(t.x, t.w, t.bias)],
        "prims.convolution": [lambda t: p.convolution(t.img, t.kw, t.kb, (1,), (1,), (1,), False, (0,), 1)],
        "prims.embedding": [lambda t: p.embedding(t.ids, t.emb)],
        "prims.embedding_backward": [lambda t: p.embedding_backward(t.g, t.ids, 8, -1, False, False),
                                     lambda t: p.embedding_backward(t.g, t.ids, 8, 1, True, False)],
        "prims.take": [lambda t: p.take(t.x, t.row, 0), lambda t: p.take(t.x, t.r0, 1)],
        "prims.gather": [lambda t: p.gather(t.x, t.col, 1)],
        "prims.take_along_axis": [lambda t: p.take_along_axis(t.x, t.col, 1)],
        "prims.index_add": [lambda t: p.index_add(t.x, t.row, t.src, 0)],
        "prims.index_copy": [lambda t: p.index_copy(t.x, t.row, t.src, 0)],
        "prims.scatter": [lambda t: p.scatter(t.x, t.col, t.y, 1), lambda t: p.scatter(t.x, t.col, 0.5, 1)],
        "prims.scatter_add": [lambda t: p.scatter_add(t.x, t.col, t.y, 1)],
        "prims.index_put": [lambda t: p.index_put(t.x, [t.perm], t.y, False),
                            lambda t: p.index_put(t.x, [t.perm], t.y, True)],
        "prims.copy_with_setitem": [lambda t: p.copy_with_setitem(t.x, t.perm, t.y)],  # x[perm] = y
        "prims.reshape": [lambda t: p.reshape(t.x, (5, 4))], "prims.view": [lambda t: p.view(t.x, (2, 10))],
        "prims.squeeze": [lambda t: p.squeeze(t.bx1, (0,))],
        "prims.broadcast_in_dim": [lambda t: p.broadcast_in_dim(t.v, (4, 5), (1,))],
        "prims.transpose": [lambda t: p.transpose(t.bx, (2, 0, 1))],
        "prims.slice_prim": [lambda t: p.slice_prim(t.x, [0, 1], [4, 5], [2, 1])],
        "prims.cat": [lambda t: p.cat([t.x, t.y], 1)], "prims.flip": [lambda t: p.flip(t.x, (0, 1))],
        "prims.pad": [lambda t: p.pad(t.x, 0.5, [(1, 2, 1), (0, -1, 0)])],
        "prims.unfold": [lambda t: p.unfold(t.x, 1, 2, 2)],
        "prims.convert_element_type": [lambda t: p.convert_element_type(t.x, d.float64),
                                       lambda t: p.convert_element_type(t.big, d.int32),
                                       lambda t: p.convert_element_type(t.x, d.bfloat16)],
        "prims.shallow_copy": [lambda t: p.shallow_copy(t.x)], "prims.clone": [lambda t: p.clone(t.x)],
        "prims.stride_order": [lambda t: p.stride_order(t.x, (0, 1))],
        "prims.device_put": [lambda t: p.device_put(t.x, cpu())],
        "prims.copy_": [lambda t: p.copy_(t.x, t.buf, grad_enabled=False)],
        "prims.full": [lambda t: p.full((2, 3), 1.5, device=cpu(), dtype=d.float32)],
        "prims.iota": [lambda t: p.iota(5, start=2, step=3, device=cpu(), dtype=d.int64)],
        "prims.tensor_from_sequence": [
            lambda t: p.tensor_from_sequence([[1.5, -2.0, 4.0], [0.25, 3.0, -8.0]], dtype=d.float32, device=cpu()),
            lambda t: p.tensor_from_sequence([3, 1, 2], dtype=None, device=cpu()),
            lambda t: p.tensor_from_sequence([[True, False]], dtype=d.int32, device=cpu())],
    }


# Primitives no CPU executor runs (they appear only inside a torch-level symbol's decomposition):
# traced without running, each call with its torch reference.
def _trace_only_samples():
    p = prims()
    return {
        "prims.lerp": [(lambda t: p.lerp(t.x, t.y, t.z), lambda t: torch.lerp(t.x, t.y, t.z)),
                       (lambda t: p.lerp(t.x, t.y, 0.3), lambda t: torch.lerp(t.x, t.y, 0.3))],
        "prims.numpy_array_to_torch_tensor": [(lambda t: p.numpy_array_to_torch_tensor(t.x), lambda t: t.x)],
    }


# Entries whose values are not defined (random, uninitialized): traced only (uniform_philox runs
# on CUDA), checked for the op only.
def _unchecked_prim_samples():
    p, d = prims(), dt()
    return {
        "prims.empty": [lambda t: p.empty((2, 3), device=cpu(), dtype=d.float32)],
        "prims.uniform": [lambda t: p.uniform((2, 3), -1.0, 2.0, device=cpu(), dtype=d.float32)],
        "prims.randn": [lambda t: p.randn((2, 3), device=cpu(), dtype=d.float32)],
        "prims.randint": [lambda t: p.randint(2, 9, (2, 3), device=cpu(), dtype=d.int64)],
        "prims.uniform_philox": [lambda t: p.uniform_philox((2, 3), 0.0, 1.0, device=cpu(), dtype=d.float32, seed=7,
                                                            offset=0)],
        "prims.update_aliases": [lambda t: p.update_aliases((t.x, t.y))],
    }


def _torch_samples():
    same = {}
    for name in f"{thunder_ops._UNARY} {thunder_ops._BINARY}".split():
        if name in thunder_ops._PRIMS_ONLY:
            continue
        fn = getattr(torch, name)
        if name in thunder_ops._BINARY.split():
            same[name] = (lambda fn, name: lambda t: fn(t.i, t.j) if name.startswith("bitwise") else
                          fn(t.s if name in ("remainder", "fmod", "atan2") else t.x, t.y))(fn, name)
        else:
            same[name] = (lambda fn, name: lambda t: fn(t.big if name == "acosh" else t.i if name == "bitwise_not"
                                                        else t.s if name == "signbit" else t.x))(fn, name)
    return {f"torch.{k}": [f] for k, f in same.items()} | {
        "torch.add": [lambda t: torch.add(t.x, t.y), lambda t: torch.add(t.x, 2.0), lambda t: torch.add(t.x, t.y, alpha=2)],
        "torch.sub": [lambda t: torch.sub(t.x, t.y, alpha=0.5), lambda t: torch.sub(1, t.x)],
        "torch.pow": [lambda t: torch.pow(t.x, t.y), lambda t: torch.pow(2, t.x), lambda t: t.x ** 3],
        "torch.div": [lambda t: torch.div(t.x, t.y), lambda t: torch.div(t.s, t.y, rounding_mode="floor"),
                      lambda t: torch.div(t.s, t.y, rounding_mode="trunc"),
                      lambda t: torch.div(t.ineg, t.j, rounding_mode="floor")],
        "torch.true_divide": [lambda t: torch.true_divide(t.i, t.j)],
        "torch.divide": [lambda t: torch.divide(t.s, t.y, rounding_mode="floor")],
        "torch.subtract": [lambda t: torch.subtract(t.x, t.y)], "torch.multiply": [lambda t: torch.multiply(t.x, t.y)],
        "torch.square": [lambda t: torch.square(t.s)],
        "torch.where": [lambda t: torch.where(t.b, t.x, t.y), lambda t: torch.where(t.b, t.x, 0.0)],
        "torch.clamp": [lambda t: torch.clamp(t.s, -0.5, 0.5), lambda t: torch.clamp(t.s, min=0.1),
                        lambda t: torch.clamp(t.s, max=t.y)],
        "torch.lerp": [lambda t: torch.lerp(t.x, t.y, 0.3), lambda t: torch.lerp(t.x, t.y, t.z)],
        "torch.sigmoid": [lambda t: torch.sigmoid(t.s)], "torch.logical_not": [lambda t: torch.logical_not(t.b)],
        "torch.logical_and": [lambda t: torch.logical_and(t.b, t.c)],
        "torch.logical_or": [lambda t: torch.logical_or(t.b, t.c)],
        "torch.logical_xor": [lambda t: torch.logical_xor(t.b, t.c)],
        "torch.isnan": [lambda t: torch.isnan(t.s)], "torch.isinf": [lambda t: torch.isinf(t.sinf)],
        "torch.nn.functional.gelu": [lambda t: F.gelu(t.s), lambda t: F.gelu(t.s, approximate="tanh")],
        "torch.relu": [lambda t: torch.relu(t.s)], "torch.nn.functional.silu": [lambda t: F.silu(t.s)],
        "torch.softmax": [lambda t: torch.softmax(t.s, 1)], "torch.log_softmax": [lambda t: torch.log_softmax(t.s, 0)],
        "log_softmax_backward": [(lambda t: thunder().torch.log_softmax_backward(t.s, t.lsm, 1, dt().float32),
                                  lambda t: torch.ops.aten._log_softmax_backward_data(t.s, t.lsm, 1, t.s.dtype))],
        "torch.layer_norm": [lambda t: F.layer_norm(t.s, (5,), t.fw, t.fb), lambda t: F.layer_norm(t.bx, (4, 5))],
        # eps None is the machine epsilon of the traced dtype (float32), which the trace holds
        "torch.rms_norm": [(lambda t: F.rms_norm(t.s, (5,), t.fw),
                            lambda t: F.rms_norm(t.s, (5,), t.fw, eps=torch.finfo(torch.float32).eps)),
                           lambda t: F.rms_norm(t.s, (5,), eps=1e-3)],
        "torch.nn.functional.linear": [lambda t: F.linear(t.x, t.w, t.bias), lambda t: F.linear(t.x, t.w)],
        "torch.nn.functional.scaled_dot_product_attention": [
            lambda t: F.scaled_dot_product_attention(t.q, t.k, t.vv),
            lambda t: F.scaled_dot_product_attention(t.q, t.k4, t.v4, is_causal=True),
            lambda t: F.scaled_dot_product_attention(t.q, t.k, t.vv, attn_mask=t.mask, scale=0.3)],
        "torch.nn.functional.embedding": [lambda t: F.embedding(t.ids, t.emb), lambda t: F.embedding(t.ids, t.emb, 1)],
        "torch.ops.aten.embedding_backward": [lambda t: torch.ops.aten.embedding_backward(t.g, t.ids, 8, 7, True, False)],
        "nll_loss_backward": [
            (lambda t: thunder().torch.nll_loss_backward(t.g0, t.logp, t.t, None, "mean", -100, t.tw),
             lambda t: torch.ops.aten.nll_loss_backward(t.g0, t.logp, t.t, None, 1, -100, t.tw)),
            (lambda t: thunder().torch.nll_loss_backward(t.g0, t.logp, t.t, t.bias, "sum", 1, t.tw),
             lambda t: torch.ops.aten.nll_loss_backward(t.g0, t.logp, t.t, t.bias, 2, 1, t.tw))],
        "torch.mean": [lambda t: torch.mean(t.s, 1), lambda t: t.s.mean()],
        "torch.var": [lambda t: torch.var(t.s, 1, keepdim=True), lambda t: torch.var(t.s, correction=0)],
        "torch.var_mean": [lambda t: torch.var_mean(t.s, 0, correction=2)],
        "torch.nn.functional.dropout": [lambda t: F.dropout(t.s, 0.0), lambda t: F.dropout(t.s, 0.5, training=False)],
        "torch.tril": [lambda t: torch.tril(t.s), lambda t: torch.tril(t.s, -1)],
        "torch.masked_fill": [lambda t: t.s.masked_fill(t.b, 0.5)],
        "torch.sum": [lambda t: torch.sum(t.s, 1), lambda t: t.s.sum(), lambda t: t.s.sum((0, 1), keepdim=True)],
        "torch.amax": [lambda t: torch.amax(t.s, 1)], "torch.amin": [lambda t: torch.amin(t.s, (0, 1))],
        "torch.prod": [lambda t: torch.prod(t.x, 1)],
        "torch.argmax": [lambda t: torch.argmax(t.s, 1, keepdim=True), lambda t: torch.argmax(t.s)],
        "torch.argmin": [lambda t: torch.argmin(t.s, 0)],
        "torch.cumsum": [lambda t: torch.cumsum(t.s, 1), lambda t: torch.cumsum(t.i, 0),
                         lambda t: torch.cumsum(t.s, 1, dtype=torch.float64)],
        "torch.topk": [lambda t: torch.topk(t.s, 2), lambda t: torch.topk(t.s, 3, dim=0, largest=False)],
        "torch.sort": [lambda t: torch.sort(t.s, 1, descending=True)],
        "torch.argsort": [lambda t: torch.argsort(t.s, 0), lambda t: torch.argsort(t.s, descending=True, stable=True)],
        "torch.matmul": [lambda t: t.x @ t.m, lambda t: torch.matmul(t.bx, t.m)],
        "torch.bmm": [lambda t: torch.bmm(t.bx, t.bm)], "torch.spmm": [lambda t: torch.mm(t.x, t.m)],
        "torch.index_select": [lambda t: torch.index_select(t.x, 0, t.row)],
        "torch.gather": [lambda t: torch.gather(t.x, 1, t.col)],
        "torch.take_along_dim": [lambda t: torch.take_along_dim(t.x, t.col, 1)],
        "torch.index_add": [lambda t: torch.index_add(t.x, 0, t.row, t.src)],
        "torch.index_copy": [lambda t: torch.index_copy(t.x, 0, t.row, t.src)],
        "torch.scatter_add": [lambda t: torch.scatter_add(t.x, 1, t.col, t.y)],
        "torch.reshape": [lambda t: t.x.reshape(5, 4)], "torch.Tensor.view": [lambda t: t.x.view(-1)],
        "torch.Tensor.view_as": [lambda t: t.x.view_as(t.y)], "torch.unsqueeze": [lambda t: t.x.unsqueeze(1)],
        "torch.squeeze": [lambda t: t.bx1.squeeze(0)], "torch.flatten": [lambda t: t.bx.flatten(1)],
        "torch.unflatten": [lambda t: t.x.unflatten(1, (5, 1))],
        "torch.permute": [lambda t: t.bx.permute(2, 0, 1)], "torch.transpose": [lambda t: t.bx.transpose(0, -1)],
        "torch.Tensor.expand": [lambda t: t.v.expand(4, 5)], "torch.Tensor.expand_as": [lambda t: t.v.expand_as(t.x)],
        "torch.cat": [lambda t: torch.cat([t.x, t.y], -1)], "torch.flip": [lambda t: torch.flip(t.x, (0, -1))],
        "torch.Tensor.contiguous": [lambda t: t.xt.contiguous()], "torch.clone": [lambda t: t.x.clone()],
        "torch.Tensor.to": [lambda t: t.x.to(torch.float64), lambda t: t.big.to(torch.int64)],
        "torch.Tensor.type_as": [lambda t: t.i.type_as(t.x)], "Tensor.double": [lambda t: t.x.double()],
        "Tensor.half": [lambda t: t.x.half()], "Tensor.bfloat16": [lambda t: t.x.bfloat16()],
        "torch.full": [lambda t: torch.full((2, 3), 2.5)],
        "torch.arange": [lambda t: torch.arange(5), lambda t: torch.arange(1, 10, 2)],
    }


# A 0-d tensor's `.item()` (a number known only when the program runs) used as an operand and as
# what would be an attribute (eps, scale, p): two symbols a call. Operands: a float with float32
# (a float64 one included: no promotion), an int with int64. (Thunder traces no int number with a
# float tensor: test_a_0d_value_promotes_as_a_python_number has that pair.)
def _number_samples():
    return {"prims.item": [
        lambda t: t.x + t.eps0.item(), lambda t: t.x * t.d0.item(), lambda t: t.i * t.r0.item(),
        lambda t: F.layer_norm(t.s, (5,), t.fw, t.fb, eps=t.eps0.item()),
        lambda t: F.scaled_dot_product_attention(t.q, t.k, t.vv, scale=t.eps0.item()),
        lambda t: F.dropout(t.s, t.eps0.item(), training=False)]}


# Calls with an argument the entry cannot carry: never that entry's op at the top level.
def _unmappable_samples():
    return {
        "torch.sum": [lambda t: torch.sum(t.s, 1, dtype=torch.float64)],
        "torch.mean": [lambda t: torch.mean(t.s, 1, dtype=torch.float64)],
        "torch.softmax": [lambda t: torch.softmax(t.s, 1, dtype=torch.float64)],
        "torch.log_softmax": [lambda t: torch.log_softmax(t.s, 0, dtype=torch.float64)],
    }


# Entries that only a GPU run reaches: the sdpa executor's fused attention (tests/integration/test_thunder.py).
GPU_ONLY = {k for k in thunder_ops.TABLE if k.startswith(("sdpaex_", "sdpafx_"))}

@functools.cache
def samples(family: str) -> dict:
    """key -> calls; a trace-only family's calls are (call, torch reference) pairs."""
    return {"prims": _prim_samples, "torch": _torch_samples, "unchecked": _unchecked_prim_samples,
            "unmappable": _unmappable_samples, "trace_only": _trace_only_samples, "numbers": _number_samples}[family]()


def _call(sample):
    return sample[0] if isinstance(sample, tuple) else sample


def traced(family: str, keys: tuple[str, ...] | None = None):
    """The family's calls as one function, jitted (its traces: the acquired one first, the
    execution trace last) or, for primitives no CPU executor runs and those without defined
    values, traced only: ((key, sample index) per call, the function, the traces). With `keys`:
    those calls alone, traced only (what their symbols became; jitting runs Inductor on them)."""
    return _traced(family, keys)  # one cache entry for traced(f) and traced(f, None)


@functools.cache
def _traced(family: str, keys: tuple[str, ...] | None):
    names = list(inputs())
    calls = [(key, k, _call(fn)) for key, fns in samples(family).items() if keys is None or key in keys
             for k, fn in enumerate(fns)]

    fns = tuple(fn for _, _, fn in calls)

    def program(*tensors):  # the calls alone: Thunder's interpreter unpacking (key, k, fn) per call took 2.5x as long
        t = SimpleNamespace(**dict(zip(names, tensors)))
        return tuple([fn(t) for fn in fns])

    if keys is not None or family in ("trace_only", "unchecked"):
        from thunder.common import trace

        traces = [trace()(program, *inputs().values())]
    else:
        jfn = thunder().jit(program)
        jfn(*inputs().values())
        traces = thunder().last_traces(jfn)
    return [(key, k) for key, k, _ in calls], program, traces


def reference(family: str) -> list:
    """The calls in float64, one result (a tensor or a tuple) per call: primitives run by
    Thunder; torch functions (and the calls given a torch reference) eagerly."""
    args = [t.double() if t.is_floating_point() else t for t in inputs().values()]
    _, program, _ = traced(family)
    if family == "prims":
        return list(thunder().jit(program)(*args))
    t = SimpleNamespace(**dict(zip(inputs(), args)))
    return [(sample[1] if isinstance(sample, tuple) else sample)(t) for fns in samples(family).values()
            for sample in fns]


@functools.cache
def labeled(family: str) -> list[tuple[tuple[str, int], torch.Tensor]]:
    """The reference results, flat, each with its call's (key, sample index)."""
    calls, _, _ = traced(family)
    return [(label, r) for label, result in zip(calls, reference(family))
            for r in (result if isinstance(result, tuple) else (result,))]


def groups_by_key(family: str, which: int, keys: tuple[str, ...] | None = None) -> list:
    """(table key, the nodes its top-level symbol became) for each call (of `keys`, as traced's), in order."""
    calls, _, traces = traced(family, keys)
    graph, groups = thunder_trace.trace_to_graph_and_groups(traces[which], name=family, stage=f"trace[{which}]")
    nodes = {n.id: n for n in graph.nodes}
    keyed = [(thunder_trace.resolve(g.bsym)[1], [nodes[i] for i in g.node_ids]) for g in groups]
    return graph, keyed


def test_every_primitive_is_mapped_bookkeeping_or_unmapped_with_a_reason():
    from thunder.core import prims as thunder_prims
    from thunder.core.prims import PrimIDs
    from thunder.core.symbol import Symbol

    thunder()
    syms = {s.id: s for s in vars(thunder_prims).values() if isinstance(s, Symbol) and isinstance(s.id, PrimIDs)}
    assert set(syms) == set(PrimIDs)
    for pid, sym in syms.items():
        kinds = [f"prims.{sym.name}" in thunder_ops.PRIMS, thunder_trace._is_bookkeeping(sym.name)
                 or sym.name in thunder_trace._GRAD_INPUTS, sym.name in thunder_ops.UNMAPPED_PRIMS]
        assert sum(kinds) == 1, f"{sym.name}: mapped, bookkeeping, unmapped = {kinds}"
    assert all(thunder_ops.UNMAPPED_PRIMS.values())


def test_every_table_entry_is_walked():
    walked = {key for family in ("prims", "torch", "unchecked", "trace_only", "numbers") for key in samples(family)}
    assert set(thunder_ops.TABLE) - GPU_ONLY <= walked, sorted(set(thunder_ops.TABLE) - GPU_ONLY - walked)
    assert walked <= set(thunder_ops.TABLE), sorted(walked - set(thunder_ops.TABLE))


@pytest.mark.parametrize("family", marked_slow(["prims", "torch", "unchecked", "trace_only"], {"prims", "torch"}))
def test_each_call_becomes_its_entrys_op(family):
    """In the acquired trace, each call's symbol is the sample's key and became its entry's op,
    with no expansion: the entry carried every argument."""
    calls, _, _ = traced(family)
    _, keyed = groups_by_key(family, 0)
    assert [key for key, _ in keyed] == [key for key, _ in calls], "a sample traced as another symbol"
    for (key, k), (_, nodes) in zip(calls, keyed):
        entry = thunder_ops.TABLE[key]
        assert nodes and all(not n.scope and not n.is_unknown for n in nodes), (key, k, nodes)
        assert entry.op in {n.op for n in nodes} or (entry.op == "convert" and nodes[0].op == "copy"), (key, k, nodes)


@pytest.mark.parametrize("level", ["composite", "primitive"])
@pytest.mark.parametrize("which", [0, -1])
@pytest.mark.parametrize("family", marked_slow(["prims", "torch", "unmappable", "trace_only", "numbers"], {"prims"}))
def test_the_interpreter_reproduces_every_call(family, which, level):
    _, _, traces = traced(family)
    graph = thunder_trace.trace_to_graph(traces[which], name=family, stage=f"trace[{which}]", level=level)
    assert not graph.unknown_ops(), dict(graph.unknown_ops())
    args = [t.double() if t.is_floating_point() else t for t in inputs().values()]
    got = interpret(graph, [args[_position(t.name)] for t in graph.inputs])
    want = labeled(family)
    assert len(got) == len(want)
    for g, (label, w) in zip(got, want):
        assert g.shape == w.shape and g.dtype == (torch.float64 if w.is_floating_point() else w.dtype), label
        if w.is_floating_point():
            assert torch.allclose(g, w.double(), rtol=1e-9, atol=1e-12, equal_nan=True), (label, (g - w).abs().max())
        else:
            assert torch.equal(g, w), label


@pytest.mark.parametrize("which", [0, -1])
def test_a_symbolic_number_is_a_value_of_the_graph_never_an_attribute(which):
    """`.item()` is a 0-d value named as Thunder's number, which the ops after it take as an input;
    layer_norm's eps, sdpa's scale and dropout's p, numbers known only when the program runs, are
    no attribute: those calls are Thunder's decompositions, the number one of their inputs. Every
    node records the shapes and dtypes its op's rule infers (torch's promotion of the 0-d value)."""
    _, _, traces = traced("numbers")
    graph = thunder_trace.trace_to_graph(traces[which], name="numbers", stage=f"trace[{which}]")
    items = [n for n in graph.nodes if n.native == "prims.item"]
    assert items and all(n.op == "reshape" and n.outputs[0].shape == () for n in items), items
    readers = {n.op for n in graph.nodes if {i.id for i in items} & set(n.inputs)}
    assert {"add", "mul", "pow"} <= readers, readers  # operands, layer_norm's eps + var, sdpa's sqrt(scale)
    whole = [n for n in graph.nodes if n.op in ("layer_norm", "sdpa", "dropout") and not n.scope]
    assert not whole, whole  # (sdpa's decomposition has a dropout of its own, p a constant 0.0)
    assert_outputs_inferred(graph)


@pytest.mark.parametrize("tensor, number", [
    (torch.float32, 0.3), (torch.float32, torch.tensor(0.3, dtype=torch.float64).item()), (torch.float32, 3),
    (torch.int32, 3), (torch.int64, 3), (torch.int64, 2.5), (torch.bool, 3), (torch.bool, 2.5)])
@pytest.mark.parametrize("op", ["add", "mul"])
def test_a_0d_value_promotes_as_a_python_number(tensor, number, op):
    """The common view's 0-d value (what `.item()` becomes) meeting a tensor of dims gives, in the
    interpreter, torch's result with the Python number, in float64: no promotion within a category
    (an int32 tensor stays int32), a category above the tensor's lifts it (int with float: float)."""
    g = torch.Generator().manual_seed(0)
    x = (torch.randn(4, 5, generator=g) * 4).to(tensor)
    zero_d = {bool: torch.bool, int: torch.int64, float: torch.float64}[type(number)]
    graph = Graph("promote", "thunder", "t", "composite", [TensorMeta("x", (4, 5), str(tensor).removeprefix("torch.")),
                                                         TensorMeta("n", (), str(zero_d).removeprefix("torch."))],
                  [Node("y", op, ["x", "n"], [TensorMeta("y", (4, 5), "float64")])], ["y"])
    x64 = x.double() if x.is_floating_point() else x
    (got,) = interpret(graph, [x64, torch.tensor(number, dtype=zero_d)])
    want = getattr(torch, op)(x64, number)
    want = want.double() if want.is_floating_point() else want
    assert got.dtype == want.dtype and torch.equal(got, want), (got.dtype, want.dtype)


def _position(name: str) -> int:
    """The program's varargs are traced as t_0, t_1, ... (t0, ... when traced only); Thunder keeps
    those the calls read."""
    found = re.fullmatch(r"t_?(\d+)", name)
    assert found, name
    return int(found.group(1))


def test_an_argument_an_entry_cannot_carry_expands_the_call():
    calls, _, _ = traced("unmappable")
    _, keyed = groups_by_key("unmappable", 0)
    for (key, _), (got, nodes) in zip(calls, keyed):
        assert got == key
        assert nodes and all(n.scope for n in nodes) or all(n.is_unknown and n.attrs.get("reason") for n in nodes), \
            (key, nodes)


def test_integer_division_by_primitives_truncates():
    """prims.div on integers is C division (Thunder's torch implementation); floor division
    (Python's //) is floor: -7 // 2 is -4, prims.div(-7, 2) is -3. prims.div's calls are traced
    alone: jitting the whole family is the long tail."""
    _, keyed = groups_by_key("prims", 0, ("prims.div",))
    divs = [nodes[0] for key, nodes in keyed if key == "prims.div"]
    assert [n.attrs.get("rounding_mode") for n in divs] == [None, "trunc"]
    _, keyed = groups_by_key("torch", 0)
    floor = [nodes for key, nodes in keyed if key == "torch.div"][3]  # t.i // t.j
    assert [n.attrs.get("rounding_mode") for n in floor] == ["floor"]


def test_the_samples_can_fail():
    """isinf's input holds infinities; floor and truncating division differ on these inputs."""
    t = SimpleNamespace(**inputs())
    assert torch.isinf(t.sinf).any() and not torch.isinf(t.s).any()
    assert not torch.equal(torch.div(t.ineg, t.j, rounding_mode="floor"), torch.div(t.ineg, t.j, rounding_mode="trunc"))


def test_a_torch_function_thunder_runs_whole_is_its_own_not_one_sharing_its_id():
    """Thunder gives torch.Tensor.unfold's symbol the id of F.unfold's (im2col), which it runs
    whole: the fallback expands F.unfold by torch's decomposition, in both traces and at both
    levels, to eager's values; each symbol finds its own torch function."""
    from irlens.frontends.thunder import torch_fallback

    table = thunder().torch._torch_to_thunder_function_map
    unfold, im2col = table[torch.Tensor.unfold], table[F.unfold]
    assert unfold.id == im2col.id  # the clash this guards against
    assert torch_fallback.torch_function(unfold, unfold.id) is torch.Tensor.unfold
    assert torch_fallback.torch_function(im2col, im2col.id) is F.unfold

    def fn(x):
        return F.unfold(x, (2, 3), dilation=(1, 2), padding=1, stride=(2, 1))

    x = torch.randn(2, 3, 5, 6, generator=torch.Generator().manual_seed(0))
    jfn = thunder().jit(fn)
    jfn(x)
    want = fn(x.double())
    for which in (0, -1):
        for level in ("composite", "primitive"):
            graph = thunder_trace.trace_to_graph(thunder().last_traces(jfn)[which], name="im2col",
                                                 stage=f"trace[{which}]", level=level)
            assert not graph.unknown_ops(), dict(graph.unknown_ops())
            assert {n.scope.rsplit("/", 1)[-1] for n in graph.nodes} <= {"ltorch.unfold", "torch.nn.functional.unfold"}
            (got,) = interpret(graph, [x.double()])
            assert got.shape == want.shape and torch.allclose(got, want, rtol=1e-12, atol=1e-12), (which, level)


def test_a_shape_query_inside_a_fusion_region_is_bookkeeping():
    """nvFuser's regions may hold `prims.shape` (swin's, on a GPU): a query, no node."""
    trace = thunder().common.trace
    tr = trace()(lambda x: prims().mul(x, x), torch.randn(2, 3))
    x = tr.bound_symbols[0].flat_proxy_outs[0]
    builder = thunder_trace._GraphBuilder()
    builder.add_inputs([x])
    assert builder.add(prims().shape.bind(x, output=(2, 3)), scope="nvFusion0") == [] and not builder.nodes


def _updates_in_place(x, v5, v4, w13, col):
    """In-place updates the acquired trace reads back by the tensor's old name: basic-index
    assignments (copy_with_setitem with ints, slices, Ellipsis; numbers and tensors that broadcast,
    of another dtype) and in-place arithmetic."""
    y = x.clone()
    y[1] = v5
    y[:, 1:4:2] = 0.5
    y[..., 0] = v4
    y[-1, 2:] = w13  # a value with a leading one
    y[0:2] = col.to(torch.float64)
    y[2, 3] = 7
    y.add_(v5)
    torch.relu_(y)
    return y * 3


def _update_samples():
    g = torch.Generator().manual_seed(1)
    return [torch.randn(4, 5, generator=g), torch.randn(5, generator=g), torch.randn(4, generator=g),
            torch.randn(1, 3, generator=g), torch.randn(5, generator=g)]


@pytest.mark.parametrize("level", ["composite", "primitive"])
def test_in_place_updates_are_read_back_in_every_trace(level):
    """Every trace of a program that updates a tensor in place, the acquired one (which reads the
    tensor by its old name after the update) and the execution trace, is its float64 meaning, with
    basic-index assignments as slice_scatter and no unknown op."""
    args = _update_samples()
    jfn = thunder().jit(_updates_in_place)
    assert torch.allclose(jfn(*args), _updates_in_place(*args))
    want = _updates_in_place(*[a.double() for a in args])
    names = ["x", "v5", "v4", "w13", "col"]
    for which in (0, -1):
        graph = thunder_trace.trace_to_graph(thunder().last_traces(jfn)[which], name="updates", stage=f"trace[{which}]",
                                             level=level)
        assert not graph.unknown_ops(), dict(graph.unknown_ops())
        assert which != 0 or {"slice_scatter", "full", "broadcast"} <= {n.op for n in graph.nodes}
        (got,) = interpret(graph, [args[names.index(t.name)].double() for t in graph.inputs])
        assert torch.allclose(got, want, rtol=1e-12, atol=1e-12), (which, (got - want).abs().max())


@pytest.mark.parametrize("index", [(None, 0), (0, torch.tensor([1, 2])), (Ellipsis, Ellipsis)],
                         ids=["newaxis", "int_and_tensor", "two_ellipses"])
def test_a_setitem_index_the_view_cannot_carry_stays_unknown(index):
    """copy_with_setitem with None, a mix of basic and tensor indices, or two Ellipses: unknown,
    with its reason, never a slice_scatter of another block."""
    from thunder.common import trace

    p = prims()
    tr = trace()(lambda x, v: p.copy_with_setitem(x, index, v), torch.randn(4, 5), torch.randn(1))
    graph = thunder_trace.trace_to_graph(tr, name="setitem", stage="trace")
    unknown = [n for n in graph.nodes if n.is_unknown]
    assert len(unknown) == 1 and "copy_with_setitem" in unknown[0].attrs["reason"], graph.nodes
    assert "slice_scatter" not in {n.op for n in graph.nodes}


def _through_a_view(x, v):
    y = x.clone()
    flat = y.view(-1)
    flat.add_(1.0)  # updates y too
    return y * v[0, 0]


def _view_transpose_slice(x, v):
    y = x.clone()
    a = y.view(4, 5)
    a.transpose(0, 1)[1:3].copy_(v[:2, :4])  # a block of y, through three views
    return y * 2, a + 1, y[1]  # the base, an alias made before the write, a view made after


def _select_narrow_unsqueeze(x, v):
    y = x.clone()
    y.view(2, 10)[1].narrow(0, 2, 5).copy_(v[0])
    s = y[None, :, None]  # a broadcast that adds only ones
    s[0, 3:5, 0] = 7.0
    return y.sin(), s


def _permute_squeeze_strided(x, v):
    y = x.clone()
    t = y.view(1, 4, 5).squeeze(0).permute(1, 0)
    t[::2, 1:].mul_(v[:3, :3])
    return y, t.exp()


def _expanded_alias(x, v):
    y = x.view(4, 5).clone()
    e = y[:1].expand(3, 5)  # read after the write: its chain replayed, the expand included
    y[0:1].mul_(2)
    return e + 0, y


def _through_to(x, v):
    y = x.clone()
    same = y.to(y.dtype)  # torch gives y itself
    same[0:2] = 3.0
    other = y.to(torch.int64)  # a new tensor
    other.add_(1)
    return y * 1, other


def _mask_update(x, v):
    """The causal-mask update of transformers' Bloom and OPT: a clone of an expanded mask, a
    full-width slice of it masked and written back, its aliases read after."""
    mask = x.view(4, 5)[None, None].expand(1, 1, 4, 5).clone()
    part = mask[:, :, :, :5]
    filled = part.masked_fill(part > 0, -1.0)
    mask[:, :, :, :5] = filled
    return mask[:, :, :, :5] * 1, part + 0


def _transposes_and_type_as(x, v):
    y = x.clone().view(4, 5)
    m, t = y.mT, y.T  # Thunder's trace calls prims.transpose for these: views all the same
    m[1:3, 0] = 2.0
    y.type_as(v)[3].mul_(3)  # y itself: it converts nothing
    return y * 1, t + 0


def _an_update_returns_its_tensor(x, v):
    y = x.clone()
    r = y.add_(1)  # r is y, though no view op made it
    r[2:4] = 5.0
    y.mul_(v[0, 0])
    return y * 1, r + 0


def _fresh_tensors_written_then_stacked(x, v):
    a = x.new_full((4, 5), -1e6)  # new allocations Thunder's update_aliases groups into one
    a[..., :3] = v[:4, 1:4]
    b = torch.zeros(4, 5, dtype=x.dtype)
    b[..., 2:] = x[:12].view(4, 3)
    return torch.stack([a, b], 0)


def _view_samples():
    g = torch.Generator().manual_seed(3)
    return {"x": torch.randn(20, generator=g), "v": torch.randn(5, 5, generator=g)}


def _as_tuple(out):
    return out if isinstance(out, tuple) else (out,)


@pytest.mark.parametrize("program", [_through_a_view, _view_transpose_slice, _select_narrow_unsqueeze,
                                     _permute_squeeze_strided, _expanded_alias, _through_to, _mask_update,
                                     _transposes_and_type_as, _an_update_returns_its_tensor,
                                     _fresh_tensors_written_then_stacked],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_write_through_views_is_read_back_by_every_alias(program):
    """A copy_ into a view (slices, select, narrow, view, transpose, permute, squeeze, unsqueeze,
    .mT and .T, a conversion that changes nothing, the tensor an in-place op returns, new tensors
    Thunder's alias analysis groups though none is a view of another) gives its
    base's new value, and the base and every alias read after it (made before the write, or after)
    read it: in the acquired trace and the execution trace (update_aliases' names), at both levels,
    the float64 meaning of the program, with no unknown op."""
    args = _view_samples()
    jfn = thunder().jit(program)
    got32 = _as_tuple(jfn(*args.values()))
    assert all(torch.equal(a, b) for a, b in zip(got32, _as_tuple(program(*args.values()))))
    want = _as_tuple(program(*(a.double() for a in args.values())))
    for which in (0, -1):
        for level in ("composite", "primitive"):
            graph = thunder_trace.trace_to_graph(thunder().last_traces(jfn)[which], name="views",
                                                 stage=f"trace[{which}]", level=level)
            assert not graph.unknown_ops(), (which, dict(graph.unknown_ops()))
            got = interpret(graph, [args[t.name].double() for t in graph.inputs])
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and torch.allclose(g, w, rtol=1e-12, atol=1e-12), (which, level, g, w)


def _through_a_reshape(x, v):
    y = x.clone()
    r = y.reshape(4, 5)  # a view or a copy, as y's strides decide
    r[1:3].mul_(2)
    return y * 1


def _through_a_diagonal(x, v):
    y = x.clone().view(4, 5)
    y.diagonal().add_(1)
    return y * 1


def _through_channels_last(x, v):
    y = x.clone().view(1, 5, 2, 2)
    z = y.to(memory_format=torch.channels_last)  # a copy or y itself, as y's strides decide
    z.mul_(2)
    return y * 1


def _updates_then_reshapes(x, v):
    y = x.clone()
    y.add_(v[0, 0])  # before any view: nothing else shares y yet
    return y.view(4, 5) * 2


@pytest.mark.parametrize("program, flagged", [(_through_a_reshape, True), (_through_a_diagonal, True),
                                              (_through_channels_last, True), (_updates_then_reshapes, False)],
                         ids=["reshape", "diagonal", "channels_last", "update_before_views"])
def test_a_write_the_adapter_cannot_follow_stays_unknown(program, flagged):
    """A write into a tensor whose view chain is not known exactly (a reshape, a `to` with a
    memory format: either may copy) or holds an op the adapter cannot invert (a diagonal), its
    base read after it: that copy is unknown with its reason in every trace, never a graph reading
    the base's old values. An update before any view is read back by its new name and stays known."""
    args = _view_samples()
    jfn = thunder().jit(program)
    assert torch.equal(jfn(*args.values()), program(*args.values()))
    for which in (0, -1):
        graph = thunder_trace.trace_to_graph(thunder().last_traces(jfn)[which], name="views", stage="t")
        unknown = [n for n in graph.nodes if n.is_unknown]
        assert bool(unknown) == flagged, (which, graph.nodes)
        if flagged:
            assert len(unknown) == 1 and unknown[0].native.endswith("copy_"), unknown
            assert "views" in unknown[0].attrs["reason"] and "cannot" in unknown[0].attrs["reason"], unknown
        else:
            (got,) = interpret(graph, [args[t.name].double() for t in graph.inputs])
            assert torch.allclose(got, program(*(a.double() for a in args.values())), rtol=1e-12, atol=1e-12)
