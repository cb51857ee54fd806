"""`irlens repro` from start to end: the cell's file, its run, the reduction, the reduced file.

Everything that runs the workload happens in worker processes, each given the cell's spec through
`irlens.worker.entry` (`irlens.repro.worker`, `irlens.repro.cases`, `irlens.repro.run_graph`); files
run in fresh Python processes (`irlens.repro.cell.run_file`), as a user would run them.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable

from irlens.errors import UsageError
from irlens.workloads.graphnet import file_stem, portable_name
from irlens.runtime.isolation import CallFailed
from irlens.matrix.spec import ENTRY, ENTRY_PRELOAD, CellSpec
from irlens.repro.cell import Outcome, run_file, worker_failure
from irlens.repro.reduce import Runner
from irlens.repro.tensors import EMBED_MAX
from irlens.workloads.user_code import absolute_reference
from irlens.wording import plural

NOT_RUN = "When irlens ran it: not run."


class ReproFailed(RuntimeError):
    """The cell's file could not be written; the message says why."""


@dataclass
class ReproResult:
    spec: CellSpec
    name: str  # the workload's name
    backend: str  # the backend's name
    dtype: str
    cell_file: str
    cell_outcome: Outcome | None = None  # None: not run
    reduced_file: str | None = None  # the smallest file that fails as the cell does
    reduced_outcome: Outcome | None = None
    region_file: str | None = None  # nvFuser: the fusion region a crashing run never finished
    region_outcome: Outcome | None = None
    recorded_outcome: Outcome | None = None  # nvFuser: how the run with the flight recorder ended
    reduction: dict | None = None  # stage, nodes before and after, target, attempts, stopped
    kernel: dict | None = None  # --slow: the kernel that dominates device time
    notes: list[str] = field(default_factory=list)  # what did not happen, and why

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        for key in ("cell_outcome", "reduced_outcome", "region_outcome", "recorded_outcome"):
            outcome = getattr(self, key)
            d[key] = None if outcome is None else outcome.to_json()
        return d


def check(spec: CellSpec):
    """Validate a cell before anything runs; raises a UsageError (UnknownName, BadReference, ...:
    bad input) or Unavailable (the backend cannot run here). Returns the workload and the backend's path."""
    from irlens.frontends.base import Unavailable
    from irlens.workloads.builtin import resolve_workload
    from irlens.repro.paths import find_backend

    spec.validate()
    workload = resolve_workload(spec.workload)
    workload.cfg(spec.preset)
    backend, path = find_backend(spec.backend)
    if path.kind == "jax" and workload.jax is None:
        # its cells lower Dynamo's graphs through irlens (docs/via-lowering.md): no code of its own to write
        raise UsageError(f"workload {workload.name!r} has no JAX twin, which backend {backend.name} runs; its cells "
                         f"run Dynamo's graphs through irlens's lowering ({backend.name} via dynamo), which a "
                         "standalone file cannot hold")
    available = backend.availability(spec.device)
    if not available:
        raise Unavailable(f"backend {backend.name} is unavailable on {spec.device}: {available.reason}")
    return workload, path


def repro(spec: CellSpec, out: str, *, reduce: bool = False, slow: bool = False, budget_s: float = 600.0,
          timeout: float = 600.0, embed_max: int = EMBED_MAX, run: bool = True,
          log: Callable[[str], None] | None = None) -> ReproResult:
    """Write the cell's standalone file into `out` (and with `run`, run it); with `reduce`, also
    the reduced file of a failing cell (a reduction runs its candidates and the files it writes
    whatever `run` says); with `slow`, a timed file and the source of its dominant kernel."""
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    # references resolvable from the workers and from any folder a file is run in
    spec = dataclasses.replace(spec, workload=absolute_reference(spec.workload),
                               backend=absolute_reference(spec.backend))
    workload, path = check(spec)
    os.makedirs(out, exist_ok=True)
    dtype = spec.dtype or workload.dtype
    stem = file_stem(f"{portable_name(workload.name)}-{path.name}-{spec.mode}-{dtype}")
    result = ReproResult(spec, workload.name, path.name, dtype, os.path.join(out, f"{stem}.py"))
    notes = [f"Made by: {spec.command()}" + (" --slow" if slow else ""), NOT_RUN]
    # one worker for everything (writing files, the reducer's candidates); replaced when one dies
    runner = Runner(spec, timeout)
    try:
        if slow:
            result.kernel = _dominant_kernel(runner, spec, out, log)
            notes.append(_kernel_note(result.kernel))
        log(f"[repro] writing {result.cell_file}")
        try:
            runner.call(ENTRY, dict(spec=spec.to_json(), what="file", out=result.cell_file, notes=notes,
                                    embed_max=embed_max, timed=slow))
        except CallFailed as e:
            raise ReproFailed(f"the cell's file could not be written: {worker_failure(e)}") from None
        if run:
            log(f"[repro] running {result.cell_file} in a fresh process ...")
            result.cell_outcome = run_file(result.cell_file, timeout)
            _note_run(result.cell_file, result.cell_outcome)
            log(f"[repro] {os.path.basename(result.cell_file)}: {result.cell_outcome}")
        if reduce:
            if result.cell_outcome is not None and not result.cell_outcome.failed:
                result.notes.append("not reduced: the cell's file runs ok")
            else:
                _reduce(spec, path, dtype, out, stem, result, runner, budget_s, timeout, embed_max, log)
    finally:
        runner.close()
    return result


def _dominant_kernel(runner, spec: CellSpec, out: str, log) -> dict:
    log("[repro] running the cell to find the kernel that dominates its time ...")
    try:
        return runner.call(ENTRY, dict(spec=spec.to_json(), what="kernel", directory=out))
    except CallFailed as e:
        return {"reason": f"the cell did not run: {worker_failure(e)}"}


def _kernel_note(kernel: dict) -> str:
    if "name" not in kernel:
        return f"Timed; no kernel singled out: {kernel['reason']}."
    where = f" Its generated source: {os.path.basename(kernel['source_file'])}." if kernel["source_file"] else ""
    return (f"Timed (--slow). In irlens's run of the cell, kernel {kernel['name']} ({kernel['kind']}) took "
            f"{kernel['time_us']:.1f} us, {kernel['share']:.0%} of the time of all its kernels.{where}")


def _note_run(path: str, outcome: Outcome) -> None:
    """Say in the file's header what it did when irlens ran it."""
    with open(path) as f:
        text = f.read()
    line = f"When irlens ran it: {outcome}."
    with open(path, "w") as f:
        f.write(text.replace(NOT_RUN, line.replace('"""', "'''")[:400], 1))


def _reduce(spec: CellSpec, path, dtype: str, out: str, stem: str, result: ReproResult, runner, budget_s: float,
            timeout: float, embed_max: int, log) -> None:
    from irlens.repro.cases import Case

    with tempfile.TemporaryDirectory(prefix="irlens-repro-") as tmp:
        cases = None
        # nvFuser crashes and raises are looked for among Thunder's own regions first; where the
        # cell's file did not run, the recorded run says whether there is one
        native = path.program == "fusions" and (result.cell_outcome is None or
                                                 result.cell_outcome.status in ("crash", "exception"))
        if native:
            region = _native_region(spec, out, stem, result, tmp, timeout, embed_max, log)
            cases = [Case(**region)] if region is not None else None
            if result.cell_outcome is None and not result.recorded_outcome.failed:
                # the cell's only run (its file did not run) ended ok: nothing fails to reduce
                result.notes.append("not reduced: the cell ran ok with the flight recorder (its file was not run)")
                return
        if cases is None:
            log(f"[repro] acquiring the cell's program in the common view ({path.frontend}) ...")
            try:
                # the reducer lowers the graphs of the path's frontend: the cell as a cross cell
                acquired = dataclasses.replace(spec, frontend=path.frontend)
                cases = [Case(**c) for c in runner.call(ENTRY, dict(spec=acquired.to_json(), what="cases",
                                                                    directory=tmp))]
            except CallFailed as e:
                result.notes.append(f"not reduced: the common view could not be acquired: {worker_failure(e)}")
                return
        found, other = _failing_case(cases, runner, result.cell_outcome or result.recorded_outcome, path.lowering, log)
        if found is None:
            result.notes.append(
                f"not reduced further: no graph of the cell's common view fails through the {path.lowering} "
                "lowering" + (f" as the cell did (one fails otherwise: {other})" if other else "") + " (see the log)")
            return
        _reduce_case(spec, path, dtype, out, stem, result, runner, found, budget_s, embed_max, log)
    if result.reduction is not None:
        with open(os.path.join(out, f"{stem}-reduce.json"), "w") as f:
            json.dump(result.reduction, f, indent=1)
    if result.reduced_file is not None and result.reduced_outcome is None:
        log(f"[repro] running {result.reduced_file} in a fresh process ...")
        outcome = run_file(result.reduced_file, timeout)
        _note_run(result.reduced_file, outcome)
        log(f"[repro] {os.path.basename(result.reduced_file)}: {outcome}")
        result.reduced_outcome = outcome
        region = result.region_outcome
        if outcome.status != result.reduction["target"]["status"] and region is not None and \
                region.same_failure(result.cell_outcome or result.recorded_outcome):
            result.notes.append(f"the reduced graph's file does not fail as its graph did ({outcome}); the smallest "
                                f"file that does is the fusion region's")
            result.reduced_file, result.reduced_outcome = result.region_file, region


def _native_region(spec: CellSpec, out: str, stem: str, result: ReproResult, tmp: str, timeout: float,
                   embed_max: int, log) -> dict | None:
    """Phase 0 for an nvFuser crash: the cell again with the flight recorder (`nvfuser_regions`);
    the region that never finished, as a standalone nvFuser script. Returns it as a reducer Case
    (None where the traces do not name it)."""
    from irlens.runtime.pool import WorkerPool
    from irlens.repro import nvfuser_regions

    directory = os.path.join(tmp, "regions")
    os.makedirs(directory)
    log("[repro] running the cell again, recording each nvFuser region before it runs ...")
    try:  # the cell as Thunder runs it with its backend's executors (nvFuser's)
        with WorkerPool(1, ENTRY_PRELOAD) as worker:
            ran = worker.call(ENTRY, dict(spec=spec.to_json(), what="record", directory=directory,
                                          embed_max=embed_max), timeout)
        recorded = Outcome("ok", "", f"{plural(ran['regions'], 'region')} ran")
    except CallFailed as e:
        recorded = worker_failure(e)
    log(f"[repro] the recorded run: {recorded}")
    result.recorded_outcome = recorded
    entry = nvfuser_regions.culprit(directory)
    if entry is None:
        result.notes.append(f"no nvFuser region was left unfinished in the recorded run ({recorded})")
        return None
    name = f"{entry['part']} region {entry['name']} (the {entry['index'] + 1}th to run)"
    log(f"[repro] the region that never finished: {name}")
    result.region_file = os.path.join(out, f"{stem}-{entry['part']}-{entry['name']}.py")
    title = f"irlens repro, one nvFuser fusion region: {spec.label(result.dtype, result.name, result.backend)}; {name}"
    notes = [f"Made by: {spec.command()} --reduce", NOT_RUN,
             "What it is: the FusionDefinition Thunder's nvFuser executor built for this region, as nvFuser prints "
             "it, with the region's inputs (recorded just before it ran; large ones regenerated from a seed). "
             "In a run of the whole cell it started and never finished.",
             f"The whole cell: {result.cell_outcome or recorded}."]
    with open(result.region_file, "w") as f:
        f.write(nvfuser_regions.region_file(entry, title, notes))
    result.region_outcome = run_file(result.region_file, timeout)
    _note_run(result.region_file, result.region_outcome)
    log(f"[repro] {os.path.basename(result.region_file)}: {result.region_outcome}")
    if result.region_outcome.same_failure(result.cell_outcome or recorded):
        result.reduced_file, result.reduced_outcome = result.region_file, result.region_outcome
    try:
        return nvfuser_regions.region_case(directory, entry)
    except Exception as e:  # noqa: BLE001  (the region's file stands; only the finer reduction is lost)
        result.notes.append(f"the region's nodes could not be reduced further: {type(e).__name__}: {e}")
        return None


def _reduce_case(spec: CellSpec, path, dtype: str, out: str, stem: str, result: ReproResult, runner,
                 found, budget_s: float, embed_max: int, log) -> None:
    """Delta debugging from a failing graph, then its standalone file."""
    from irlens.repro.graphs import size_text
    from irlens.repro.reduce import Reducer

    case, graph, target = found
    reduction = Reducer(runner, case, target, budget_s, log,
                        nvfuser_regions=path.program == "fusions").reduce(graph)
    result.reduction = {"stage": case.stage, "before": size_text(graph), "after": size_text(reduction.graph),
                        "nodes_before": len(graph.nodes), "nodes_after": len(reduction.graph.nodes),
                        "ops_after": [n.op for n in reduction.graph.nodes], "target": target.to_json(),
                        "stopped": reduction.stopped, "attempts": [dataclasses.asdict(a) for a in reduction.attempts]}
    reduced = os.path.join(out, f"{stem}-reduced.py")
    title = (f"irlens repro, reduced: {spec.label(dtype, result.name, result.backend)}; its {case.stage} graph from "
             f"{len(graph.nodes)} to {plural(len(reduction.graph.nodes), 'node')}")
    notes = [f"Made by: {spec.command()} --reduce", NOT_RUN,
             f"What it is: a graph of irlens's common view (the {case.stage} graph at the primitive level), "
             f"reduced by delta debugging ({plural(len(reduction.attempts), 'try', 'tries')}; "
             f"{reduction.stopped or 'no smaller graph fails the same way'}). The whole graph failed: {target}.",
             _model_note(path)]
    log(f"[repro] writing {reduced}")  # nothing runs through the backend here
    try:
        runner.call(ENTRY, dict(spec=spec.to_json(), what="graph", graph=reduction.graph.to_json(),
                                case=case.to_json(), title=title, notes=notes, out=reduced, embed_max=embed_max))
    except CallFailed as e:
        result.notes.append(f"the reduced file was not written: {worker_failure(e)}")
        return
    result.reduced_file, result.reduced_outcome = reduced, None


def _model_note(path) -> str:
    if path.program == "jax":
        return ("The backend runs the graph's JAX function (irlens.backends.xla.lower) written out as its jaxpr; the float64 "
                "reference is the graph's torch code (irlens.backends.inductor.lower's module as Dynamo captures it).")
    if path.program == "fusions":
        return ("The backend runs the FusionDefinitions irlens.backends.thunder.lower built for the graph's fusible ops, as "
                "nvFuser prints them, and torch calls for the rest; the float64 reference is the graph's torch code.")
    return (f"The model: the graph's torch code (irlens.backends.inductor.lower's module as Dynamo captures it), run by "
            f"{path.description}; the float64 reference is the same graph's code in float64.")


def _failing_case(cases, runner, cell: Outcome | None, lowering: str, log):
    """The first graph of the program that fails through the lowering, normalized so every value
    it computes is an output: one that fails as the cell did (the same signature) before one of
    the same status class; any failure only where the cell's outcome is not known. Returns that
    (case, graph, outcome), or None and the outcome of the first graph that failed otherwise (None
    where none failed)."""
    from irlens.repro.graphs import size_text, subgraph

    failing = []
    for case in cases:
        full = case.graph()
        graph = subgraph(full, [n.id for n in full.nodes])
        outcome = runner.outcome(graph, case)
        log(f"[repro] {case.stage} ({size_text(graph)}) through the {lowering} lowering: {outcome}")
        if outcome.failed:
            failing.append((case, graph, outcome))
    same = [f for f in failing if cell is not None and f[2].same_failure(cell)]
    similar = [f for f in failing if cell is not None and f[2].status == cell.status]
    found = (same or similar or (failing if cell is None else []) or [None])[0]
    return found, (failing[0][2] if failing and found is None else None)
