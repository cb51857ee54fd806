"""The version of a results document's JSON form, and the steps that bring an older one up to it.

`Document.to_json` writes `"schema": SCHEMA`; `Document.from_json` first hands the JSON to
`migrate`, which upgrades a document of any earlier version (version 0: written before documents
carried one) one step at a time, so the reader reads the current form alone. A change of form is
a new version: SCHEMA goes up by one and `STEPS` gains the step that gives older documents what
they lack (tests/architecture/test_committed_documents.py migrates every committed document).
"""
from __future__ import annotations

from typing import Any

from irlens.json_values import BadDocument
from irlens.matrix.records import KERNEL_WHEN_SET
from irlens.matrix.row import LAYOUTS, Row

FIELD = "schema"
SCHEMA = 1


def document_kind(d: dict) -> str:
    """The kind of a document's JSON: compare and bench documents do not name theirs; a bench
    document has the measured ceilings or its GPUs' parts."""
    return d.get("kind") or ("bench" if "ceilings" in d or "parts" in d else "compare")


def _from_unversioned(d: dict) -> dict:
    """Version 0 -> 1. The first documents wrote a kernel's late figures (bytes read, % of ceiling,
    ...) and a roofline's or a step's unset figures as null, where the writer now leaves them out,
    and some lack a field their layout now always writes (a compare row's `graphs`)."""
    layout = LAYOUTS.get(document_kind(d))
    if layout is None:  # an unknown kind: the reader names it
        return d
    # what a row's layout writes always, at its default (the row's identity and status are required)
    defaults = {k: v for k, v in Row("", "", "").to_json(layout).items() if k not in layout.required}

    def row(r: Any) -> Any:
        if not isinstance(r, dict):
            return r
        r = {**defaults, **r}
        if isinstance(r.get("kernels"), list):
            r["kernels"] = [{k: v for k, v in kernel.items() if k not in KERNEL_WHEN_SET or v not in (None, [])}
                            if isinstance(kernel, dict) else kernel for kernel in r["kernels"]]
        for key in ("roofline", "must"):
            if isinstance(r.get(key), dict):
                r[key] = {k: v for k, v in r[key].items() if v is not None}
        return r

    return {**d, "rows": [row(r) for r in d["rows"]]}


STEPS = {0: _from_unversioned}  # version -> the step to version + 1


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
