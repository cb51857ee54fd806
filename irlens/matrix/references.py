"""The references every cell is checked against, and the JAX twins' checks.

A `Reference` is computed once per workload x mode, from the weights and inputs a backend gets
(rounded to its dtype), and handed to the cells with those weights and inputs: a workload whose
weights are drawn at random when its file loads still computes on the same numbers in every
process. It holds eager's results in float64, or where float64 cannot run (a kernel with no
float64 version, such as a grouped matmul; a graph that builds float16 tensors inside, which a
float64 copy then mixes with float64 ones; a graph that builds its tensors on a GPU, whose
float64 copy ran out of that GPU's memory) in the highest precision that runs, down to eager
itself as the cells run it (the run's dtype, the instance not cast), saying why (`fallback`).
Eager as the cells run it is the reference too where it has a NaN or Inf that the higher precision
has not, within the run dtype's range (an overflow inside: `not_finite_below`). Only where eager
fails as the cells run it is there no reference (`ReferenceFailed`, naming every precision's
failure). Beside the results eager's own error in the run's dtype on the same numbers, and the
loss's condition, which the cells are judged with (irlens.numerics.verdicts). A plan's references, computed
once each or in each cell: irlens.matrix.plan_references.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import importlib.util
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field

import torch
from torch.utils._pytree import tree_leaves, tree_map

from irlens.runtime import call_progress
from irlens.core.dtypes import TORCH_DTYPES
from irlens.runtime.call_progress import waiting
from irlens.runtime.gpu_turns import gpu_alone, reference_place, sharing_gpu
from irlens.matrix.conditions import gradient_conditions, loss_condition
from irlens.numerics.verdicts import TwinMismatch, beyond, check_jax_twin, elements_of, float64_slices, held_by, rel_err
from irlens.workloads.workload import Instance, Workload, run_eager

TWIN_PRESET = "tiny"  # a twin computes the same function at every size: checked where it is cheap
REFERENCE_DTYPES = ("float64", "float32")  # a reference's precision, the highest that runs; else the run's own
# out of memory beside other cells: how long a reference waits for the memory it needs before it tries
# with the device alone (then the CPU); the wait does not count against its cell's timeout
MEMORY_WAIT_S = 60.0
MEMORY_POLL_S = 0.5
MEMORY = "device memory for its float64 reference"
HOST_PINNED_SHARE = 1 / 16  # of the host's memory, the most pinned memory a worker keeps between cells


class ReferenceFailed(Exception):
    """Eager fails in every precision, as the cells run it included: no reference."""


class NoRoom(Exception):
    """Saving the reference would leave its disk nearly full: its cells fail, the run goes on."""


@dataclass
class Reference:
    """What the cells of one workload x mode are checked against, and the weights and inputs they run on."""

    results: dict[str, torch.Tensor]  # eager results in `dtype`, named like run_eager's
    state: dict[str, torch.Tensor]  # the module's state_dict in the compute dtype
    inputs: tuple
    dtype: str = "float64"  # the precision the results were computed in
    fallback: str = ""  # why not float64 ("" when it is)
    # eager's own error per result in the run's dtype against `results`; None: not known (why: eager_problem)
    eager_errors: dict[str, float] | None = None
    eager_problem: str = ""
    conditions: dict[str, float] = field(default_factory=dict)  # result name -> its condition (the loss's)
    # eager's outputs in the run's dtype: the baseline of GraphNet's check (irlens.numerics.tolerance_ladder)
    eager_outputs: dict[str, torch.Tensor] = field(default_factory=dict)
    # what it is known by in a worker: its file, or a name of its own where it was computed there
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    # the instance its results came from, untouched (steps ran on copies), for the cell in this process
    kept: Instance | None = field(default=None, repr=False, compare=False)

    def instance(self, wl: Workload, preset: str, dtype: str | None, device: str, seed: int = 0) -> Instance:
        """`wl` on the reference's weights and inputs: `kept`, once, where it matches (building a bench-size
        module and inputs again took a GPU cell 1 to 3 s), else built and pinned."""
        kept, self.kept = self.kept, None
        if kept is not None and (kept.workload.name, kept.preset, kept.dtype, kept.device, kept.seed) == \
                (wl.name, preset, dtype or wl.dtype, device, seed):
            return kept
        return self.pin(wl.instantiate(preset, dtype, device, seed))

    def pin(self, inst: Instance) -> Instance:
        """`inst` on the reference's weights and inputs, on its own device: a reference computed on the
        CPU (no room for float64 on the GPU) pins a GPU instance too."""
        inst.module.load_state_dict(self.state)
        target = torch.device(inst.device)
        if target.type == "cuda" and target.index is None:  # "cuda" is the current one, as tensors name it
            target = torch.device("cuda", torch.cuda.current_device())
        elsewhere = any(isinstance(x, torch.Tensor) and x.device != target for x in tree_leaves(self.inputs))
        # the same tuple where it can be: a cross worker's acquisition keeps the inputs it was made on
        inst.inputs = tree_map(lambda x: x.to(inst.device) if isinstance(x, torch.Tensor) else x,
                               self.inputs) if elsewhere else self.inputs
        return inst

    def results_on_host(self) -> "Reference":
        """The float64 results (and eager's outputs) moved to the host, the weights and inputs (and
        `kept`, which this one gives up) left where they are: a GPU cell's checks copy them back slice
        by slice (irlens.numerics.verdicts.float64_slices). Four bench cells beside each other on one H100, each
        with its float64 copies on the GPU, ran it out of memory (two workers held 33 and 35 GiB).
        Into pinned memory, which the worker keeps for its next cells (`release_memory`): a bench-size
        gelu's 2.1 GB took 1.6 s into fresh pageable memory on an H100's host, 1.0 s pinned the first
        time, 0.04 s after."""
        def moved(t):
            return t.to("cpu", non_blocking=True) if isinstance(t, torch.Tensor) and t.is_cuda else t

        tensors = [t for name in ("results", "eager_outputs") for t in getattr(self, name).values()]
        host = {name: {n: moved(t) for n, t in getattr(self, name).items()} for name in ("results", "eager_outputs")}
        for gpu in {t.device for t in tensors if isinstance(t, torch.Tensor) and t.is_cuda}:
            torch.cuda.synchronize(gpu)  # the copies are done before the host reads them
        on_host, self.kept = dataclasses.replace(self, **host), None
        return on_host

    def nbytes(self) -> int:
        """About what `save` writes: the bytes of its tensors."""
        tensors = [*self.results.values(), *self.state.values(), *self.inputs, *self.eager_outputs.values()]
        return sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))

    def save(self, path: str) -> None:
        torch.save({"results": self.results, "state": self.state, "inputs": list(self.inputs), "dtype": self.dtype,
                    "fallback": self.fallback, "eager_errors": self.eager_errors, "eager_problem": self.eager_problem,
                    "conditions": self.conditions, "eager_outputs": self.eager_outputs}, path)

    @classmethod
    def load(cls, path: str, device: str) -> "Reference":
        d = torch.load(path, map_location=device, weights_only=True)
        return cls(d["results"], d["state"], tuple(d["inputs"]), d["dtype"], d["fallback"], d["eager_errors"],
                   d["eager_problem"], d["conditions"], d.get("eager_outputs", {}), token=path)


def compute_reference(wl: Workload, mode: str, device: str, preset: str, dtype: str | None,
                      failed: dict[str, str] | None = None, turn=contextlib.nullcontext, keep: bool = False) -> Reference:
    """Eager's results in the highest precision that runs (float64, else float32, else eager as
    the cells run it; eager too where it is not finite where that precision is), from the same
    weights and inputs a backend gets (rounded to its dtype);
    eager's own error in the run's dtype on them; the loss's condition. `failed`: precisions
    known not to run (dtype -> why), not tried again. Out of memory is raised (the worker tries
    elsewhere); when no precision runs, ReferenceFailed. `turn()`: held while it computes, after the
    instance is built (the device's, irlens.runtime.gpu_turns); `keep`: `Reference.kept` is that instance."""
    inst = wl.instantiate(preset, dtype, device)
    with turn():
        return reference_of(inst, mode, failed, keep)


def reference_of(inst: Instance, mode: str, failed: dict[str, str] | None = None, keep: bool = False) -> Reference:
    """`compute_reference` of an instance's own weights and inputs (a draw of other inputs:
    irlens.matrix.draws)."""
    state = {k: v.clone() for k, v in inst.module.state_dict().items()}  # before any forward could change it
    ref_dtype, results, fallback = highest_precision_results(inst, mode, failed)
    kept = inst if keep else None
    reference = Reference(results, state, inst.inputs, ref_dtype, fallback, kept=kept)
    if ref_dtype == inst.dtype:
        reference.eager_problem = (f"the reference is eager {ref_dtype} itself" if not fallback else
                                   f"no precision above {inst.dtype} ran")
        reference.eager_outputs = outputs(results)
    else:
        try:
            own = as_run(inst)
            eager = run_eager(own.module, own, mode)
        except torch.OutOfMemoryError:
            raise
        except Exception as e:
            reference.eager_problem = f"eager failed in {inst.dtype}: {type(e).__name__}: {first_line(e)}"
        else:
            beyond = not_finite_below(eager, results, inst.dtype, ref_dtype)
            if beyond:  # the higher precision cannot judge what the run's dtype cannot hold: eager judges
                why = "; ".join(filter(None, [fallback, beyond]))
                reference = Reference(eager, state, inst.inputs, inst.dtype, why, eager_outputs=outputs(eager),
                                      eager_problem=f"the reference is eager {inst.dtype} itself: {beyond}", kept=kept)
            else:
                reference.eager_errors = {n: rel_err(eager[n], r) for n, r in results.items()
                                          if r is not None and eager.get(n) is not None and eager[n].shape == r.shape}
                reference.eager_outputs = outputs(eager)
    if mode == "fwdbwd":  # from the highest precision that ran, finite where the run's dtype overflows
        values = {**{f"input{i}": t for i, t in enumerate(inst.inputs)}, **inst.params()}
        reference.conditions = {"loss": loss_condition(inst.workload, results), **gradient_conditions(results, values)}
    return reference


def not_finite_below(eager: dict[str, torch.Tensor], results: dict[str, torch.Tensor], dtype: str,
                     ref_dtype: str) -> str:
    """Where eager in the run's `dtype` has NaN or Inf and the `ref_dtype` reference is finite within that
    dtype's range (an overflow inside), in one line ("" where nowhere): every stack would mismatch."""
    counts = []
    for name, ref in results.items():
        got = eager.get(name)
        if not (isinstance(got, torch.Tensor) and isinstance(ref, torch.Tensor)) or got.shape != ref.shape \
                or not got.is_floating_point():
            continue
        n = sum(int((~torch.isfinite(a) & torch.isfinite(b) & ~beyond(b, held_by(got.dtype))).sum())
                for a, b in float64_slices(got, ref))  # past the range: not judged at all (irlens.numerics.verdicts)
        if n:
            counts.append(f"{name}: {elements_of(n, got.numel())}")
    return f"{ref_dtype} is finite where {dtype} is not ({'; '.join(counts)})" if counts else ""


def outputs(results: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The step's outputs among its results (`out0`, ...: not the loss, gradients or buffers)."""
    return {n: t for n, t in results.items() if n.startswith("out") and isinstance(t, torch.Tensor)}


def first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [""])[0]


def as_run(inst: Instance) -> Instance:
    """A copy of the instance as the cells run it: its own module copied (a step may update its
    buffers), nothing cast (a graph that keeps some tensors in float16 or float32 keeps them)."""
    return dataclasses.replace(inst, module=copy.deepcopy(inst.module))


def highest_precision_results(inst: Instance, mode: str, failed: dict[str, str] | None = None
                              ) -> tuple[str, dict[str, torch.Tensor], str]:
    """(dtype, eager results in it, why not float64 or ""), trying REFERENCE_DTYPES above the
    run's dtype, highest first (but those `failed` names: dtype -> why), then eager as the cells
    run it (`as_run`). ReferenceFailed, naming each precision's failure, where none runs."""
    finer = [d for d in REFERENCE_DTYPES if d not in (failed or {})
             and torch.finfo(TORCH_DTYPES[d]).eps < torch.finfo(TORCH_DTYPES[inst.dtype]).eps]
    failures = [f"{d} failed: {why}" for d, why in (failed or {}).items()]
    for ref_dtype in [*finer, inst.dtype]:
        as_cells_run = ref_dtype == inst.dtype
        what = f"{ref_dtype} (eager as the cells run it)" if as_cells_run else ref_dtype
        try:
            ref = as_run(inst) if as_cells_run else inst.cast(ref_dtype)
            results = run_eager(ref.module, ref, mode)
        except torch.OutOfMemoryError:
            raise
        except Exception as e:
            failures.append(f"{what} failed: {type(e).__name__}: {first_line(e)}")
            print(f"[irlens] reference {inst.name} {mode}: eager failed in {what}: {type(e).__name__}: "
                  f"{first_line(e)}", file=sys.stderr, flush=True)
            if as_cells_run:
                raise ReferenceFailed(f"eager fails in every precision: {'; '.join(failures)}") from e
            continue
        return ref_dtype, results, "; ".join(failures)


def twin_problem(wl: Workload, device: str, dtype: str | None) -> str:
    """Why `wl`'s JAX twin disagrees with its torch module on the same weights and inputs ("" when
    it agrees, or there is no twin or no JAX to run it), at the small preset: at the bench size
    the check would cost minutes (JAX in float32 at `highest` precision) and say nothing more."""
    if wl.jax is None or importlib.util.find_spec("jax") is None:
        return ""
    reference = compute_reference(wl, "fwd", device, TWIN_PRESET, dtype)
    try:
        check_jax_twin(reference.pin(wl.instantiate(TWIN_PRESET, dtype, device)), reference.results)
    except TwinMismatch as e:
        return str(e)
    return ""


def reference_anywhere(wl: Workload, mode: str, device: str, preset: str, dtype: str | None,
                       gpu_lock: str | None = None, keep: bool = False) -> Reference:
    """`compute_reference` where it fits. With `gpu_lock` (the turns on the plan's device: a GPU,
    or the CPU) it shares the device like a cell: no timing runs beside it, and on a GPU at most
    REFERENCE_PLACES references compute at once (irlens.runtime.gpu_turns.reference_place). Out of
    device memory, it waits (up to MEMORY_WAIT_S, holding no turn) for the memory its try needed,
    tries again with the GPU alone, then on the CPU: float64 needs twice float32's memory
    (attention_manual's [B, H, S, S] scores at the bench size do not fit twice over). A graph the
    CPU cannot run (one that builds its tensors on `cuda:0`) goes back to the device alone below
    float64. Cells pin the reference's own weights and inputs (`keep`: this process's runs on the
    very instance), so they compute on the same numbers. On a GPU the instance is built outside the turn."""
    tries = [(device, sharing_gpu), (device, gpu_alone)] if gpu_lock else [(device, sharing_gpu)]
    if device != "cpu":
        tries.append(("cpu", sharing_gpu))

    def compute(where: str, turn) -> Reference:
        label = f"computing the float64 reference on {where}{' alone' if turn is gpu_alone else ''}"
        lock = gpu_lock if where == device else None  # the turns are the plan's device's
        if where != "cpu" and torch.cuda.is_initialized():  # (before CUDA starts there is no peak to reset)
            torch.cuda.reset_peak_memory_stats(where)  # what a try that runs out needed: memory_needed
        with reference_place(lock if where != "cpu" else None):
            if turn is sharing_gpu and device != "cpu":  # building the instance is host work: a timing may run beside it
                call_progress.stage("instantiating")
                return compute_reference(wl, mode, where, preset, dtype, turn=lambda: call_progress.stage(label)
                                         or turn(lock), keep=keep)
            call_progress.stage(label)
            with turn(lock):
                return compute_reference(wl, mode, where, preset, dtype, keep=keep)

    for (where, turn), (then, then_turn) in zip(tries, tries[1:]):  # out of memory: the next try
        try:
            return compute(where, turn)
        except torch.OutOfMemoryError as e:
            print(f"[irlens] reference {wl.name} {mode}: out of memory in float64 on {where}; next: "
                  f"{'the device alone' if then_turn is gpu_alone else then}", file=sys.stderr, flush=True)
            needed = memory_needed(e, where)
        # out of the handler: its traceback held the failed try's tensors, which no release could give back
        release_memory(device)
        if then_turn is gpu_alone and needed is not None:  # the other cells' memory goes as they end
            wait_for_memory(where, needed, MEMORY_WAIT_S)
    last, turn = tries[-1]
    try:
        return compute(last, turn)
    except ReferenceFailed as e:
        if last == device:
            raise
        call_progress.stage(f"computing the reference below float64 on {device} alone")
        with gpu_alone(gpu_lock):
            return compute_reference(wl, mode, device, preset, dtype, failed={
                "float64": f"out of memory on {device}, and on the CPU: {first_line(e)}"})


def memory_needed(error: torch.OutOfMemoryError, device: str) -> int | None:
    """What a try on a GPU that ran out of memory needed at least: its peak until then and the
    allocation it was refused (None: not told, or no GPU here)."""
    refused = re.search(r"Tried to allocate ([\d.]+) (GiB|MiB|KiB|bytes)\b", str(error))
    if refused is None or not torch.cuda.is_available():
        return None
    asked = int(float(refused[1]) * _UNITS[refused[2]])
    return max(torch.cuda.max_memory_allocated(device), torch.cuda.memory_allocated(device) + asked)


_UNITS = {"GiB": 1 << 30, "MiB": 1 << 20, "KiB": 1 << 10, "bytes": 1}


def wait_for_memory(device: str, needed: int, wait_s: float) -> bool:
    """Wait, holding no turn, up to `wait_s` until `device` has `needed` bytes free (other cells'
    memory goes as they end); whether it has. Not at all where the device has less in all: a
    reference computed on the CPU instead took a bench cell 10 to 134 s."""
    free, total = torch.cuda.mem_get_info(device)
    if needed > total:
        return False
    end = time.monotonic() + wait_s
    with waiting(MEMORY):
        while free < needed and time.monotonic() < end:
            time.sleep(MEMORY_POLL_S)
            free, _ = torch.cuda.mem_get_info(device)
    return free >= needed


def release_memory(device: str) -> None:
    """Give what the float64 work left in torch's allocator back to the device, for the other workers;
    keep the pinned host memory the results were copied into (`Reference.results_on_host`) for the
    worker's next cells, up to HOST_PINNED_SHARE of the host's memory (pinned memory is locked)."""
    gc.collect()
    if device.startswith("cuda") and torch.cuda.is_available():
        torch.cuda.empty_cache()
        stats = torch.cuda.host_memory_stats()
        held = stats.get("allocated_bytes.current")  # pinned blocks in use and cached; None: not told
        if held is None or held > HOST_PINNED_SHARE * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"):
            torch._C._host_emptyCache()


def failure_reason(reason: str) -> str:
    """What the cells of a reference that could not be computed say, from its error's `Type: message`
    (the references' worker's CallFailed reason, or the error in the cell's own worker)."""
    prefix = f"{NoRoom.__name__}: "
    return reason.removeprefix(prefix) if reason.startswith(prefix) else f"the float64 eager reference failed: {reason}"

