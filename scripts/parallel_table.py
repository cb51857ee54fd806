"""The parallel path's results table: one `irlens train` run per row, eager vs compiled and the
pass combinations, summarized in Markdown (and JSON) as each row finishes.

    python scripts/parallel_table.py --model llama3:1B --dp-shard 2 --tp 2 --steps 12 \
        --out docs/results/parallel-h200-llama3

Each row runs in its own process (`python -m irlens train ...`, which spawns its ranks) with a
time limit, so a crash or hang costs that row only; its full log is kept beside the output.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

COMPILED = ["--mode", "compiled"]
FULL_INDUCTOR = [*COMPILED, "--joint-passes", "inductor_decomposition",
                 "--passes", "autobucketing_reordering", "full_inductor_compilation"]
FLEX_REGIONAL = ["--flex", *COMPILED, "--passes", "transformer_block_bucketing", "regional_inductor"]
ROWS: dict[str, list[str]] = {
    "eager": [],
    "compiled": COMPILED,
    "autobucketing": [*COMPILED, "--passes", "autobucketing_reordering"],
    "sac_reshard_block_bucketing": [*COMPILED, "--joint-passes", "selective_activation_checkpoint",
                                    "fsdp_reshard_after_forward", "--passes", "transformer_block_bucketing"],
    "autobucketing_full_inductor": FULL_INDUCTOR,
    "autobucketing_full_inductor_cudagraph": [*FULL_INDUCTOR, "cudagraph"],
    "flex_eager": ["--flex"],
    "flex_block_bucketing_regional": FLEX_REGIONAL,
    "flex_block_bucketing_regional_cudagraph": [*FLEX_REGIONAL, "cudagraph"],
}


def run_row(name: str, base: list[str], timeout: float, log: Path) -> dict:
    argv = [sys.executable, "-m", "irlens", "train", *base, *ROWS[name]]
    t0 = time.time()
    # its own process group: on a timeout the spawned ranks go too, and free their GPUs
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        code = None
    log.write_text(f"$ {shlex.join(['irlens', *argv[3:]])}\n{out}\n--- stderr ---\n{err}")
    row = {"row": name, "options": shlex.join(ROWS[name]), "wall_s": time.time() - t0}
    summary = next((json.loads(line) for line in reversed(out.splitlines()) if line.startswith("{")), None)
    if code == 0 and summary is not None:
        return {**row, "status": "ok", **summary}
    why = f"timed out after {timeout:.0f} s" if code is None else f"exit {code}"
    last = next((line for line in reversed(err.splitlines()) if line.strip()), "")
    return {**row, "status": "failed", "reason": f"{why}: {last[:200]}"}


def _f(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def table(rows: list[dict], command: str) -> str:
    eager = next((r["tokens_per_s"] for r in rows if r["row"] == "eager" and r["status"] == "ok"), None)
    moe = any("expert_imbalance" in r for r in rows)
    head = ["row", "status", "tokens/s", "× eager", "MFU %", "peak GiB", "compile s", "final loss"]
    head += ["expert imbalance", "dropped"] if moe else []
    lines = [f"`{command}`, then per row its options:", "",
             "| " + " | ".join(head + ["options"]) + " |", "|" + "---|" * (len(head) + 1)]
    for r in rows:
        ok = r["status"] == "ok"
        cells = [r["row"], r["status"] if ok else f"{r['status']}: {r['reason']}",
                 _f(r.get("tokens_per_s"), ".0f"),
                 _f(r["tokens_per_s"] / eager if ok and eager else None, ".2f"),
                 _f(100 * r["mfu"] if r.get("mfu") is not None else None, ".1f"),
                 _f(r.get("peak_mem_gib"), ".1f"), _f(r.get("compile_s"), ".0f"), _f(r.get("final_loss"), ".4f")]
        if moe:
            cells += [_f(r.get("expert_imbalance"), ".2f"), _f(r.get("dropped_frac"), ".3f")]
        lines.append("| " + " | ".join(cells + [f"`{r['options']}`"]) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--dp-shard", default="1")
    p.add_argument("--tp", default="1")
    p.add_argument("--ep", default="1")
    p.add_argument("--steps", default="12")
    p.add_argument("--device", default="cuda")
    p.add_argument("--extra", default="", help="more `irlens train` options for every row, e.g. '--batch-size 1'")
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, from: {', '.join(ROWS)}")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per row")
    p.add_argument("--budget-s", type=float, default=None,
                   help="start no row after this many seconds, and end each by then; the rest say they did not run")
    p.add_argument("--out", required=True, help="writes OUT.md, OUT.json and the logs in OUT-logs/")
    a = p.parse_args()
    names = a.rows.split(",")
    unknown = [n for n in names if n not in ROWS]
    if unknown:
        p.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}")
    base = ["--device", a.device, "--model", a.model, "--dp-shard", a.dp_shard, "--tp", a.tp, "--ep", a.ep,
            "--steps", a.steps, *shlex.split(a.extra)]
    out = Path(a.out)
    logs = out.parent / f"{out.name}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["irlens", "train", *base])
    rows = []
    deadline = None if a.budget_s is None else time.time() + a.budget_s
    for name in names:
        print(f"[{len(rows) + 1}/{len(names)}] {name} ...", file=sys.stderr, flush=True)
        left = a.timeout if deadline is None else min(a.timeout, deadline - time.time())
        if deadline is not None and left < 30:  # too little to start a run of several ranks
            rows.append({"row": name, "options": shlex.join(ROWS[name]), "status": "not run",
                         "reason": f"the table's time budget of {a.budget_s:.0f} s ran out"})
        else:
            rows.append(run_row(name, base, left, logs / f"{name}.log"))
        r = rows[-1]
        print(f"    {r['status']}: " + (f"{r['tokens_per_s']:.0f} tokens/s, compile {r['compile_s']:.0f} s"
                                        if r["status"] == "ok" else r["reason"]), file=sys.stderr, flush=True)
        out.with_suffix(".json").write_text(json.dumps({"command": command, "rows": rows}, indent=1))
        out.with_suffix(".md").write_text(table(rows, command))
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
