"""irlens repro: inplace_hardswish_gate fwdbwd float32 on cpu through thunder+torchcompile (preset
tiny)

Made by irlens 0.1.0 on 2026-11-27 with torch 2.13.0+cpu, thunder 0.2.6, jax 0.10.2.

Made by: irlens repro /work/wt/thunderfx/tests/thunderfx_models.py:inplace_hardswish_gate
--backend thunder+torchcompile --mode fwdbwd --device cpu --preset tiny

When irlens ran it: mismatch (grad:input0: rel err 4.25e-02 > 2 x eager's 5.5e-08 + 1.0e-05).

The model: Dynamo's FX graph of the workload's module (torch-level calls), its parameters and
inputs as arguments; the workload's loss likewise.

1 tensor(s) of at most 4096 elements embedded exactly; 0 larger one(s) regenerated from a seed
(same shape and dtype; floating ones with the original's mean and standard deviation, integers
within the original's range).

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

DEVICE = 'cpu'
DTYPE = torch.float32  # the cell's compute dtype
TOL = 0.0005  # the flat tolerance for this dtype and mode: a result with no bound in ALLOWED
# the relative error (norm-wise) each result may have: the bound irlens compare judged it by
ALLOWED = {
    'out0': (1.0094902914677564e-05, "2 x eager's 4.7e-08 + 1.0e-05"),
    'loss': (1.0142699849508793e-05, "2 x eager's 7.1e-08 + 1.0e-05"),
    'grad:input0': (1.0109515829961445e-05, "2 x eager's 5.5e-08 + 1.0e-05"),
}
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
        'input0': embedded('ukbDvzEPQL9Laye/mQPOv3Mkzb3O8xu/W9J6v972zb8cTza/c4GbPhL+Rr++voC+4JpjvlXz1z9K6Gk+7G3vPslsMr/Vk5S/NhUzPw7cSz4Enl0/BEV6Po+0Kb/Bq04/3wONP5QoNL44tw/AiSW5v/Z9ej2AJB6/Tk5MvzzIBr4=', torch.float32, (4, 8)),
    }


# fwd+bwd: the values gradients are taken of (floating inputs, parameters)
GRADS = ['input0']

# --- the model ------------------------------------------------------------------------------

MODEL_OUTPUTS = ['out0']


MODEL_ARGS = ['input0']


def model(L_x_):
    l_x_ = L_x_
    mul = l_x_ * 2;  l_x_ = None
    y = torch.nn.functional.hardswish(mul, inplace = True);  mul = None
    mean = y.mean(-1, keepdim = True)
    sigmoid = torch.sigmoid(mean);  mean = None
    mul_1 = y * sigmoid;  y = sigmoid = None
    return (mul_1,)


# the workload's loss of the outputs (fwd+bwd)
LOSS_ARGS = ['out0']


def loss(L_o_0_):
    l_o_0_ = L_o_0_
    mul = l_o_0_ * l_o_0_;  l_o_0_ = None
    mean = mul.mean();  mul = None
    total = 0.0 + mean;  mean = None
    return (total,)

# --- the backend's path: thunder.jit with its torchcompile fusion executor first ----------

def import_thunder():
    # lightning-thunder <= 0.2.6 registers the named-tensor methods torch 2.13 removed
    for name in ("align_as", "align_to", "has_names", "refine_names", "rename"):
        if not hasattr(torch.Tensor, name):
            def removed(self, *args, _name=name, **kwargs):
                raise NotImplementedError(f"torch.Tensor.{_name} was removed in this torch version")
            removed.__name__ = removed.__qualname__ = name
            setattr(torch.Tensor, name, removed)
    import thunder
    return thunder


def compile_fn(fn):
    thunder = import_thunder()
    fusion = thunder.get_executor('torchcompile')
    others = [ex for ex in thunder.get_default_executors() if ex.name not in ("torchcompile", "nvfuser")]
    return thunder.jit(fn, executors=[fusion, *others])


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
    env = dict(zip(MODEL_OUTPUTS, outs))
    value = loss(*[env[k] for k in loss_args])[0]
    value.backward()
    results["loss"] = value.detach()
    results.update({f"grad:{k}": leaves[k].grad for k in GRADS})
    return results


COMPILED = []


def run_backend(values):
    if not COMPILED:
        COMPILED.append(compile_fn(model))
    return run_torch(COMPILED[0], MODEL_ARGS, values, loss, LOSS_ARGS)


def run_reference(values):
    return run_torch(model, MODEL_ARGS, values, loss, LOSS_ARGS)

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
            if (got is None) != (ref is None):
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
