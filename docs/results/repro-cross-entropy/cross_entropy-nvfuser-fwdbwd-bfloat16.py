"""irlens repro: cross_entropy fwdbwd bfloat16 on cuda through nvfuser (preset tiny)

Made by irlens 0.1.0 (source checkout) on 2026-11-25 with torch 2.11.0+cu130, thunder 0.2.6, jax
0.11.2.

Made by: irlens repro /work/main/examples/cross_entropy.py:cross_entropy --backend nvfuser
--mode fwdbwd --dtype bfloat16 --device cuda --preset tiny

When irlens ran it: exception: RuntimeError: INTERNAL ASSERT FAILED at /workspace/Fuser/csrc/runtime/fusion_kernel_runtime.cpp:476, please report a bug with repro script to NVFuser at https://github.com/NVIDIA/Fuser/issues..

The model: Dynamo's FX graph of the workload's module (torch-level calls), its parameters and
inputs as arguments; the workload's loss likewise.

2 tensor(s) of at most 4096 elements embedded exactly; 2 larger one(s) regenerated from a seed
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

DEVICE = 'cuda'
DTYPE = torch.bfloat16  # the cell's compute dtype
TOL = 0.05  # irlens's tolerance for this dtype and mode (relative error, norm-wise)
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
        'input0': regenerated(0, torch.bfloat16, (256, 64), -0.0073956002306658775, 1.0027996405489672),
        'input1': embedded('4AAAAAAAAADEAgAAAAAAAK4DAAAAAAAAHwIAAAAAAAA9AwAAAAAAAIQCAAAAAAAAdAMAAAAAAABsAwAAAAAAAHYAAAAAAAAAKwIAAAAAAAAwAwAAAAAAABYBAAAAAAAAaQAAAAAAAABIAgAAAAAAANQAAAAAAAAAyQIAAAAAAABCAAAAAAAAAJEAAAAAAAAAxwAAAAAAAABaAwAAAAAAABgBAAAAAAAAHQAAAAAAAACjAwAAAAAAAAcCAAAAAAAARgEAAAAAAABIAQAAAAAAAJ4DAAAAAAAAcgEAAAAAAAAcAAAAAAAAAMMCAAAAAAAAcQIAAAAAAAA+AwAAAAAAAMICAAAAAAAA+wEAAAAAAACzAQAAAAAAAOoBAAAAAAAAMAMAAAAAAAAYAAAAAAAAAF4BAAAAAAAAeAIAAAAAAACAAAAAAAAAAHYDAAAAAAAAEAAAAAAAAAA4AAAAAAAAAB4CAAAAAAAAuAEAAAAAAADWAwAAAAAAAGACAAAAAAAA5gMAAAAAAAA5AQAAAAAAAOMAAAAAAAAAdwAAAAAAAAA+AAAAAAAAAK4AAAAAAAAAUAEAAAAAAADbAAAAAAAAAMUDAAAAAAAALwMAAAAAAAAlAwAAAAAAACwDAAAAAAAAPgEAAAAAAAD5AQAAAAAAAGcCAAAAAAAAMgMAAAAAAABGAgAAAAAAAMICAAAAAAAABQIAAAAAAAAhAwAAAAAAAMgBAAAAAAAA2gEAAAAAAAChAgAAAAAAAA4CAAAAAAAA1wMAAAAAAAA8AwAAAAAAADQDAAAAAAAAZAAAAAAAAAAtAAAAAAAAAEsAAAAAAAAAlgMAAAAAAAB2AQAAAAAAAJADAAAAAAAAHgMAAAAAAADUAAAAAAAAAIECAAAAAAAA5gEAAAAAAACmAAAAAAAAACcCAAAAAAAATgIAAAAAAAAYAwAAAAAAADsDAAAAAAAAZwIAAAAAAACZAQAAAAAAAH0DAAAAAAAAIAEAAAAAAAB/AgAAAAAAALQDAAAAAAAAuAAAAAAAAACWAQAAAAAAAFUBAAAAAAAAewAAAAAAAABmAgAAAAAAAMQCAAAAAAAAyQIAAAAAAAAlAwAAAAAAAC0BAAAAAAAA9gEAAAAAAADTAAAAAAAAACUDAAAAAAAA6QIAAAAAAADrAAAAAAAAACMAAAAAAAAA4wIAAAAAAAA5AgAAAAAAANQBAAAAAAAAsAEAAAAAAADxAgAAAAAAAJEBAAAAAAAAzwIAAAAAAAC0AQAAAAAAAJoCAAAAAAAANAMAAAAAAABPAwAAAAAAACIAAAAAAAAAKgMAAAAAAAAKAAAAAAAAAJADAAAAAAAARgAAAAAAAACzAwAAAAAAAMQCAAAAAAAA3QEAAAAAAAAKAQAAAAAAAJ0DAAAAAAAAbwAAAAAAAADAAwAAAAAAAAQDAAAAAAAAWgIAAAAAAAAIAwAAAAAAAM0BAAAAAAAAFAMAAAAAAAD0AAAAAAAAADsCAAAAAAAAPgEAAAAAAADnAAAAAAAAAIUBAAAAAAAAAQMAAAAAAACwAQAAAAAAADcBAAAAAAAA7QAAAAAAAAA7AgAAAAAAAMwDAAAAAAAAFgEAAAAAAABgAAAAAAAAAI8CAAAAAAAANwIAAAAAAADiAAAAAAAAAKQDAAAAAAAAtwMAAAAAAADCAAAAAAAAAFICAAAAAAAAzQEAAAAAAAAcAwAAAAAAADUDAAAAAAAARAMAAAAAAABVAgAAAAAAAKICAAAAAAAAAAAAAAAAAABwAAAAAAAAAOIAAAAAAAAAngIAAAAAAACAAAAAAAAAAFUBAAAAAAAAUwMAAAAAAADzAAAAAAAAANMAAAAAAAAAwAMAAAAAAAAeAAAAAAAAAL8AAAAAAAAAYAIAAAAAAADdAAAAAAAAAGEAAAAAAAAAMQIAAAAAAACDAgAAAAAAAMcDAAAAAAAAFQMAAAAAAADIAQAAAAAAAM8CAAAAAAAA8wEAAAAAAAAcAAAAAAAAAB8AAAAAAAAA3wMAAAAAAAB2AgAAAAAAAE0BAAAAAAAAAAIAAAAAAACvAgAAAAAAANQBAAAAAAAA9QIAAAAAAAD6AgAAAAAAAI0CAAAAAAAAngEAAAAAAACdAwAAAAAAAMYCAAAAAAAAngEAAAAAAACfAQAAAAAAACsAAAAAAAAAygMAAAAAAAAwAQAAAAAAAI0DAAAAAAAA3gAAAAAAAADPAQAAAAAAALIDAAAAAAAAEwIAAAAAAAByAgAAAAAAALYCAAAAAAAAwAAAAAAAAADhAgAAAAAAALIAAAAAAAAAtgMAAAAAAAAOAwAAAAAAAAEAAAAAAAAAqQIAAAAAAAA6AgAAAAAAAFsCAAAAAAAAdAMAAAAAAACcAwAAAAAAAGICAAAAAAAAiQIAAAAAAAA5AgAAAAAAAD4DAAAAAAAAAgMAAAAAAAAaAwAAAAAAALcDAAAAAAAAqgMAAAAAAADQAQAAAAAAAKoDAAAAAAAAWAIAAAAAAAB5AAAAAAAAAEsBAAAAAAAA2gIAAAAAAABuAwAAAAAAAJ8BAAAAAAAAXQIAAAAAAABqAgAAAAAAAA0CAAAAAAAAggMAAAAAAAArAgAAAAAAAA4BAAAAAAAA2wMAAAAAAABoAwAAAAAAAAgDAAAAAAAAdwEAAAAAAADBAQAAAAAAAIgDAAAAAAAA1wIAAAAAAABxAgAAAAAAAF8CAAAAAAAArgAAAAAAAAA=', torch.int64, (256,)),
        'proj.weight': regenerated(2, torch.bfloat16, (1000, 64), 0.00010475137736648321, 0.07198022906888092),
        'proj.bias': embedded('eD0XvIc94j39vR899z2DvZY9Bz0FPda9FTwyvfQ9ob2EvP07YD2nvf29i7wDPUm9rj3hvb+9Sr1AvK29ab21PZO9Dj22PZ28yD12PfO8uL30POK9+ryfPCM7jLyxvTC8nDwjPcY9ir2nOpc9rz1pvXK7qbyBvZO87T3vPeC94z2pPbU98zwzO7c9hr1MvX69/r3FPfk9UL2tPXQ90bzQvTy9bz21PB09vb1fvVQ9Qzrqvbi64brAvfG9Sj0NPYm8yryMvZ49Ab0JvIM8nL2KuxI9NDyePTi9H72hvTm91z2dvJM90D2vvcm9Jjz1PZQ9mD3nPRo9xz2tPIa9kL2IvLS9uD1bPNq9Yb0YPVC9CLyAvJ292r1fvSK9CT3HPeQ9TT1EPZ8987wyPcS9Vb0evXi7ojzFvRY94DuXPWG8hj3QvN09Gb3OPeO9U7uWu1e9zr2/vUe9o71lPZy99j17vWk8Az0Mva063z0bvVS94r0SvQO9sb3rvE28JD2cvfc9vjy3PHS9jD3evEU8sb2Tvb09VT2vPdy9tb2FvUi94z2dvXq6y71Du+690r3vPaE9pDumvcg9wz2PPZq9br1SPSQ8t71PO507yb0SPek9f72BvZ48qbyfPJk9s7yNvXK9b720PTA9UT2avFg9oDu5vTS9x7zbvW69gr2YvV49JLvUO969Lb27Pa89mj2KvZA9rD2yvbG9zb0kvJm8GT2wPca85T2PPR09PLzSPbU7+T32Pdo7gr32Pc49572bPW099DyJPK49NryGveW98r2WvZc93jwQvGq96b2VPOi9zL2JPOa55j19vfo8172PO5A9/73fvZM9ir2AvcK8Kj1LO2e96T3oO128LD3bvdm90L0Vvae9Lbz0vcu9ubyzPbI9Nb20PaK8iT0dvZ+9nL2APbM7sD30PXe8qz3nvai9Rb3ZO9M9eD3SPYc8kb1GPfE87j1JPZi9Ub3NvWM7o72XPbm9vz0NvYK9Vz33Pce91TwPvdc92rs0vdu9272RvJi9Zj3gveK9mL16vZI83L0dPRA9iD2LPRC8dT2iPUA8b71tvT68HL3fPT285T07vIO83bzQvc89mjxuvXY94Tz/Pak9eL3ZvQw9lz2DvGK87b13Pe+8pT2WvRM97Tz8PZc8lT3SPe49XLwDPfu94zzdvdW99z30PRG97T2HPZq9MLxUvYy9Mz2kvcK8Ub0OPXW9hL0zvUq8y71pPdO9Oj3bvRQ9L72BPJ89tz1ZPfC9TL3QPfC8CjyJPYi9xb1cu2W7YDzlPUE9qj0vPfK8PT2RPUk9Kj2aPfS9/j24vRK7rjyavfw8pT3+vbS98T14vZ49szzxvFo99j2uvdK9CL0nvdc9MD1VPf29GzzvPdU9+b2ZvSm9vzyWPbW9Rz21vau84z3yu5G9n7zoPI49WryePcw83TzUvaw95z3+vZW90r0svdS9Iz0KPdk9JzuFPcq9dr2Cu0K6kL1LPWc9qD11PaA72T2ivDm6fDvWPbG81j2uPZE9ar3LvEO9rb3OPes897yvPbi95TzLvdW69rwIvRw9Rb2oPfc9mzyaPSI9+72WPfe9irywvMA9nr2cPOK7dL14vFG9sr1RvPc7Jr0JPDE9lL3ru9o9970jvR29yb28PYM9hb39vSy97b3ivMK94rzDvd49wD1zvdK9/L37vdY7iLxGvd29rD1DPaQ9oz25vfM9n71FPQO7njyUvQw9/z0nPfC9OD2MPe49cj25PcY9ib02vZk92z3IPUQ8I72dvNg9GT3fvIq9VL2vvPq92D0pPdS94L0DPVq7sr1jvVi8Cbxyvao9zr10vQu9371lPbC8Mb2MvPM9Wr0VvU09CD3uvPS8Fr1KvSi85b3uvYY9lTzkOn685L2MvfG9mDy3vZ49eLtrvae8JD3GPeU6fD3lvOI5PjzNPOW8xrw6PZa9tr1LPd69b7zSPW28Mj1eu6U99L20PVs9J73ZPEq9uj3Ivc891r2PvTQ9jr0FvZS9Q71GvNe94j2guwa9Lb2yvKO7xj2nvcU8Bb3Wva+9Qb3tuzC9pT2OvT89pz2Au3g8/b3qPfm96z2wvdC9Gr1qPLi9Nb1evVe9r70wvR09uj1Ju3G8hLycPVA7wj12veM9iT2iPcI9rT25vWy6+D36vbU98r3uPeC8972GvZK9LD3Wvfm9WL3nPAc9CrzjvZq95z3EveC9d70cu6g86j3bvdm9+r0IPZ69073oPPG86r1fvbS9lT3HvW48ZD3YPai8/j0TPdM9xL2xPI29ub2JPXW8jbmiPbm9QL3BvYq9nD2zvRw9dj01PZc9jTupvS09l71tPFK8rbu7PYY7dr2Gvbu9uL3ivLg95T3XvQo9g72FPcI9f73RPZW9kb0lvSg9ej28vZ+9sTyjPSA8aT3bvVs9pz2ePVo9gbzHPaQ9mr2sPU89yD2YPbq6cbzRvag9+D3HPe292b3ZvXi9Ej2jvMa9PD1iveQ9tj2YPQa97T1ovTC9Ij2LvWs9NDwuPYU81L0COpm92L01Pbc9MT2JPdi9or3Kvfm98b2rvf09N726vL+9w73fPIG8HL0Gvco94r3XPQw9wr0PveS91jyevc89oD2RPdO9hT3APfm9473NPRU9HD1LvaE8gD1Mvcm8BD28u7Q7rb2kvfQ9XT0=', torch.bfloat16, (1000,)),
    }


# fwd+bwd: the values gradients are taken of (floating inputs, parameters)
GRADS = ['input0', 'proj.weight', 'proj.bias']

# --- the model ------------------------------------------------------------------------------

MODEL_OUTPUTS = ['out0']


MODEL_ARGS = ['proj.weight', 'proj.bias', 'input0', 'input1']


def model(L_self_modules_proj_parameters_weight_, L_self_modules_proj_parameters_bias_, L_x_, L_targets_):
    l_self_modules_proj_parameters_weight_ = L_self_modules_proj_parameters_weight_
    l_self_modules_proj_parameters_bias_ = L_self_modules_proj_parameters_bias_
    l_x_ = L_x_
    l_targets_ = L_targets_
    linear = torch._C._nn.linear(l_x_, l_self_modules_proj_parameters_weight_, l_self_modules_proj_parameters_bias_);  l_x_ = l_self_modules_proj_parameters_weight_ = l_self_modules_proj_parameters_bias_ = None
    cross_entropy = torch.nn.functional.cross_entropy(linear, l_targets_);  linear = l_targets_ = None
    return (cross_entropy,)


# the workload's loss of the outputs (fwd+bwd)
LOSS_ARGS = ['out0']


def loss(L_o_0_):
    l_o_0_ = L_o_0_
    mul = l_o_0_ * l_o_0_;  l_o_0_ = None
    mean = mul.mean();  mul = None
    total = 0.0 + mean;  mean = None
    return (total,)

# --- the backend's path: thunder.jit with its nvFuser executor first ----------

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
    fusion = thunder.get_executor('nvfuser')
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


def check(results, reference):
    """(problems, largest error): each result against its float64 reference, by name."""
    problems, worst = [], 0.0
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
        worst = max(worst, err)
        if not math.isfinite(err):
            problems.append(f"{name}: NaN or Inf in the result")
        elif not err <= TOL:
            problems.append(f"{name}: rel err {err:.2e} > tol {TOL:.0e}")
    return problems, worst


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
    problems, worst = check(results, reference)
    if problems:
        print("mismatch: " + "; ".join(problems), flush=True)
        status = 1
    else:
        print(f"ok: {len(reference)} result(s), max rel err {worst:.1e} <= tol {TOL:.0e}", flush=True)
        status = 0
    if TIMED:
        time_backend(values)
    return status


if __name__ == "__main__":
    sys.exit(main())
