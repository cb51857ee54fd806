"""The parallel path's results table: one `irlens train` run per row, eager vs compiled, the pass
combinations and the meshes, summarized in Markdown (and JSON) as each row finishes.

    python scripts/parallel_table.py --table llama3-1b-2gpu --profile --out parallel-llama3-1b-2gpu
    python scripts/parallel_table.py --model llama3:1B --steps 8 --profile \\
        --rows dp2/eager,tp2/autobucketing_full_inductor_cudagraph,tp2/async_tp_full_inductor_cudagraph --out ...

A row is a typed value (irlens.parallel.table_rows.Row): its way, a pass combination (WAYS); the
mesh degrees it runs at (else the table's --dp-shard/--tp/--ep); the settings it changes
(sequence parallelism off, bf16 gradient reduction, the model's first N layers); its batch size
(sequences per data-parallel rank). Its name, `[MESH/]WAY[+MODIFIER...][@B]` as in
`dp2tp2/async_tp_full_inductor+no_sp+layers16@4`, labels it in the tables, and --rows takes
rows by name (parse_row, once, naming the part it cannot read). `--table NAME` takes a preset
(TABLES: the model, the rows in order of importance, steps and time limits), made to finish
within 9 minutes on its GPUs. Each row is a TrainConfig (irlens.parallel.config: the table's
settings, then the row's), run in its own worker process (a pool of one, irlens.runtime.pool:
it gets the config's JSON, and spawns the ranks) with a time limit, so a crash or hang costs that
row only; its full log is kept beside the output. A row whose pass cannot run on the machine (async TP without symmetric memory) is "not
run" with `irlens train`'s reason. With `--profile`, every row profiles its last 2 steps
(traces in the logs folder) and a second table says where the step time went
(irlens.parallel.train.profile); tokens/s and MFU then come from the steps after the 2 warm-up steps
that were not profiled.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from irlens.runtime.isolation import CallFailed
from irlens.runtime.pool import WorkerPool
from irlens.parallel.config import CompileConfig, ModelConfig, ParallelismConfig, TrainConfig, TrainingConfig
from irlens.parallel.table_rows import (ASYNC_TP_FULL_INDUCTOR_CUDAGRAPH, AUTOBUCKETING_FULL_INDUCTOR_CUDAGRAPH, EAGER,
                                        LAYERS_WORD, MODIFIERS, WAYS, Mesh, Row)


PROFILE_PARTS = ("matmul", "attention", "fused", "other", "comm_exposed", "comm_overlapped", "idle")
SHORT_KINDS = {"all_gather": "AG", "reduce_scatter": "RS", "all_reduce": "AR", "all_to_all": "A2A", "other": "other"}


@dataclass(frozen=True)
class Table:
    """A preset: the model and its rows (in order of importance), sized to one 9-minute command."""

    gpus: int
    model: str
    rows: tuple[Row, ...]
    steps: int = 8
    timeout: float = 170.0  # per row
    budget_s: float = 480.0  # no row starts after this; 9 minutes less start-up and copying


BEST, ASYNC = AUTOBUCKETING_FULL_INDUCTOR_CUDAGRAPH, ASYNC_TP_FULL_INDUCTOR_CUDAGRAPH
DP2, TP2, DP4, TP4 = Mesh(dp_shard=2), Mesh(tp=2), Mesh(dp_shard=4), Mesh(tp=4)
DP2TP2, DP2TP4 = Mesh(dp_shard=2, tp=2), Mesh(dp_shard=2, tp=4)
DP4EP4, DP2TP2EP2 = Mesh(dp_shard=4, ep=4), Mesh(dp_shard=2, tp=2, ep=2)
NO_SP, BF16_REDUCE = dict(sequence_parallel=False), dict(bf16_reduce=True)
TABLES: dict[str, Table] = {
    # what 2 GPUs can say now: DP2, TP2 with and without SP, async TP on TP2; the f32 reduce's cost
    "llama3-1b-2gpu": Table(2, "llama3:1B", (
        Row(EAGER, DP2), Row(BEST, DP2), Row(EAGER, TP2), Row(BEST, TP2), Row(ASYNC, TP2), Row(BEST, TP2, **NO_SP),
        Row(EAGER, TP2, **NO_SP), Row(EAGER, DP2, **BF16_REDUCE), Row(BEST, DP2, **BF16_REDUCE))),
    # DP4, DP2 x TP2, TP4
    "llama3-1b-4gpu": Table(4, "llama3:1B", (
        Row(BEST, DP2TP2), Row(ASYNC, DP2TP2), Row(EAGER, DP2TP2), Row(BEST, TP4), Row(ASYNC, TP4), Row(EAGER, TP4),
        Row(EAGER, DP4), Row(BEST, DP4), Row(BEST, DP2TP2, **NO_SP), Row(EAGER, DP2TP2, **BF16_REDUCE))),
    # Llama 3 8B's shapes, all 32 layers (about 60 GB a GPU estimated at DP2 x TP2 with SP); 16 if not
    "llama3-8b-4gpu": Table(4, "llama3:8B", (
        Row(EAGER, DP2TP2), Row(BEST, DP2TP2), Row(ASYNC, DP2TP2), Row(BEST, DP2TP2, n_layers=16)),
        steps=6, timeout=200),
    # expert parallelism: the all-to-all's share of the step (the profile's per-collective column)
    "deepseek-2b-4gpu": Table(4, "deepseek_v3:2B", (
        Row(EAGER, DP4EP4), Row(BEST, DP4EP4), Row(EAGER, DP2TP2EP2), Row(BEST, DP2TP2EP2), Row(ASYNC, DP2TP2EP2))),
    # DP2 x TP4 of the 8B-shaped model
    "llama3-8b-8gpu": Table(8, "llama3:8B", (
        Row(EAGER, DP2TP4), Row(BEST, DP2TP4), Row(ASYNC, DP2TP4), Row(BEST, DP2TP4, **NO_SP)), steps=6, timeout=200),
}
MESH = re.compile(r"(?:dp(\d+))?(?:tp(\d+))?(?:ep(\d+))?")
LAYERS = re.compile(LAYERS_WORD + r"(\d+)")


def parse_row(text: str) -> Row:
    """A row's name (`[MESH/]WAY[+MODIFIER...][@BATCH]`, modifiers in any order) -> the Row; a
    ValueError names the part that is wrong."""
    rest, at, batch = text.partition("@")
    mesh_text, _, rest = rest.rpartition("/")
    way, *mods = rest.split("+")
    m = MESH.fullmatch(mesh_text)
    if not m or (mesh_text and not any(m.groups())):
        raise ValueError(f"row {text!r}: mesh {mesh_text!r} is not like dp2, tp2, dp2tp2 or dp2tp2ep2")
    if way not in WAYS:
        raise ValueError(f"row {text!r}: unknown way {way!r}; known: {', '.join(WAYS)}")
    settings: dict[str, object] = {}
    for mod in mods:
        layers = LAYERS.fullmatch(mod)
        if mod not in MODIFIERS and not layers:
            raise ValueError(f"row {text!r}: unknown modifier {mod!r}; known: {', '.join(MODIFIERS)}, {LAYERS_WORD}N")
        sets = {"n_layers": int(layers.group(1))} if layers else MODIFIERS[mod]
        if settings.keys() & sets.keys():
            raise ValueError(f"row {text!r}: modifier {mod!r} sets what another one does")
        settings.update(sets)
    if at and not batch.isdigit():
        raise ValueError(f"row {text!r}: @{batch} is not a batch size")
    try:
        return Row(WAYS[way], Mesh(*(int(d) if d else None for d in m.groups())), **settings,
                   batch=int(batch) if batch else None)
    except ValueError as e:  # a degree, layer count or batch of 0
        raise ValueError(f"row {text!r}: {e}") from None


def row_config(row: Row, base: TrainConfig) -> TrainConfig:
    """The TrainConfig of a row: the table's `base`, then the row's mesh, way, modifiers and batch."""
    way, p, t, m = row.way, base.parallelism, base.training, base.model
    return replace(
        base, compile=CompileConfig(way.mode, list(way.joint), list(way.passes)),
        model=replace(m, flex=way.flex, n_layers=row.n_layers or m.n_layers),
        parallelism=replace(p, **row.mesh.degrees(), sequence_parallel=p.sequence_parallel and row.sequence_parallel),
        training=replace(t, batch_size=row.batch or t.batch_size,
                         reduce_dtype="bfloat16" if row.bf16_reduce else t.reduce_dtype))


def passes_text(tc: TrainConfig) -> str:
    """What a row's table cell says of how it ran: `eager`, or its joint and graph passes."""
    c = tc.compile
    if c.mode == "eager":
        return "eager" + (", flex" if tc.model.flex else "")
    return "; ".join(filter(None, ("flex" if tc.model.flex else "", "joint: " + ", ".join(c.joint_passes) if c.joint_passes
                                   else "", "passes: " + ", ".join(c.passes) if c.passes else ""))) or "compiled"


def run_row(row: Row, base: TrainConfig, timeout: float, logs: Path, profile: bool) -> dict:
    tc = row_config(row, base)
    # file names of plain characters: they travel back from the device
    stem = row.name.replace("@", "-b").replace("/", "-").replace("+", "-")
    if profile:
        tc = replace(tc, profiling=replace(tc.profiling, folder=str(logs / stem)))
    log = logs / f"{stem}.log"
    log.write_text(f"{json.dumps(tc.to_json())}\n")
    t0 = time.time()
    done = {"row": row.name, "options": passes_text(tc)}
    # a worker of its own, in its own process group: on a timeout the spawned ranks go too, and free their GPUs
    try:
        with WorkerPool(1, ("irlens.parallel.train.loop",), log=log) as worker:
            summary = worker.call("irlens.parallel.train.loop:training_in_worker", {"config": tc.to_json()}, timeout)
    except CallFailed as e:
        first = next((line for line in e.reason.splitlines() if line.strip()), "")
        return {**done, "wall_s": time.time() - t0, "status": "failed", "reason": first[:200], "config": tc.to_json()}
    if summary["status"] == "not run":  # a pass this machine cannot run
        return {**done, "wall_s": time.time() - t0, "status": "not run", "reason": summary["reason"],
                "config": summary["config"]}
    return {**done, "wall_s": time.time() - t0, **summary}


def _f(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _config(r: dict) -> dict:
    return r.get("config") or {}


def _mesh(r: dict) -> str:
    c = _config(r).get("parallelism") or {}
    if not c:
        return "-"
    mesh = " x ".join(f"{label}{c[k]}" for k, label in (("dp_shard", "DP"), ("tp", "TP"), ("ep", "EP"))
                      if c.get(k, 1) > 1) or "1 GPU"
    return mesh + (" (no SP)" if c.get("tp", 1) > 1 and not c.get("sequence_parallel", True) else "")


def _training(r: dict) -> dict:
    return _config(r).get("training") or {}


def _comm_kinds(mean: dict) -> str:
    """Each collective's exposed share of the step and, in brackets, its share running."""
    kinds = mean.get("comm_kinds") or {}
    return "; ".join(f"{SHORT_KINDS.get(k, k)} {100 * exposed / mean['time_ms']:.1f} ({100 * runs / mean['time_ms']:.1f})"
                     for k, (runs, exposed) in kinds.items()) or "-"


def table(done: list[tuple[Row, dict]], command: str) -> str:
    """The Markdown of the rows run so far: each Row with what its run gave."""
    # × eager: against the eager row of the same mesh, batch and settings
    def key(r):
        t = _training(r)
        return _mesh(r), t.get("batch_size"), t.get("reduce_dtype"), (_config(r).get("model") or {}).get("n_layers")

    eager = {key(r): r["tokens_per_s"] for row, r in done if r["status"] == "ok" and row.way == EAGER}
    rows = [r for _, r in done]
    moe = any("expert_imbalance" in r for r in rows)
    head = ["row", "mesh", "status", "batch", "tokens/s", "× eager", "MFU %", "peak GiB", "compile s", "wall s",
            "final loss"]
    head += ["expert imbalance", "dropped"] if moe else []
    lines = [f"`{command}`, then per row how it ran:", "",
             "| " + " | ".join(head + ["passes"]) + " |", "|" + "---|" * (len(head) + 1)]
    for r in rows:
        ok = r["status"] == "ok"
        ref = eager.get(key(r)) if ok else None
        cells = [r["row"], _mesh(r), r["status"] if ok else f"{r['status']}: {r['reason']}",
                 _f(_training(r).get("batch_size"), "d"),
                 _f(r.get("tokens_per_s"), ".0f"), _f(r["tokens_per_s"] / ref if ref else None, ".2f"),
                 _f(100 * r["mfu"] if r.get("mfu") is not None else None, ".1f"),
                 _f(r.get("peak_mem_gib"), ".1f"), _f(r.get("compile_s"), ".0f"), _f(r.get("wall_s"), ".0f"),
                 _f(r.get("final_loss"), ".4f")]
        if moe:
            cells += [_f(r.get("expert_imbalance"), ".2f"), _f(r.get("dropped_frac"), ".3f")]
        lines.append("| " + " | ".join(cells + [r["options"]]) + " |")
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
    p.add_argument("--dp-shard", type=int, default=1)
    p.add_argument("--tp", type=int, default=1)
    p.add_argument("--ep", type=int, default=1)
    p.add_argument("--steps", type=int)
    p.add_argument("--device", default="cuda")
    p.add_argument("--n-layers", type=int, help="the model's first N layers, every row (default: the preset's)")
    p.add_argument("--rows", help="comma-separated [MESH/]WAY[+MODIFIER...][@BATCH] (MESH like dp2tp2ep2; MODIFIER: "
                   f"{', '.join(MODIFIERS)}, {LAYERS_WORD}N), WAY from: {', '.join(WAYS)}")
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
    if a.rows:  # the command line's rows, typed here once
        try:
            rows = [parse_row(text) for text in a.rows.split(",")]
        except ValueError as e:
            p.error(str(e))
    else:
        rows = list(preset.rows) if preset else [Row(way) for way in WAYS.values()]
    steps = a.steps or (preset.steps if preset else 8)
    timeout = a.timeout or (preset.timeout if preset else 300.0)
    budget = a.budget_s if a.budget_s is not None else (preset.budget_s if preset else None)
    base = TrainConfig(ModelConfig(model, n_layers=a.n_layers), ParallelismConfig(a.dp_shard, a.tp, a.ep),
                       TrainingConfig(steps=steps, device=a.device))
    out = Path(a.out)
    logs = out.parent / f"{out.name}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "scripts/parallel_table.py", *sys.argv[1:]])
    done: list[tuple[Row, dict]] = []
    deadline = None if budget is None else time.time() + budget
    for row in rows:
        print(f"[{len(done) + 1}/{len(rows)}] {row.name} ...", file=sys.stderr, flush=True)
        left = timeout if deadline is None else min(timeout, deadline - time.time())
        if deadline is not None and left < 30:  # too little to start a run of several ranks
            r = {"row": row.name, "options": passes_text(row_config(row, base)), "status": "not run",
                 "reason": f"the table's time budget of {budget:.0f} s ran out"}
        else:
            r = run_row(row, base, left, logs, a.profile)
        done.append((row, r))
        print(f"    {r['status']}: " + (f"{r['tokens_per_s']:.0f} tokens/s, compile {r['compile_s']:.0f} s, "
                                        f"wall {r['wall_s']:.0f} s" if r["status"] == "ok" else r["reason"]),
              file=sys.stderr, flush=True)
        out.with_suffix(".json").write_text(json.dumps({"command": command, "rows": [r for _, r in done]}, indent=1))
        out.with_suffix(".md").write_text(table(done, command))
    return 0 if all(r["status"] == "ok" for _, r in done) else 1


if __name__ == "__main__":
    raise SystemExit(main())
