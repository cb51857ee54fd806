"""How steady `irlens compare`'s CPU timings are, for two versions of irlens side by side.

Runs `irlens compare` (isolated, as a user does) over small workloads with each checkout in
turn, round after round, alternating which goes first, so that both see the same machine
(other jobs' load included). Prints per cell each version's median run µs over the rounds and
the ratio of its slowest to its fastest reading (1.0: every round read the same), then per
version the readings more than 3x the cell's fastest over every run (the fights over the cores
irlens's own work caused read 100-600x), and the rows its tables flagged as unsteady.

    python scripts/cpu_timing_steadiness.py --before /path/to/old/checkout [--after .] [--rounds 4]
        [--workloads moe_topk,embedding,...] [--backends eager] [--jobs 1] [--threads N]

`--before` is any irlens checkout (`git archive 993defb | tar -x -C /tmp/before`, say).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from irlens.runtime.timing import unsteady

SMALL = "moe_topk,embedding,mamba_conv,llama_rmsnorm,llama_swiglu,layernorm_linear"  # the corpus's small workloads


def run_once(root: Path, workloads: str, backends: str, jobs: int, threads: int | None) -> dict[tuple, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.json"
        env = {**os.environ, "PYTHONPATH": str(root)}
        if threads:
            env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
        cmd = [sys.executable, "-m", "irlens.cli", "compare", "--workloads", workloads, "--backends", backends,
               "--json", str(out), "--jobs", str(jobs)]
        subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=3600)
        rows = json.loads(out.read_text())["rows"]
    return {(r["workload"], r["mode"], r["backend"]): r for r in rows if r["status"] in ("ok", "mismatch")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True)
    parser.add_argument("--after", default=".")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--workloads", default=SMALL)
    parser.add_argument("--backends", default="eager")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None, help="OMP/MKL_NUM_THREADS for both (default: irlens's)")
    args = parser.parse_args()
    roots = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    readings: dict[str, list[dict]] = {name: [] for name in roots}
    start = time.monotonic()
    for i in range(args.rounds):
        order = list(roots) if i % 2 == 0 else list(reversed(roots))
        for name in order:
            readings[name].append(run_once(roots[name], args.workloads, args.backends, args.jobs, args.threads))
            print(f"round {i + 1}/{args.rounds} {name}: {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    cells = sorted(set.intersection(*(set(run) for runs in readings.values() for run in runs)))
    fastest = {c: min(run[c]["run_us"] for runs in readings.values() for run in runs) for c in cells}
    print(f"# {args.rounds} rounds, jobs {args.jobs}, threads {args.threads or 'default'}, backends {args.backends}; run µs: median over rounds "
          f"(slowest / fastest reading)")
    print(f"{'cell':40s} " + "  ".join(f"{name:>22s}" for name in roots))
    for c in cells:
        figures = []
        for name in roots:
            us = [run[c]["run_us"] for run in readings[name]]
            figures.append(f"{statistics.median(us):10.1f} ({max(us) / min(us):6.1f}x)")
        print(f"{' '.join(c):40s} " + "  ".join(f"{f:>22s}" for f in figures))
    for name in roots:
        rows = [(c, run[c]) for run in readings[name] for c in cells]
        far = [(c, r) for c, r in rows if r["run_us"] > 3 * fastest[c]]
        worst = max(rows, key=lambda x: x[1]["run_us"] / fastest[x[0]])
        print(f"{name}: {len(far)} of {len(rows)} readings above 3x the cell's fastest; worst "
              f"{worst[1]['run_us']:.0f} µs ({worst[1]['run_us'] / fastest[worst[0]]:.0f}x, {' '.join(worst[0])})")
        if any("run_spread" in r for _, r in rows):  # a version that reports its steps' spread
            flagged_far = sum(unsteady(r.get("run_spread")) for _, r in far)
            flagged_near = sum(unsteady(r.get("run_spread")) for c, r in rows if r["run_us"] <= 3 * fastest[c])
            print(f"{name}: flagged unsteady: {flagged_far} of the {len(far)} readings above 3x, "
                  f"{flagged_near} of the {len(rows) - len(far)} others")
    return 0


if __name__ == "__main__":
    sys.exit(main())
