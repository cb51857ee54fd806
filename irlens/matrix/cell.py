"""One cell: run it in this process, check it against its float64 reference, make its Row.

A compare cell runs the workload through a backend's own frontend (`Backend.compile`); a cross
cell acquires it with another frontend and runs that frontend's program through the backend's
lowering (`Backend.compile_program`); what either compiled runs through irlens.matrix.backend_run.
Every exception becomes a row: `unavailable` for a missing library, device, twin or op, `failed`
for anything else, naming the phase it happened in.
`cell_record` is the same in a worker process (the `cell` purpose of irlens.worker.entry.run_spec).
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
import traceback
from collections import Counter

import torch

from irlens.backends import Backend
from irlens.core import precision
from irlens.runtime import call_progress
from irlens.core.dtypes import HALF_DTYPES
from irlens.errors import CaptureFailed, NoNativePath
from irlens.frontends import FRONTENDS, get_frontend
from irlens.frontends.base import NoProgram, Program, Unavailable
from irlens.frontends.bindings import program_for
from irlens.runtime.gpu_turns import gpu_alone, sharing_gpu
from irlens.core.ir import Graph, Kernel, Node, jsonable
from irlens.backends.lowering import LEVEL
from irlens.matrix.backend_run import BackendRun, drop_compiled_code, run_backend, run_compiled
from irlens.matrix.draws import cell_time_used, judge_over_draws, rejudged
from irlens.matrix.records import Coverage, CrossRecord, KernelRecord, LoweredGraph, ResultCheck, bench_with
from irlens.matrix.references import Reference, failure_reason, first_line, reference_anywhere, release_memory
from irlens.matrix.row import STAGES_NOTE, Row
from irlens.matrix.spec import CellSpec
from irlens.numerics.verdicts import Comparison, compare_results, judged_bounds, tolerance
from irlens.core.ops import is_compute
from irlens.runtime.timing import HostTiming, recording_device_time, recording_host_time
from irlens.numerics.tolerance_ladder import NOTE as GRAPHNET_NOTE, passing_level
from irlens.workloads.workload import Instance, MissingLibrary, Workload


def refused_natively(wl: Workload, backend: Backend) -> str | None:
    """Why the backend's own frontend cannot take the workload at all (`Frontend.refuses`: a
    JAX backend and no JAX twin); None where it may, or the backend has no registered frontend."""
    if backend.frontend not in FRONTENDS:
        return None
    return FRONTENDS.get(backend.frontend).refuses(wl)


RECHECK_BY = 0.4  # the recheck with eager's roundings (a second compile) starts only before this share of the timeout


def new_row(wl: Workload, mode: str, backend: Backend, frontend: str | None = None) -> Row:
    """The row of a cell before it ran: failed until it says otherwise; it names the float32 policy
    this process computes under."""
    if frontend is None:
        return Row(wl.name, mode, backend.name, backend.frontend, precision=precision.current())
    return Row(wl.name, mode, backend.name, frontend, precision=precision.current(),
               cross=CrossRecord(native=frontend == backend.frontend))


def run_cell(spec: CellSpec, wl: Workload, backend: Backend, reference: Reference, timing_lock: str | None = None,
             alone: bool = False) -> Row:
    """Run one cell in this process: `wl` and `backend` are `spec`'s, resolved. With
    `spec.device_timing`, the backend's steady-state step is also timed on the device (irlens.runtime.timing);
    with `timing_lock`, the cell shares the device (a GPU, or the CPU) with other workers, has it
    alone while it is timed, and with `alone` throughout. With `spec.frontend`, a cross cell: the
    spec's coordinates and the reference (its `token`) key the acquisition, which consecutive
    cells share. `spec.timeout_s`: the cell's own (its worker's),
    which a mismatch's draws must fit in (irlens.matrix.draws)."""
    started = time.monotonic()
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()  # a previous cell's compiled code and guards must not leak into this one
    row = new_row(wl, spec.mode, backend, spec.frontend)
    with gpu_alone(timing_lock) if alone else sharing_gpu(timing_lock):
        if spec.frontend is None:
            try:  # a mismatch judged over draws runs the kept compiled step on other inputs
                return _run_native(row, spec, wl, backend, reference, timing_lock, started)
            finally:
                drop_compiled_code()
        return _run_lowered(row, spec, wl, backend, reference)


def _run_native(row: Row, spec: CellSpec, wl: Workload, backend: Backend, reference: Reference,
                timing_lock: str | None, started: float) -> Row:
    mode, device, timeout_s = spec.mode, spec.device, spec.timeout_s
    phase = "availability"
    try:
        available = backend.availability(device)
        if not available:
            return row.unavailable("", available.reason)
        phase = "instantiate"
        call_progress.stage("instantiating")
        inst = reference.instance(wl, spec.preset, spec.dtype, device)
        row.tol, row.dtype, row.preset = tolerance(inst.dtype, mode), inst.dtype, spec.preset
        row.module_mode = inst.module_mode
        phase = "run"

        def timed(step):
            with recording_device_time(timing_lock) if spec.device_timing else contextlib.nullcontext() as recorder, \
                    recording_host_time() as host:
                run = step()
            if recorder is not None and recorder.timing is not None:
                row.bench = bench_with(row.bench, device_timing=recorder.timing)
            return run, host

        try:
            call_progress.stage("compiling")  # irlens.matrix.backend_run.measure names the stages after its first call
            run, host = timed(lambda: run_compiled(backend.compile(inst, mode), device))
        except NoNativePath as e:
            phase = "acquire"
            call_progress.stage("acquiring")
            program = via_program(row, backend, inst, mode, e)
            row.notes = {**row.notes, "acquired_graphs": len(program.steps)}  # Dynamo's program: acquired
            phase = "run"
            call_progress.stage("compiling")
            run, host = timed(lambda: run_compiled(backend.compile_program(inst, program), device))
        phase = "compare"
        call_progress.stage("checking numerics")
        first = _check(row, run, reference, inst.dtype, host.timing)
        row.notes = {**row.notes, **run.notes}  # beside what the acquisition and the check noted
        if reference.eager_outputs:  # GraphNet's check: the lowest tolerance level its outputs pass against eager's
            row.notes[GRAPHNET_NOTE] = passing_level(run.results, reference.eager_outputs)
        if row.status == "mismatch" and rejudged(inst.dtype, first, row.ill_conditioned):
            judge_over_draws(row, first, run.again, inst, mode, reference, started, timeout_s)
        if row.status == "mismatch" and inst.dtype in HALF_DTYPES and row.via is None:
            if timeout_s is not None and cell_time_used(started) > RECHECK_BY * timeout_s:
                row.notes["eager_roundings"] = (f"not rechecked with eager's roundings: past {RECHECK_BY:.0%} of the "
                                                f"cell's timeout ({timeout_s:.0f} s), a recompile would not fit")
            else:
                _recheck_with_eager_roundings(row, spec, wl, backend, reference)
        row.graphs = {g.stage: g for g in run.graphs}  # what the kernels' node ids refer to (the fusion map)
        row.coverage = kernel_coverage(run.kernels, run.graphs) if run.graphs else None
        return row
    except (Unavailable, MissingLibrary) as e:
        return row.unavailable(phase, str(e))
    except Exception as e:
        # a stack's failure irlens wrapped (CaptureFailed): the traceback of the stack's own error,
        # whose innermost frame says whose it is
        inner = e.__cause__ if isinstance(e, CaptureFailed) and e.__cause__ is not None else e
        graphs = getattr(e, "irlens_acquired_graphs", None)
        if graphs:  # the backend had captured the model: acquired, then failed (irlens.matrix.backend_run)
            row.graphs = {g.stage: g for g in graphs}
            row.notes = {**row.notes, "acquired_graphs": len(graphs)}
        return row.fail(phase, _failed(phase, e), "".join(traceback.format_exception(inner))[-3000:])


def _failed(phase: str, e: BaseException) -> str:
    """`phase: Type: message`; where Dynamo wraps a backend's error (BackendCompilerFailed, whose
    first line names only the backend object), that error's own type and message follow, so the
    row's first line, and the failure's kind on a page, say what failed."""
    inner = getattr(e, "inner_exception", None)
    return f"{phase}: {type(e).__name__}: " + (f"{type(inner).__name__}: {inner}" if inner is not None else str(e))


def _recheck_with_eager_roundings(row: Row, spec: CellSpec, wl: Workload, backend: Backend,
                                  reference: Reference) -> None:
    """A half-precision mismatch of a backend that can round where eager rounds (Backend.eager_roundings):
    the cell again, so rounding, on a fresh instance (a train-mode model's statistics start over).
    Its verdict is added to the reason and the notes; the row's own verdict stands (a recheck that
    fails says so there: the mismatch is what the default run computed)."""
    rounding = backend.eager_roundings()
    if rounding is None:
        return
    call_progress.stage("rechecking with eager's roundings")
    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    try:
        inst = reference.instance(wl, spec.preset, spec.dtype, spec.device)
        with rounding:
            again = run_backend(backend, inst, spec.mode)
        probe = new_row(wl, spec.mode, backend, None)
        _check(probe, again, reference, inst.dtype)
    except Exception as e:
        verdict = f"the recheck with eager's roundings failed: {type(e).__name__}: {first_line(e)}"
    else:
        if probe.status == "ok":
            verdict = (f"with eager's roundings ({backend.name} asked to round its fused kernels' intermediates to "
                       f"{inst.dtype} as eager does) it is within the bound (max rel err {probe.max_rel_err:.1e}): "
                       f"the difference is where it rounds, and which results that moves past eager's bound "
                       f"changes with the inputs (docs/numerics.md)")
        else:
            verdict = f"with eager's roundings too: {probe.reason.splitlines()[0] if probe.reason else probe.status}"
    row.notes["eager_roundings"] = verdict
    row.reason = f"{row.reason}; {verdict}" if row.reason else verdict


def via_program(row: Row, backend: Backend, inst: Instance, mode: str, why: NoNativePath) -> Program:
    """The program of `backend.via` (Dynamo) that a backend whose own frontend cannot take the
    workload runs through its lowering instead; the row says so (`via`, `via_reason`). A backend
    without a lowering is unavailable, with both reasons, or, where its stack tried and failed
    (CaptureFailed), failed."""
    if backend.lower is None:
        if isinstance(why, CaptureFailed):
            raise why  # the stack tried and failed: the row fails with its error, it is not unavailable
        raise Unavailable(f"{why}; {backend.name} has no lowering of the common view to run instead")
    row.via, row.via_reason, row.frontend, row.level = backend.via, str(why), backend.via, LEVEL
    return program_for(get_frontend(backend.via).acquire(inst, mode), inst)


def _run_lowered(row: Row, spec: CellSpec, wl: Workload, backend: Backend, reference: Reference) -> Row:
    phase = "acquire"
    try:
        call_progress.stage("acquiring")
        inst, program = acquired_program(spec, wl, reference)
        row.module_mode = inst.module_mode
        phase = "run"
        row.tol = tolerance(inst.dtype, spec.mode)
        call_progress.stage("compiling")
        with recording_host_time() as host:
            run = run_compiled(backend.compile_program(inst, program), inst.device)
        call_progress.stage("checking numerics")
        _check(row, run, reference, inst.dtype, host.timing)
        row.level = LEVEL
        row.cross.lowered = [LoweredGraph(g.stage, len(g.nodes)) for g in run.lowered]
        return row
    except (Unavailable, NoNativePath, NoProgram) as e:
        row.tol = None
        return row.unavailable(phase, str(e))
    except Exception as e:
        row.tol = None
        return row.fail(phase, _failed(phase, e), traceback.format_exc()[-3000:])


ACQUISITIONS_KEPT = 8
_acquisitions: dict[tuple[CellSpec, str], tuple[Instance, Program]] = {}


def acquired_program(spec: CellSpec, wl: Workload, reference: Reference) -> tuple[Instance, Program]:
    """(instance, program) per workload x mode x frontend (`wl` is `spec.workload`, resolved) on
    `reference`'s weights and inputs: a worker serves a frontend's cells in a row, and where they
    share a reference (its file) they share one acquisition, whatever their backend. Raises
    Unavailable for a frontend that cannot run here."""
    key = (dataclasses.replace(spec, backend=""), reference.token)
    if key not in _acquisitions:
        for stale in [k for k in _acquisitions if k[0] == key[0]]:  # on another reference's numbers: gone with it
            del _acquisitions[stale]
        if len(_acquisitions) >= ACQUISITIONS_KEPT:
            del _acquisitions[next(iter(_acquisitions))]  # the oldest: the frontend's cells come in a row
        _acquisitions[key] = _acquire(spec, wl, reference)
    return _acquisitions[key]


def _acquire(spec: CellSpec, wl: Workload, reference: Reference) -> tuple[Instance, Program]:
    inst = reference.instance(wl, spec.preset, spec.dtype, spec.device)
    fe = get_frontend(spec.frontend)
    available = fe.availability()
    if not available:
        raise Unavailable(f"frontend {spec.frontend}: {available.reason}")
    return inst, program_for(fe.acquire(inst, spec.mode), inst)


def _check(row: Row, run: BackendRun, reference: Reference, dtype: str, host: HostTiming | None = None) -> Comparison:
    """The row's verdict, numbers and kernels from a finished run: each result against the
    reference and against eager's own error in `dtype` (irlens.numerics.verdicts.allowed_error). Returns
    the comparison."""
    ill, bounds = judged_bounds(reference.results, dtype, row.mode, reference.eager_errors, reference.conditions)
    # a buffer the run did not update is judged as it was before the step: the state the step started from
    cmp = compare_results(run.results, reference.results, bounds, before=reference.state)
    eager = reference.eager_errors or {}
    row.status, row.reason = ("ok" if cmp.ok else "mismatch"), cmp.reason
    row.max_rel_err = cmp.max_rel_err
    row.results = {n: ResultCheck(cmp.errors.get(n), cmp.allowed.get(n), eager.get(n), ill.get(n),
                                  True if n in cmp.vacuous else None)
                   for n in dict.fromkeys([*eager, *cmp.errors, *ill])}  # eager's names: the reference's, in order
    decisive = row.decisive_result
    row.eager_err, row.allowed = eager.get(decisive), cmp.allowed.get(decisive)
    row.reference_dtype, row.reference_fallback = reference.dtype, reference.fallback or None
    if cmp.beyond_range:  # elements no value of the run's dtype could match (irlens.numerics.verdicts): not judged
        row.notes = {**row.notes, "beyond_range": cmp.beyond_range}
    row.compile_s, row.run_us = run.compile_s, run.run_us
    row.run_spread = host.spread if host is not None else None
    row.kernels = [KernelRecord.of(k) for k in run.kernels]
    row.kernel_count = run.launch_count()  # launches per step (docs/compare.md, "Kernel launches"); None: unmapped
    row.kernels_unmapped = run.unmapped
    return cmp


def kernel_coverage(kernels: list[Kernel], graphs: list[Graph]) -> Coverage:
    """How the kernels cover the nodes of the graphs they refer to that a kernel must explain:
    each compute node, and each `unknown:` node (an op the common view has no meaning for is
    never taken as explained), should be in exactly one kernel's `node_ids` (a recomputation is
    listed in `recompute` instead). `unknown` lists every unknown node, covered or not, with its
    native name. Node ids are given as `stage:id`."""
    stages = {g.stage for g in graphs}
    only = next(iter(stages)) if len(stages) == 1 else None
    covered = Counter()
    referred = set()  # a row may carry graphs its kernels do not refer to (XLA's jaxpr beside its HLO)
    for k in kernels:
        stage = k.stage if k.stage in stages else (only if not k.stage else None)
        referred.add(stage)
        covered.update(f"{stage}:{n}" for n in k.node_ids)
    nodes = [(g.stage, n) for g in graphs if g.stage in referred for n in g.nodes]
    explained = [f"{stage}:{n.id}" for stage, n in nodes if is_compute(n.op) or n.is_unknown]
    return Coverage(compute_nodes=len(explained),
                    uncovered=[n for n in explained if not covered[n]],
                    duplicates=sorted(n for n, c in covered.items() if c > 1),
                    unknown=[f"{stage}:{n.id} ({unknown_name(n)})" for stage, n in nodes if n.is_unknown])


def unknown_name(node: Node) -> str:
    """What an unknown node is called where unknown ops are counted: its native op, and for a
    custom call (XLA's) its target: "custom-call" alone would name every library call the same."""
    native = node.native or node.op
    return f"{native} {node.attrs['target']}" if node.attrs.get("target") else native


def cell_record(spec: CellSpec, wl: Workload, backend: Backend, reference_path: str | None,
                timing_lock: str | None = None, alone: bool = False) -> dict:
    """(a worker: irlens.worker.entry's `cell`) One cell against the reference in `reference_path`,
    or where that is None against one computed here first (irlens.matrix.plan_references.computed_in_cells),
    its Row in its JSON form (`Row.to_json`, read back by `Row.from_json`)."""
    what = f"{wl.name} {backend.name}" if spec.frontend is None else f"cross {wl.name} {spec.frontend}->{backend.name}"
    print(f"[irlens] {what} {spec.mode}", file=sys.stderr, flush=True)
    reference = None
    try:
        if reference_path is None:
            try:
                reference = reference_anywhere(wl, spec.mode, spec.device, spec.preset, spec.dtype, timing_lock,
                                               keep=True)
            except Exception as e:  # the cell fails as where the references' worker failed
                row = new_row(wl, spec.mode, backend, spec.frontend)
                return jsonable(row.fail("reference", failure_reason(f"{type(e).__name__}: {e}"),
                                         traceback.format_exc()[-3000:]).to_json(), finite=True)
            if spec.device != "cpu":
                reference = reference.results_on_host()
            release_memory(spec.device)  # the float64 copy's intermediates, for the cells beside this one
        else:
            call_progress.stage("loading its reference")
            reference = Reference.load(reference_path, spec.device)
        row = run_cell(spec, wl, backend, reference, timing_lock, alone)
        row.notes[STAGES_NOTE] = {stage: round(s, 2) for stage, s in call_progress.spent().items() if s >= 0.01}
        return jsonable(row.to_json(), finite=True)
    finally:
        # a worker waiting for its next cell holds no cached device memory: a cell beside it, or one
        # run again alone after running out, gets what this one used
        del reference
        release_memory(spec.device)


_OUT_OF_MEMORY = ("out of memory", "resource_exhausted", "outofmemoryerror")


def out_of_memory(row: Row) -> bool:
    """A failed row whose cause was device memory (torch's, JAX's or the CUDA driver's words for it)."""
    text = f"{row.reason or ''}\n{row.detail or ''}".lower()
    return row.status == "failed" and any(words in text for words in _OUT_OF_MEMORY)
