"""The parallel path's results table: one `irlens train` run per row, eager vs compiled and the
pass combinations, summarized in Markdown (and JSON) as each row finishes.

    python scripts/parallel_table.py --model llama3:1B --steps 8 --profile \\
        --rows eager@8,compiled@8,full_inductor@8,full_inductor_cudagraph@8 --out /tmp/r/parallel-h100-llama3

A row is `NAME` (the pass combination, ROWS below) or `NAME@B` (and `--batch-size B`). Each row
runs in its own process (`python -m irlens train ...`, which spawns its ranks) with a time limit,
so a crash or hang costs that row only; its full log is kept beside the output. With
`--profile`, every row profiles its last 2 steps (traces in the logs folder) and a second table
says where the step time went (irlens.parallel.profile); tokens/s and MFU then come from the
steps after the 2 warm-up steps that were not profiled.
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
DECOMPOSED = [*COMPILED, "--joint-passes", "inductor_decomposition"]
FULL_INDUCTOR = [*DECOMPOSED, "--passes", "autobucketing_reordering", "full_inductor_compilation"]
FLEX_REGIONAL = ["--flex", *COMPILED, "--passes", "transformer_block_bucketing", "regional_inductor"]
ROWS: dict[str, list[str]] = {
    "eager": [],
    "compiled": COMPILED,
    "autobucketing": [*COMPILED, "--passes", "autobucketing_reordering"],
    "sac_reshard_block_bucketing": [*COMPILED, "--joint-passes", "selective_activation_checkpoint",
                                    "fsdp_reshard_after_forward", "--passes", "transformer_block_bucketing"],
    # one GPU: no collective to bucket
    "full_inductor": [*DECOMPOSED, "--passes", "full_inductor_compilation"],
    "full_inductor_cudagraph": [*DECOMPOSED, "--passes", "full_inductor_compilation", "cudagraph"],
    "sac_full_inductor_cudagraph": [*DECOMPOSED, "selective_activation_checkpoint",
                                    "--passes", "full_inductor_compilation", "cudagraph"],
    "autobucketing_full_inductor": FULL_INDUCTOR,
    "autobucketing_full_inductor_cudagraph": [*FULL_INDUCTOR, "cudagraph"],
    "flex_eager": ["--flex"],
    "flex_block_bucketing_regional": FLEX_REGIONAL,
    "flex_block_bucketing_regional_cudagraph": [*FLEX_REGIONAL, "cudagraph"],
}
PROFILE_PARTS = ("matmul", "attention", "fused", "other", "comm_exposed", "comm_overlapped", "idle")


def row_options(spec: str) -> list[str]:
    """`NAME` or `NAME@B` -> its `irlens train` options."""
    name, _, batch = spec.partition("@")
    return [*ROWS[name], *(["--batch-size", batch] if batch else [])]


def run_row(spec: str, base: list[str], timeout: float, logs: Path, profile: bool) -> dict:
    options = row_options(spec)
    argv = [sys.executable, "-m", "irlens", "train", *base, *options]
    stem = spec.replace("@", "-b")  # file names of plain characters: they travel back from the device
    if profile:
        argv += ["--profile", str(logs / stem)]
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
    (logs / f"{stem}.log").write_text(f"$ {shlex.join(['irlens', *argv[3:]])}\n{out}\n--- stderr ---\n{err}")
    row = {"row": spec, "options": shlex.join(options), "wall_s": time.time() - t0}
    summary = next((json.loads(line) for line in reversed(out.splitlines()) if line.startswith("{")), None)
    if code == 0 and summary is not None:
        return {**row, "status": "ok", **summary}
    why = f"timed out after {timeout:.0f} s" if code is None else f"exit {code}"
    last = next((line for line in reversed(err.splitlines()) if line.strip()), "")
    return {**row, "status": "failed", "reason": f"{why}: {last[:200]}"}


def _f(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _batch(r: dict):
    return (r.get("config") or {}).get("batch_size")


def table(rows: list[dict], command: str) -> str:
    # × eager: against the eager row of the same batch
    eager = {_batch(r): r["tokens_per_s"] for r in rows if r["row"].partition("@")[0] == "eager" and r["status"] == "ok"}
    moe = any("expert_imbalance" in r for r in rows)
    head = ["row", "status", "batch", "tokens/s", "× eager", "MFU %", "peak GiB", "compile s", "wall s", "final loss"]
    head += ["expert imbalance", "dropped"] if moe else []
    lines = [f"`{command}`, then per row its options:", "",
             "| " + " | ".join(head + ["options"]) + " |", "|" + "---|" * (len(head) + 1)]
    for r in rows:
        ok = r["status"] == "ok"
        ref = eager.get(_batch(r)) if ok else None
        cells = [r["row"], r["status"] if ok else f"{r['status']}: {r['reason']}", _f(_batch(r), "d"),
                 _f(r.get("tokens_per_s"), ".0f"), _f(r["tokens_per_s"] / ref if ref else None, ".2f"),
                 _f(100 * r["mfu"] if r.get("mfu") is not None else None, ".1f"),
                 _f(r.get("peak_mem_gib"), ".1f"), _f(r.get("compile_s"), ".0f"), _f(r.get("wall_s"), ".0f"),
                 _f(r.get("final_loss"), ".4f")]
        if moe:
            cells += [_f(r.get("expert_imbalance"), ".2f"), _f(r.get("dropped_frac"), ".3f")]
        lines.append("| " + " | ".join(cells + [f"`{r['options']}`"]) + " |")
    profiled = [r for r in rows if r.get("profile")]
    if profiled:
        lines += ["", "Where rank 0's step time went, mean of the profiled steps (% of the step; `comm hidden` is "
                  "communication overlapped with compute, inside the compute parts; idle: no kernel running):", "",
                  "| row | step ms | matmul | attention | fused | other | comm exposed | comm hidden | idle | "
                  "kernels/step | top kernel |", "|" + "---|" * 11]
        for r in profiled:
            mean = r["profile"]["mean"]
            top = r["profile"]["top"][0] if r["profile"]["top"] else {"name": "-", "ms": 0}
            cells = [r["row"], f"{mean['time_ms']:.1f}",
                     *(f"{100 * mean['fraction'][p]:.1f}" for p in PROFILE_PARTS), f"{mean['kernels']:.0f}",
                     f"`{top['name'][:60]}` {top['ms']:.1f} ms"]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True)
    p.add_argument("--dp-shard", default="1")
    p.add_argument("--tp", default="1")
    p.add_argument("--ep", default="1")
    p.add_argument("--steps", default="8")
    p.add_argument("--device", default="cuda")
    p.add_argument("--extra", default="", help="more `irlens train` options for every row, e.g. '--n-layers 4'")
    p.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated NAME or NAME@BATCH, NAME from: {', '.join(ROWS)}")
    p.add_argument("--profile", action="store_true", help="profile each row's last 2 steps: the breakdown table")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per row")
    p.add_argument("--budget-s", type=float, default=None,
                   help="start no row after this many seconds, and end each by then; the rest say they did not run")
    p.add_argument("--out", required=True, help="writes OUT.md, OUT.json and the logs (and traces) in OUT-logs/")
    a = p.parse_args()
    specs = a.rows.split(",")
    unknown = [s for s in specs if s.partition("@")[0] not in ROWS or not (s.partition("@")[2] or "1").isdigit()]
    if unknown:
        p.error(f"unknown rows {unknown}; known: {', '.join(ROWS)}, each optionally @BATCH")
    base = ["--device", a.device, "--model", a.model, "--dp-shard", a.dp_shard, "--tp", a.tp, "--ep", a.ep,
            "--steps", a.steps, *shlex.split(a.extra)]
    out = Path(a.out)
    logs = out.parent / f"{out.name}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["irlens", "train", *base])
    rows = []
    deadline = None if a.budget_s is None else time.time() + a.budget_s
    for spec in specs:
        print(f"[{len(rows) + 1}/{len(specs)}] {spec} ...", file=sys.stderr, flush=True)
        left = a.timeout if deadline is None else min(a.timeout, deadline - time.time())
        if deadline is not None and left < 30:  # too little to start a run of several ranks
            rows.append({"row": spec, "options": shlex.join(row_options(spec)), "status": "not run",
                         "reason": f"the table's time budget of {a.budget_s:.0f} s ran out"})
        else:
            rows.append(run_row(spec, base, left, logs, a.profile))
        r = rows[-1]
        print(f"    {r['status']}: " + (f"{r['tokens_per_s']:.0f} tokens/s, compile {r['compile_s']:.0f} s, "
                                        f"wall {r['wall_s']:.0f} s" if r["status"] == "ok" else r["reason"]),
              file=sys.stderr, flush=True)
        out.with_suffix(".json").write_text(json.dumps({"command": command, "rows": rows}, indent=1))
        out.with_suffix(".md").write_text(table(rows, command))
    return 0 if all(r["status"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
