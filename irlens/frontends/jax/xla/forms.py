"""XLA's structured ops as canonical ops, shared by the jaxpr, StableHLO and HLO adapters.

gather / scatter (dimension numbers), convolution (dimension specs, dilations, groups),
reduce-window, sort and dot take the same params in all three IRs; each adapter reads them
into one of the forms below and `expand_*` writes the canonical nodes. A form the canonical
ops cannot express exactly raises `Unmapped` with the reason, and the adapter keeps the node
`unknown:` with that reason: a node never carries a meaning it does not have.

Gather and scatter have their forms in `gather.py`; the rest (the `Emitter` every form
writes through, convolution, windows and scans, sort, shifts, while loops and conditionals) is here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from irlens.core.ir import Arg, Graph, Node, TensorMeta
from irlens.core.ops import conform
from irlens.core.ops.infer import Misfit, NotInferable, infer


# reductions by their body op (HLO opcode / lax primitive names)
REDUCTION_BY_BODY = {"add": "sum", "multiply": "prod", "mul": "prod", "maximum": "amax", "max": "amax",
                     "minimum": "amin", "min": "amin"}
_SCANS = {"sum": "cumsum", "prod": "cumprod", "amax": "cummax", "amin": "cummin", "logsumexp": "logcumsumexp"}


def window_reducer(body_op: str | None, dtype: str) -> str | None:
    """The canonical reducer of a window whose body is one binary op: add / multiply / maximum /
    minimum, and a logical and / or of bools (their min / max); None for any other."""
    if dtype == "bool" and body_op in ("and", "or"):
        return "amin" if body_op == "and" else "amax"
    return REDUCTION_BY_BODY.get(body_op or "")


class Unmapped(ValueError):
    """A form the canonical ops cannot express exactly; the message says why."""


@dataclass
class Emitter:
    """Writes the canonical nodes one source op becomes: ids `<base>.<k>`, except the node that
    produces the op's own outputs, which keeps `base` (kernels and origins refer to it). The
    source op's own outputs keep the metadata its IR states; an intermediate value's shape and
    dtype are its op's rule (`irlens.core.ops.infer`) on its inputs' (`known`: the source op's
    operands, then every value emitted) and its attrs. An intermediate the rule cannot give
    leaves the op `Unmapped`, saying why."""

    base: str
    native: str
    scope: str = ""
    provenance: dict = field(default_factory=dict)
    known: dict[str, TensorMeta] = field(default_factory=dict)  # value name -> its metadata
    nodes: list[Node] = field(default_factory=list)
    _base_taken: bool = False
    _fresh: int = 0

    def emit(self, op: str, inputs: list[Arg], out: TensorMeta | None = None, final: bool | None = None,
             **attrs) -> str:
        """One node with one output (`out`: the source op's, else a fresh value); its value name."""
        node = self.node(op, inputs, [out], final=out is not None if final is None else final, **attrs)
        return node.outputs[0].name

    def node(self, op: str, inputs: list[Arg], outputs: list[TensorMeta | None] | None = None, final: bool = False,
             subgraphs: dict | None = None, **attrs) -> Node:
        """One node; `outputs` the source op's own values, a None among them (or None for all) a
        fresh value whose metadata the op infers."""
        if outputs is None or None in outputs:
            inferred = self._inferred(op, inputs, attrs, subgraphs or {})
            outputs = inferred if outputs is None else [o or m for o, m in zip(outputs, inferred)]
        node_id = self.base if final and not self._base_taken else f"{self.base}.{len(self.nodes)}"
        self._base_taken = self._base_taken or node_id == self.base
        node = conform(Node(node_id, op, list(inputs), outputs, {**attrs, **self.provenance}, native=self.native,
                            scope=self.scope, subgraphs=subgraphs or {}))
        self.nodes.append(node)
        self.known.update((o.name, o) for o in outputs)
        return node

    def meta(self, value: str) -> TensorMeta:
        """A value's metadata: an operand's, or an emitted value's."""
        return self.known[value]

    def _inferred(self, op: str, inputs: list[Arg], attrs: dict, subgraphs: dict) -> list[TensorMeta]:
        metas = {a: (tuple(self.known[a].shape), self.known[a].dtype) for a in inputs
                 if isinstance(a, str) and a in self.known}
        try:
            found = infer(op, inputs, metas, attrs, subgraphs)
        except (NotInferable, Misfit) as e:
            raise Unmapped(f"an intermediate {op} whose outputs its rule does not give: {e}") from e
        return [self.fresh(shape, dtype) for shape, dtype in found]

    def fresh(self, shape, dtype: str) -> TensorMeta:
        """A new value. Its name cannot be one of the source op's own outputs (`<base>.<k>`, a
        tuple's elements) nor an earlier fresh one."""
        self._fresh += 1
        return TensorMeta(f"{self.base}.v{self._fresh}", tuple(int(d) for d in shape), dtype)

    # the few shapes of node every form needs
    def permute(self, x: str, perm: list[int], out: TensorMeta | None = None) -> str:
        if perm == list(range(len(perm))):
            return self.copy_to(x, out)
        return self.emit("permute", [x], out, perm=list(perm))

    def reshape(self, x: str, shape, out: TensorMeta | None = None) -> str:
        return self.emit("reshape", [x], out, shape=list(shape))

    def copy_to(self, x: str, out: TensorMeta | None) -> str:
        return x if out is None else self.emit("copy", [x], out)


# --- convolution ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvForm:
    """lax.conv_general_dilated's params; specs list dim indices: lhs (batch, feature, *spatial),
    rhs (out feature, in feature, *spatial), out (batch, feature, *spatial)."""

    lhs_spec: tuple[int, ...]
    rhs_spec: tuple[int, ...]
    out_spec: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    lhs_dilation: tuple[int, ...]
    rhs_dilation: tuple[int, ...]
    feature_group_count: int = 1
    batch_group_count: int = 1
    reversal: tuple[bool, ...] = ()  # spatial dims whose window runs reversed (the kernel flipped there)


def expand_conv(e: Emitter, lhs: str, lm: TensorMeta, rhs: str, rm: TensorMeta, form: ConvForm,
                out: TensorMeta | None, dtype: str | None = None) -> str:
    """conv_general_dilated as `convolution` on [N, C, *spatial] / [O, I, *spatial]: the input
    permuted there, dilated and padded by one `pad` (lhs_dilation: interior padding), batch
    groups folded into feature groups; into `out` (None: a fresh value of `dtype`). Its value name."""
    f = form
    n_sp = len(f.lhs_spec) - 2
    dt = out.dtype if out is not None else dtype
    if lm.dtype != dt:  # preferred_element_type: the convolution accumulates in the output's dtype
        lhs = e.emit("convert", [lhs], dtype=dt)
    if rm.dtype != dt:
        rhs = e.emit("convert", [rhs], dtype=dt)
    x_shape = [lm.shape[d] for d in f.lhs_spec]
    x = e.permute(lhs, list(f.lhs_spec))
    w = e.permute(rhs, list(f.rhs_spec))
    if any(f.reversal):  # XLA's CPU rewrites may reverse a window: the same as the flipped kernel
        w = e.emit("flip", [w], dims=[2 + i for i, r in enumerate(f.reversal) if r])
    groups = f.feature_group_count
    if f.batch_group_count > 1:
        if groups > 1:
            raise Unmapped("both feature and batch groups")
        g = f.batch_group_count
        n, c = x_shape[0], x_shape[1]
        split = e.reshape(x, [g, n // g, c, *x_shape[2:]])
        moved = e.permute(split, [1, 0, 2, *range(3, 3 + n_sp)])
        x = e.reshape(moved, [n // g, g * c, *x_shape[2:]])
        groups = g
    config = [[0, 0, 0], [0, 0, 0]] + [[lo, hi, d - 1] for (lo, hi), d in zip(f.padding, f.lhs_dilation)]
    if any(v for row in config for v in row):
        x = e.emit("pad", [x, 0.0 if dt.startswith(("float", "bfloat")) else 0], padding=config)
    inverse = [list(f.out_spec).index(d) for d in range(len(f.out_spec))]
    identity = list(f.out_spec) == list(range(len(f.out_spec)))
    y = e.emit("convolution", [x, w], out if identity else None, stride=list(f.strides), padding=[0] * n_sp,
               dilation=list(f.rhs_dilation), groups=groups)
    return y if identity else e.permute(y, inverse, out)


# --- windows and scans ---------------------------------------------------------------------


@dataclass(frozen=True)
class WindowForm:
    reduce: str  # sum | prod | amax | amin | logsumexp
    window: tuple[int, ...]
    strides: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    base_dilation: tuple[int, ...]
    window_dilation: tuple[int, ...]


def identity_of(reduce: str, dtype: str):
    """The init value that leaves a reduction unchanged, in `dtype`."""
    import numpy as np

    if reduce == "logsumexp":
        return float("-inf")
    if reduce == "sum":
        return False if dtype == "bool" else 0
    if reduce == "prod":
        return True if dtype == "bool" else 1
    if dtype == "bool":
        return reduce == "amin"
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return int(info.min if reduce == "amax" else info.max)
    return float("-inf") if reduce == "amax" else float("inf")


def _is_identity(init: Arg, reduce: str, dtype: str) -> bool:
    return not isinstance(init, str) and init == identity_of(reduce, dtype)


def expand_reduce_window(e: Emitter, x: str, xm: TensorMeta, init: Arg, form: WindowForm, out: TensorMeta) -> None:
    """A window along one dim that spans it whole with n - 1 padding on one side is a scan
    (cumsum and friends, as jax lowers them); a window that tiles x exactly is a reduction over
    the tiles (XLA's CPU rewrite of reductions); anything else a `reduce_window`."""
    f = form
    plain = all(d == 1 for d in f.base_dilation + f.window_dilation)
    if plain and _is_identity(init, f.reduce, xm.dtype):
        along = [d for d, w in enumerate(f.window) if w != 1 or f.padding[d] != (0, 0)]
        if len(along) == 1 and all(s == 1 for s in f.strides):
            d = along[0]
            n = xm.shape[d]
            if f.window[d] == n and tuple(f.padding[d]) in ((n - 1, 0), (0, n - 1)):
                emit_scan(e, _SCANS[f.reduce], x, out, d, tuple(f.padding[d]) == (0, n - 1))
                return
        tiles = (f.reduce != "logsumexp" and list(f.window) == list(f.strides) and all(p == (0, 0) for p in f.padding)
                 and all(s % w == 0 for s, w in zip(xm.shape, f.window)))
        if tiles:
            split = [v for s, w in zip(xm.shape, f.window) for v in (s // w, w)]
            windows = e.reshape(x, split)
            emit_accumulating(e, f.reduce, [windows], out, dims=list(range(1, len(split), 2)), keepdim=False)
            return
    e.emit("reduce_window", [x, init], out, reduce=f.reduce, window=list(f.window),
           strides=list(f.strides), padding=[list(p) for p in f.padding], base_dilation=list(f.base_dilation),
           window_dilation=list(f.window_dilation))


def expand_sort(e: Emitter, operands: list[str], metas: list[TensorMeta], outs: list[TensorMeta | None], dim: int,
                descending: bool, stable: bool, iotas: set[str], num_keys: int = 1, total_order: bool = False) -> None:
    """A sort by the first operand; the others follow its permutation (an iota along dim: the
    permutation itself, argsort). By several keys (lexicographic, the first most significant):
    stable sorts from the last key to the first, each of the keys permuted so far. `total_order`
    (floats compared by their bits: -NaN first, NaN last) is a stable `topk` of every element,
    whose order is that one; `sort` puts every NaN last, as jax's canonicalizing comparator does.
    An output None is not the source op's (its metadata inferred)."""
    keys = metas[0]
    if num_keys > 1:
        perm = None
        for k in range(num_keys - 1, -1, -1):
            key = operands[k] if perm is None else e.emit("gather", [operands[k], perm], dim=dim)
            order = e.node("sort", [key], dim=dim, descending=descending, stable=True).outputs[1].name
            perm = order if perm is None else e.emit("gather", [perm, order], dim=dim)
        for name, out in zip(operands, outs):
            if name in iotas:
                e.emit("convert", [perm], out, dtype=out.dtype)
            else:
                e.emit("gather", [name, perm], out, dim=dim)
        return
    if total_order:
        sorted_ = e.node("topk", [operands[0]], [outs[0], None], final=True, k=keys.shape[dim], dim=dim,
                         largest=descending, sorted=True)
    else:
        sorted_ = e.node("sort", [operands[0]], [outs[0], None], final=True, dim=dim, descending=descending,
                         stable=stable)
    perm = sorted_.outputs[1].name
    for name, out in zip(operands[1:], outs[1:]):
        if name in iotas:
            e.emit("convert", [perm], out, dtype=out.dtype)
        else:
            e.emit("gather", [name, perm], out, dim=dim)


# --- shifts --------------------------------------------------------------------------------

_TORCH_SHIFTS = ("int8", "int16", "int32", "int64", "uint8")  # the integer dtypes torch shifts


def expand_shift(e: Emitter, kind: str, inputs: list[Arg], out: TensorMeta) -> None:
    """XLA's shifts (kind: left, right_arithmetic, right_logical) on torch's: shift-left and an
    arithmetic right shift of a signed integer are torch's << and >> (also past the width); an
    unsigned arithmetic shift goes through a bitcast to the signed dtype; a logical shift, and
    shifts of dtypes torch does not shift, run on the bits widened to int64 (a shift past the
    width gives 0 there too)."""
    dtype = out.dtype
    if kind == "right_arithmetic" and dtype.startswith("uint") and dtype != "uint64":
        signed = dtype[1:]
        x, y = (e.emit("bitcast", [v], dtype=signed, from_dtype=dtype) if isinstance(v, str) else v for v in inputs)
        shifted = e.emit("bitwise_right_shift", [x, y])
        e.emit("bitcast", [shifted], out, dtype=dtype, from_dtype=signed)
        return
    op = "bitwise_left_shift" if kind == "left" else "bitwise_right_shift"
    if dtype in _TORCH_SHIFTS and not (kind == "right_logical" and not dtype.startswith("uint")):
        e.emit(op, list(inputs), out)
        return
    width = int("".join(c for c in dtype if c.isdigit()))
    if dtype == "uint64":  # torch shifts no uint64: the same bits as int64, and back
        signed = [e.emit("bitcast", [v], dtype="int64", from_dtype="uint64") if isinstance(v, str) else v
                  for v in inputs]
        if kind == "right_logical":
            result = _logical_shift_int64(e, signed, None)
        else:
            result = e.emit("bitwise_left_shift" if kind == "left" else "bitwise_right_shift", signed)
        e.emit("bitcast", [result], out, dtype=dtype, from_dtype="int64")
        return
    if dtype == "int64":  # a logical shift: the arithmetic one with the sign-filled bits masked away
        _logical_shift_int64(e, inputs, out)
        return
    x, n = inputs
    wide = e.emit("convert", [x], dtype="int64") if isinstance(x, str) else x
    if not dtype.startswith("uint"):  # the bits of a negative value, as an unsigned number
        wide = e.emit("bitwise_and", [wide, (1 << width) - 1])
    if isinstance(n, str):
        n = e.emit("convert", [n], dtype="int64")
        n = e.emit("where", [e.emit("lt", [n, 0]), 64, n])
    elif n < 0:
        n = 64  # XLA reads a shift amount as unsigned: past the width
    shifted = e.emit(op, [wide, n])
    e.emit("convert", [shifted], out, dtype=dtype)  # wraps to the width


def _logical_shift_int64(e: Emitter, inputs: list[Arg], out: TensorMeta | None) -> str:
    """x >> n filling zeros, on int64: (x >> n) & (2**(64 - n) - 1), 0 for n outside [0, 64); into
    `out` (None: a fresh value). Its value name."""
    x, n = inputs
    shifted = e.emit("bitwise_right_shift", [x, n])
    if not isinstance(n, str):
        if not 0 <= n < 64:
            shape = list(out.shape if out is not None else e.meta(x).shape)  # n is a literal: x's shape
            return e.emit("full", [], out, shape=shape, value=0, dtype="int64")
        mask = (1 << (64 - n)) - 1
        return e.emit("bitwise_and", [shifted, mask if mask < 1 << 63 else -1], out)
    room = e.emit("sub", [64, n])
    mask = e.emit("sub", [e.emit("bitwise_left_shift", [1, room]), 1])
    kept = e.emit("bitwise_and", [shifted, mask])
    outside = e.emit("logical_or", [e.emit("lt", [n, 0]), e.emit("ge", [n, 64])])
    return e.emit("where", [outside, 0, kept], out)


def wraps(dtype: str) -> bool:
    """An integer dtype narrower than 64 bits: torch sums and multiplies it into int64, XLA in it."""
    return dtype.startswith(("int", "uint")) and not dtype.endswith("64")


def emit_accumulating(e: Emitter, op: str, inputs: list[Arg], out: TensorMeta | None, **attrs) -> str:
    """A sum or product (reduction or scan) into `out` (None: a fresh value): of a narrow integer
    dtype, computed in int64 (torch's accumulator) and converted back, which wraps as XLA's
    arithmetic in that dtype does. Its value name."""
    dtype = out.dtype if out is not None else e.meta(inputs[0]).dtype  # XLA's keeps its operand's dtype
    if op not in ("sum", "prod", "cumsum", "cumprod") or not wraps(dtype):
        return e.emit(op, inputs, out, **attrs)
    wide = e.emit(op, inputs, **attrs)
    return e.emit("convert", [wide], out, dtype=dtype)


def emit_scan(e: Emitter, op: str, x: str, out: TensorMeta, dim: int, reverse: bool) -> None:
    """An inclusive scan along dim into `out`; cummax and cummin (ATen's, with no reverse) of a
    reversed scan run on x flipped, the result flipped back."""
    if op in ("cummax", "cummin"):
        if reverse:
            flipped = e.emit("flip", [x], dims=[dim])
            running = e.emit(op, [flipped], dim=dim)
            e.emit("flip", [running], out, dims=[dim])
        else:
            e.emit(op, [x], out, dim=dim)
        return
    emit_accumulating(e, op, [x], out, dim=dim, reverse=reverse)


def part_dtype(dtype: str) -> str:
    """The dtype of a complex dtype's real and imaginary parts."""
    return {"complex64": "float32"}.get(dtype, "float64")


def dtype_bits(dtype: str) -> int:
    """Bits per element of a dtype name: its first number (float8_e4m3fn: 8, int4: 4; bool: 8)."""
    found = re.search(r"\d+", dtype)
    if dtype != "bool" and found is None:
        raise Unmapped(f"no bit width known for dtype {dtype}")
    return 8 if dtype == "bool" else int(found.group())


def emit_bitcast(e: Emitter, x: str, xm: TensorMeta, out: TensorMeta) -> None:
    """XLA's bitcast-convert as `bitcast` (torch's view): to a narrower dtype XLA adds a last dim
    of the width ratio, torch scales the last dim, so x gets a last dim of 1 first; to a wider
    one XLA takes the last dim away, torch leaves it as 1, reshaped away after."""
    src, dst = dtype_bits(xm.dtype), dtype_bits(out.dtype)
    if src > dst:
        x = e.reshape(x, [*xm.shape, 1])
    if src < dst:
        wide = e.emit("bitcast", [x], dtype=out.dtype, from_dtype=xm.dtype)
        e.reshape(wide, out.shape, out)
    else:
        e.emit("bitcast", [x], out, dtype=out.dtype, from_dtype=xm.dtype)


# --- while loops and conditionals ---------------------------------------------------------------


def emit_fft(e: Emitter, inputs: list[Arg], xm: TensorMeta, out: TensorMeta, kind: str | None,
             lengths: list[int] | None) -> None:
    """XLA's Fft (lax.fft) over the trailing len(lengths) dims: FFT and RFFT unscaled, their
    inverses by 1/n (ATen's normalization 2); RFFT keeps half the last dim's spectrum, IRFFT's
    output length is the last of `lengths`."""
    if not lengths:
        raise Unmapped("an fft without its lengths")
    rank = len(out.shape)
    dims, k = list(range(rank - len(lengths), rank)), len(lengths)
    if kind in ("FFT", "IFFT"):
        e.node("fft_c2c", inputs, [out], final=True, dim=dims, normalization=0 if kind == "FFT" else 2,
               forward=kind == "FFT")
    elif kind == "RFFT" and list(xm.shape[-k:]) == list(lengths):
        e.node("fft_r2c", inputs, [out], final=True, dim=dims, normalization=0, onesided=True)
    elif kind == "IRFFT" and list(out.shape[-k:]) == list(lengths):
        e.node("fft_c2r", inputs, [out], final=True, dim=dims, normalization=2, last_dim_size=lengths[-1])
    else:
        raise Unmapped(f"an fft of type {kind} with lengths {list(lengths)} over {list(xm.shape)}")


def closed_graph(name: str, inputs: list[TensorMeta], nodes: list[Node], outputs: list[Arg],
                 out_metas: list[TensorMeta], stage: str) -> Graph:
    """A loop's cond or body, or a conditional's branch, as a closed graph: a literal it returns
    is made a `full` of the output's type (what it gives is tensors)."""
    e = Emitter(f"{name}.out", "constant")
    values = _values(e, outputs, out_metas)
    return Graph(name, "jax", stage, "composite", inputs, [*nodes, *e.nodes], values)


def emit_while(e: Emitter, inputs: list[Arg], outs: list[TensorMeta], cond: Graph, body: Graph) -> None:
    """XLA's while (HLO, StableHLO and a jaxpr's alike): the carry (literals made `full`s of the
    body's input types), then the loop."""
    if len(cond.inputs) != len(inputs) or len(body.inputs) != len(inputs) or len(body.outputs) != len(inputs):
        raise Unmapped(f"a loop whose cond and body do not take and give its {len(inputs)} carried values")
    if len(cond.outputs) != 1:
        raise Unmapped("a loop condition that is not one value")
    e.node("while", _values(e, inputs, body.inputs), outs, final=True, subgraphs={"cond": cond, "body": body})


def emit_cond(e: Emitter, index: Arg, index_meta: TensorMeta, operands: list[Arg], outs: list[TensorMeta],
              branches: list[Graph]) -> None:
    """XLA's case and conditional (a jaxpr's cond alike): branch k over all the operands (literals
    made `full`s), picked by an integer index; a bool one is 0 (false) or 1 (true)."""
    if not branches or any(len(b.inputs) != len(operands) or len(b.outputs) != len(outs) for b in branches):
        raise Unmapped("a conditional whose branches do not take its operands and give its results")
    if index_meta.dtype == "bool":
        index = int(index) if not isinstance(index, str) else e.emit("convert", [index], dtype="int32")
    e.node("cond", [index, *_values(e, operands, branches[0].inputs)], outs, final=True,
           subgraphs={f"branch{k}": b for k, b in enumerate(branches)})


def full_attrs(shape, value: Arg, dtype: str) -> dict:
    """A literal broadcast (or converted) to a tensor is a `full`."""
    if dtype == "bool":
        value = bool(value)
    elif dtype.startswith(("int", "uint")):
        value = int(value)
    elif not isinstance(value, bool):
        value = float(value)
    return {"shape": list(shape), "value": value, "dtype": dtype}


def _values(e: Emitter, inputs: list[Arg], metas: list[TensorMeta]) -> list[str]:
    """Operands a subgraph takes as tensors: a literal made a `full` of the subgraph input's type."""
    return [v if isinstance(v, str) else e.emit("full", [], **full_attrs(m.shape, v, m.dtype))
            for v, m in zip(inputs, metas, strict=True)]
