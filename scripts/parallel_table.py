"""The parallel path's results table: one `irlens train` run per row, eager vs compiled, the pass
combinations and the meshes, summarized in Markdown (and JSON) as each row finishes.

    python scripts/parallel_table.py --table llama3-1b-2gpu --profile --out /tmp/r/parallel-llama3-1b-2gpu
    python scripts/parallel_table.py --model llama3:1B --steps 8 --profile \\
        --rows dp2/eager,tp2/autobucketing_full_inductor_cudagraph,tp2/async_tp_full_inductor_cudagraph --out ...

A row is `[MESH/]NAME[+MODIFIER...][@B]`: NAME a pass combination (ROWS below); MESH the degrees
it runs at, `dp2`, `tp4`, `dp2tp2`, `dp2tp2ep2` (else the table's --dp-shard/--tp/--ep); a
MODIFIER changes one setting (MODIFIERS: `no_sp`, `bf16_reduce`, `layersN`); `@B` sets
`--batch-size B` (sequences per data-parallel rank). `--table NAME` takes a preset (TABLES: the
model, the rows in order of importance, steps and time limits), made to finish within 9 minutes
on its GPUs. Each row runs in its own process (`python -m irlens train ...`, which spawns its
ranks) with a time limit, so a crash or hang costs that row only; its full log is kept beside
the output. A row whose pass cannot run on the machine (async TP without symmetric memory) is
"not run" with `irlens train`'s reason. With `--profile`, every row profiles its last 2 steps
(traces in the logs folder) and a second table says where the step time went
(irlens.parallel.profile); tokens/s and MFU then come from the steps after the 2 warm-up steps
that were not profiled.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

COMPILED = ["--mode", "compiled"]
DECOMPOSED = [*COMPILED, "--joint-passes", "inductor_decomposition"]
FULL_INDUCTOR = [*DECOMPOSED, "--passes", "autobucketing_reordering", "full_inductor_compilation"]
ASYNC_TP = [*DECOMPOSED, "--passes", "async_tensor_parallel", "autobucketing_reordering", "full_inductor_compilation"]
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
    # tensor parallelism with sequence parallelism (the default): the TP collectives micro-pipelined
    "async_tp_full_inductor": ASYNC_TP,
    "async_tp_full_inductor_cudagraph": [*ASYNC_TP, "cudagraph"],
    "flex_eager": ["--flex"],
    "flex_block_bucketing_regional": FLEX_REGIONAL,
    "flex_block_bucketing_regional_cudagraph": [*FLEX_REGIONAL, "cudagraph"],
}
MODIFIERS: dict[str, list[str]] = {
    "no_sp": ["--no-sequence-parallel"],  # tensor parallelism with all-reduces, norms on the whole sequence
    "bf16_reduce": ["--reduce-dtype", "bfloat16"],  # gradients reduce-scattered in bf16 (default float32)
}
LAYERS = re.compile(r"layers(\d+)")  # `layersN`: --n-layers N
MESH = re.compile(r"(?:dp(\d+))?(?:tp(\d+))?(?:ep(\d+))?")
PROFILE_PARTS = ("matmul", "attention", "fused", "other", "comm_exposed", "comm_overlapped", "idle")
SHORT_KINDS = {"all_gather": "AG", "reduce_scatter": "RS", "all_reduce": "AR", "all_to_all": "A2A", "other": "other"}


@dataclass(frozen=True)
class Table:
    """A preset: the model and its rows (in order of importance), sized to one 9-minute command."""

    gpus: int
    model: str
    rows: tuple[str, ...]
    steps: int = 8
    extra: str = ""
    timeout: float = 170.0  # per row
    budget_s: float = 480.0  # no row starts after this; 9 minutes less start-up and copying


BEST = "autobucketing_full_inductor_cudagraph"
ASYNC = "async_tp_full_inductor_cudagraph"
TABLES: dict[str, Table] = {
    # what 2 GPUs can say now: DP2, TP2 with and without SP, async TP on TP2; the f32 reduce's cost
    "llama3-1b-2gpu": Table(2, "llama3:1B", (
        "dp2/eager", f"dp2/{BEST}", "tp2/eager", f"tp2/{BEST}", f"tp2/{ASYNC}", f"tp2/{BEST}+no_sp",
        "tp2/eager+no_sp", "dp2/eager+bf16_reduce", f"dp2/{BEST}+bf16_reduce")),
    # issue 27 item 3: DP4, DP2 x TP2, TP4
    "llama3-1b-4gpu": Table(4, "llama3:1B", (
        f"dp2tp2/{BEST}", f"dp2tp2/{ASYNC}", "dp2tp2/eager", f"tp4/{BEST}", f"tp4/{ASYNC}", "tp4/eager",
        "dp4/eager", f"dp4/{BEST}", f"dp2tp2/{BEST}+no_sp", "dp2tp2/eager+bf16_reduce")),
    # Llama 3 8B's shapes, all 32 layers (about 60 GB a GPU estimated at DP2 x TP2 with SP); 16 if not
    "llama3-8b-4gpu": Table(4, "llama3:8B", (
        "dp2tp2/eager", f"dp2tp2/{BEST}", f"dp2tp2/{ASYNC}", f"dp2tp2/{BEST}+layers16"), steps=6, timeout=200),
    # expert parallelism: the all-to-all's share of the step (the profile's per-collective column)
    "deepseek-2b-4gpu": Table(4, "deepseek_v3:2B", (
        "dp4ep4/eager", f"dp4ep4/{BEST}", "dp2tp2ep2/eager", f"dp2tp2ep2/{BEST}", f"dp2tp2ep2/{ASYNC}")),
    # issue 27 item 4: DP2 x TP4 of the 8B-shaped model
    "llama3-8b-8gpu": Table(8, "llama3:8B", (
        "dp2tp4/eager", f"dp2tp4/{BEST}", f"dp2tp4/{ASYNC}", f"dp2tp4/{BEST}+no_sp"), steps=6, timeout=200),
}


def parse_row(spec: str) -> tuple[dict[str, str], str, list[str], str]:
    """`[MESH/]NAME[+MOD...][@B]` -> (mesh degrees given, NAME, modifiers, batch); ValueError if malformed."""
    rest, _, batch = spec.partition("@")
    mesh_text, _, rest = rest.rpartition("/")
    name, *mods = rest.split("+")
    m = MESH.fullmatch(mesh_text)
    if not m or (mesh_text and not any(m.groups())):
        raise ValueError(f"row {spec!r}: mesh {mesh_text!r} is not like dp2, tp2, dp2tp2 or dp2tp2ep2")
    if name not in ROWS:
        raise ValueError(f"row {spec!r}: unknown NAME {name!r}; known: {', '.join(ROWS)}")
    bad = [x for x in mods if x not in MODIFIERS and not LAYERS.fullmatch(x)]
    if bad:
        raise ValueError(f"row {spec!r}: unknown modifier {bad[0]!r}; known: {', '.join(MODIFIERS)}, layersN")
    if batch and not batch.isdigit():
        raise ValueError(f"row {spec!r}: @{batch} is not a batch size")
    mesh = {k: v for k, v in zip(("--dp-shard", "--tp", "--ep"), m.groups()) if v}
    return mesh, name, mods, batch


def row_options(spec: str) -> list[str]:
    """A row's `irlens train` options (after the table's: the last of an option wins)."""
    mesh, name, mods, batch = parse_row(spec)
    options = [x for kv in mesh.items() for x in kv] + ROWS[name]
    for mod in mods:
        layers = LAYERS.fullmatch(mod)
        options += ["--n-layers", layers.group(1)] if layers else MODIFIERS[mod]
    return options + (["--batch-size", batch] if batch else [])


def run_row(spec: str, base: list[str], timeout: float, logs: Path, profile: bool) -> dict:
    options = row_options(spec)
    argv = [sys.executable, "-m", "irlens", "train", *base, *options]
    # file names of plain characters: they travel back from the device
    stem = spec.replace("@", "-b").replace("/", "-").replace("+", "-")
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
    if summary is not None and summary.get("status") == "not run":  # a pass this machine cannot run
        return {**row, "status": "not run", "reason": summary["reason"], "config": summary["config"]}
    if code == 0 and summary is not None:
        return {**row, **summary, "status": "ok"}
    why = f"timed out after {timeout:.0f} s" if code is None else f"exit {code}"
    last = next((line for line in reversed(err.splitlines()) if line.strip()), "")
    return {**row, "status": "failed", "reason": f"{why}: {last[:200]}"}


def _f(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _config(r: dict) -> dict:
    return r.get("config") or {}


def _mesh(r: dict) -> str:
    c = _config(r)
    if not c:
        return "-"
    mesh = " x ".join(f"{label}{c[k]}" for k, label in (("dp_shard", "DP"), ("tp", "TP"), ("ep", "EP"))
                      if c.get(k, 1) > 1) or "1 GPU"
    return mesh + (" (no SP)" if c.get("tp", 1) > 1 and not c.get("sequence_parallel", True) else "")


def _comm_kinds(mean: dict) -> str:
    """Each collective's exposed share of the step and, in brackets, its share running."""
    kinds = mean.get("comm_kinds") or {}
    return "; ".join(f"{SHORT_KINDS.get(k, k)} {100 * exposed / mean['time_ms']:.1f} ({100 * runs / mean['time_ms']:.1f})"
                     for k, (runs, exposed) in kinds.items()) or "-"


def table(rows: list[dict], command: str) -> str:
    # × eager: against the eager row of the same mesh, batch and settings
    def key(r):
        c = _config(r)
        return _mesh(r), c.get("batch_size"), c.get("reduce_dtype"), c.get("n_layers")

    eager = {key(r): r["tokens_per_s"] for r in rows if r["status"] == "ok" and parse_row(r["row"])[1] == "eager"}
    moe = any("expert_imbalance" in r for r in rows)
    head = ["row", "mesh", "status", "batch", "tokens/s", "× eager", "MFU %", "peak GiB", "compile s", "wall s",
            "final loss"]
    head += ["expert imbalance", "dropped"] if moe else []
    lines = [f"`{command}`, then per row its options:", "",
             "| " + " | ".join(head + ["options"]) + " |", "|" + "---|" * (len(head) + 1)]
    for r in rows:
        ok = r["status"] == "ok"
        ref = eager.get(key(r)) if ok else None
        cells = [r["row"], _mesh(r), r["status"] if ok else f"{r['status']}: {r['reason']}",
                 _f(_config(r).get("batch_size"), "d"),
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
                  "communication overlapped with compute, inside the compute parts; idle: no kernel running; "
                  "by collective: exposed % (running %), AG all-gather, RS reduce-scatter, AR all-reduce, "
                  "A2A all-to-all):", "",
                  "| row | step ms | matmul | attention | fused | other | comm exposed | comm hidden | idle | "
                  "by collective | kernels/step | top kernels (ms/step) |", "|" + "---|" * 12]
        for r in profiled:
            mean = r["profile"]["mean"]
            top = "; ".join(f"`{k['name'][:50]}` {k['ms']:.1f}" for k in r["profile"]["top"][:3]) or "-"
            cells = [r["row"], f"{mean['time_ms']:.1f}",
                     *(f"{100 * mean['fraction'][p]:.1f}" for p in PROFILE_PARTS), _comm_kinds(mean),
                     f"{mean['kernels']:.0f}", top]
            lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--table", choices=tuple(TABLES), help="a preset: model, rows, steps and time limits")
    p.add_argument("--model")
    p.add_argument("--dp-shard", default="1")
    p.add_argument("--tp", default="1")
    p.add_argument("--ep", default="1")
    p.add_argument("--steps")
    p.add_argument("--device", default="cuda")
    p.add_argument("--extra", default=None, help="more `irlens train` options for every row, e.g. '--n-layers 4'")
    p.add_argument("--rows", help=f"comma-separated [MESH/]NAME[+MODIFIER...][@BATCH], NAME from: {', '.join(ROWS)}")
    p.add_argument("--profile", action="store_true", help="profile each row's last 2 steps: the breakdown table")
    p.add_argument("--timeout", type=float, help="seconds per row (default 300, or the preset's)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="start no row after this many seconds, and end each by then; the rest say they did not run")
    p.add_argument("--out", required=True, help="writes OUT.md, OUT.json and the logs (and traces) in OUT-logs/")
    a = p.parse_args()
    preset = TABLES.get(a.table)
    model = a.model or (preset.model if preset else None)
    if model is None:
        p.error("give --model or --table")
    specs = a.rows.split(",") if a.rows else list(preset.rows if preset else ROWS)
    try:
        for spec in specs:
            parse_row(spec)
    except ValueError as e:
        p.error(str(e))
    steps = a.steps or str(preset.steps if preset else 8)
    extra = a.extra if a.extra is not None else (preset.extra if preset else "")
    timeout = a.timeout or (preset.timeout if preset else 300.0)
    budget = a.budget_s if a.budget_s is not None else (preset.budget_s if preset else None)
    base = ["--device", a.device, "--model", model, "--dp-shard", a.dp_shard, "--tp", a.tp, "--ep", a.ep,
            "--steps", steps, *shlex.split(extra)]
    out = Path(a.out)
    logs = out.parent / f"{out.name}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["irlens", "train", *base])
    rows = []
    deadline = None if budget is None else time.time() + budget
    for spec in specs:
        print(f"[{len(rows) + 1}/{len(specs)}] {spec} ...", file=sys.stderr, flush=True)
        left = timeout if deadline is None else min(timeout, deadline - time.time())
        if deadline is not None and left < 30:  # too little to start a run of several ranks
            rows.append({"row": spec, "options": shlex.join(row_options(spec)), "status": "not run",
                         "reason": f"the table's time budget of {budget:.0f} s ran out"})
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
