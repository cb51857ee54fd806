"""A cell's one form (irlens.matrix.spec.CellSpec), and a workload's without a backend (ReferenceSpec,
WorkSpec): their JSON round trip, the field a bad one names, where they may be imported from, and
the worker's one entry point reading each (irlens.worker.entry.run_spec)."""
from __future__ import annotations

import json

import pytest

from irlens.errors import UsageError
from irlens.core.json_values import BadDocument
from irlens.matrix.spec import CellSpec, ReferenceSpec, WorkSpec
from tests.support.import_graph import import_edges, modules

FULL = CellSpec("path/to/file.py:NAME", "inductor", "fwdbwd", "bfloat16", "cuda:1", "bench", frontend="jax",
                precision="tf32", timeout_s=12.5, device_timing=True)


@pytest.mark.parametrize("spec", [
    CellSpec("gelu", "eager"), FULL, ReferenceSpec("gelu"), ReferenceSpec("path/to/file.py:NAME", "fwdbwd", "bfloat16",
                                                                         "cuda:1", "bench"),
    WorkSpec("gelu", ("fwd", "fwdbwd"), ("bfloat16", "float32"), "cuda", "bench")],
    ids=["defaults", "every field set", "a reference's defaults", "a reference's every field", "a work count"])
def test_round_trip_through_json_text_is_exact(spec):
    back = type(spec).from_json(json.loads(json.dumps(spec.to_json())))
    assert back == spec
    assert back.to_json() == spec.to_json()  # the timeout too, which equality leaves out


def test_the_timeout_is_no_part_of_a_cells_identity():
    ahead, timed = CellSpec("gelu", "inductor", timeout_s=60.0), CellSpec("gelu", "inductor", timeout_s=600.0)
    assert ahead == timed and hash(ahead) == hash(timed)
    assert {ahead: "row"}[timed] == "row"
    assert CellSpec("gelu", "inductor", device_timing=True) != CellSpec("gelu", "inductor")


@pytest.mark.parametrize("field, value, words", [
    ("mode", "backward", "unknown mode 'backward'"),
    ("device", "tpu", "unknown device 'tpu'"),
    ("preset", "huge", "unknown preset 'huge'"),
    ("dtype", "float8", "unknown dtype 'float8'"),
    ("precision", "fp16", "unknown precision policy 'fp16'"),
    ("mode", 3, "field 'mode' is 3, not a string"),
    ("timeout_s", "soon", "field 'timeout_s' is 'soon', not a number"),
    ("device_timing", 1, "field 'device_timing' is 1, not true or false"),
    ("stream", 0, "unknown field 'stream'"),
])
def test_from_json_names_the_bad_field(field, value, words):
    d = {**FULL.to_json(), field: value}
    with pytest.raises(BadDocument) as raised:
        CellSpec.from_json(d, "the worker's cell")
    assert str(raised.value).startswith("the worker's cell: ")
    assert words in str(raised.value)


def test_from_json_names_a_missing_key():
    d = FULL.to_json()
    del d["backend"]
    with pytest.raises(BadDocument, match="missing field 'backend'"):
        CellSpec.from_json(d)


def test_validate_is_a_usage_error_with_the_choices():
    with pytest.raises(UsageError, match=r"unknown mode 'fw'; choose from: fwd, fwdbwd"):
        CellSpec("gelu", "eager", mode="fw").validate()
    CellSpec("gelu", "eager", device="cuda:3").validate()  # a device by its family


def test_the_stacks_and_the_spec_import_no_orchestration():
    """A backend, frontend or workload never imports the matrix (a cell is run by it, not the other
    way); the spec itself imports only the core, so every command can build one."""
    edges = import_edges(modules())
    stacks = {m: sorted(t for t in targets if t.startswith("irlens.matrix"))
              for m, targets in edges.items() if m.startswith(("irlens.backends", "irlens.frontends", "irlens.workloads"))}
    assert {m: t for m, t in stacks.items() if t} == {}
    assert edges["irlens.matrix.spec"] <= {"irlens.core.dtypes", "irlens.errors", "irlens.core.json_values", "irlens.core.precision",
                                           "irlens.workloads.workload"}


def test_the_plans_specs_are_what_the_command_line_asked_for():
    """`irlens compare` as its parser reads it, planned as the command plans it: one spec per
    workload x mode x backend, each carrying every setting given, and each one the worker reads back."""
    from irlens.cli import build_parser
    from irlens.cli.command import options
    from irlens.cli.compare import CompareOptions
    from irlens.matrix import plan_matrix

    args = build_parser().parse_args(["compare", "--workloads", "gelu,block", "--backends", "eager,inductor",
                                      "--mode", "fwdbwd", "--dtype", "bfloat16", "--preset", "bench", "--tf32",
                                      "--timeout", "42"])
    o = options(CompareOptions, args)
    plan = plan_matrix(o.workloads, o.backends, o.modes, o.device, o.preset, o.dtype, precision=o.precision)
    cells = plan.cells(o.timeout)
    assert [c.to_json() for c in cells] == [
        CellSpec(w, b, "fwdbwd", "bfloat16", "cpu", "bench", precision="tf32", timeout_s=42.0).to_json()
        for w in ("gelu", "block") for b in ("eager", "inductor")]
    assert [CellSpec.from_json(json.loads(json.dumps(c.to_json()))) for c in cells] == cells


def test_a_cross_plans_specs_name_the_acquiring_frontend():
    from irlens.matrix.cross import plan_cross

    cells = plan_cross(["gelu"], ["fwd"], acquired_by=["dynamo", "jax"], executed_by=["inductor"]).cells()
    assert [(c.workload, c.frontend, c.backend, c.mode) for c in cells] == [("gelu", "dynamo", "inductor", "fwd"),
                                                                            ("gelu", "jax", "inductor", "fwd")]


@pytest.mark.parametrize("spec, what, words", [
    ({"workload": "gelu", "mode": "backward"}, "reference", "the reference spec: unknown mode 'backward'"),
    ({"workload": "gelu", "device": "tpu"}, "twin", "the twin spec: unknown device 'tpu'"),
    ({"workload": "gelu", "modes": "fwd", "dtypes": []}, "work", "the work spec: field 'modes' is 'fwd', not a list"),
    ({"workload": "gelu", "modes": ["fwd"], "dtypes": ["float8"]}, "work", "the work spec: unknown dtype 'float8'"),
    (ReferenceSpec("gelu").to_json(), "cell", "the cell spec: missing field 'backend'"),
    (WorkSpec("gelu", ("fwd",), ("float32",)).to_json(), "reference", "the reference spec: unknown field 'modes'"),
    (CellSpec("gelu", "eager").to_json(), "twin", "the twin spec: unknown field 'backend'"),
])
def test_the_worker_entry_reads_one_spec_of_its_purposes_kind_and_names_a_bad_field(spec, what, words):
    """A worker is handed a spec's JSON and what to do with it, nothing loose: a spec of another
    kind, or with a coordinate that does not exist, stops before anything resolves or runs."""
    from irlens.worker.entry import run_spec

    with pytest.raises(BadDocument) as raised:
        run_spec(spec, what, path="unused")
    assert str(raised.value).startswith(words), str(raised.value)


def test_the_worker_entry_names_its_purposes():
    from irlens.worker.entry import run_spec

    with pytest.raises(ValueError, match=r"no purpose 'flops' for a spec; one of: cell, .*, reference, twin, work"):
        run_spec(CellSpec("gelu", "eager").to_json(), "flops")
