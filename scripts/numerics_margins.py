"""Measure what irlens.numerics.verdicts' CRITERIA rest on: how far backends that are right stray from
the float64 reference, next to eager's own error in the same dtype.

Runs the built-in workloads and the corpus (tiny preset, CPU) through the compiling backends in
each dtype, in this process, and prints per dtype:
  - the ratio err / eager_err over every result (where eager's error is not 0): its quantiles
    and maximum, per backend;
  - the floor each k would need (the largest err - k x eager_err over the results that are not
    the loss), the loss's largest excess, and the LOSS_ROUNDINGS a loss beyond today's floor
    would need ((err - k x eager_err) / (u x condition), `references.loss_condition`);
  - the rows that are a mismatch under the criteria now in irlens.numerics.
With --json the raw figures (one record per result) are written too.

    python scripts/numerics_margins.py [--dtypes bfloat16,float16,float32] [--backends ...]
                                       [--workloads ...] [--json margins.json]
    python scripts/numerics_margins.py --from-json margins.json    # again, under today's criteria
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import statistics
import sys
import time

from irlens.matrix import run_matrix
from irlens.matrix.references import compute_reference
from irlens.workloads.builtin import get_workload, workload_names
from irlens.numerics.verdicts import CRITERIA, LOSS_ROUNDINGS, allowed_error, unit_roundoff
from irlens.workloads.workload import MODES

KS = (2.0, 3.0)


def measure(workloads: list[str], backends: list[str], dtype: str) -> list[dict]:
    doc = run_matrix(workloads, ["eager", *backends], MODES, device="cpu", preset="tiny", dtype=dtype,
                     progress=True, isolate=False)
    conditions = {(w, m): compute_reference(get_workload(w), m, "cpu", "tiny", dtype).conditions
                  for w in workloads for m in MODES}
    records = []
    for r in doc.to_json()["rows"]:  # the result checks as maps, result name -> value
        if r["status"] not in ("ok", "mismatch") or r["backend"] == "eager":
            if r["status"] not in ("ok", "mismatch", "unavailable"):
                print(f"  {r['workload']} {r['mode']} {r['backend']}: {r['status']}: {r['reason'][:200]}", file=sys.stderr)
            continue
        eager = r.get("per_result_eager") or {}
        for name, err in r["per_result"].items():
            records.append({"dtype": dtype, "workload": r["workload"], "mode": r["mode"], "backend": r["backend"],
                            "result": name, "err": err, "eager_err": eager.get(name), "status": r["status"],
                            "condition": conditions[r["workload"], r["mode"]].get(name, 0.0)})
    return records


def quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    values = sorted(values)
    q = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else [values[0]] * 19
    return f"median {q[9]:.2f}  p95 {q[18]:.2f}  max {values[-1]:.2f}  (n={len(values)})"


def summarize(records: list[dict], dtype: str) -> list[str]:
    lines = [f"## {dtype}"]
    rows = [x for x in records if x["dtype"] == dtype and x["err"] is not None and x["eager_err"] is not None]
    u = unit_roundoff(dtype)
    for backend in sorted({x["backend"] for x in rows}):
        mine = [x for x in rows if x["backend"] == backend]
        ratios = [x["err"] / x["eager_err"] for x in mine if x["eager_err"] > 0 and math.isfinite(x["err"])]
        lines.append(f"{backend:22s} err / eager_err: {quantiles(ratios)}")
    criterion = CRITERIA.get(dtype)
    for k in KS:
        excess = lambda x: x["err"] - k * x["eager_err"]  # noqa: E731
        tensors = [x for x in rows if x["result"] != "loss"]
        worst = max(tensors, key=excess, default=None)
        if worst is not None:
            lines.append(f"k={k:g}: floor needed {max(0.0, excess(worst)):.2e} ({_where(worst)})")
        losses = [x for x in rows if x["result"] == "loss"]
        worst = max(losses, key=excess, default=None)
        if worst is not None:
            lines.append(f"k={k:g}: the loss's largest excess {max(0.0, excess(worst)):.2e} ({_where(worst)}, "
                         f"condition {worst['condition']:.2g})")
        if criterion is not None:
            beyond = [x for x in losses if excess(x) > criterion.floor and x["condition"] > 0]
            need = max(beyond, key=lambda x: excess(x) / (u * x["condition"]), default=None)
            lines.append(f"k={k:g}: loss roundings needed beyond the floor {criterion.floor:g}: " + (
                f"{excess(need) / (u * need['condition']):.2f} ({_where(need)}, condition {need['condition']:.2g})"
                if need else "none"))
    judged = [x for x in records if x["dtype"] == dtype]
    bad = sorted({(x["workload"], x["mode"], x["backend"]) for x in judged
                  if x["err"] is None or not x["err"] <= allowed_error(dtype, x["mode"], x["eager_err"],
                                                                      x["condition"]).value})
    lines.append(f"criterion now: {criterion}, LOSS_ROUNDINGS {LOSS_ROUNDINGS}; rows that are a mismatch under it: "
                 + (", ".join("/".join(b) for b in bad) or "none"))
    return lines


def _where(x: dict) -> str:
    return (f"{x['workload']} {x['mode']} {x['backend']} {x['result']}: err {x['err']:.2e}, "
            f"eager {x['eager_err']:.2e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    parser.add_argument("--backends", default="inductor,thunder+torchcompile,xla")
    parser.add_argument("--workloads", default=None, help="default: the built-ins and the corpus")
    parser.add_argument("--json", default=None, help="write the raw figures here")
    parser.add_argument("--from-json", default=None, help="summarize figures written before, under today's criteria")
    args = parser.parse_args()
    workloads = args.workloads.split(",") if args.workloads else workload_names(corpus=None)
    records, start = [], time.monotonic()
    if args.from_json:
        with (gzip.open if args.from_json.endswith(".gz") else open)(args.from_json, "rt") as f:
            records = json.load(f)
        workloads = sorted({x["workload"] for x in records})
    else:
        for dtype in args.dtypes.split(","):
            records += measure(workloads, args.backends.split(","), dtype)
            if args.json:
                with (gzip.open if args.json.endswith(".gz") else open)(args.json, "wt") as f:
                    json.dump(records, f, indent=0)
    print(f"# numerics margins: {len(workloads)} workloads, tiny preset, CPU, {time.monotonic() - start:.0f} s")
    for dtype in args.dtypes.split(","):
        print("\n".join(summarize(records, dtype)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
