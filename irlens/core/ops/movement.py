"""Data movement: views, copies and rearrangements that compute nothing new; and the casts."""
from __future__ import annotations

import torch

from irlens.core.ops._torch import jnp, lax, nv_dtype, scalar_tensor, torch_dtype
from irlens.core.ops.core import CAST, DATA_MOVEMENT, Attr, declare, lowering, meaning

reshape = declare("reshape", DATA_MOVEMENT, "x", shape=Attr("ints"), doc="row-major reshape (one dim may be -1)")


@meaning(reshape)
def _reshape(a, x):
    return x.reshape(list(a["shape"])).clone()


@lowering(reshape, "jax")
def _reshape_jax(a, x):
    return jnp().reshape(x, tuple(a["shape"]))


# Shapes come from the declared output (concrete sizes): the `shape` attr may carry -1, which
# nvFuser's static reshape does not resolve.
@lowering(reshape, "nvfuser")
def _reshape_nvfuser(fd, nv, node, args, metas):
    return fd.ops.reshape(args[0], list(node.outputs[0].shape))


permute = declare("permute", DATA_MOVEMENT, "x", perm=Attr("ints"), doc="output dim i is input dim perm[i]")


@meaning(permute)
def _permute(a, x):
    return x.permute(list(a["perm"])).clone()


@lowering(permute, "jax")
def _permute_jax(a, x):
    return jnp().transpose(x, tuple(a["perm"]))


@lowering(permute, "nvfuser")
def _permute_nvfuser(fd, nv, node, args, metas):
    return fd.ops.permute(args[0], list(node.attrs["perm"]))


broadcast = declare("broadcast", DATA_MOVEMENT, "x", shape=Attr("ints"), broadcast_dims=Attr("ints", None),
                    doc="x's dims placed at broadcast_dims of `shape` (None: the trailing ones), then expanded")


@meaning(broadcast)
def _broadcast(a, x):
    shape, bdims = list(a["shape"]), a["broadcast_dims"]
    if bdims is not None:  # place x's dims at bdims, size-1 elsewhere, then expand
        view = [1] * len(shape)
        for src, dst in enumerate(bdims):
            view[dst] = x.shape[src]
        x = x.reshape(view)
    return x.expand(shape).clone()


@lowering(broadcast, "jax")
def _broadcast_jax(a, x):
    if a["broadcast_dims"] is None:
        return jnp().broadcast_to(x, tuple(a["shape"]))
    return lax().broadcast_in_dim(x, tuple(a["shape"]), tuple(a["broadcast_dims"]))


@lowering(broadcast, "nvfuser")
def _broadcast_nvfuser(fd, nv, node, args, metas):
    out = node.outputs[0]
    bdims = node.attrs.get("broadcast_dims")
    if bdims is None:  # numpy-style: align trailing dims
        rank = len(metas[node.inputs[0]].shape)
        bdims = list(range(len(out.shape) - rank, len(out.shape)))
    return fd.ops.broadcast_in_dim(args[0], list(out.shape), list(bdims))


slice_ = declare("slice", DATA_MOVEMENT, "x", start=Attr("ints"), limit=Attr("ints"), step=Attr("ints", None),
                 doc="x[start:limit:step] in every dim (non-negative, clamped bounds; step None: 1s)")


def slices(a) -> tuple:
    step = a.get("step") or [1] * len(a["start"])
    return tuple(slice(s, l, st) for s, l, st in zip(a["start"], a["limit"], step))


@meaning(slice_)
def _slice(a, x):
    return x[slices(a)].clone()


@lowering(slice_, "jax")
def _slice_jax(a, x):
    return x[slices(a)]


@lowering(slice_, "nvfuser", when=lambda node: all(s == 1 for s in node.attrs.get("step") or []))
def _slice_nvfuser(fd, nv, node, args, metas):  # nvFuser's slice takes unit strides only
    a = node.attrs
    step = a.get("step") or [1] * len(a["start"])
    return fd.ops.slice(args[0], list(a["start"]), list(a["limit"]), list(step))


concat = declare("concat", DATA_MOVEMENT, "*xs", dim=Attr("int"), doc="torch.cat along dim")


@meaning(concat)
def _concat(a, *xs):
    return torch.cat(xs, dim=a["dim"])


@lowering(concat, "jax")
def _concat_jax(a, *xs):
    return jnp().concatenate(xs, axis=a["dim"])


@lowering(concat, "nvfuser")
def _concat_nvfuser(fd, nv, node, args, metas):
    return fd.ops.cat(list(args), node.attrs["dim"])


stack = declare("stack", DATA_MOVEMENT, "*xs", dim=Attr("int"), doc="torch.stack along a new dim")


@meaning(stack)
def _stack(a, *xs):
    return torch.stack(xs, dim=a["dim"])


@lowering(stack, "jax")
def _stack_jax(a, *xs):
    return jnp().stack(xs, axis=a["dim"])


copy = declare("copy", DATA_MOVEMENT, "x", doc="the same values, a new buffer")


@meaning(copy)
def _copy(a, x):
    return x.clone()


@lowering(copy, "jax")
def _copy_jax(a, x):
    return x


@lowering(copy, "nvfuser")
def _copy_nvfuser(fd, nv, node, args, metas):
    return fd.ops.set(args[0])


flip = declare("flip", DATA_MOVEMENT, "x", dims=Attr("ints"), doc="reverse the order along dims")


@meaning(flip)
def _flip(a, x):
    return torch.flip(x, list(a["dims"]))


@lowering(flip, "jax")
def _flip_jax(a, x):
    return jnp().flip(x, tuple(a["dims"]))


pad = declare("pad", DATA_MOVEMENT, "x value", padding=Attr("any"),
              doc="lax.pad: padding [[lo, hi, interior], ...] per dim, filled with value; negative lo/hi crop")


@meaning(pad)
def _pad(a, x, value):
    config = [list(p) + [0] * (3 - len(p)) for p in a["padding"]]
    value = scalar_tensor(value, x if x.is_floating_point() else None, a.get("device")).to(x.dtype)
    mask = torch.ones_like(x, dtype=torch.bool)
    if any(p[2] for p in config):  # interior padding: x's elements spread out, value between them
        shape = [d + max(d - 1, 0) * p[2] for d, p in zip(x.shape, config)]
        spread = torch.zeros(shape, dtype=x.dtype, device=x.device)
        spread_mask = torch.zeros(shape, dtype=torch.bool, device=x.device)
        at = tuple(slice(None, None, p[2] + 1) for p in config)
        spread[at], spread_mask[at] = x, True
        x, mask = spread, spread_mask
    pads = [n for lo, hi, _ in reversed(config) for n in (lo, hi)]
    padded = torch.constant_pad_nd(x, pads, 0)
    kept = torch.constant_pad_nd(mask, pads, False)
    return torch.where(kept, padded, value)


@lowering(pad, "jax")
def _pad_jax(a, x, value):
    config = [tuple(list(p) + [0] * (3 - len(p))) for p in a["padding"]]
    return lax().pad(x, jnp().asarray(value, x.dtype), config)


# --- casts ------------------------------------------------------------------------------------
convert = declare("convert", CAST, "x", dtype=Attr("dtype"), doc="x in another dtype (torch's .to semantics)")


@meaning(convert)
def _convert(a, x):
    return x.to(torch_dtype(a["dtype"]))


@lowering(convert, "jax")
def _convert_jax(a, x):
    return x.astype(jnp().dtype(a["dtype"]))


@lowering(convert, "nvfuser")
def _convert_nvfuser(fd, nv, node, args, metas):
    return fd.ops.cast(args[0], nv_dtype(nv, node.attrs["dtype"]))


as_strided = declare("as_strided", DATA_MOVEMENT, "x", size=Attr("ints"), stride=Attr("ints"),
                     storage_offset=Attr("int", 0),
                     doc="elements of x's row-major layout at storage_offset + sum(i_k * stride_k)")


@meaning(as_strided)
def _as_strided(a, x):
    return torch.as_strided(x.contiguous(), a["size"], a["stride"], a["storage_offset"]).clone()


def strided_positions(size, stride, offset: int):
    """[*size] flat positions: offset + sum(i_k * stride_k) (numpy, fixed at trace time)."""
    import numpy as np

    where = np.full(tuple(size), offset, dtype=np.int64)
    for k, (n, step) in enumerate(zip(size, stride)):
        where = where + (np.arange(n) * step).reshape([n if d == k else 1 for d in range(len(size))])
    return where


@lowering(as_strided, "jax")
def _as_strided_jax(a, x):
    return x.reshape(-1)[strided_positions(a["size"], a["stride"], a["storage_offset"])]


bitcast = declare("bitcast", CAST, "x", dtype=Attr("dtype"), from_dtype=Attr("dtype"),
                  doc="x's bits (as from_dtype: the interpreter carries floats in float64) read as dtype "
                      "(x.view(dtype), lax.bitcast_convert_type), the last dim rescaled by the size ratio")


@meaning(bitcast)
def _bitcast(a, x):
    return x.to(torch_dtype(a["from_dtype"])).contiguous().view(torch_dtype(a["dtype"])).clone()


@lowering(bitcast, "jax")
def _bitcast_jax(a, x):
    # torch's view scales the last dim; lax adds (narrower) or takes (wider) a last dim of the ratio
    dst = jnp().dtype(a["dtype"])
    src_size, dst_size = x.dtype.itemsize, dst.itemsize
    if src_size < dst_size:
        x = x.reshape(*x.shape[:-1], x.shape[-1] * src_size // dst_size, dst_size // src_size)
    y = lax().bitcast_convert_type(x, dst)
    return y.reshape(*y.shape[:-2], y.shape[-2] * y.shape[-1]) if src_size > dst_size else y


unfold = declare("unfold", DATA_MOVEMENT, "x", dim=Attr("int"), size=Attr("int"), step=Attr("int"),
                 doc="sliding windows of `size` every `step` along dim: dim becomes the window count, a "
                     "last dim of `size` is added (torch.Tensor.unfold)")


@meaning(unfold)
def _unfold(a, x):
    return x.unfold(a["dim"], a["size"], a["step"]).clone()


@lowering(unfold, "jax")
def _unfold_jax(a, x):
    np_ = jnp()
    if x.ndim == 0:
        return x.reshape(1)
    dim, size, step = a["dim"], a["size"], a["step"]
    count = (x.shape[dim] - size) // step + 1
    windows = np_.take(x, np_.arange(count)[:, None] * step + np_.arange(size)[None, :], axis=dim)
    return np_.moveaxis(windows, dim + 1, -1)
