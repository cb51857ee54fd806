"""irlens repro, reduced: timm_coatnet fwd bfloat16 on cuda through nvfuser (preset bench); its
aot.forward graph from 1152 to 2 nodes

Made by irlens 0.1.0 (source checkout) on 2026-11-28 with torch 2.11.0+cu130, thunder 0.2.6, jax
0.11.2.

Made by: irlens repro timm_coatnet --backend nvfuser --mode fwd --dtype bfloat16 --device cuda
--preset bench --reduce

When irlens ran it: exception: RuntimeError: INTERNAL ASSERT FAILED at /workspace/Fuser/csrc/runtime/compiled_kernel.cpp:187, please report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues..

What it is: a graph of irlens's common view (the aot.forward graph at the primitive level),
reduced by delta debugging (20 tries; no smaller graph fails the same way). The whole graph
failed: exception: RuntimeError: INTERNAL ASSERT FAILED at
/workspace/Fuser/csrc/runtime/compiled_kernel.cpp:187, please report a bug with repro script to
NVFuser at https://github.com/NVIDIA/Fuser/issues..

The backend runs the FusionDefinitions irlens.backends.thunder.lower built for the graph's
fusible ops, as nvFuser prints them, and torch calls for the rest; the float64 reference is the
graph's torch code.

1 tensor(s) embedded exactly (those of at most 4096 elements, and the graphs' constants); 0
larger one(s) regenerated from a seed (same shape and dtype; floating ones with the original's
mean and standard deviation, integers within the original's range).

Exit status: 0 ok, 1 mismatch (a result's relative error above the tolerance, or NaN), 2 an
exception in the backend's path, 3 the float64 reference failed; a crash ends the process.
The first line printed says which.
"""

import base64
import math
import statistics
import sys
import time
import traceback

import torch
from nvfuser_direct import DataType, FusionDefinition
from torch import device

DEVICE = 'cuda'
DTYPE = torch.bfloat16  # the cell's compute dtype
TOL = 0.02  # the flat tolerance for this dtype and mode: a result with no bound in ALLOWED
# the relative error (norm-wise) each result may have: the bound irlens compare judged it by
ALLOWED = {}
TIMED = False  # also time the backend's step (irlens repro --slow)

# --- inputs and weights ----------------------------------------------------------------------

def embedded(data, dtype, shape, stride=None, device="cpu"):
    """A tensor from its bytes (base64), exactly."""
    flat = torch.frombuffer(bytearray(base64.b64decode(data)), dtype=torch.uint8).view(dtype).clone()
    return _laid_out(flat, shape, stride, device)


def regenerated(seed, dtype, shape, mean, std, stride=None, device="cpu"):
    """A floating tensor drawn again: normal with the original's mean and standard deviation."""
    gen = torch.Generator().manual_seed(seed)
    flat = (torch.randn(_extent(shape, stride), generator=gen, dtype=torch.float64) * std + mean).to(dtype)
    return _laid_out(flat, shape, stride, device)


def integers(seed, dtype, shape, low, high, stride=None, device="cpu"):
    """An integer (or bool) tensor drawn again, uniformly in [low, high]."""
    gen = torch.Generator().manual_seed(seed)
    flat = torch.randint(low, high + 1, (_extent(shape, stride),), generator=gen).to(dtype)
    return _laid_out(flat, shape, stride, device)


def _laid_out(flat, shape, stride, device):
    """The elements moved to the device, then viewed with the shape and strides (a broadcast
    stride of 0 survives: moving the strided view would copy it dense)."""
    flat = flat.to(device)
    return flat.reshape(shape) if stride is None else flat.as_strided(shape, stride)


def _extent(shape, stride):
    """Elements behind a tensor of this shape and stride (all of them when it is contiguous)."""
    if stride is None:
        return math.prod(shape)
    return 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, stride))

def make_values():
    """Every tensor the code reads, by name, on the CPU."""
    return {
        'convolution_4': embedded('pzwbPdc8ojw8PS89FD03PRQ9', torch.bfloat16, (1, 1, 3, 3)),
    }


# fwd+bwd: the values gradients are taken of (floating inputs, parameters)
GRADS = []

# --- the model ------------------------------------------------------------------------------

MODEL_OUTPUTS = ['mean']


MODEL_ARGS = ['convolution_4']


def model_float64(L_convolution_4_):
    l_convolution_4_ = L_convolution_4_
    run = torch.sum(l_convolution_4_, dim = [2, 3], keepdim = True);  l_convolution_4_ = None
    t = torch.tensor(3136.0, dtype = torch.float64, device = device(type='cuda', index=0))
    _div = torch.div(run, t);  run = t = None
    return (_div,)

# --- the backend's path: nvFuser FusionDefinitions and the torch calls between them ----------

def nvfuser_fusion_0(fd : FusionDefinition) -> None :
    tv0 = fd.define_tensor(shape=[1, 1, 3, 3], contiguity=[None, None, True, True], dtype=DataType.BFloat16, is_cpu=False)
    tv1 = fd.ops.sum(tv0, dims=[2, 3], dtype=DataType.BFloat16)
    tv2 = fd.ops.broadcast(tv1, is_broadcast_dim=[False, False, True, True])
    tv3 = fd.ops.cast(tv2, dtype=DataType.BFloat16)
    tv4 = fd.ops.cast(tv3, dtype=DataType.Float)
    tv5 = fd.ops.div(tv4, 3136.00)
    tv6 = fd.ops.cast(tv5, dtype=DataType.BFloat16)
    fd.add_output(tv6)


FUSION_0 = []  # built on first use, as Thunder's executor does


def fusion_0():
    if not FUSION_0:
        with FusionDefinition() as fd:
            nvfuser_fusion_0(fd)
        FUSION_0.append(fd)
    return FUSION_0[0]


def run_backend(values):
    env = dict(values)
    outs = fusion_0().execute([env[k].contiguous() for k in ['convolution_4']])
    env.update(zip(['mean'], outs))
    return {k: env[k] for k in ['mean']}


def run_torch(fn, args, values, loss=None, loss_args=()):
    """Results by name, as irlens names them: the outputs; with a loss (fwd+bwd) also the loss and
    `grad:<key>` of every key in GRADS (None where it gets no gradient)."""
    train = loss is not None
    leaves = {k: v.detach().requires_grad_(True) if train and k in GRADS else v for k, v in values.items()}
    with torch.set_grad_enabled(train):
        outs = fn(*[leaves[k] for k in args])
    results = {name: out.detach() for name, out in zip(MODEL_OUTPUTS, outs)}
    if not train:
        return results
    env = {**values, **dict(zip(MODEL_OUTPUTS, outs))}  # the loss reads outputs and constants
    value = loss(*[env[k] for k in loss_args])[0]
    value.backward()
    results["loss"] = value.detach()
    results.update({f"grad:{k}": leaves[k].grad for k in GRADS})
    return results


def run_reference(values):
    return run_torch(model_float64, MODEL_ARGS, values, None, ())

# --- run and check --------------------------------------------------------------------------

def as_float64(values):
    return {k: v.double() if v.is_floating_point() else v for k, v in values.items()}


def rel_err(result, reference):
    """||result - reference|| / ||reference|| in float64; inf when the result is not finite."""
    a, b = result.detach().double().to(reference.device), reference.detach().double()
    if not torch.isfinite(a).all():
        return math.inf
    norm = torch.linalg.vector_norm(b).item()
    err = torch.linalg.vector_norm(a - b).item()
    return err / norm if norm > 0 else err


def bound(name):
    """(the error `name` may have, how it came about): its own from ALLOWED, else the flat tolerance."""
    return ALLOWED.get(name, (TOL, f"tol {TOL:.0e}"))


def check(results, reference):
    """(problems, the result nearest its bound): each result against its float64 reference, by name."""
    problems, nearest = [], None
    for name, ref in reference.items():
        got = results.get(name)
        if got is None or ref is None:
            if (got is None) != (ref is None) and name.startswith("buffer:"):  # a step's in-place update
                problems.append(f"{name}: " + ("not updated (the backend left it as it was)" if got is None
                                               else "updated, where the reference leaves it as it was"))
            elif (got is None) != (ref is None):
                problems.append(f"{name}: {'missing' if got is None else 'a value where the reference has none'}")
            continue
        if tuple(got.shape) != tuple(ref.shape):
            problems.append(f"{name}: shape {tuple(got.shape)} vs reference {tuple(ref.shape)}")
            continue
        err = rel_err(got, ref)
        allowed, why = bound(name)
        if nearest is None or err / allowed > nearest[1] / bound(nearest[0])[0]:
            nearest = (name, err)
        if not math.isfinite(err):
            problems.append(f"{name}: NaN or Inf in the result")
        elif not err <= allowed:
            problems.append(f"{name}: rel err {err:.2e} > {why}")
    return problems, nearest


def synchronize():
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()


def first_line(e):
    e = getattr(e, "inner_exception", None) or e  # Dynamo's BackendCompilerFailed: the backend's own error
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")

def main():
    values = {k: v.to(DEVICE) for k, v in make_values().items()}
    try:
        results = run_backend(values)
        synchronize()
    except Exception as e:
        print(f"exception: {first_line(e)}", flush=True)
        traceback.print_exc()
        return 2
    try:
        reference = run_reference(as_float64(values))
    except Exception as e:
        print(f"the float64 reference failed: {first_line(e)}", flush=True)
        traceback.print_exc()
        return 3
    problems, nearest = check(results, reference)
    if problems:
        print("mismatch: " + "; ".join(problems), flush=True)
        status = 1
    elif nearest is None:
        print(f"ok: {len(reference)} result(s), none with a value", flush=True)
        status = 0
    else:
        name, err = nearest
        allowed, why = bound(name)
        print(f"ok: {len(reference)} result(s); nearest its bound: {name}, rel err {err:.1e} <= {allowed:.1e} "
              f"({why})", flush=True)
        status = 0
    if TIMED:
        time_backend(values)
    return status


if __name__ == "__main__":
    sys.exit(main())
