"""`irlens bench`: the comparison matrix on a GPU, timed on the device, beside the hardware's ceilings.

Every cell is a compare cell (isolated, numerics checked against float64) whose steady-state
step is also timed on the device (irlens.runtime.timing: CUPTI kernel times, cold L2, two batches).
Per workload x mode x dtype, the bytes the step must move and the flops it must do come from
the common view (irlens.core.cost), once for all backends, so every backend is measured against
the same work. The ceilings (irlens.core.ceilings: the best of several bandwidth kernels, the best
matrix product of a sweep that includes the workloads' own GEMM shapes) are measured before the
timed cells, or read from the cache where this GPU, driver and software were measured
(irlens.bench.ceilings_cache), and raised to the best rate a kernel of the run was timed at, within
the vendor's figure (irlens.reporting.roofline). Each kernel is charged what it touches of its own buffers
(the backend's records) and the flops of the nodes it computes; a figure above 100 % of ceiling
is flagged as a model error (irlens.reporting.ceiling), in the row, its kernels, the table and
the charts. Before the timed cells, every cell is compiled ahead in parallel workers into the
compilers' persistent caches (irlens.matrix.compile_ahead, irlens.bench.compile_caches).

This process does no GPU work: the work counts, the ceilings, the compiles ahead, the references
and the cells run in worker processes (irlens.runtime.isolation), so each cell worker has the whole GPU's
memory.

A row's % of ceiling (irlens.reporting.roofline) is ideal time / device time. Its launches are the
device launches of a step (kernels, memsets, memcpys), the same count for every backend.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from irlens.core import cost
from irlens.bench.checkpoint import Checkpoint
from irlens.bench.progress import BenchProgress
from irlens.bench.timeline import CEILINGS, WAITING, time_spent
from irlens.core.ceilings import Ceilings, describe
from irlens.core.cost import Gemm
from irlens.bench.ceilings_cache import driver_version
from irlens.bench.compile_caches import compile_caches
from irlens.frontends import work_frontend
from irlens.core.ir import Kernel
from irlens.runtime.isolation import CallFailed, worker_env, worker_threads
from irlens.runtime.pool import WorkerPool
from irlens.matrix import Document, Plan, Row, plan_matrix, read_document, run_plan
from irlens.matrix.cells import cells_not_ok
from irlens.matrix.compile_ahead import LOG, Log, compile_ahead
from irlens.matrix.document import device_name, versions
from irlens.matrix.join import PARTS, RERUN, join, part
from irlens.matrix.plan_references import References
from irlens.matrix.row import STOPPED_PHASE
from irlens.matrix.spec import ENTRY, WorkSpec
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION, apply as apply_precision
from irlens.matrix.records import StepWork, bench_with
from irlens.reporting.bench_page import format_bench_table
from irlens.reporting.records import kernel_stage
from irlens.reporting.roofline import apply_roofline
from irlens.workloads.workload import Workload, run_eager

BENCH_BACKENDS = ["eager", "inductor", "nvfuser", "xla"]
CHILD_ENV = "IRLENS_BENCH_CHILD"  # set for the per-GPU runs of `--gpus`
BENCH_DTYPES = ["bfloat16", "float32"]


@dataclass
class BenchConfig:
    """What `irlens bench` runs: the matrix (names as given; planning resolves them) and how."""

    workloads: list[str] | None = None  # default: every built-in
    backends: list[str] | None = None  # default: BENCH_BACKENDS
    modes: list[str] = field(default_factory=lambda: ["fwd", "fwdbwd"])
    dtypes: list[str] | None = None  # default: BENCH_DTYPES
    preset: str = "bench"
    timeout: float = 600.0  # seconds per cell and per float64 reference
    jobs: int = 1  # cells compiled at once (device timings never overlap)
    budget_s: float | None = None  # stop starting cells after this many seconds
    gpus: list[str] | None = None  # share the dtype x mode parts over these GPUs, one child run each
    rerun: str | None = None  # an earlier bench document: run again only its rows that are not ok
    # {dtype: {(workload, mode, backend)}}: run just these cells of the matrix (set by restrict_to_rerun)
    only: dict[str, frozenset] | None = None
    compile_jobs: int = 4  # cells compiled ahead at once, before the timed runs (0: none)
    cache_dir: str | None = None  # the compilers' persistent caches and the ceilings (None: not kept)
    cache_max_gb: float | None = None  # what the compilers' caches may hold (None: irlens.bench.compile_caches' default)
    remeasure: bool = False  # sweep the ceilings again, whatever the cache holds
    precision: str = DEFAULT_PRECISION  # the float32 policy (irlens.core.precision; --tf32: "tf32")
    compiles_aside: bool = False  # timed cells run beside other cells' compiles (their compiles hold no turn)


def step_flops(spec: WorkSpec, wl: Workload, mode: str) -> tuple[int, int, list[Gemm]]:
    """Flops one step of `wl` in `mode` must do, from the graphs of the frontend that counts work
    (`Frontend.work_graphs`: composite level, so causal attention counts its unmasked half), the
    exact (matmul) part of them, and the matrix products among them. The same in every dtype."""
    counting = work_frontend()
    graphs = counting.work_graphs(counting.acquire(wl.instantiate(spec.preset, "bfloat16", spec.device), mode))
    return (sum(cost.graph_flops(g) for g in graphs), sum(cost.graph_flops(g, matmul_only=True) for g in graphs),
            [gemm for g in graphs for gemm in cost.gemm_shapes(g)])


def step_bytes(spec: WorkSpec, wl: Workload, mode: str, dtype: str) -> int:
    """Bytes one step in `mode` and `dtype` must move: inputs and weights read once, results written once."""
    inst = wl.instantiate(spec.preset, dtype, spec.device)
    return cost.workload_bytes(inst, run_eager(inst.module, inst, mode))


def work_in_worker(spec: WorkSpec, wl: Workload) -> dict:
    """(a worker: irlens.worker.entry's `work`) {mode: {"flops": n, "matmul_flops": n, "bytes":
    {dtype: n}, "gemms": [[batch, m, n, k], ...]}} for the spec's workload, flops counted once for
    all its dtypes."""
    work = {}
    for mode in spec.modes:
        flops, matmul_flops, gemms = step_flops(spec, wl, mode)
        work[mode] = {"flops": flops, "matmul_flops": matmul_flops,
                      "gemms": [[g.batch, g.m, g.n, g.k] for g in dict.fromkeys(gemms)],
                      "bytes": {dtype: step_bytes(spec, wl, mode, dtype) for dtype in spec.dtypes}}
    return work


def count_work(plans: list[Plan], timeout: float) -> tuple[dict[tuple[str, str, str], StepWork | None], list[Gemm]]:
    """Per workload name x mode x dtype the work a step must do (None where
    counting failed), and the matrix products among it (they join the ceilings' sweep), counted
    in one worker process that ends before this returns."""
    plan, dtypes = plans[0], [p.dtype for p in plans]
    musts, gemms = {}, {}
    with WorkerPool(1, preload=("irlens.worker.entry", "irlens.workloads.builtin")) as worker:
        for key, wl in plan.workloads.items():
            spec = WorkSpec(key, tuple(plan.modes), tuple(dtypes), plan.device, plan.preset)
            try:
                work = worker.call(ENTRY, dict(spec=spec.to_json(), what="work"), timeout)
            except CallFailed as e:
                print(f"irlens bench: cannot count the work of {wl.name} (no roofline for it): {e.reason}",
                      file=sys.stderr)
                work = {}
            for mode in plan.modes:
                gemms.update(dict.fromkeys(tuple(g) for g in work.get(mode, {}).get("gemms", [])))
                for dtype in dtypes:
                    musts[(wl.name, mode, dtype)] = (StepWork(work[mode]["bytes"][dtype], work[mode]["flops"],
                                                              work[mode]["matmul_flops"])
                                                     if mode in work else None)
    return musts, [Gemm(*g) for g in gemms]


def measure_ceilings(gemms: list[Gemm], timeout: float, cache_dir: Path | None, remeasure: bool) -> Ceilings:
    """The run's measured ceilings (irlens.bench.ceilings_cache: kept per device and software under
    `cache_dir`, swept again with `remeasure`; `Ceilings.source` says which), in a worker that
    ends before this returns."""
    with WorkerPool(1, preload=("irlens.bench.ceilings_cache",)) as worker:
        reply = worker.call("irlens.bench.ceilings_cache:measure_in_worker", {
            "gemms": [[g.batch, g.m, g.n, g.k] for g in gemms], "cache_dir": None if cache_dir is None else str(cache_dir),
            "remeasure": remeasure}, timeout)
    return dataclasses.replace(Ceilings.from_json(reply["ceilings"]), source=reply["source"])


def device_name_of(kernel: Kernel, backend: str) -> str:
    """The name a kernel record's launch has on the device: a Triton kernel's own; XLA names its
    kernels after the HLO instruction with `.` and `-` as `_` (fusion.37 -> fusion_37). Library
    calls (cuBLAS, cuDNN) have names of their own that no record carries."""
    return re.sub(r"[^\w]", "_", kernel.name) if backend == "xla" else kernel.name


def annotate_kernels(row: Row) -> None:
    """Per kernel: device time and flops (irlens.reporting.roofline judges them). A record gets the
    time of its own launch: the i-th record with a device name gets the i-th launch of that
    name in the profiled step, where the counts agree (one kernel launched for two layers is two
    launches, two records). Bytes stay what the backend read from the kernel's own buffers."""
    launched: dict[str, list[float]] = {}
    timing = row.bench_field("device_timing")
    for name, us in (timing.launch_us or []) if timing else []:
        launched.setdefault(name, []).append(us)
    names = [device_name_of(k, row.backend) for k in row.kernels]
    seen: dict[str, int] = {}
    for k, name in zip(row.kernels, names):
        times = launched.get(name, [])
        if times and len(times) == names.count(name):
            k.time_us = times[seen.get(name, 0)]
        seen[name] = seen.get(name, 0) + 1
    graphs = row.graphs
    for k in row.kernels:
        stage = kernel_stage(k, graphs)
        if stage is not None:
            k.flops, k.matmul_flops = (cost.kernel_flops(k, graphs[stage], exact) for exact in (False, True))


COMPILE_AHEAD = "compiling ahead"


def bench(workloads=None, backends=None, modes=None, dtypes=None, device: str = "cuda", preset: str = "bench",
          timeout: float = 600.0, jobs: int = 1, budget_s: float | None = None, checkpoint=None,
          only: dict[str, frozenset] | None = None, compile_jobs: int = 0, cache_dir: Path | None = None,
          remeasure: bool = False, precision: str = DEFAULT_PRECISION,
          cache_max_gb: float | None = None, compiles_aside: bool = False) -> Document:
    """The bench document. First, beside each other, the work each step must do is counted in a
    worker and every cell is compiled ahead, `compile_jobs` at a time (irlens.matrix.compile_ahead;
    0: none); then the ceilings are measured (or read from the cache, irlens.bench.ceilings_cache; every
    figure swept again with `remeasure`); then each dtype's cells run, `jobs` compiling at once and
    each timed alone. `cache_dir` holds the compilers' persistent caches and the ceilings
    (irlens.bench.compile_caches, within `cache_max_gb`; None: the compilers' own, no ceilings kept).
    Progress, with an estimate of the time left, goes to stderr (irlens.bench.progress).
    `budget_s` bounds the whole run: cells not started in time are `unavailable` rows that say so.
    `checkpoint(doc)` gets the document so far after the ceilings, after every row and when an
    exception stops the run (irlens.bench.checkpoint). `only` ({dtype: {(workload, mode, backend)}})
    runs just those cells. `precision`: the float32 policy every process computes under, the
    ceilings' sweep included (irlens.core.precision). `compiles_aside`: a timed cell's compile holds no
    turn on the GPU, so timings run beside other cells' compiles (with `compile_jobs` 0, cells
    compile and are timed in one pass); each row's repeat figure shows what sharing the GPU cost."""
    backends = backends or BENCH_BACKENDS
    dtypes = dtypes or BENCH_DTYPES
    plans = [plan_matrix(workloads, backends, modes, device, preset, dtype, device_timing=True, precision=precision)
             for dtype in dtypes]
    apply_precision(precision)  # before the first worker (the work counts, the twin checks) starts
    if only is not None:
        plans = [dataclasses.replace(plan, only=only.get(plan.dtype, frozenset())) for plan in plans]
    started, compile_until = time.time(), compile_deadline(budget_s)
    progress = BenchProgress()
    if compile_jobs:
        progress.plan(COMPILE_AHEAD, sum(len(p.cells()) for p in plans), compile_jobs)
    for plan in plans:
        progress.plan(f"timed {plan.dtype}", len(plan.cells()), jobs)
    saved = Checkpoint(plans, checkpoint, started)
    try:
        with compile_caches(cache_dir, cache_max_gb) as caches, tempfile.TemporaryDirectory(prefix="irlens-bench-") as tmp:
            lost: dict[str, dict] = {}
            early: dict[str, References] = {}  # with compiling ahead: the JAX twins checked beside the compiles
            try:
                with ThreadPoolExecutor(1) as background:  # the work counts beside the compiles: neither is timed
                    counting = background.submit(count_work, plans, timeout)
                    if compile_jobs:
                        threads = worker_threads(compile_jobs + 2)
                        # the twins only: on a GPU each cell computes its own float64 reference
                        # (irlens.matrix.plan_references.computed_in_cells)
                        plan = plans[0]
                        early[plan.dtype] = References(plan, tmp, timeout, check_twins=True, threads=threads)
                        early[plan.dtype].start()
                        progress.phase(COMPILE_AHEAD)
                        log = Log(None if cache_dir is None else Path(cache_dir) / LOG, software_key(plans[0]))
                        lost = compile_ahead(plans, timeout, compile_jobs, log, progress, compile_until,
                                             after_cell=caches.check_disk)
                        progress.step(WAITING)
                        for refs in early.values():  # nothing may compute beside the ceilings' sweep and the timings
                            refs.check_twins_agree()
                    musts, gemms = counting.result()
                caches.merge_kernels()  # what the compiles left for nvFuser, before the timed cells' workers start
                progress.note(f"work counted{', cells compiled ahead, JAX twins checked' if compile_jobs else ''}; "
                              f"measuring the ceilings (bandwidth kernels; matrix products of {len(gemms)} workload "
                              f"shapes and square sizes)")
                progress.step(CEILINGS)
                measured = measure_ceilings(gemms, timeout, cache_dir, remeasure)
                progress.note(f"ceilings: {describe(measured).replace('**', '')}")
                saved.begin(measured)
                result = run_timed(plans, musts, measured, progress, timeout, jobs, budget_s, saved, lost, early,
                                   caches.check_disk, compiles_aside)
                result.time_spent = time_spent(progress)
            finally:
                for refs in early.values():
                    refs.close()
    except BaseException as e:  # what finished is written, the cells not run say why; then the error goes on
        print(saved.stopped(e), file=sys.stderr, flush=True)
        raise
    finally:
        saved.close()  # before the caller writes the final document
    return result


# the share of a run's time budget compiling ahead may take: the rest is the timed cells'
COMPILE_SHARE = 0.5


def compile_deadline(budget_s: float | None) -> float | None:
    """When compiling ahead starts no more cells (time.monotonic()): a budget spent on compiles
    alone would leave every cell untimed."""
    return None if budget_s is None else time.monotonic() + COMPILE_SHARE * budget_s


def run_timed(plans: list[Plan], musts: dict, measured: Ceilings, progress: BenchProgress, timeout: float, jobs: int,
              budget_s: float | None, saved: Checkpoint, lost: dict, early: dict, after_row,
              compiles_aside: bool = False) -> Document:
    """Each dtype's cells, timed (`lost`: rows of cells not to run again; `early`: the twins'
    checks, started beside the compiles), each row added to `saved` as it finishes, then `after_row()`; the roofline
    over the rows so far after each dtype."""
    rows: list[Row] = []
    for plan in plans:
        progress.phase(f"timed {plan.dtype}")
        left = None if budget_s is None else max(budget_s - (time.time() - saved.started), 0.0)

        def finished(cell, row: Row, plan: Plan = plan) -> None:
            row.dtype, row.bench = plan.dtype, bench_with(row.bench, must=musts[(row.workload, row.mode, plan.dtype)])
            annotate_kernels(row)
            saved.add(plan, cell, row)
            after_row()

        doc = run_plan(plan, timeout, progress=progress, jobs=jobs, budget_s=left, known=lost.get(plan.dtype),
                       references=early.get(plan.dtype), on_row=finished, compiles_share=not compiles_aside,
                       whole_budget_s=budget_s)
        rows += doc.rows
        ceilings = apply_roofline(rows, measured)  # the earlier dtypes' rows again: a raise moves their figures
        if ceilings.raised:
            print(f"irlens bench: ceilings raised by the run's kernels: {describe(ceilings).replace('**', '')}",
                  file=sys.stderr)
        print(format_bench_table(doc.rows), file=sys.stderr)
        result = Document("bench", list(rows), doc.device, doc.device_name, doc.versions, doc.preset,
                          driver=driver_version(), ceilings=ceilings, wall_s=time.time() - saved.started)
    return result


def software_key(plan: Plan) -> str:
    """What a compiled-ahead cell depends on besides itself: the device and the libraries."""
    return f"{device_name(plan.device)} {json.dumps(versions(), sort_keys=True)}"


# --- several GPUs: one child run per GPU -------------------------------------------------------

def child_argv(config: BenchConfig, dtypes: list[str], modes: list[str], json_path: str) -> list[str]:
    """`irlens bench` arguments for one GPU's share: the same matrix options, its dtypes and modes, its own JSON."""
    argv = ["bench", "--dtypes", ",".join(dtypes), "--mode", ",".join(modes), "--json", json_path,
            "--preset", config.preset, "--timeout", str(config.timeout), "--jobs", str(config.jobs),
            "--compile-jobs", str(config.compile_jobs)]
    if config.cache_dir:
        argv += ["--cache-dir", config.cache_dir]
    if config.remeasure:
        argv += ["--remeasure"]
    if config.cache_max_gb is not None:
        argv += ["--cache-max-gb", str(config.cache_max_gb)]
    if config.precision == "tf32":
        argv += ["--tf32"]
    if config.compiles_aside:
        argv += ["--compiles-aside"]
    if config.rerun:
        argv += ["--rerun", config.rerun]
    for flag, names in (("--workloads", config.workloads), ("--backends", config.backends)):
        if names:
            argv += [flag, ",".join(names)]
    if config.budget_s is not None:
        argv += ["--budget-s", str(config.budget_s)]
    return argv


def share_matrix(units: list[tuple[str, str]], gpus: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """{gpu: (dtypes, modes)} for the (dtype, mode) parts of a matrix: one part per GPU where
    there are GPUs enough, else whole dtypes round-robin. A GPU left without a share is not used."""
    if len(gpus) >= len(units):
        return {gpu: ([d], [m]) for gpu, (d, m) in zip(gpus, units)}
    shares: dict[str, tuple[list[str], list[str]]] = {}
    for i, dtype in enumerate(dict.fromkeys(d for d, _ in units)):
        modes = list(dict.fromkeys(m for d, m in units if d == dtype))
        dtypes, share_modes = shares.setdefault(gpus[i % len(gpus)], ([], []))
        dtypes.append(dtype)
        share_modes.extend(m for m in modes if m not in share_modes)
    return shares


def run_on_gpus(config: BenchConfig, gpus: list[str]) -> Document:
    """Run each GPU's share in a child `irlens bench` pinned to it (CUDA_VISIBLE_DEVICES), at
    the same time; their progress is relayed with a `[gpu N]` prefix."""
    import subprocess
    import tempfile
    import threading

    units = [(d, m) for d in config.dtypes or BENCH_DTYPES for m in config.modes
             if config.only is None or any(cell[1] == m for cell in config.only.get(d, ()))]
    shares = share_matrix(units, gpus)
    with tempfile.TemporaryDirectory(prefix="irlens-bench-") as tmp:
        children = []
        for gpu, (dtypes, modes) in shares.items():
            path = os.path.join(tmp, f"gpu{gpu}.json")
            # tqdm's refreshes become lines once relayed: fewer of them
            env = {**worker_env(), "CUDA_VISIBLE_DEVICES": gpu, "TQDM_MININTERVAL": "15", CHILD_ENV: "1"}
            proc = subprocess.Popen([sys.executable, "-m", "irlens", *child_argv(config, dtypes, modes, path)], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            relay = threading.Thread(target=lambda p=proc, g=gpu: [print(f"[gpu {g}] {line}", end="", file=sys.stderr)
                                                                   for line in p.stderr], daemon=True)
            relay.start()
            children.append((gpu, dtypes + modes, path, proc, relay))
        parts, missing = [], []
        for gpu, share, path, proc, relay in children:
            code = proc.wait()
            relay.join()
            if os.path.exists(path):  # written after each dtype, so a late failure keeps the rest
                parts.append(part(read_document(path), gpu))
            else:
                missing.append(f"GPU {gpu} ({' '.join(share)}): its run exited with status {code} before any result")
    if not parts:
        raise RuntimeError("irlens bench: no GPU produced a result: " + "; ".join(missing))
    doc = join(parts, PARTS)
    for line in missing:
        print(f"irlens bench: no rows from {line}", file=sys.stderr)
    doc.missing = missing
    return doc


def restrict_to_rerun(config: BenchConfig, previous: Document) -> bool:
    """Narrow `config` to the cells of `previous` that are not ok (and that it also names); False
    when there are none."""
    named = {c for c in cells_not_ok(previous) if (not config.dtypes or c[3] in config.dtypes)
             and (config.workloads is None or c[0] in config.workloads) and c[1] in config.modes
             and (config.backends is None or c[2] in config.backends)}
    only = {d: frozenset(c[:3] for c in named if c[3] == d) for d in dict.fromkeys(r.dtype for r in previous.rows)}
    only = {d: c for d, c in only.items() if c}
    if not only:
        return False
    every = [c for cells in only.values() for c in cells]
    config.only = only
    config.dtypes = [d for d in BENCH_DTYPES if d in only] + [d for d in only if d not in BENCH_DTYPES]
    config.workloads = list(dict.fromkeys(c[0] for c in sorted(every)))
    config.modes = [m for m in config.modes if any(c[1] == m for c in every)]
    config.backends = [b for b in config.backends or BENCH_BACKENDS if any(c[2] == b for c in every)]
    return True


def run_configured(config: BenchConfig, command: str, previous: Document | None = None, save=None) -> Document:
    """The whole `irlens bench` run of `config` (already narrowed by `restrict_to_rerun` when
    `previous` is the document it reruns): over `config.gpus`, or on the one GPU; the document
    with its command, joined to `previous` (irlens.matrix.join, RERUN). `save(doc)` gets the
    document so far after each row."""

    def finished(doc: Document) -> Document:
        """The document as written: its commands, and joined to the earlier one on a rerun (in
        the parent only: a GPU's child writes just its rows, and the parent joins them)."""
        if previous is None or os.environ.get(CHILD_ENV):
            return dataclasses.replace(doc, commands=[command])
        # its parts name the rows the rerun ran (cells a stopped rerun did not reach keep the earlier rows)
        doc = dataclasses.replace(doc, rows=[r for r in doc.rows if r.phase != STOPPED_PHASE])
        if doc.parts is None:  # one GPU: its rows as one part, like a child's
            doc = part(doc, config.gpus[0] if config.gpus else os.environ.get("CUDA_VISIBLE_DEVICES"))
        return join([previous, dataclasses.replace(doc, commands=[command])], RERUN)

    if config.gpus and len(config.gpus) > 1:
        return finished(run_on_gpus(config, config.gpus))
    if config.gpus:
        os.environ["CUDA_VISIBLE_DEVICES"] = config.gpus[0]  # before any worker starts
    checkpoint = None if save is None else (lambda doc: save(finished(doc)))
    doc = bench(config.workloads, config.backends, config.modes, config.dtypes, "cuda", config.preset, config.timeout,
                config.jobs, config.budget_s, checkpoint=checkpoint, only=config.only,
                compile_jobs=config.compile_jobs, cache_dir=config.cache_dir, remeasure=config.remeasure,
                cache_max_gb=config.cache_max_gb, precision=config.precision, compiles_aside=config.compiles_aside)
    return finished(doc)
