"""A standalone reproducer as one Python file: values, model code, the backend's path, the check.

The file imports torch (and thunder, jax or nvFuser where its path needs them), never irlens.
It rebuilds its inputs and weights (`irlens.repro.tensors`), runs the backend's path, then
the same model code eagerly in float64 on the same numbers (floating values cast up, as
irlens's reference is made), and compares every result by name: norm-wise relative error
against the bound irlens compare judged that result by (`ALLOWED`, from
`irlens.numerics.verdicts.allowed_error`: k x eager's own error + a floor), or, for a value with no
bound of its own (a reduced graph's intermediates), the flat tolerance for the dtype and mode
(`TOL`); NaN or Inf never passes.

Exit status: 0 ok, 1 mismatch, 2 an exception in the backend's path, 3 the float64 reference
failed; a crash ends the process by its signal. The first line it prints says which
(`ok: ...`, `mismatch: ...`, `exception: TypeError: ...`).

A backend section defines `run_backend(values) -> {name: tensor}`:
  torch   `compile_fn(model)` called like the cell calls its module (outputs; in fwd+bwd the
          workload's loss, backward, and the gradients of the floating inputs and parameters);
  jax     the JAX program written out (`jax_source`), jitted at matmul precision highest;
  nvfuser nvFuser FusionDefinitions (as nvFuser prints them) and the torch calls between them.
"""
from __future__ import annotations

import datetime
import textwrap
from dataclasses import dataclass, field

import torch

from irlens.backends.repro_path import ReproPath
from irlens.repro.tensors import DRAWN, EMBED_MAX, HELPERS, Draw, embed_limit, how_rebuilt, tensor_source
from irlens.repro.torch_source import TorchFunction

EXIT_OK, EXIT_MISMATCH, EXIT_EXCEPTION, EXIT_REFERENCE = 0, 1, 2, 3


@dataclass
class TorchModel:
    """The model as torch code: what the reference runs (and a torch path compiles)."""

    forward: TorchFunction  # in the cell's dtype
    reference: TorchFunction  # in float64 (the same function where the code is the same)
    outputs: list[str]  # the result name of each returned value
    loss: TorchFunction | None = None  # fwd+bwd: the workload's loss of the outputs
    loss_reference: TorchFunction | None = None


@dataclass
class JaxSection:
    source: str  # def jax_program(...)
    args: list[str]  # the value each flat argument takes
    dtypes: list[str]  # its JAX dtype (int64 is int32 without JAX's 64-bit mode)
    outputs: list[str]  # the result name of each returned value


@dataclass
class Fusion:
    definition: str  # the FusionDefinition as nvFuser prints it (`def nvfuser_fusion(fd): ...`)
    inputs: list[str]
    outputs: list[str]


@dataclass
class TorchCall:
    function: TorchFunction
    outputs: list[str]


@dataclass
class FusionSection:
    steps: list  # Fusion | TorchCall, in order
    outputs: list[str]


@dataclass
class ReproFile:
    title: str  # one line: what cell (or reduced graph) this is
    notes: list[str]  # header paragraphs: provenance, what irlens saw, how to read it
    device: str
    dtype: str
    tol: float  # the flat tolerance: judges a result without a bound of its own
    values: dict[str, torch.Tensor]  # every value the code reads, by key, in the cell's dtype
    model: TorchModel
    path: ReproPath
    grads: list[str] = field(default_factory=list)  # fwd+bwd: the keys gradients are taken of
    jax: JaxSection | None = None  # the xla path
    fusions: FusionSection | None = None  # a reduced nvFuser path
    embed_max: int = EMBED_MAX
    timed: bool = False  # also time the backend's step (`irlens repro --slow`)
    # the cell's own bound per result, as compare judged it: name -> (allowed error, how it came about)
    allowed: dict[str, tuple[float, str]] = field(default_factory=dict)
    # values drawn from a description where too large to embed (a GraphNet sample's meta), by key
    draws: dict[str, Draw] = field(default_factory=dict)

    def render(self) -> str:
        return render(self)


def render(f: ReproFile) -> str:
    values = _values(f)
    rebuild = HELPERS + ("\n\n" + DRAWN if "drawn(" in values else "")  # a value drawn from its meta
    parts = [_header(f), _imports(f), _settings(f), "# --- inputs and weights " + "-" * 70, rebuild, values,
             "# --- the model " + "-" * 78, _model(f),
             f"# --- the backend's path: {_path_description(f)} " + "-" * 10, _backend(f),
             "# --- run and check " + "-" * 74, _RUN_AND_CHECK]
    if f.timed:
        parts.append(_TIMING.replace("EVENTS_OK", "False" if f.jax is not None else "True"))
    parts.append(_MAIN)
    return "\n\n".join(p.strip("\n") for p in parts) + "\n"


def _path_description(f: ReproFile) -> str:
    if f.fusions is not None:
        return "nvFuser FusionDefinitions and the torch calls between them"
    return f.path.description


def _header(f: ReproFile) -> str:
    from irlens.matrix.document import versions

    v = versions()
    made = (f"Made by irlens {v['irlens']} on {datetime.date.today().isoformat()} with torch {v['torch']}"
            + "".join(f", {k} {v[k]}" for k in ("thunder", "jax") if v.get(k)) + ".")
    body = [f.title, "", made, *[line for note in f.notes for line in ("", note)], "",
            how_rebuilt(f.values, f.embed_max, f.draws) + ".", "",
            "Exit status: 0 ok, 1 mismatch (a result's relative error above the tolerance, or NaN), "
            "2 an exception in the backend's path, 3 the float64 reference failed; a crash ends the process.",
            "The first line printed says which."]
    wrapped = [textwrap.fill(line, 96, break_on_hyphens=False, break_long_words=False) if line else "" for line in body]
    return '"""' + "\n".join(wrapped).replace('"""', "'''") + '\n"""'


def _imports(f: ReproFile) -> str:
    lines = ["import base64", "import math", "import statistics", "import sys", "import time", "import traceback",
             "", "import torch"]
    extra = set(f.model.forward.imports) | set(f.model.reference.imports)
    for fn in (f.model.loss, f.model.loss_reference):
        extra |= set(fn.imports) if fn else set()
    if f.fusions is not None:
        for step in f.fusions.steps:
            if isinstance(step, TorchCall):
                extra |= set(step.function.imports)
        extra.add("from nvfuser_direct import DataType, FusionDefinition")
    if f.jax is not None:
        extra |= {"import jax", "import jax.numpy as jnp", "import numpy as np", "from jax import lax"}
    return "\n".join(lines + sorted(extra))


def _settings(f: ReproFile) -> str:
    return "\n".join([
        f"DEVICE = {f.device!r}",
        f"DTYPE = torch.{f.dtype}  # the cell's compute dtype",
        f"TOL = {f.tol!r}  # the flat tolerance for this dtype and mode: a result with no bound in ALLOWED",
        "# the relative error (norm-wise) each result may have: the bound irlens compare judged it by",
        "ALLOWED = {" + "".join(f"\n    {name!r}: ({bound!r}, {why!r})," for name, (bound, why) in f.allowed.items())
        + ("\n}" if f.allowed else "}"),
        f"TIMED = {f.timed!r}  # also time the backend's step (irlens repro --slow)",
    ])


def _values(f: ReproFile) -> str:
    lines = ["def make_values():", '    """Every tensor the code reads, by name, on the CPU."""', "    return {"]
    lines += [f"        {key!r}: {tensor_source(t, seed, embed_limit(key, f.embed_max), f.draws.get(key))},"
              for seed, (key, t) in enumerate(f.values.items())]
    lines += ["    }", "", "", "# fwd+bwd: the values gradients are taken of (floating inputs, parameters)",
              f"GRADS = {f.grads!r}"]
    return "\n".join(lines)


def _function(fn: TorchFunction, const: str, comment: str = "") -> str:
    return f"{comment}{const}_ARGS = {fn.args!r}\n\n\n{fn.source.rstrip()}"


def _model(f: ReproFile) -> str:
    m = f.model
    parts = [f"MODEL_OUTPUTS = {m.outputs!r}", _function(m.forward, "MODEL")]
    if m.reference is not m.forward:
        parts.append(_function(m.reference, "REFERENCE", "# the same model captured in float64: its code differs "
                                                        "(a dtype it names)\n"))
    if m.loss is not None:
        parts.append(_function(m.loss, "LOSS", "# the workload's loss of the outputs (fwd+bwd)\n"))
        if m.loss_reference is not None and m.loss_reference is not m.loss:
            parts.append(_function(m.loss_reference, "LOSS_REFERENCE", "# the loss captured in float64\n"))
    return "\n\n\n".join(parts)


def _names(f: ReproFile) -> dict[str, str]:
    m = f.model
    ref = m.reference is not m.forward
    loss_ref = m.loss_reference is not None and m.loss_reference is not m.loss
    return {"model": m.forward.name, "model_args": "MODEL_ARGS",
            "reference": m.reference.name, "reference_args": "REFERENCE_ARGS" if ref else "MODEL_ARGS",
            "loss": m.loss.name if m.loss else "None", "loss_args": "LOSS_ARGS" if m.loss else "()",
            "loss_reference": (m.loss_reference.name if loss_ref else (m.loss.name if m.loss else "None")),
            "loss_reference_args": "LOSS_REFERENCE_ARGS" if loss_ref else ("LOSS_ARGS" if m.loss else "()")}


def _backend(f: ReproFile) -> str:
    n = _names(f)
    run_torch = _RUN_TORCH
    reference = (f"def run_reference(values):\n    return run_torch({n['reference']}, {n['reference_args']}, values, "
                 f"{n['loss_reference']}, {n['loss_reference_args']})")
    if f.jax is not None:
        return "\n\n\n".join([_jax(f.jax, f.device), run_torch, reference])
    if f.fusions is not None:
        return "\n\n\n".join([_fusions(f.fusions), run_torch, reference])
    compiled = (f"COMPILED = []\n\n\ndef run_backend(values):\n    if not COMPILED:\n"
                f"        COMPILED.append(compile_fn({n['model']}))\n"
                f"    return run_torch(COMPILED[0], MODEL_ARGS, values, {n['loss']}, {n['loss_args']})")
    return "\n\n\n".join([f.path.compile_source.strip("\n"), run_torch, compiled, reference])


_RUN_TORCH = '''\
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
    return results'''


def _jax(j: JaxSection, device: str) -> str:
    platform = "gpu" if device.startswith("cuda") else "cpu"
    return f'''JAX_ARGS = {j.args!r}
JAX_DTYPES = {j.dtypes!r}
JAX_OUTPUTS = {j.outputs!r}


{j.source.rstrip()}


def to_jax(t, dtype):
    t = t.detach().cpu()
    array = t.float().numpy() if t.dtype == torch.bfloat16 else t.numpy()
    return jax.device_put(jnp.asarray(array, dtype=jnp.dtype(dtype)), jax.devices({platform!r})[0])


def to_torch(x):
    array = np.asarray(x)
    if array.dtype.name == "bfloat16":  # numpy has no bfloat16 torch reads
        return torch.from_numpy(array.astype(np.float32)).to(DEVICE, torch.bfloat16)
    return torch.from_numpy(array.copy()).to(DEVICE)


JITTED = jax.jit(jax_program)


def run_backend(values):
    args = [to_jax(values[k], d) for k, d in zip(JAX_ARGS, JAX_DTYPES)]
    with jax.default_matmul_precision("highest"):
        outs = jax.block_until_ready(JITTED(*args))
    return {{name: to_torch(o) for name, o in zip(JAX_OUTPUTS, outs)}}'''


def _fusions(s: FusionSection) -> str:
    import re

    defs, body = [], ["def run_backend(values):", "    env = dict(values)"]
    for i, step in enumerate(s.steps):
        if isinstance(step, Fusion):
            text = re.sub(r"def \w+\(fd", f"def nvfuser_fusion_{i}(fd", step.definition.strip("\n"), count=1)
            defs.append(text)
            defs.append(f"FUSION_{i} = []  # built on first use, as Thunder's executor does\n\n\n"
                        f"def fusion_{i}():\n    if not FUSION_{i}:\n        with FusionDefinition() as fd:\n"
                        f"            nvfuser_fusion_{i}(fd)\n        FUSION_{i}.append(fd)\n    return FUSION_{i}[0]")
            body.append(f"    outs = fusion_{i}().execute([env[k].contiguous() for k in {step.inputs!r}])")
        else:
            defs.append(step.function.source.rstrip())
            body.append(f"    outs = {step.function.name}(*[env[k] for k in {step.function.args!r}])")
        body.append(f"    env.update(zip({step.outputs!r}, outs))")
    body.append(f"    return {{k: env[k] for k in {s.outputs!r}}}")
    return "\n\n\n".join(defs + ["\n".join(body)])


_RUN_AND_CHECK = '''\
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
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")'''


_TIMING = '''\
def time_backend(values, steps=20):
    """The backend's step, timed: CUDA events on a GPU (EVENTS_OK), else wall time; then the
    kernels that took the most time in one profiled step."""
    from torch.profiler import ProfilerActivity, profile

    cuda = DEVICE.startswith("cuda")
    events = cuda and EVENTS_OK
    run_backend(values)
    synchronize()
    times = []
    for _ in range(steps):
        if events:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run_backend(values)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        else:
            begin = time.perf_counter()
            run_backend(values)
            synchronize()
            times.append((time.perf_counter() - begin) * 1e6)
    how = "CUDA events" if events else "wall time"
    print(f"time: {statistics.median(times):.1f} us per step (median of {steps}, {how})")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        run_backend(values)
        synchronize()
    key = "self_cuda_time_total" if cuda else "self_cpu_time_total"
    print(prof.key_averages().table(sort_by=key, row_limit=8))'''


_MAIN = '''\
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
    sys.exit(main())'''
