"""The cross grid: graphs acquired by one stack, executed by another stack's backend.

A cell is a workload x mode x acquiring frontend (dynamo, thunder, jax) x executing backend
(inductor, nvfuser, xla). It acquires the workload with the frontend, takes the program its
common views make (`irlens.bindings`: forward graph, and in fwdbwd the backward graph fed by
the forward's saved tensors), lowers each graph's primitive view with the backend's lowering
(`irlens.lower.fx` / `.nvfuser` / `.jax`), runs the chain, and checks the named results
against the same float64 reference and tolerances as `irlens compare`. Cells run in worker
processes with a timeout (`irlens.isolation`), like the compare matrix. The diagonal cells
(dynamo x inductor, thunder x nvfuser, jax x xla) are each stack through the common view;
the native pairings themselves are `irlens compare`'s rows.

The document: {"kind": "cross", "device", "device_name", "versions", "preset", "dtype",
"acquired_by": [...], "executed_by": [...], "rows": [...]}, one row per workload x mode x
acquired_by x executed_by with "workload", "mode", "acquired_by", "executed_by", "status" (ok,
mismatch, failed, unavailable), "reason", "max_rel_err", "tol", "per_result", "compile_s",
"run_us" (one chained call: lowered graphs, plus the loss in torch between forward and
backward), "kernel_count", "kernels", "graphs" (per lowered graph: stage and node count),
"level", "phase", "detail".
"""
from __future__ import annotations

import functools
import sys
import tempfile
import traceback
from typing import Callable

import torch

from irlens.frontends.base import Unavailable
from irlens.workload import Instance, NoJaxTwin, Workload

ACQUIRED_BY = ("dynamo", "thunder", "jax")
EXECUTED_BY = {"inductor": "irlens.lower.fx", "nvfuser": "irlens.lower.nvfuser", "xla": "irlens.lower.jax"}
NATIVE = {("dynamo", "inductor"), ("thunder", "nvfuser"), ("jax", "xla")}


def lowering(backend: str):
    import importlib

    if backend not in EXECUTED_BY:
        from irlens.registry import UnknownName

        raise UnknownName("backend", backend, list(EXECUTED_BY))
    return importlib.import_module(EXECUTED_BY[backend])


def new_row(workload: str, mode: str, acquired_by: str, executed_by: str) -> dict:
    return {"workload": workload, "mode": mode, "acquired_by": acquired_by, "executed_by": executed_by,
            "native": (acquired_by, executed_by) in NATIVE, "status": "failed", "reason": "", "max_rel_err": None,
            "tol": None, "per_result": {}, "compile_s": None, "run_us": None, "kernel_count": None, "kernels": [],
            "graphs": [], "level": None, "phase": "", "detail": ""}


@functools.lru_cache(maxsize=8)
def _acquired(workload: str, mode: str, frontend: str, device: str, preset: str, dtype: str | None,
              reference_path: str | None):
    """(instance, program) per workload x mode x frontend: a worker serves a frontend's cells in a row."""
    from irlens.bindings import program_for
    from irlens.compare import Reference
    from irlens.frontends import get_frontend
    from irlens.user_workload import resolve_workload

    inst = resolve_workload(workload).instantiate(preset, dtype, device)
    if reference_path is not None:
        Reference.load(reference_path, device).pin(inst)
    fe = get_frontend(frontend)
    available = fe.availability()
    if not available:
        raise Unavailable(f"frontend {frontend}: {available.reason}")
    return inst, program_for(fe.acquire(inst, mode), inst)


def run_cross_cell(inst: Instance, program, backend: str, reference: dict[str, torch.Tensor]) -> dict:
    """Lower, run and check one cell in this process; raises Unsupported / Unavailable."""
    from irlens.backends.base import measure
    from irlens.bindings import run_program
    from irlens.lower import LEVEL
    from irlens.numerics import compare_results, tolerance

    lower = lowering(backend)
    graphs = {step.stage.name: step.graph(LEVEL) for step in program.steps}
    lowered = {name: lower.lower(graph, inst.device, name) for name, graph in graphs.items()}

    def execute(step, inputs):
        return lowered[step.stage.name](inputs)

    results, compile_s, run_us = measure(lambda: run_program(program, inst, execute), inst.device)
    tol = tolerance(inst.dtype, program.mode)
    cmp = compare_results(results, reference, tol)
    kernels = [k for g in lowered.values() for k in g.kernels()]
    return {"status": "ok" if cmp.ok else "mismatch", "reason": cmp.reason, "max_rel_err": cmp.max_rel_err,
            "tol": tol, "per_result": cmp.errors, "compile_s": compile_s, "run_us": run_us,
            "kernel_count": len(kernels), "kernels": [k.to_json() for k in kernels], "level": LEVEL,
            "graphs": [{"stage": name, "nodes": len(graph.nodes)} for name, graph in graphs.items()]}


def cell(workload: str, acquired_by: str, executed_by: str, mode: str, device: str, preset: str,
         dtype: str | None, reference_path: str | None, reference=None) -> dict:
    """One cell; every exception becomes a row (unavailable: a missing library, device, twin or
    an unsupported op; failed: anything else, naming the phase)."""
    from irlens.compare import Reference, jsonable
    from irlens.user_workload import resolve_workload

    if "torch._dynamo" in sys.modules:
        torch._dynamo.reset()
    row = new_row(resolve_workload(workload).name, mode, acquired_by, executed_by)
    phase = "reference"
    try:
        reference = reference or Reference.load(reference_path, device)
        phase = "acquire"
        inst, program = _acquired(workload, mode, acquired_by, device, preset, dtype, reference_path)
        phase = "run"
        row.update(run_cross_cell(inst, program, executed_by, reference.results))
    except (Unavailable, NoJaxTwin) as e:
        row.update(status="unavailable", reason=str(e), phase=phase)
    except Exception as e:
        row.update(status="failed", phase=phase, reason=f"{phase}: {type(e).__name__}: {e}",
                   detail=traceback.format_exc()[-3000:])
    return jsonable(row)


def cell_in_worker(**kwargs) -> dict:
    """The worker's entry point (irlens.isolation calls it by name)."""
    print(f"[irlens] cross {kwargs['workload']} {kwargs['acquired_by']}->{kwargs['executed_by']} {kwargs['mode']}",
          file=sys.stderr, flush=True)
    return cell(**kwargs)


# --- the grid --------------------------------------------------------------------------------

def run_cross(workloads=None, modes=None, device: str = "cpu", preset: str = "tiny", dtype: str | None = None,
              timeout: float = 300.0, acquired_by=None, executed_by=None, isolate: bool = True,
              progress: Callable[[str], None] | None = None) -> dict:
    """The grid for `workloads` x `modes`: the document described in the module docstring.
    Bad arguments raise (UnknownName, ValueError) before anything runs."""
    from irlens.compare import _References, _split, device_name, plan_matrix, versions
    from irlens.frontends import get_frontend

    plan = plan_matrix(workloads, "eager", modes, device, preset, dtype)
    frontends = _split(acquired_by) or list(ACQUIRED_BY)
    backends = _split(executed_by) or list(EXECUTED_BY)
    for name in frontends:
        get_frontend(name)  # raises UnknownName
    for name in backends:
        lowering(name)
    cells = [(w, m, f, b) for w in plan.workloads for m in plan.modes for f in frontends for b in backends]
    rows = {}
    with tempfile.TemporaryDirectory(prefix="irlens-cross-") as tmp:
        refs = _References(plan, tmp if isolate else None)
        runner = _Runner(timeout, isolate)
        try:
            for w, m, f, b in cells:
                if progress:
                    progress(f"{plan.workloads[w].name} · {f} -> {b} · {m}")
                reference, path, error = refs.get(w, m)
                if error:
                    row = new_row(plan.workloads[w].name, m, f, b)
                    row.update(phase="reference", reason=error)
                    rows[(w, m, f, b)] = row
                    continue
                kwargs = dict(workload=w, acquired_by=f, executed_by=b, mode=m, device=device, preset=preset,
                              dtype=dtype, reference_path=path)
                rows[(w, m, f, b)] = runner.run(kwargs, reference, plan.workloads[w])
        finally:
            runner.close()
    return {"kind": "cross", "device": device, "device_name": device_name(device), "versions": versions(),
            "preset": preset, "dtype": dtype, "acquired_by": frontends, "executed_by": backends,
            "rows": [rows[c] for c in cells]}


class _Runner:
    """Cells in one worker process at a time (`irlens.isolation.WorkerSession`: restarted after a
    crash or a timeout), or in this one."""

    def __init__(self, timeout: float, isolate: bool):
        from irlens.isolation import WorkerSession

        self.timeout = timeout
        self.session = WorkerSession(preload=("irlens.cross", "irlens.bindings", "irlens.frontends", "irlens.models")) \
            if isolate else None

    def run(self, kwargs: dict, reference, wl: Workload) -> dict:
        if self.session is None:
            return cell(**kwargs, reference=reference)
        from irlens.isolation import CallFailed

        try:
            return self.session.call("irlens.cross:cell_in_worker", kwargs, self.timeout)
        except CallFailed as e:
            row = new_row(wl.name, kwargs["mode"], kwargs["acquired_by"], kwargs["executed_by"])
            row.update(phase="worker", reason=e.reason, detail=e.detail)
            return row

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


def format_grid(doc: dict) -> str:
    """One grid per workload x mode: acquired_by down, executed_by across; each cell
    `status err kernels run µs`, the native pairings marked *."""
    lines = []
    by_case: dict[tuple[str, str], list[dict]] = {}
    for r in doc["rows"]:
        by_case.setdefault((r["workload"], r["mode"]), []).append(r)
    for (workload, mode), rows in by_case.items():
        lines.append(f"{workload} {mode} (acquired by \u2193, executed by \u2192; * native pairing)")
        cols = doc["executed_by"]
        table = [["", *cols]]
        for f in doc["acquired_by"]:
            cells = {r["executed_by"]: r for r in rows if r["acquired_by"] == f}
            table.append([f, *(cell_text(cells[b]) if b in cells else "-" for b in cols)])
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in table]
        lines.append("")
    reasons = {}
    for r in doc["rows"]:
        if r["status"] != "ok" and r["reason"]:
            reasons.setdefault(f"{r['acquired_by']} -> {r['executed_by']}: {r['status']}: {r['reason'].splitlines()[0]}",
                               []).append(f"{r['workload']}/{r['mode']}")
    lines += [f"{why} ({', '.join(where)})" for why, where in reasons.items()]
    return "\n".join(lines).rstrip()


def cell_text(r: dict) -> str:
    mark = "*" if r.get("native") else ""
    if r["status"] not in ("ok", "mismatch"):
        return f"{r['status']}{mark}"
    err = "-" if r["max_rel_err"] is None else f"{r['max_rel_err']:.0e}"
    run = "-" if r["run_us"] is None else f"{r['run_us']:.0f}us"
    return f"{r['status']}{mark} {err} k={r['kernel_count']} {run}"


def cross_main(args) -> int:
    """`irlens compare --cross`: args has workloads, device, modes, preset, dtype, json, timeout, and
    optionally backends (which of inductor, nvfuser, xla execute; default all)."""
    from irlens.compare import exit_status, write_document
    from irlens.registry import UnknownName

    try:
        doc = run_cross(args.workloads, args.modes, args.device, args.preset, args.dtype, args.timeout,
                        executed_by=getattr(args, "backends", None),
                        progress=lambda label: print(f"[cross] {label}", file=sys.stderr, flush=True))
    except (UnknownName, ValueError) as e:
        print(f"irlens compare --cross: {e}", file=sys.stderr)
        return 2
    print(format_grid(doc))
    if args.json:
        write_document(doc, args.json)
    return exit_status(doc)
