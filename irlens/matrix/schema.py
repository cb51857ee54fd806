"""The version of a results document's JSON form, and the steps that bring an older one up to it.

`Document.to_json` writes `"schema": SCHEMA`; `Document.from_json` first hands the JSON to
`migrate`, which upgrades a document of any earlier version (version 0: written before documents
carried one) one step at a time, so the reader reads the current form alone. A change of form is
a new version: SCHEMA goes up by one and `STEPS` gains the step that gives older documents what
they lack (tests/architecture/test_committed_documents.py migrates every committed document).
Each step states the form it writes itself: a later change of `Row` does not change an old step.
"""
from __future__ import annotations

from irlens.core.ceilings import spec_for
from irlens.core.json_values import BadDocument
from irlens.matrix.records import KERNEL_WHEN_SET

FIELD = "schema"
SCHEMA = 3


def document_kind(d: dict) -> str:
    """The kind of a document's JSON: compare and bench documents do not name theirs; a bench
    document has its driver (the first ones only the measured ceilings or its GPUs' parts)."""
    return d.get("kind") or ("bench" if "driver" in d or "ceilings" in d or "parts" in d else "compare")


def _rows(d: dict, row) -> dict:
    """`d` with `row` applied to each of its rows that is a JSON object (the reader names any other)."""
    return {**d, "rows": [row(r) if isinstance(r, dict) else r for r in d["rows"]]}


# Version 1 wrote a row by its document's kind (a layout): these fields always, here at their
# defaults, any other only when set.
_V1_MATRIX = {"frontend": None, "reason": "", "max_rel_err": None, "tol": None, "compile_s": None, "run_us": None,
              "kernels": [], "kernel_count": None, "per_result": {}, "phase": "", "detail": "", "notes": {},
              "graphs": {}, "coverage": None}
_V1_ALWAYS = {"compare": _V1_MATRIX, "bench": {**_V1_MATRIX, "must": None, "roofline": None},
              "cross": {"native": None, "reason": "", "max_rel_err": None, "tol": None, "per_result": {},
                        "compile_s": None, "run_us": None, "kernel_count": None, "kernels": [], "graphs": [],
                        "level": None, "phase": "", "detail": ""}}


def _from_unversioned(d: dict) -> dict:
    """Version 0 -> 1. The first documents wrote a kernel's late figures (bytes read, % of ceiling,
    ...) and a roofline's or a step's unset figures as null, where the writer now leaves them out,
    and some lack a field their layout writes always (a compare row's `graphs`)."""
    defaults = _V1_ALWAYS.get(document_kind(d))
    if defaults is None:  # an unknown kind: the reader names it
        return d

    def row(r: dict) -> dict:
        r = {**defaults, **r}
        if isinstance(r.get("kernels"), list):
            r["kernels"] = [{k: v for k, v in kernel.items() if k not in KERNEL_WHEN_SET or v not in (None, [])}
                            if isinstance(kernel, dict) else kernel for kernel in r["kernels"]]
        for key in ("roofline", "must"):
            if isinstance(r.get(key), dict):
                r[key] = {k: v for k, v in r[key].items() if v is not None}
        return r

    return _rows(d, row)


_BENCH = ("must", "device_timing", "roofline", "gpu", "ceilings")  # a v1 row's keys that version 2 keeps in "bench"
_V2_WHEN_SET = ("level", "bench", "cross")  # keys version 1 wrote as null that version 2 leaves out
_CROSS_LACKED = {"notes": {}, "graphs": {}, "coverage": None}  # what version 2 writes always and a v1 cross row lacked


def _one_form(d: dict) -> dict:
    """Version 1 -> 2: one form for every kind of document. Version 1 named a cross row's frontend
    `acquired_by`, its backend `executed_by` and its lowered graphs `graphs` (a compare row's
    `graphs` are its stages' common-view graphs), and wrote its `native` and `level` always;
    version 2 names every field as the row does, keeps a cross row's own fields in `"cross"`
    (native, lowered) and a bench row's in `"bench"` (must, device_timing, roofline, gpu,
    ceilings: only those set, and only where one is), and writes a cross row the fields every row
    has (notes, graphs, coverage)."""
    cross = document_kind(d) == "cross"

    def row(r: dict) -> dict:
        r = dict(r)
        if cross:
            r = {"frontend" if k == "acquired_by" else "backend" if k == "executed_by" else k: v for k, v in r.items()}
            own = {"native": r.pop("native", None), "lowered": r.pop("graphs", [])}
            r = {**_CROSS_LACKED, **r, "cross": {k: v for k, v in own.items() if v is not None}}
        bench = {k: v for k in _BENCH if (v := r.pop(k, None)) is not None}
        if bench:
            r["bench"] = bench
        return {k: v for k, v in r.items() if k not in _V2_WHEN_SET or v is not None}

    return _rows(d, row)


# Version 3 writes every field of the ceilings; the first bench documents wrote one copy's
# bandwidth and the 8192³ products' rates (`copy_gbps`, `bf16_tflops`, `fp32_tflops`), later ones
# lacked the fields added since.
_CEILINGS_LACKED = {"matmul_best": {}, "tf32": False, "l2_bytes": None, "spec": None, "raised": {}, "source": ""}
_SQUARE = "[8192x8192]@[8192x8192]"


def full_ceilings(c):
    """A document's ceilings (its own, a part's, a bench row's) in the form of version 3."""
    if not isinstance(c, dict):  # none measured, or not a record: the reader names it
        return c
    if "copy_gbps" in c:
        spec = spec_for(c.get("device") or "")
        c = {"device": c.get("device", "?"), "memory_gbps": c["copy_gbps"],
             "memory_best": "one 2 GiB device copy, all an older run measured",
             "matmul_tflops": {"bfloat16": c.get("bf16_tflops"), "float32": c.get("fp32_tflops")},
             "matmul_best": {"bfloat16": _SQUARE, "float32": _SQUARE},
             "spec": spec and {"name": spec.name, "memory_gbps": spec.memory_gbps, "tflops": dict(spec.tflops)}}
    return {**_CEILINGS_LACKED, **c}


def _full_ceilings_everywhere(d: dict) -> dict:
    """Version 2 -> 3: the ceilings in full (`full_ceilings`) in the header, each part, each bench
    row, and the headers of the runs a joined document keeps (its `runs`, other than a corpus
    run's choice)."""
    d = dict(d)
    if "ceilings" in d:
        d["ceilings"] = full_ceilings(d["ceilings"])
    if isinstance(d.get("parts"), list):
        d["parts"] = [{**p, "ceilings": full_ceilings(p["ceilings"])} if isinstance(p, dict) and "ceilings" in p
                      else p for p in d["parts"]]
    if isinstance(d.get("runs"), list):
        d["runs"] = [_full_ceilings_everywhere(r) if isinstance(r, dict) and "zoo" not in r and "graphnet" not in r
                     else r for r in d["runs"]]
    if isinstance(d.get("rows"), list):
        d = _rows(d, lambda r: {**r, "bench": {**r["bench"], "ceilings": full_ceilings(r["bench"]["ceilings"])}}
                  if isinstance(r.get("bench"), dict) and "ceilings" in r["bench"] else r)
    return d


STEPS = {0: _from_unversioned, 1: _one_form, 2: _full_ceilings_everywhere}  # version -> the step to version + 1


def migrate(d: dict, where: str = "the document") -> dict:
    """The document `d` (its JSON, any version irlens wrote; not changed) in the current form,
    with `"schema": SCHEMA`; BadDocument for a version this irlens does not know."""
    version = d.get(FIELD, 0)
    if type(version) is not int or not 0 <= version <= SCHEMA:
        raise BadDocument(f"{where}: field {FIELD!r} is {version!r}: this irlens reads versions 0 to {SCHEMA} "
                          f"(a newer irlens wrote it?)")
    while version < SCHEMA:
        d, version = STEPS[version](d), version + 1
    return {**d, FIELD: SCHEMA}
