"""One case through one frontend: is its common view, at each stage and level, a faithful
account of what the op computes? These are the functions a sweep worker runs.

The steps, each a place where a case can stop:
1. Build the case and run it eagerly in its own dtype. An eager failure, or results the common
   view has no values for (complex, sparse, no tensor at all), put it out of scope: `excluded`.
2. Random: the corpus says so (OpInfo's seeded wrapper), an ATen op it ran is tagged
   `nondeterministic_seeded`, or its results differ between two seeds; ops whose results are
   uninitialized memory (torch.empty and kin) count alike. Random cases are classified, not
   acquired: there is nothing to compare, and Thunder hangs on most of them.
3. The float64 reference: the same function eagerly, floating inputs in float64.
4. Acquire with the frontend (`fwd`). An exception is a failed capture; Dynamo's graph breaks,
   or no graph at all, mean not captured in one graph: `failed`, with the reason.
5. Per stage and level: the common view (an adapter error is `broken`), its unknown ops
   (`unknown`, by native name), then the float64 interpreter through the frontend's bindings
   (no meaning for a canonical op, or an error, is `broken`), its results against the
   reference: `faithful`; `in_dtype` where they miss it but the graph means the case's dtype's
   own computation (`dtype_verdict`); else `wrong` (a wrong meaning). Beside the status, its
   nodes' recorded output shapes and dtypes against their ops' rules (`irlens.conformance.metadata`):
   the disagreements, if any, under `metadata`.

Only public entry points are used: the frontends' acquisitions, their stages' common views
(`Stage.common(level)`), the bindings that feed a graph its inputs, `irlens.core.interpret` and
`irlens.core.ir.UNKNOWN_PREFIX` and `Graph.unknown_ops` (which counts inside loop bodies), so the sweep measures the vocabulary however it is implemented.
"""
from __future__ import annotations

import math
import re
import time
from collections import Counter

import torch

from irlens.conformance.config import RTOL
from irlens.conformance.corpora import get_corpus
from irlens.conformance.corpus import Case

# case status
EXCLUDED, RANDOM, FAILED, CAPTURED = "excluded", "random", "failed", "captured"
# stage x level status of a captured case; `in_dtype`: faithful in the case's dtype (see `dtype_verdict`)
FAITHFUL, IN_DTYPE, UNKNOWN, WRONG, BROKEN = "faithful", "in_dtype", "unknown", "wrong", "broken"
STAGE_STATUSES = (FAITHFUL, IN_DTYPE, UNKNOWN, WRONG, BROKEN)
LEVELS = ("composite", "primitive")

# Why a capture failed, from its message: the causes the sweep lists apart (first match wins).
CAUSES = (
    ("data-dependent shape", r"data.dependent|dynamic.shape|DynamicOutputShape|unbacked|Concretization|"
                             r"NonConcreteBooleanIndex|nonzero|masked_select|\.item\(\)"),
    ("complex", r"complex"),
    ("sparse", r"sparse"),
)

SEEDS = (1, 2)


def cause(kind: str, message: str) -> str:
    """The reason class of a failure of `kind` (capture failed, graph break, ...)."""
    return next((name for name, pattern in CAUSES if re.search(pattern, message, re.IGNORECASE)), kind)


def one_line(e: BaseException | str, limit: int = 300) -> str:
    text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line[:limit]


# --- worker entry points ----------------------------------------------------------------------

def list_cases(corpora: list[str], samples: int, frontends: list[str]) -> dict:
    """The cases of `corpora` (and why a corpus cannot load here: its test utilities need
    packages of the `test` extra), whether each frontend is available here, and the versions."""
    from irlens.frontends import get_frontend

    cases, missing = {}, {}
    for name in corpora:
        try:
            cases[name] = [c.to_json() for c in get_corpus(name).cases(samples)]
        except ImportError as e:
            cases[name], missing[name] = [], f"{one_line(e)} (pip install 'irlens[test]')"
    availability = {}
    for name in frontends:
        available = get_frontend(name).availability()
        availability[name] = "" if available else (available.reason or "unavailable")
    return {"cases": cases, "unavailable_corpora": missing, "availability": availability, "versions": versions()}


def versions() -> dict:
    import platform
    from importlib import metadata

    found = {"python": platform.python_version()}
    for dist in ("torch", "jax", "jaxlib", "lightning-thunder", "numpy"):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[dist] = None
    return found


def check_case(case: dict, frontend: str, rtol: float = RTOL) -> dict:
    """One case through one frontend; the record the sweep keeps (see the module docstring)."""
    start = time.perf_counter()
    record = {"case": Case.from_json(case).id, "frontend": frontend}
    record.update(_check(Case.from_json(case), frontend, rtol))
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def _check(case: Case, frontend: str, rtol: float) -> dict:
    try:
        subject = get_corpus(case.corpus).subject(case)
        inst = subject.workload.instantiate()
    except Exception as e:  # noqa: BLE001  (a corpus entry that cannot be built here)
        return {"status": EXCLUDED, "class": "sample not buildable", "reason": one_line(e)}
    try:
        with AtenTags() as tags:
            eager = subject.eager(inst.inputs, False)
    except Exception as e:  # noqa: BLE001
        return {"status": EXCLUDED, "class": "eager failed", "reason": one_line(e)}
    out_of_scope = _out_of_scope(list(inst.inputs), eager)
    if out_of_scope:
        return {"status": EXCLUDED, "class": out_of_scope, "reason": ""}
    if subject.undefined_values:
        return {"status": RANDOM, "class": "undefined values", "reason": "uninitialized memory"}
    if subject.random:
        return {"status": RANDOM, "class": "random", "reason": subject.random}
    seeded = tags.ops_with("nondeterministic_seeded")
    if seeded:
        return {"status": RANDOM, "class": "random", "reason": f"{', '.join(seeded)}: nondeterministic_seeded"}
    if _is_random(subject, inst.inputs):
        return {"status": RANDOM, "class": "random", "reason": f"results differ between seeds {SEEDS}"}
    try:
        reference = subject.eager(inst.inputs, True)
    except Exception as e:  # noqa: BLE001
        return {"status": EXCLUDED, "class": "no float64 reference", "reason": one_line(e)}
    # a bitcast: in float64 it reads other bits, and its results change count or shape
    reshaped = [f"out{i}" for i, (r, x) in enumerate(zip(reference, eager)) if tuple(r.shape) != tuple(x.shape)]
    if len(reference) != len(eager):
        reshaped.append(f"{len(reference)} results, not {len(eager)}")
    if reshaped:
        return {"status": EXCLUDED, "class": "no float64 reference",
                "reason": f"in float64 the results change: {', '.join(reshaped)}"}
    data_dependent = tags.ops_with("dynamic_output_shape", "data_dependent_output")
    return _capture(subject, inst, frontend, reference, rtol, eager, data_dependent)


class AtenTags:
    """The ATen ops a torch computation ran, with their tags (`torch.Tag`): PyTorch's own marks
    of random ops (nondeterministic_seeded, seen even through OpInfo's `wrapper_set_seed`) and
    of data-dependent shapes (dynamic_output_shape, data_dependent_output). A JAX function runs
    none."""

    def __enter__(self) -> "AtenTags":
        from torch.utils._python_dispatch import TorchDispatchMode

        seen = self.seen = {}

        class Record(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                seen.setdefault(str(func), {t.name for t in func.tags})
                return func(*args, **(kwargs or {}))

        self._mode = Record()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._mode.__exit__(*exc)

    def ops_with(self, *tags: str) -> list[str]:
        return sorted(op for op, op_tags in self.seen.items() if op_tags.intersection(tags))


def _capture(subject, inst, frontend: str, reference: list, rtol: float, eager: list,
             data_dependent: list[str]) -> dict:
    """Steps 4 and 5: acquire, then each stage and level. A failure of a case whose eager run
    met data-dependent ATen ops is put down to them unless its message says otherwise."""
    from irlens.frontends import get_frontend
    from irlens.frontends.bindings import stage_programs

    def failed(kind: str, message: str) -> dict:
        found = cause(kind, message)
        if found == kind and data_dependent:
            found, message = "data-dependent shape", f"{message} ({', '.join(data_dependent)})"
        return {"status": FAILED, "class": found, "reason": one_line(message)}

    fe = get_frontend(frontend)
    try:
        acq = fe.conformance_acquire(subject.workload.instantiate())
    except Exception as e:  # noqa: BLE001
        return failed(f"capture failed: {type(e).__name__}", one_line(e))
    graphs, breaks = acq.notes.get("graphs", 1), acq.notes.get("graph_breaks", 0)
    if graphs > 1 or breaks:
        return failed("graph break", "; ".join(acq.notes.get("break_reasons", [])) or f"{graphs} graphs")
    if graphs == 0:
        return {"status": FAILED, "class": "no graph", "reason": "the frontend captured no graph"}
    gap = fe.conformance_gap(acq, len(reference))
    if gap:
        return {"status": FAILED, "class": "results outside the graph", "reason": gap}
    try:
        programs, unbound = stage_programs(acq, inst), "the bindings give no program for it"
    except Exception as e:  # noqa: BLE001  (its graphs are still read for unknown ops)
        programs, unbound = {}, "bindings: " + one_line(e)
    stages = {}
    for label in fe.conformance_stages:
        name = fe.conformance_stage(acq, label)
        stage, program = acq.stages.get(name), programs.get(name)
        stages[label] = {level: _check_stage(stage, program, unbound, level, inst, reference, rtol, eager)
                         for level in LEVELS}
    return {"status": CAPTURED, "stages": stages}


def _check_stage(stage, program, unbound: str, level: str, inst, reference: list, rtol: float,
                 eager: list) -> dict:
    """One stage at one level: its status (`_judge`), and beside it, where there are any, its nodes'
    recorded output shapes and dtypes that disagree with their ops' rules (`metadata`)."""
    from irlens.conformance.metadata import check_metadata

    if stage is None:
        return {"status": BROKEN, "error": "the frontend kept no such stage"}
    try:
        graph = stage.common(level)
    except Exception as e:  # noqa: BLE001
        return {"status": BROKEN, "error": "adapter: " + one_line(e)}
    result = _judge(graph, program, unbound, level, inst, reference, rtol, eager)
    disagreements = check_metadata(graph).disagreements  # whatever the values say: a wrong shape is wrong
    return {**result, "metadata": [str(d) for d in disagreements]} if disagreements else result


def _judge(graph, program, unbound: str, level: str, inst, reference: list, rtol: float, eager: list) -> dict:
    from irlens.frontends.bindings import run_program
    from irlens.core.interpret import Uninterpretable, interpret
    from irlens.core.ir import UNKNOWN_PREFIX

    unknown = Counter({op[len(UNKNOWN_PREFIX):]: k for op, k in graph.unknown_ops().items()})  # loop bodies too
    if unknown:
        return {"status": UNKNOWN, "unknown": dict(unknown)}
    if program is None:
        return {"status": BROKEN, "error": unbound}
    try:
        for step in program.steps:  # the graph's inputs and outputs against its binding
            step.graph(level)
    except Exception as e:  # noqa: BLE001
        return {"status": BROKEN, "error": "bindings: " + one_line(e)}
    try:
        results = run_program(program, inst, lambda step, inputs: interpret(step.graph(level), inputs))
    except Uninterpretable as e:
        return {"status": BROKEN, "error": "no meaning: " + one_line(str(e))}
    except Exception as e:  # noqa: BLE001
        return {"status": BROKEN, "error": "interpreter: " + one_line(e)}
    got = [results.get(f"out{i}") for i in range(max(len(reference), len(results)))]
    err, problem = compare_outputs(got, reference, rtol)
    if problem is None:
        return {"status": FAITHFUL, "rel_err": err}
    eager_err, _ = compare_outputs(got, eager, rtol)  # a hint: nearer the eager run in its own dtype?
    found = {"rel_err": err, "error": problem, "rel_err_vs_eager_dtype": eager_err}
    why = dtype_verdict(got, reference, eager, rtol, format_dependent(graph))
    return {"status": IN_DTYPE, "why": why, **found} if why else {"status": WRONG, **found}


def format_dependent(graph) -> list[str]:
    """The ops of `graph` whose meaning depends on a float's format: bitcasts between a float
    narrower than float64 and an integer (XLA writes nextafter, and so jnp.spacing, as integer
    arithmetic on a float32's bits). The interpreter runs them at their declared width."""
    found = []
    for node in graph.all_nodes():  # a loop body's too
        if node.op == "bitcast":
            pair = {node.attrs.get("dtype", ""), node.attrs.get("from_dtype", "")}
            floats = {d for d in pair if d.startswith(("float", "bfloat")) and d != "float64"}
            if floats and any(d.startswith(("int", "uint")) for d in pair):
                found.append(f"bitcast {node.attrs.get('from_dtype')} -> {node.attrs.get('dtype')}")
    return sorted(set(found))


def dtype_verdict(got: list, reference: list, eager: list, rtol: float, format_ops: list[str]) -> str | None:
    """Why results that missed the float64 reference are still faithful in the case's dtype, or
    None (a wrong meaning). Two ways, both only for a graph whose meaning is the dtype's own:
    - it holds format-dependent ops (`format_dependent`): its meaning is the float32 computation
      itself, so it is judged against eager in the case's dtype, at the sweep's rtol;
    - every floating result is within k x eager's own error in the case's dtype (eager vs the
      float64 reference) + rtol (`irlens.numerics.verdicts.allowed_error`, float32's k: 2): a graph holding
      the dtype's own approximations (XLA's float32 Lanczos lgamma) is as accurate as eager in
      that dtype. The floor is the sweep's rtol, not numerics' 1e-5 for whole models: one op's
      eager error is ~1e-7, and a dropped term should not hide under a model's budget. Where
      numerics caps the allowance by the dtype's flat tolerance (float32: 1e-4), so does this:
      an eager that is itself far off (a cancelling result) excuses no large error.
    NaN or Inf out of place, a wrong integer or an error like 0.2 or 20 is wrong either way."""
    from irlens.core.ir import canonical_dtype
    from irlens.numerics.verdicts import CRITERIA, allowed_error, rel_err

    if format_ops:
        _, problem = compare_outputs(got, eager, rtol)
        return None if problem else f"reads a float's bits ({', '.join(format_ops)}): agrees with eager in its dtype"
    if len(got) != len(reference) or len(eager) != len(reference):
        return None
    budgets = []
    for g, r, x in zip(got, reference, eager):
        if compare_outputs([g], [r], rtol)[1] is None:
            continue
        dtype = canonical_dtype(x.dtype)
        if g is None or not x.is_floating_point() or dtype not in CRITERIA or not r.is_floating_point() \
                or tuple(g.shape) != tuple(r.shape):
            return None
        own = rel_err(x.double(), r.double())
        err = rel_err(torch.as_tensor(g).double(), r.double())
        if not (math.isfinite(own) and err <= allowed_error(dtype, "fwd", own, floor=rtol).value):
            return None
        budgets.append(f"rel err {err:.2e} <= {CRITERIA[dtype].k:g} x eager's own {own:.2e} + {rtol:g}")
    return "; ".join(budgets) + f" (eager {canonical_dtype(eager[0].dtype)})" if budgets else None


# --- scope and randomness ----------------------------------------------------------------------

def _out_of_scope(inputs: list, outputs: list) -> str:
    tensors = [t for t in inputs + outputs if isinstance(t, torch.Tensor)]
    if not outputs:
        return "no tensor output"
    if any(t.layout != torch.strided for t in tensors):
        return "sparse"
    if any(t.is_complex() for t in tensors):
        return "complex"
    return ""


def _is_random(subject, inputs) -> bool:
    runs = []
    for seed in SEEDS:
        torch.manual_seed(seed)
        try:
            runs.append(subject.eager(inputs, False))
        except Exception:  # noqa: BLE001  (it ran once already; a second failure says nothing new)
            return False
    return not all(_identical(a, b) for a, b in zip(*runs))


def _identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return bool(torch.equal(a, b) or (a.is_floating_point() and torch.equal(a.isnan(), b.isnan())
                                      and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0))))


# --- comparison ------------------------------------------------------------------------------------

def compare_outputs(got: list, reference: list, rtol: float) -> tuple[float | None, str | None]:
    """(largest relative error over the floating outputs, the first problem or None).

    NaN and infinities must sit where the reference has them; the finite rest is compared
    norm-wise (||got - ref|| / ||ref||). Integer and bool results must be equal, and of the
    same kind as the reference's."""
    from irlens.core.ir import canonical_dtype
    from irlens.numerics.verdicts import rel_err, tolerance

    if len(got) != len(reference):
        return None, f"{len(got)} outputs, eager has {len(reference)}"
    worst = None
    for i, (g, r) in enumerate(zip(got, reference)):
        if g is None:
            return worst, f"out{i}: no value"
        g = torch.as_tensor(g)
        if tuple(g.shape) != tuple(r.shape):
            return worst, f"out{i}: shape {tuple(g.shape)}, eager {tuple(r.shape)}"
        if _kind(g) != _kind(r):
            return worst, f"out{i}: dtype {canonical_dtype(g.dtype)}, eager {canonical_dtype(r.dtype)}"
        if not r.is_floating_point():
            if not torch.equal(g.long(), r.long()):
                return worst, f"out{i}: {int((g.long() != r.long()).sum())} of {r.numel()} values differ"
            continue
        err = rel_err(g.double(), r.double())
        worst = err if worst is None else max(worst, err)
        tol = rtol if r.dtype == torch.float64 else tolerance(canonical_dtype(r.dtype), "fwd")
        if math.isinf(err):
            return worst, f"out{i}: NaN or Inf where eager has none, or the reverse"
        if not err <= tol:
            return worst, f"out{i}: rel err {err:.2e} > tol {tol:.0e}"
    return worst, None


def _kind(t: torch.Tensor) -> str:
    return "bool" if t.dtype == torch.bool else "float" if t.is_floating_point() else "int"
