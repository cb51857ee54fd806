"""The CPU tiny matrix: every registered workload x backend x mode is ok against the float64
reference, or unavailable with a reason. Run once, in this process (isolation has its own tests)."""
import pytest
import torch

import irlens.matrix as cmp
from irlens.backends import BACKENDS as REGISTERED
from irlens.workloads.builtin import workload_names
from irlens.workloads.workload import MODES

WORKLOADS = workload_names()
BACKENDS = REGISTERED.names()


# the largest workloads' rows are the long tail (`pytest -m slow`); `irlens compare` runs them all
LONG = {"minigpt", "attention_manual", "gelu_builtin"}


@pytest.fixture(scope="module")
def matrix():
    """A workload's rows over every backend and mode, from one in-process compare, computed when
    its first test asks (so that the workloads deselected cost nothing)."""
    rows: dict[tuple[str, str, str], dict] = {}

    def row(workload: str, backend: str, mode: str) -> dict:
        if (workload, backend, mode) not in rows:
            doc = cmp.run_matrix([workload], BACKENDS, MODES, device="cpu", preset="tiny", progress=False,
                                 isolate=False).to_json()
            rows.update({(r["workload"], r["backend"], r["mode"]): r for r in doc["rows"]})
        return rows[workload, backend, mode]

    return row


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("workload", [pytest.param(w, marks=pytest.mark.slow) if w in LONG else w for w in WORKLOADS])
def test_compare_cpu_tiny(matrix, workload, backend, mode):
    row = matrix(workload, backend, mode)
    if row["status"] == "unavailable":
        assert row["reason"]
        pytest.skip(f"{backend} unavailable: {row['reason']}")
    assert row["status"] == "ok", f"{row['reason']}\n{row['detail']}"
    assert 0 <= row["max_rel_err"] <= row["tol"]
    assert row["run_us"] > 0 and row["compile_s"] >= 0
    if backend == "eager":
        assert row["kernels"] == [] and row["frontend"] is None
        return
    assert row["kernels"], "a compiling backend reports the kernels it ran"
    coverage = row["coverage"]
    if coverage is not None:  # each compute node of the common view is in exactly one kernel
        assert coverage["uncovered"] == [] and coverage["duplicates"] == [], coverage


def test_compare_tolerances_are_dtype_aware():
    from irlens.numerics.verdicts import tolerance

    assert tolerance("float64", "fwd") < tolerance("float32", "fwd") < tolerance("float16", "fwd") \
        < tolerance("bfloat16", "fwd")
    for dtype in ("float32", "bfloat16"):
        assert tolerance(dtype, "fwd") <= tolerance(dtype, "fwdbwd")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_compare_eager_low_precision_within_tolerance(dtype):
    doc = cmp.run_matrix(["block"], ["eager"], MODES, dtype=dtype, progress=False, isolate=False)
    for row in doc.rows:
        assert row.status == "ok", row.reason
        assert row.dtype == dtype and row.max_rel_err > 1e-4  # really computed in low precision


def test_compare_nan_never_passes():
    from irlens.numerics.verdicts import compare_results

    ref = {"out0": torch.ones(4, dtype=torch.float64)}
    got = {"out0": torch.tensor([1.0, float("nan"), 1.0, 1.0])}
    cmp_ = compare_results(got, ref, tol=1e9)
    assert not cmp_.ok and "NaN" in cmp_.reason and cmp_.max_rel_err == float("inf")
    missing = compare_results({"out1": torch.ones(4)}, ref, tol=1e-4)
    assert missing.reason == "missing results: out0; unexpected results: out1"


@pytest.mark.gpu
def test_compare_cuda_tiny_every_available_row_ok():
    doc = cmp.run_matrix(WORKLOADS, BACKENDS, MODES, device="cuda", preset="tiny", progress=False, timeout=600)
    bad = [r for r in doc.rows if r.status in ("mismatch", "failed")]
    assert not bad, [(r.workload, r.backend, r.mode, r.reason) for r in bad]
