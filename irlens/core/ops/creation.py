"""Creation: tensors made from attrs alone. They are made on `a["device"]` (a lowering sets it;
the interpreter runs on the CPU), in the dtype their attrs name."""
from __future__ import annotations

import torch

from irlens.core.ops._torch import jnp, lax, torch_dtype
from irlens.core.ops.core import CREATION, Attr, declare, lowering, meaning


def _jax_dtype(name: str):
    """The dtype JAX makes of `name`: int64 is int32 unless jax_enable_x64 is on. Asked for by
    that name, JAX warns of the truncation at every call; the lowering's result is the same."""
    import jax

    return jax.dtypes.canonicalize_dtype(jnp().dtype(name))


full = declare("full", CREATION, "", shape=Attr("ints"), value=Attr("number"), dtype=Attr("dtype"),
               doc="a tensor of `shape` filled with value")


@meaning(full)
def _full(a):
    return torch.full(list(a["shape"]), a["value"], dtype=torch_dtype(a["dtype"]), device=a.get("device", "cpu"))


@lowering(full, "jax")
def _full_jax(a):
    return jnp().full(tuple(a["shape"]), a["value"], _jax_dtype(a["dtype"]))


empty = declare("empty", CREATION, "", shape=Attr("ints"), dtype=Attr("dtype"),
                doc="uninitialized memory: any values; the meaning gives zeros")


@meaning(empty)
def _empty(a):
    return torch.zeros(list(a["shape"]), dtype=torch_dtype(a["dtype"]), device=a.get("device", "cpu"))


@lowering(empty, "jax")
def _empty_jax(a):
    return jnp().zeros(tuple(a["shape"]), _jax_dtype(a["dtype"]))


iota = declare("iota", CREATION, "", shape=Attr("ints"), dim=Attr("int", 0), dtype=Attr("dtype", "int64"),
               doc="0, 1, 2, ... along dim, broadcast over the other dims of `shape`")


@meaning(iota)
def _iota(a):
    shape, dim = list(a["shape"]), a["dim"]
    # counted in int64 (torch has no arange of the unsigned dtypes past uint8), then cast
    r = torch.arange(shape[dim], device=a.get("device", "cpu")).to(torch_dtype(a["dtype"]))
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return r.reshape(view).expand(shape).clone()


@lowering(iota, "jax")
def _iota_jax(a):
    return lax().broadcasted_iota(_jax_dtype(a["dtype"]), tuple(a["shape"]), a["dim"])


rand = declare("rand", CREATION, "", shape=Attr("ints"), dtype=Attr("dtype"),
               distribution=Attr("str", "uniform", choices=("uniform", "normal")),
               doc="random values: uniform on [0, 1) or standard normal; no two runs agree")


@meaning(rand)
def _rand(a):
    make = torch.rand if a["distribution"] == "uniform" else torch.randn
    return make(list(a["shape"]), dtype=torch_dtype(a["dtype"]), device=a.get("device", "cpu"))


randperm = declare("randperm", CREATION, "", n=Attr("int"), dtype=Attr("dtype", "int64"),
                   doc="a random permutation of 0 .. n-1; no two runs agree")


@meaning(randperm)
def _randperm(a):
    return torch.randperm(a["n"], dtype=torch_dtype(a["dtype"]), device=a.get("device", "cpu"))


constant = declare("constant", CREATION, "", shape=Attr("ints"), dtype=Attr("dtype"), values=Attr("any"),
                   doc="a small literal tensor (a traced program's constant): values in row-major order")


@meaning(constant)
def _constant(a):
    return torch.tensor(a["values"], dtype=torch_dtype(a["dtype"]), device=a.get("device", "cpu")).reshape(a["shape"])


@lowering(constant, "jax")
def _constant_jax(a):
    return jnp().asarray(a["values"], _jax_dtype(a["dtype"])).reshape(tuple(a["shape"]))
