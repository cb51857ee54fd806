"""Nsight Compute's DRAM bytes and flops beside irlens's model, for a sample of kernels per backend.

On the GPU machine, from the repository root, with the GPU environment active:

    python scripts/ncu_check.py --out "$OUT/ncu"        # about 8 minutes on one H100

For each cell (workload:mode:dtype, the bench preset) and backend (inductor, nvfuser, xla):
1. the cell runs once as `irlens bench` runs it (`--record`, in a process of its own), writing
   irlens's kernel records (bytes read and written, flops, launches per step) and filling the
   compilers' persistent caches (a cache folder of the check's own);
2. the same cell runs again under Nsight Compute, which compiles and autotunes nothing now (the
   caches) and profiles only the sampled kernels (`-k regex:`); each one's last launches (one
   step's) are read (irlens.bench.ncu);
3. `ncu-check.md` and `ncu-check.json` set each kernel's counters beside its model, with the
   agreement (target: within 10 %) and, above it, the likely reason.
Cells run in turn until `--budget-s` is spent; what ran is written after each one.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from irlens.bench.ncu import AGREE, BYTES, FLOAT_OPS, TENSOR_PREFIX, agreement, kernel_base, last_launches, name_filter, \
    parse_csv, write_agrees  # noqa: E402

NCU = os.environ.get("NCU", "/usr/local/cuda/bin/ncu")
CELLS = ["block:fwdbwd:bfloat16", "lm_cross_entropy:fwdbwd:bfloat16", "llama_block:fwdbwd:bfloat16"]
BACKENDS = ["inductor", "xla", "nvfuser"]
# kernel kinds found above 100 % of ceiling on a one-GPU page: sampled first
INTERESTING = re.compile(r"scatter|gather|select|embedding|index|cat|slice|sum|reduce")
MB = 1e6


def record(cell: str, backend: str, path: Path, device: str = "cuda", preset: str = "bench",
           under_ncu: bool = False) -> None:
    """Run one cell as the bench does; write its kernel records (irlens's model of each).
    `under_ncu`: Nsight Compute holds CUPTI, and nvFuser's own profiler, started beside it, ends the
    process (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED): the records then come from the run without it."""
    import torch

    from irlens.core import cost
    from irlens.backends import get_backend
    from irlens.bench.run import device_name_of
    from irlens.matrix.backend_run import run_backend
    from irlens.workloads.builtin import resolve_workload
    from irlens.reporting.records import kernel_stage
    from irlens.runtime.timing import mark_cupti_taken

    if under_ncu:
        mark_cupti_taken()
    workload, mode, dtype = cell.split(":")
    run = run_backend(get_backend(backend), resolve_workload(workload).instantiate(preset, dtype, device), mode)
    graphs = {g.stage: g for g in run.graphs}
    kernels = []
    for k in run.kernels:
        stage = kernel_stage(k, graphs)
        kernels.append({"name": k.name, "device_name": kernel_base(device_name_of(k, backend)),
                        "kind": k.kind, "bytes_read": k.bytes_read, "bytes_written": k.bytes_written,
                        "flops": cost.kernel_flops(k, graphs[stage]) if stage else None, "combines": k.combines})
    props = torch.cuda.get_device_properties(0) if device == "cuda" else None
    path.write_text(json.dumps({"cell": cell, "backend": backend, "device": props.name if props else device,
                                "l2_bytes": props.L2_cache_size if props else 0, "unmapped": run.unmapped,
                                "kernels": kernels}, indent=1))


def sample(kernels: list[dict], count: int) -> list[str]:
    """The device names to profile: kernels whose launch has a name of irlens's (fused ones; a
    library or ATen call's device kernel is cuBLAS's, cuDNN's or ATen's own: Thunder's
    `torch.nn.functional.linear`), with bytes counted, the kinds found above 100 % of ceiling
    first (scatters, gathers, reductions...), then the largest."""
    named = [k for k in kernels if k["kind"] not in ("library", "extern") and k["bytes_read"] is not None
             and not k["name"].startswith(("extern_kernels.", "torch.", "aten."))]
    ranked = sorted(named, key=lambda k: (not INTERESTING.search(k["name"]) and not k["combines"],
                                          -(k["bytes_read"] + k["bytes_written"])))
    return list(dict.fromkeys(k["device_name"] for k in ranked))[:count]


def ncu_version() -> str:
    """`ncu --version`'s last line (the release), or why there is none."""
    try:
        out = subprocess.run([NCU, "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"unknown ({type(e).__name__})"
    return out.splitlines()[-1] if out else "unknown"


def metrics_to_ask() -> list[str]:
    """The counters to collect that this GPU's Nsight Compute offers (asking for one it lacks
    fails the whole run): the DRAM bytes and time, the float instruction counts, and the
    tensor-core operation counters; the DRAM bytes and time alone where it cannot say."""
    try:
        out = subprocess.run([NCU, "--query-metrics", "--devices", "0"], capture_output=True, text=True, timeout=120)
        offered = set(re.findall(r"^([a-z0-9_]+__\w+)", out.stdout, re.M))
    except (OSError, subprocess.TimeoutExpired):
        offered = set()
    if not offered:
        return list(BYTES)
    wanted = [m for m in (*BYTES, *FLOAT_OPS) if m.removesuffix(".sum") in offered]
    return wanted + sorted(m + ".sum" for m in offered if m.startswith(TENSOR_PREFIX))


def profile(cell: str, backend: str, names: list[str], metrics: list[str], out: Path, timeout: float) -> tuple[str, int]:
    """The cell run again under Nsight Compute, profiling `names` only: its CSV text, and its status."""
    cmd = [NCU, "--csv", "--print-units", "base", "--print-kernel-base", "function", "--cache-control", "all",
           "--target-processes", "all", "--metrics", ",".join(metrics), "-k", name_filter(names),
           sys.executable, __file__, "--record", cell, "--backend", backend, "--json", str(out), "--under-ncu"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=os.environ)
    except subprocess.TimeoutExpired as e:
        return (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), 124
    return proc.stdout + proc.stderr[-2000:], proc.returncode


def explain(k: dict, read_delta: float | None, writes_ok: bool, flops_delta: float | None) -> str:
    """Why a kernel's counters and model disagree by more than 10 %, as far as its kind tells."""
    why = []
    if read_delta is not None and abs(read_delta) > AGREE:
        if read_delta > 0 and INTERESTING.search(k["name"]):
            why.append("reads: scattered or indexed accesses move whole 32-byte sectors, not single elements")
        elif read_delta > 0:
            why.append("reads: DRAM moved more than the buffers (re-reads that missed the L2, sector granularity)")
        else:
            why.append("reads: irlens charges more than the kernel read (an over-count, or a read served by a "
                       "buffer it also wrote)")
    if not writes_ok:
        why.append("writes outside [model - L2, model]: see the kernel's stores")
    if flops_delta is not None and abs(flops_delta) > AGREE and k["kind"] != "matmul":
        why.append("flops: one irlens flop per op and element against the instruction mix (tanh, exp on the "
                   "special-function unit; a division as reciprocal and multiply; index arithmetic)")
    return "; ".join(why) or "agrees"


def compare(records: dict, launches: list) -> list[dict]:
    """One table row per sampled kernel record: its model beside its last launches' counters."""
    kernels = records["kernels"]
    counts: dict[str, int] = {}
    for k in kernels:
        counts[k["device_name"]] = counts.get(k["device_name"], 0) + 1
    measured = last_launches(launches, counts)
    rows, seen = [], {}
    for k in kernels:
        got = measured.get(k["device_name"], [])
        i = seen.get(k["device_name"], 0)
        seen[k["device_name"]] = i + 1
        if i >= len(got) or len(got) != counts[k["device_name"]]:
            continue
        m = got[i].metrics
        read, written = m.get("dram__bytes_read.sum"), m.get("dram__bytes_write.sum")
        read_delta, flops_delta = agreement(k["bytes_read"], read), agreement(k["flops"], got[i].flops)
        writes_ok = write_agrees(k["bytes_written"], written, records["l2_bytes"])
        rows.append({"backend": records["backend"], "cell": records["cell"], "kernel": k["name"],
                     "device_name": k["device_name"], "kind": k["kind"],
                     "model_read": k["bytes_read"], "ncu_read": read, "read_delta": read_delta,
                     "model_written": k["bytes_written"], "ncu_written": written, "writes_agree": writes_ok,
                     "model_flops": k["flops"], "ncu_flops": got[i].flops, "flops_delta": flops_delta,
                     "time_us": (m.get("gpu__time_duration.sum") or 0) / 1e3, "metrics": m,
                     "agrees": read_delta is not None and abs(read_delta) <= AGREE and writes_ok,
                     "why": explain(k, read_delta, writes_ok, flops_delta)})
    return rows


def _num(value, scale: float = MB, spec: str = ".1f") -> str:
    return "-" if value is None else format(value / scale, spec)


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:+.0f} %"


def write_table(out: Path, rows: list[dict], notes: list[str], device: str) -> None:
    (out / "ncu-check.json").write_text(json.dumps({"device": device, "rows": rows, "notes": notes}, indent=1))
    lines = [f"# Nsight Compute against irlens's kernel model: {device}", "",
             f"Made by `python scripts/ncu_check.py` ({' '.join(sys.argv[1:])}). Reads: DRAM bytes read by the "
             f"kernel's last launch (caches flushed before it) against irlens's bytes read; writes agree between "
             f"irlens's bytes written less the L2's size (dirty lines written back later) and those bytes. "
             f"Flops: fadd + fmul + 2 ffma (single and half) + 2 x tensor-core operations. Target: within "
             f"{100 * AGREE:.0f} %.", ""]
    for backend in BACKENDS:
        mine = [r for r in rows if r["backend"] == backend]
        if not mine:
            continue
        agree = sum(r["agrees"] for r in mine)
        lines += [f"## {backend}: {agree} of {len(mine)} kernels within {100 * AGREE:.0f} % (bytes)", "",
                  "| cell | kernel | kind | read MB irlens | read MB ncu | Δ | written MB irlens | written MB ncu "
                  "| writes | GFLOP irlens | GFLOP ncu | Δ | µs | why |",
                  "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|"]
        for r in mine:
            lines.append(f"| {r['cell']} | `{r['kernel']}` | {r['kind']} | {_num(r['model_read'])} | {_num(r['ncu_read'])} "
                         f"| {_pct(r['read_delta'])} | {_num(r['model_written'])} | {_num(r['ncu_written'])} "
                         f"| {'ok' if r['writes_agree'] else '✗'} | {_num(r['model_flops'], 1e9, '.3f')} "
                         f"| {_num(r['ncu_flops'], 1e9, '.3f')} | {_pct(r['flops_delta'])} | {r['time_us']:.1f} "
                         f"| {r['why']} |")
        lines.append("")
    if notes:
        lines += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    (out / "ncu-check.md").write_text("\n".join(lines))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for ncu-check.md/.json and raw.tar.gz (each run's records and ncu's CSV)")
    ap.add_argument("--cache-dir", default=None, help="the compilers' caches (default: a new temporary folder)")
    ap.add_argument("--cells", default=",".join(CELLS), help="workload:mode:dtype, comma-separated")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--per-cell", type=int, default=8, help="kernels profiled per cell and backend")
    ap.add_argument("--budget-s", type=float, default=480.0, help="start no cell after this many seconds")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per run (with or without ncu)")
    ap.add_argument("--record", help=argparse.SUPPRESS)  # one cell, as the bench runs it: its kernel records
    ap.add_argument("--backend", help=argparse.SUPPRESS)
    ap.add_argument("--json", help=argparse.SUPPRESS)
    ap.add_argument("--under-ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.record:
        record(args.record, args.backend, Path(args.json), under_ncu=args.under_ncu)
        return 0

    out = Path(args.out)
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    from irlens.bench.compile_caches import compile_caches

    started, rows, notes, device = time.time(), [], [], "?"
    metrics = metrics_to_ask()
    notes.append(f"Nsight Compute: {ncu_version()}")
    notes.append(f"metrics: {', '.join(metrics)}")
    pairs = [(cell, backend) for cell in args.cells.split(",") for backend in args.backends.split(",")]
    with compile_caches(Path(args.cache_dir or tempfile.mkdtemp(prefix="irlens-ncu-"))):
        for cell, backend in pairs:
            if time.time() - started > args.budget_s:
                notes.append(f"{cell} {backend}: not run, the budget of {args.budget_s:.0f} s was spent")
                continue
            stem = f"{cell.replace(':', '-')}-{backend}"
            path = raw / f"records-{stem}.json"
            try:
                proc = subprocess.run([sys.executable, __file__, "--record", cell, "--backend", backend, "--json",
                                       str(path)], capture_output=True, text=True, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                notes.append(f"{cell} {backend}: the run without ncu took over {args.timeout:.0f} s")
                continue
            if proc.returncode != 0 or not path.is_file():
                notes.append(f"{cell} {backend}: the run without ncu failed ({proc.returncode}): "
                             f"{(proc.stderr.strip().splitlines() or [''])[-1][:200]}")
                continue
            records = json.loads(path.read_text())
            device = records["device"]
            names = sample(records["kernels"], args.per_cell)
            if not names:
                notes.append(f"{cell} {backend}: no kernel to sample ({records['unmapped'] or 'none with bytes'})")
                continue
            text, status = profile(cell, backend, names, metrics, raw / f"under-ncu-{stem}.json", args.timeout)
            (raw / f"ncu-{stem}.csv").write_text(text)
            found = compare(records, parse_csv(text))
            if status != 0:
                notes.append(f"{cell} {backend}: ncu ended with status {status} ({len(found)} kernels read)")
            missing = [n for n in names if n not in {r["device_name"] for r in found}]
            if missing:
                notes.append(f"{cell} {backend}: profiled launches not matched for {', '.join(missing)}")
            rows += found
            write_table(out, rows, notes, device)
            print(f"ncu_check: {cell} {backend}: {len(found)} kernels, {time.time() - started:.0f} s", file=sys.stderr)
    write_table(out, rows, notes, device)
    with tarfile.open(out / "raw.tar.gz", "w:gz") as tar:
        tar.add(raw, arcname="raw")
    shutil.rmtree(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
