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
loss's condition, which the cells are judged with (irlens.numerics). `References` computes them
for a plan: in this process when first asked for, or (isolated) in one worker process in the
background, twins first, so that a cell starts as soon as its own reference is there while
costly ones are still being computed. Each reference obeys the run's timeout; one that fails
or times out fails its cells, saying so.

Isolated, the files are what fills a run's disk (float64 results and gradients at the bench size
take GBs each): a file goes as soon as the last cell of its workload x mode has finished
(`References.finished`), and a reference is saved only where it leaves `MIN_FREE_BYTES` free on
the folder's disk. One that does not fit waits, within its timeout, while references the running
cells will release are held; else (nothing to wait for: no cell is running yet) its cells fail
with the reason (`NoRoom`).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import gc
import importlib.util
import os
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch.utils._pytree import tree_leaves, tree_map

from irlens.runtime import call_progress
from irlens.cache_upkeep import MIN_FREE_BYTES, GiB, disk_free
from irlens.core.dtypes import TORCH_DTYPES
from irlens.runtime.gpu_turns import gpu_alone, sharing_gpu
from irlens.matrix.conditions import gradient_conditions, loss_condition
from irlens.matrix.plan import Plan
from irlens.workloads.builtin import resolve_workload
from irlens.numerics import TwinMismatch, beyond, check_jax_twin, elements_of, float64_slices, held_by, rel_err
from irlens.workloads.workload import Instance, Workload, run_eager

TWIN_PRESET = "tiny"  # a twin computes the same function at every size: checked where it is cheap
REFERENCE_DTYPES = ("float64", "float32")  # a reference's precision, the highest that runs; else the run's own


ROOM_POLL_S = 2.0  # how often a reference that waits for disk looks again
ROOM_WAIT_SHARE = 0.8  # the share of a reference's timeout it may have spent when it gives up waiting for disk


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
    # eager's outputs in the run's dtype: the baseline of GraphNet's check (irlens.tolerance_ladder)
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
        by slice (irlens.numerics.float64_slices). Four bench cells beside each other on one H100, each
        with its float64 copies on the GPU, ran it out of memory (two workers held 33 and 35 GiB)."""
        host = {name: {n: t.cpu() if isinstance(t, torch.Tensor) else t for n, t in getattr(self, name).items()}
                for name in ("results", "eager_outputs")}
        moved, self.kept = dataclasses.replace(self, **host), None
        return moved

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
                for a, b in float64_slices(got, ref))  # past the range: not judged at all (irlens.numerics)
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


def twin_in_worker(workload: str, device: str, dtype: str | None, gpu_lock: str | None = None) -> str:
    """The worker's entry point for `twin_problem`."""
    call_progress.stage("checking the JAX twin")
    with sharing_gpu(gpu_lock):
        return twin_problem(resolve_workload(workload), device, dtype)


def reference_in_worker(workload: str, mode: str, device: str, preset: str, dtype: str | None, path: str,
                        gpu_lock: str | None = None, room_wait_s: float = 0.0) -> None:
    """The worker's entry point (irlens.runtime.isolation calls it by name): save the reference
    (`reference_anywhere`) to `path`, and give the memory back before the next. It is saved only
    where its disk keeps MIN_FREE_BYTES, waiting for room until `room_wait_s` of the call counted
    (`save_with_room`)."""
    print(f"[irlens] reference {workload} {mode}", file=sys.stderr, flush=True)
    call_progress.stage("loading the workload")
    reference = reference_anywhere(resolve_workload(workload), mode, device, preset, dtype, gpu_lock)
    save_with_room(reference, path, room_wait_s)
    del reference
    release_memory(device)


def reference_anywhere(wl: Workload, mode: str, device: str, preset: str, dtype: str | None,
                       gpu_lock: str | None = None, keep: bool = False) -> Reference:
    """`compute_reference` where it fits. With `gpu_lock` (the turns on the plan's device: a GPU,
    or the CPU) it shares the device like a cell: no timing runs beside it. Out of device memory,
    it tries again with the GPU alone, then on the CPU: float64 needs twice float32's memory
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
        if turn is sharing_gpu and device != "cpu":  # building the instance is host work: a GPU timing may run beside it
            call_progress.stage("instantiating")
            return compute_reference(wl, mode, where, preset, dtype, turn=lambda: call_progress.stage(label)
                                     or turn(lock), keep=keep)
        call_progress.stage(label)
        with turn(lock):
            return compute_reference(wl, mode, where, preset, dtype, keep=keep)

    for (where, turn), (then, then_turn) in zip(tries, tries[1:]):  # out of memory: the next try
        try:
            return compute(where, turn)
        except torch.OutOfMemoryError:
            print(f"[irlens] reference {wl.name} {mode}: out of memory in float64 on {where}; next: "
                  f"{'the device alone' if then_turn is gpu_alone else then}", file=sys.stderr, flush=True)
            release_memory(device)
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


def release_memory(device: str) -> None:
    """Give what the float64 work left in torch's allocator back to the device, for the other workers."""
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()


def save_with_room(reference: Reference, path: str, wait_s: float) -> None:
    """Save `reference` to `path` once its disk keeps MIN_FREE_BYTES after it, waiting (polling),
    while other references in its folder are held, for them to be released, until `wait_s` of the
    call counted against its timeout; NoRoom, naming the sizes, where it does not fit by then, or
    where the save itself runs out of disk (other writers share it), its partial file removed."""
    needs = reference.nbytes()
    while (free := disk_free(Path(path).parent)) - needs < MIN_FREE_BYTES:
        spent = call_progress.counted_s()  # None: not in a worker, no timeout to wait within
        if spent is None or spent + ROOM_POLL_S > wait_s or not others_held(path):
            raise NoRoom(f"not enough disk for the float64 reference: needs {needs / GiB:.1f} GiB, "
                         f"{free / GiB:.1f} GiB free (irlens keeps {MIN_FREE_BYTES / GiB:.0f} GiB free)")
        call_progress.stage("waiting for disk to save the float64 reference")
        time.sleep(ROOM_POLL_S)
    try:
        reference.save(path)
    except OSError as e:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        raise NoRoom(f"not enough disk for the float64 reference: needs {needs / GiB:.1f} GiB, saving it failed: "
                     f"{e}") from e


def others_held(path: str) -> bool:
    """Whether other reference files are in `path`'s folder: each goes when its last cell has finished."""
    folder, own = os.path.split(path)
    return any(name.startswith("reference") and name != own for name in os.listdir(folder or "."))


def failure_reason(reason: str) -> str:
    """What the cells of a reference that could not be computed say, from its error's `Type: message`
    (the references' worker's CallFailed reason, or the error in the cell's own worker)."""
    prefix = f"{NoRoom.__name__}: "
    return reason.removeprefix(prefix) if reason.startswith(prefix) else f"the float64 eager reference failed: {reason}"


def computed_in_cells(device: str) -> bool:
    """Where an isolated run computes its references: on a GPU each cell's worker computes its own;
    on the CPU one worker computes each once into a file the cells load. On a GPU a float64
    reference takes seconds, and at the bench size GBs of disk: a bench's files filled a 64 GiB
    disk, and writing them one after another made them its critical path. On the CPU the
    computing is what costs, and the files are small."""
    return device != "cpu"


@dataclass
class Entry:
    reference: Reference | None  # in-process only
    path: str | None  # isolated, from the references' worker; None with `error` "": the cell computes its own
    error: str  # why there is no reference, or ""
    out_of_budget: bool = False  # not computed: the run's time budget ran out first


class References:
    """The float64 reference per workload x mode of a plan, computed once, and with `check_twins`
    each JAX twin's verdict. In-process (no `directory`) they are computed here when first asked
    for. Isolated, one worker computes them into files in `directory`, in the background from
    the first `start` or `get` on (the twins first, the check waits for them), each call within
    `timeout`; `get` waits for its own. With `gpu_lock`, the worker takes its turns on the device
    (a GPU, or the CPU) like a cell (irlens.runtime.gpu_turns), and up to `max_wait_s` of a call's waits
    for them do not count against its timeout. Past `deadline` (time.monotonic(): a run's budget)
    no reference starts: no cell that needs one starts then either, and the worker would only take
    turns from the cells still running. `in_cells` (isolated; default `computed_in_cells` of the
    plan's device): each cell's worker computes its own reference, and the worker here only checks
    the twins."""

    def __init__(self, plan: Plan, directory: str | None, timeout: float, check_twins: bool = False,
                 gpu_lock: str | None = None, threads: int | None = None, max_wait_s: float = 0.0,
                 deadline: float | None = None, in_cells: bool | None = None):
        self.plan, self.directory, self.timeout, self.check_twins = plan, directory, timeout, check_twins
        self.in_cells = directory is not None and (computed_in_cells(plan.device) if in_cells is None else in_cells)
        self.gpu_lock, self.threads, self.max_wait_s, self.deadline = gpu_lock, threads, max_wait_s, deadline
        self._left = Counter((c.workload, c.mode) for c in plan.cells())  # per key: its cells not finished
        self._serving = False  # cells are running: a reference without room may wait for the files they release
        self._cache: dict[tuple[str, str], Entry] = {}
        self._twins: dict[str, str] = {}
        self._ready: dict[tuple[str, str], threading.Event] = {}
        self._twins_ready = threading.Event()
        self._ranks: dict[tuple[str, str], int] | None = None
        self._worker: threading.Thread | None = None
        self._pool = None  # the worker thread's one-worker pool, for `close`
        self._stop = threading.Event()
        self._lock = threading.RLock()

    def get(self, workload: str, mode: str) -> Entry:
        """The reference of a workload (plan key) x mode: in-process, or its file when isolated, or why none."""
        key = (workload, mode)
        if self.in_cells:
            return Entry(None, None, "")
        if self.directory is None:
            with self._lock:
                if key not in self._cache:
                    self._cache[key] = self._compute(workload, mode)
                return self._cache[key]
        self._event(key).wait()
        return self._cache[key]

    def ready_by(self, workload: str, mode: str, until: float | None) -> bool:
        """Whether the reference of a workload x mode is ready by `until` (time.monotonic(); None:
        wait for it however long it takes). In-process it is computed now."""
        if self.directory is None or self.in_cells:
            self.get(workload, mode)
            return True
        return self._event((workload, mode)).wait(None if until is None else max(0.0, until - time.monotonic()))

    def is_ready(self, workload: str, mode: str) -> bool:
        """Whether the reference of a workload x mode is there (or will never be), now; in-process it
        is computed when a cell asks for it."""
        return self.directory is None or self.in_cells or self._event((workload, mode)).is_set()

    def rank(self, workload: str, mode: str) -> int:
        """Where the reference of a workload x mode comes in the order they are computed."""
        if self._ranks is None:
            self._ranks = {key: i for i, key in enumerate(self._keys())}
        return self._ranks[(workload, mode)]

    def _event(self, key: tuple[str, str]) -> threading.Event:
        """Isolated: the event set when the reference of `key` is ready (the worker started)."""
        self.start()
        if key not in self._ready:
            raise KeyError(f"no reference was planned for {key[0]} {key[1]}")
        return self._ready[key]

    def twin_problem(self, workload: str) -> str:
        """Why the workload's JAX twin disagrees, or cannot be checked ("" when it agrees)."""
        if self.directory is None:
            with self._lock:
                if workload not in self._twins:
                    self._twins[workload] = self._twin(workload)
                return self._twins[workload]
        self.start()
        self._twins_ready.wait()
        return self._twins.get(workload, "")

    def check_twins_agree(self) -> None:
        """Each JAX twin must match its torch module, before anything runs (raises TwinMismatch).
        Skipped where JAX is not installed: no JAX backend can run there either."""
        if not self.check_twins or importlib.util.find_spec("jax") is None:
            return
        for key in self._twinned():
            problem = self.twin_problem(key)
            if problem:
                raise TwinMismatch(problem)

    def prepare(self) -> None:
        """Compute every reference the plan's cells need, now."""
        for key in self._keys():
            self.get(*key)

    def start(self) -> None:
        """Isolated: start computing the twin verdicts and every planned reference in the background."""
        with self._lock:
            if self.directory is None or self._worker is not None:
                return
            keys = [] if self.in_cells else self._keys()
            self._ready = {k: threading.Event() for k in keys}
            if not keys and not self._twinned():
                self._twins_ready.set()
                return
            self._worker = threading.Thread(target=self._compute_in_worker, args=(keys,), daemon=True)
            self._worker.start()

    def serving(self) -> None:
        """The plan's cells run from now on: a reference that waits for disk may wait for the files
        their last cells release."""
        self._serving = True

    def finished(self, workload: str, mode: str) -> None:
        """A cell of the workload x mode has finished: after the last, its file goes."""
        key = (workload, mode)
        with self._lock:
            self._left[key] -= 1
            entry = self._cache.get(key) if self._left[key] == 0 else None
        if entry is not None:
            self._release(entry)

    def _release(self, entry: Entry) -> None:
        if entry.path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(entry.path)
            entry.path = None

    def close(self) -> None:
        """Stop the background worker (its process killed mid-call) and wait for its thread, so
        nothing writes into `directory` after this returns (a run that stops early, a twin that
        disagrees, removes it)."""
        self._stop.set()
        pool = self._pool
        if pool is not None:
            pool.close()
        if self._worker is not None:
            self._worker.join()

    def _keys(self) -> list[tuple[str, str]]:
        return list(dict.fromkeys((c.workload, c.mode) for c in self.plan.cells()))

    def _twinned(self) -> list[str]:
        return [w for w, wl in self.plan.workloads.items() if wl.jax is not None] if self.check_twins else []

    def _compute(self, workload: str, mode: str) -> Entry:
        p = self.plan
        try:
            return Entry(compute_reference(p.workloads[workload], mode, p.device, p.preset, p.dtype), None, "")
        except Exception as e:
            return Entry(None, None, f"the float64 eager reference failed: {type(e).__name__}: {e}")

    def _twin(self, workload: str) -> str:
        p = self.plan
        try:
            return twin_problem(p.workloads[workload], p.device, p.dtype)
        except Exception as e:
            return f"cannot check the JAX twin of workload {p.workloads[workload].name!r}: {type(e).__name__}: {e}"

    def _compute_in_worker(self, keys: list[tuple[str, str]]) -> None:
        from irlens.runtime.isolation import CallFailed
        from irlens.runtime.pool import WorkerPool

        p = self.plan
        try:
            # a failed call's worker is closed (a CUDA error would fail every later reference), but for
            # a wait for disk room that ran out
            with WorkerPool(1, preload=(__name__, "irlens.workloads.builtin"), turns=self.gpu_lock,
                            threads=self.threads) as worker:
                self._pool = worker
                for workload in self._twinned():
                    if self._stop.is_set():
                        return
                    try:
                        self._twins[workload] = worker.call(f"{__name__}:twin_in_worker", dict(
                            workload=workload, device=p.device, dtype=p.dtype, gpu_lock=self.gpu_lock), self.timeout,
                            self.max_wait_s)
                    except CallFailed as e:
                        self._twins[workload] = (f"cannot check the JAX twin of workload "
                                                 f"{p.workloads[workload].name!r}: {e.reason}")
                self._twins_ready.set()
                for i, (workload, mode) in enumerate(keys):
                    if self._stop.is_set() or self._past_deadline():
                        return
                    path = os.path.join(self.directory, f"reference{i}.pt")
                    kwargs = dict(workload=workload, mode=mode, device=p.device, preset=p.preset, dtype=p.dtype,
                                  path=path, gpu_lock=self.gpu_lock,
                                  room_wait_s=ROOM_WAIT_SHARE * self.timeout if self._serving else 0.0)
                    try:
                        worker.call(f"{__name__}:reference_in_worker", kwargs, self.timeout, self.max_wait_s,
                                    kept_on=(NoRoom.__name__,))
                        entry = Entry(None, path, "")
                    except CallFailed as e:
                        entry = Entry(None, None, failure_reason(e.reason))
                    with self._lock:
                        self._cache[(workload, mode)] = entry
                        unneeded = self._left[(workload, mode)] <= 0  # its cells went without it (the budget)
                    if unneeded:
                        self._release(entry)
                    self._ready[(workload, mode)].set()
        finally:  # whatever stopped this thread, nobody may wait forever
            for workload in self._twinned():
                self._twins.setdefault(workload, "cannot check the JAX twin: the reference worker stopped")
            self._twins_ready.set()
            late = self._past_deadline()
            for key in keys:
                if key not in self._cache:
                    self._cache[key] = (Entry(None, None, "the run's time budget ran out before it was computed", True)
                                        if late else
                                        Entry(None, None, "the float64 reference was not computed: its worker stopped"))
                self._ready[key].set()

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline
