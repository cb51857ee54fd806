"""The parallel path's results table: one `irlens train` run per row, eager vs compiled, the pass
combinations and the meshes, summarized in Markdown (and JSON) as each row finishes.

    python scripts/parallel_table.py --table llama3-1b-2gpu --profile --out parallel-llama3-1b-2gpu
    python scripts/parallel_table.py --model llama3:1B --steps 8 --profile \\
        --rows dp2/eager,tp2/autobucketing_full_inductor_cudagraph,tp2/async_tp_full_inductor_cudagraph --out ...

A row is `[MESH/]NAME[+MODIFIER...][@B]`: NAME a pass combination (ROWS below); MESH the degrees
it runs at, `dp2`, `tp4`, `dp2tp2`, `dp2tp2ep2` (else the table's --dp-shard/--tp/--ep); a
MODIFIER changes one setting (MODIFIERS: `no_sp`, `bf16_reduce`, `layersN`); `@B` sets the batch
size B (sequences per data-parallel rank). `--table NAME` takes a preset (TABLES: the model, the
rows in order of importance, steps and time limits), made to finish within 9 minutes on its
GPUs. Each row is a TrainConfig (irlens.parallel.config: the table's settings, then the row's),
run in its own worker process (a pool of one, irlens.runtime.pool: it gets the config's JSON, and spawns the ranks)
with a time limit, so a crash or hang costs that row only; its full log is kept beside the
output. A row whose pass cannot run on the machine (async TP without symmetric memory) is "not
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
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from irlens.runtime.isolation import CallFailed
from irlens.runtime.pool import WorkerPool
from irlens.parallel.config import CompileConfig, ModelConfig, ParallelismConfig, TrainConfig, TrainingConfig


@dataclass(frozen=True)
class Way:
    """How a row's step runs: eager or compiled with its passes, with FlexAttention or not."""

    compile: CompileConfig = field(default_factory=CompileConfig)
    flex: bool = False

    def apply(self, tc: TrainConfig) -> TrainConfig:
        return replace(tc, compile=self.compile, model=replace(tc.model, flex=self.flex))


def compiled(*passes: str, joint: tuple[str, ...] = ()) -> CompileConfig:
    return CompileConfig("compiled", list(joint), list(passes))


DECOMPOSED = ("inductor_decomposition",)
FULL_INDUCTOR = ("autobucketing_reordering", "full_inductor_compilation")
ASYNC_TP = ("async_tensor_parallel", *FULL_INDUCTOR)
FLEX_REGIONAL = ("transformer_block_bucketing", "regional_inductor")
ROWS: dict[str, Way] = {
    "eager": Way(),
    "compiled": Way(compiled()),
    "autobucketing": Way(compiled("autobucketing_reordering")),
    "sac_reshard_block_bucketing": Way(compiled("transformer_block_bucketing", joint=(
        "selective_activation_checkpoint", "fsdp_reshard_after_forward"))),
    # one GPU: no collective to bucket
    "full_inductor": Way(compiled("full_inductor_compilation", joint=DECOMPOSED)),
    "full_inductor_cudagraph": Way(compiled("full_inductor_compilation", "cudagraph", joint=DECOMPOSED)),
    "sac_full_inductor_cudagraph": Way(compiled("full_inductor_compilation", "cudagraph",
                                                joint=(*DECOMPOSED, "selective_activation_checkpoint"))),
    "autobucketing_full_inductor": Way(compiled(*FULL_INDUCTOR, joint=DECOMPOSED)),
    "autobucketing_full_inductor_cudagraph": Way(compiled(*FULL_INDUCTOR, "cudagraph", joint=DECOMPOSED)),
    # tensor parallelism with sequence parallelism (the default): the TP collectives micro-pipelined
    "async_tp_full_inductor": Way(compiled(*ASYNC_TP, joint=DECOMPOSED)),
    "async_tp_full_inductor_cudagraph": Way(compiled(*ASYNC_TP, "cudagraph", joint=DECOMPOSED)),
    "flex_eager": Way(flex=True),
    "flex_block_bucketing_regional": Way(compiled(*FLEX_REGIONAL), flex=True),
    "flex_block_bucketing_regional_cudagraph": Way(compiled(*FLEX_REGIONAL, "cudagraph"), flex=True),
}
MODIFIERS: dict[str, Callable[[TrainConfig], TrainConfig]] = {
    # tensor parallelism with all-reduces, norms on the whole sequence
    "no_sp": lambda tc: replace(tc, parallelism=replace(tc.parallelism, sequence_parallel=False)),
    # gradients reduce-scattered in bf16 (default float32)
    "bf16_reduce": lambda tc: replace(tc, training=replace(tc.training, reduce_dtype="bfloat16")),
}
LAYERS = re.compile(r"layers(\d+)")  # `layersN`: the model's first N layers
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
    timeout: float = 170.0  # per row
    budget_s: float = 480.0  # no row starts after this; 9 minutes less start-up and copying


BEST = "autobucketing_full_inductor_cudagraph"
ASYNC = "async_tp_full_inductor_cudagraph"
TABLES: dict[str, Table] = {
    # what 2 GPUs can say now: DP2, TP2 with and without SP, async TP on TP2; the f32 reduce's cost
    "llama3-1b-2gpu": Table(2, "llama3:1B", (
        "dp2/eager", f"dp2/{BEST}", "tp2/eager", f"tp2/{BEST}", f"tp2/{ASYNC}", f"tp2/{BEST}+no_sp",
        "tp2/eager+no_sp", "dp2/eager+bf16_reduce", f"dp2/{BEST}+bf16_reduce")),
    # DP4, DP2 x TP2, TP4
    "llama3-1b-4gpu": Table(4, "llama3:1B", (
        f"dp2tp2/{BEST}", f"dp2tp2/{ASYNC}", "dp2tp2/eager", f"tp4/{BEST}", f"tp4/{ASYNC}", "tp4/eager",
        "dp4/eager", f"dp4/{BEST}", f"dp2tp2/{BEST}+no_sp", "dp2tp2/eager+bf16_reduce")),
    # Llama 3 8B's shapes, all 32 layers (about 60 GB a GPU estimated at DP2 x TP2 with SP); 16 if not
    "llama3-8b-4gpu": Table(4, "llama3:8B", (
        "dp2tp2/eager", f"dp2tp2/{BEST}", f"dp2tp2/{ASYNC}", f"dp2tp2/{BEST}+layers16"), steps=6, timeout=200),
    # expert parallelism: the all-to-all's share of the step (the profile's per-collective column)
    "deepseek-2b-4gpu": Table(4, "deepseek_v3:2B", (
        "dp4ep4/eager", f"dp4ep4/{BEST}", "dp2tp2ep2/eager", f"dp2tp2ep2/{BEST}", f"dp2tp2ep2/{ASYNC}")),
    # DP2 x TP4 of the 8B-shaped model
    "llama3-8b-8gpu": Table(8, "llama3:8B", (
        "dp2tp4/eager", f"dp2tp4/{BEST}", f"dp2tp4/{ASYNC}", f"dp2tp4/{BEST}+no_sp"), steps=6, timeout=200),
}


def parse_row(spec: str) -> tuple[dict[str, int], str, list[str], str]:
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
    mesh = {k: int(v) for k, v in zip(("dp_shard", "tp", "ep"), m.groups()) if v}
    return mesh, name, mods, batch


def row_config(spec: str, base: TrainConfig) -> TrainConfig:
    """The TrainConfig of a row: the table's `base`, then the row's mesh, way, modifiers and batch."""
    mesh, name, mods, batch = parse_row(spec)
    tc = ROWS[name].apply(replace(base, parallelism=replace(base.parallelism, **mesh)))
    for mod in mods:
        layers = LAYERS.fullmatch(mod)
        tc = replace(tc, model=replace(tc.model, n_layers=int(layers.group(1)))) if layers else MODIFIERS[mod](tc)
    return replace(tc, training=replace(tc.training, batch_size=int(batch))) if batch else tc


def passes_text(tc: TrainConfig) -> str:
    """What a row's table cell says of how it ran: `eager`, or its joint and graph passes."""
    c = tc.compile
    if c.mode == "eager":
        return "eager" + (", flex" if tc.model.flex else "")
    return "; ".join(filter(None, ("flex" if tc.model.flex else "", "joint: " + ", ".join(c.joint_passes) if c.joint_passes
                                   else "", "passes: " + ", ".join(c.passes) if c.passes else ""))) or "compiled"


def run_row(spec: str, base: TrainConfig, timeout: float, logs: Path, profile: bool) -> dict:
    tc = row_config(spec, base)
    # file names of plain characters: they travel back from the device
    stem = spec.replace("@", "-b").replace("/", "-").replace("+", "-")
    if profile:
        tc = replace(tc, profiling=replace(tc.profiling, folder=str(logs / stem)))
    log = logs / f"{stem}.log"
    log.write_text(f"{json.dumps(tc.to_json())}\n")
    t0 = time.time()
    row = {"row": spec, "options": passes_text(tc)}
    # a worker of its own, in its own process group: on a timeout the spawned ranks go too, and free their GPUs
    try:
        with WorkerPool(1, ("irlens.parallel.train.loop",), log=log) as worker:
            summary = worker.call("irlens.parallel.train.loop:training_in_worker", {"config": tc.to_json()}, timeout)
    except CallFailed as e:
        first = next((line for line in e.reason.splitlines() if line.strip()), "")
        return {**row, "wall_s": time.time() - t0, "status": "failed", "reason": first[:200], "config": tc.to_json()}
    if summary["status"] == "not run":  # a pass this machine cannot run
        return {**row, "wall_s": time.time() - t0, "status": "not run", "reason": summary["reason"],
                "config": summary["config"]}
    return {**row, "wall_s": time.time() - t0, **summary}


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


def table(rows: list[dict], command: str) -> str:
    # × eager: against the eager row of the same mesh, batch and settings
    def key(r):
        t = _training(r)
        return _mesh(r), t.get("batch_size"), t.get("reduce_dtype"), (_config(r).get("model") or {}).get("n_layers")

    eager = {key(r): r["tokens_per_s"] for r in rows if r["status"] == "ok" and parse_row(r["row"])[1] == "eager"}
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
    steps = a.steps or (preset.steps if preset else 8)
    timeout = a.timeout or (preset.timeout if preset else 300.0)
    budget = a.budget_s if a.budget_s is not None else (preset.budget_s if preset else None)
    base = TrainConfig(ModelConfig(model, n_layers=a.n_layers), ParallelismConfig(a.dp_shard, a.tp, a.ep),
                       TrainingConfig(steps=steps, device=a.device))
    out = Path(a.out)
    logs = out.parent / f"{out.name}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    command = shlex.join(["python", "scripts/parallel_table.py", *sys.argv[1:]])
    rows = []
    deadline = None if budget is None else time.time() + budget
    for spec in specs:
        print(f"[{len(rows) + 1}/{len(specs)}] {spec} ...", file=sys.stderr, flush=True)
        left = timeout if deadline is None else min(timeout, deadline - time.time())
        if deadline is not None and left < 30:  # too little to start a run of several ranks
            rows.append({"row": spec, "options": passes_text(row_config(spec, base)), "status": "not run",
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
