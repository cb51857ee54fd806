"""Where the time of Thunder + nvFuser's first minigpt fwd+bwd step goes.

The recorded bench cell (minigpt, bench preset, bfloat16, fwd+bwd, nvFuser) timed out at 150 s
in a late region, which ran fine alone. This probe runs that step once through thunder.jit with
the nvfuser backend's executors and records, per nvFuser region call, when it started, how long
Thunder took to build its FusionDefinition (`get_fd`) and how long nvFuser's `execute` took
(synchronized: on a first call that is nvFuser's segmentation, scheduling and kernel compile,
then the run). Then two more steps, to see whether a region compiles again on later calls (an
endless retry would show as a late call as slow as the first), and nvFuser's profiler on the
slowest regions (segments, schedulers, whatever its profile reports).

Written under --out (at most 8 files): progress.jsonl (one line per region call start and end,
flushed: a run killed by a timeout still says which region it was in), calls.json, profiles.json,
thunder.json (Thunder's own compile stats), findings.md, stacks.txt (Python stacks if the budget
runs out) and slowest-region.py (the slowest first call as a standalone nvFuser script, the
`irlens repro` form: run it with `time python slowest-region.py`).

    source .gpu/activate.sh && python scripts/nvfuser_minigpt_probe.py --out $OUT

Needs CUDA and nvFuser (exit 2 otherwise).
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import os
import sys
import threading
import time
from collections import defaultdict

START = time.perf_counter()


def now() -> float:
    return round(time.perf_counter() - START, 3)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=os.environ.get("OUT", "nvfuser-probe"))
    p.add_argument("--workload", default="minigpt")
    p.add_argument("--preset", default="bench")
    p.add_argument("--dtype", default="bfloat16")
    p.add_argument("--mode", default="fwdbwd", choices=["fwd", "fwdbwd"])
    p.add_argument("--steps", type=int, default=3, help="steps run (the first compiles)")
    p.add_argument("--top", type=int, default=5, help="regions profiled: the slowest first calls")
    p.add_argument("--budget-s", type=float, default=450.0,
                   help="then write what is known and stop (the Python stacks go to stacks.txt)")
    return p.parse_args(argv)


class Recorder:
    """Times every nvFuser region call (FusionDefinitionWrapper.__call__), per region and call."""

    def __init__(self, out: str):
        self.calls: list[dict] = []
        self.part = "forward"
        self.step = 0
        self.wrappers: dict[str, object] = {}  # "part/name" -> the region's wrapper (its last inputs kept)
        self.progress = open(os.path.join(out, "progress.jsonl"), "w", buffering=1)
        self.seen: dict[str, int] = defaultdict(int)

    def install(self):
        import torch
        from thunder.executors.nvfuserex_impl import FusionDefinitionWrapper

        original = FusionDefinitionWrapper.__call__
        rec = self

        def timed(wrapper, *args):
            name = wrapper.name.partition(":")[0].strip()
            key = f"{rec.part}/{name}"
            rec.wrappers[key] = wrapper
            call = rec.seen[key]
            rec.seen[key] += 1
            entry = {"step": rec.step, "part": rec.part, "region": name, "call": call, "start_s": now()}
            rec.progress.write(json.dumps({"event": "start", **entry}) + "\n")
            t0 = time.perf_counter()
            wrapper.get_fd(wrapper.to_descriptors(args))  # Thunder builds (or finds) the definition
            t1 = time.perf_counter()
            result = original(wrapper, *args)
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            entry.update(get_fd_s=round(t1 - t0, 4), execute_s=round(t2 - t1, 4))
            rec.calls.append(entry)
            rec.progress.write(json.dumps({"event": "end", **entry}) + "\n")
            return result

        FusionDefinitionWrapper.__call__ = timed


def findings(calls: list[dict], steps: list[dict], thunder_stats: dict, profiles: dict, finished: bool) -> str:
    """The Markdown summary: where the first step's time went, and whether later calls recompile."""
    first = [c for c in calls if c["step"] == 0]
    later = defaultdict(list)
    for c in calls:
        if c["step"] > 0:
            later[(c["part"], c["region"])].append(c["execute_s"])
    lines = ["# nvFuser minigpt probe", "", f"finished: {finished}", ""]
    lines += ["## Steps", "", "Outside: the step's wall time less nvFuser's execute and Thunder's get_fd: Thunder's "
              "tracing and transforms (on the first step), and the ops outside the regions.", "",
              "| step | wall s | nvFuser execute s (sum) | get_fd s (sum) | outside s | region calls |",
              "| ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s in steps:
        mine = [c for c in calls if c["step"] == s["step"]]
        execute, get_fd = sum(c["execute_s"] for c in mine), sum(c["get_fd_s"] for c in mine)
        lines.append(f"| {s['step']} | {s['wall_s']:.1f} | {execute:.1f} | {get_fd:.1f} | "
                     f"{s['wall_s'] - execute - get_fd:.1f} | {len(mine)} |")
    if thunder_stats:
        lines += ["", "Thunder's compile stats of the last call (s): " + ", ".join(
            f"{k} {v:.2f}" for k, v in thunder_stats.items())]
    total = sum(c["execute_s"] for c in first)
    lines += ["", f"## First step: the {min(15, len(first))} slowest region calls of {len(first)} "
              f"(nvFuser execute {total:.1f} s in all)", "",
              "| part | region | started at s | get_fd s | execute s | later calls' execute s |",
              "| --- | --- | ---: | ---: | ---: | --- |"]
    for c in sorted(first, key=lambda c: -c["execute_s"])[:15]:
        again = ", ".join(f"{t:.3f}" for t in later.get((c["part"], c["region"]), []))
        lines.append(f"| {c['part']} | {c['region']} | {c['start_s']:.1f} | {c['get_fd_s']:.3f} | "
                     f"{c['execute_s']:.3f} | {again} |")
    first_s = {(c["part"], c["region"]): c["execute_s"] for c in first}
    retry = [f"{p}/{r}" for (p, r), times in later.items()
             if min(times) > 0.5 and min(times) > 0.5 * first_s.get((p, r), 0.0)]
    lines += ["", "## Later calls", "",
              f"regions whose later calls take over half their first call (and over 0.5 s): "
              f"{', '.join(retry) if retry else 'none: nothing compiles again'}"]
    if first:
        spans = sorted(c["execute_s"] for c in first)
        top = sum(spans[-5:])
        lines += ["", "## Where the first step's nvFuser time is", "",
                  f"the 5 slowest first calls: {top:.1f} s of {total:.1f} s ({top / total:.0%}); "
                  f"median first call {spans[len(spans) // 2]:.3f} s"]
    if profiles:
        lines += ["", "## nvFuser's profile of the slowest regions (a later call)", ""]
        for key, prof in profiles.items():
            lines.append(f"- {key}: {json.dumps(prof)[:600]}")
    return "\n".join(lines) + "\n"


def profile(wrapper) -> dict:
    """One more call of a region under nvFuser's profiler: every field its profile reports."""
    from nvfuser_direct import PythonProfiler

    def fields(obj) -> dict:
        out = {}
        for name in dir(obj):
            if name.startswith("_"):
                continue
            value = getattr(obj, name, None)
            if isinstance(value, (int, float, str, bool)):
                out[name] = value
        return out

    prof = PythonProfiler()
    with prof:
        wrapper(*wrapper.last_inputs)
    p = prof.profile
    return {**fields(p), "kernels": [fields(k) for k in getattr(p, "kernel_profiles", [])]}


def main(argv=None) -> int:
    args = parse(argv)
    import torch

    if not torch.cuda.is_available():
        print("nvfuser_minigpt_probe: needs a CUDA GPU (none visible to torch)", file=sys.stderr)
        return 2
    try:
        import nvfuser_direct  # noqa: F401
    except ImportError as e:
        print(f"nvfuser_minigpt_probe: needs nvFuser ({e}); run `source .gpu/activate.sh` first", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    stacks = open(os.path.join(args.out, "stacks.txt"), "w")
    faulthandler.dump_traceback_later(args.budget_s + 60, exit=True, file=stacks)  # the hard stop

    from irlens.backends import get_backend
    from irlens.frontends.thunder.frontend import import_thunder_or_raise
    from irlens.workloads.builtin import resolve_workload
    from irlens.workloads.workload import as_tuple

    thunder = import_thunder_or_raise()
    rec = Recorder(args.out)
    rec.install()
    steps: list[dict] = []
    state = {"thunder": {}, "profiles": {}, "finished": False}

    def write(final: bool) -> None:
        for name, data in (("calls.json", rec.calls), ("profiles.json", state["profiles"]),
                           ("thunder.json", state["thunder"])):
            with open(os.path.join(args.out, name), "w") as f:
                json.dump(data, f, indent=1)
        with open(os.path.join(args.out, "findings.md"), "w") as f:
            f.write(findings(list(rec.calls), steps, state["thunder"], state["profiles"], final))

    def out_of_time():
        faulthandler.dump_traceback(file=stacks, all_threads=True)
        stacks.flush()
        write(False)
        print(f"nvfuser_minigpt_probe: budget of {args.budget_s} s spent; partial findings in {args.out}",
              file=sys.stderr, flush=True)
        os._exit(3)

    timer = threading.Timer(args.budget_s, out_of_time)
    timer.daemon = True
    timer.start()

    inst = resolve_workload(args.workload).instantiate(args.preset, args.dtype, "cuda")
    backend = get_backend("nvfuser")
    jfn = thunder.jit(inst.module, executors=backend.executors(thunder), **backend.compile_options)
    train = args.mode == "fwdbwd"
    print(f"[probe {now():.1f}s] {inst.name} {args.preset} {args.dtype} {args.mode}: first step", file=sys.stderr,
          flush=True)
    for step in range(args.steps):
        rec.step, rec.part = step, "forward"
        t0 = time.perf_counter()
        with torch.set_grad_enabled(train):
            outs = as_tuple(jfn(*inst.fresh_inputs(requires_grad=train)))
            if train:
                rec.part = "backward"
                inst.loss(outs).backward()
        torch.cuda.synchronize()
        steps.append({"step": step, "wall_s": time.perf_counter() - t0})
        for p in inst.module.parameters():
            p.grad = None
        print(f"[probe {now():.1f}s] step {step}: {steps[-1]['wall_s']:.1f} s", file=sys.stderr, flush=True)
        if step == 0:
            stats = thunder.compile_stats(jfn)
            state["thunder"] = {} if not hasattr(stats, "__dict__") else {k[len("last_"):].removesuffix("_start"): (getattr(stats, k[:-6] + "_stop") - v) / 1e9
                                for k, v in vars(stats).items()
                                if k.startswith("last_") and k.endswith("_start") and isinstance(v, int) and v >= 0
                                and getattr(stats, k[:-6] + "_stop", -1) >= v}
        write(False)

    slowest = sorted((c for c in rec.calls if c["step"] == 0), key=lambda c: -c["execute_s"])[:args.top]
    rec.step = -1  # the profiled calls are no step's
    for c in slowest:
        key = f"{c['part']}/{c['region']}"
        try:
            state["profiles"][key] = profile(rec.wrappers[key])
        except Exception as e:  # noqa: BLE001  (the profile is extra; the timings stand)
            state["profiles"][key] = {"error": f"{type(e).__name__}: {e}"}
    if slowest:
        write_region_file(rec.wrappers[f"{slowest[0]['part']}/{slowest[0]['region']}"], slowest[0], args)
    timer.cancel()
    state["finished"] = True
    write(True)
    print(open(os.path.join(args.out, "findings.md")).read())
    return 0


def write_region_file(wrapper, call: dict, args) -> None:
    """The slowest first call's region as the standalone nvFuser script `irlens repro` writes."""
    import torch

    from irlens.repro.nvfuser_regions import region_file
    from irlens.repro.tensors import tensor_source

    inputs = wrapper.last_inputs
    entry = {"definition": repr(wrapper.get_fd(wrapper.to_descriptors(inputs))),
             "inputs": [tensor_source(a, i, 64) if isinstance(a, torch.Tensor) else repr(a) for i, a in enumerate(inputs)],
             "devices": [str(a.device) if isinstance(a, torch.Tensor) else None for a in inputs]}
    title = (f"{args.workload} ({args.preset}, {args.dtype}, {args.mode}) through Thunder + nvFuser: {call['part']} "
             f"region {call['region']}, whose first call took {call['execute_s']:.1f} s in nvFuser's execute")
    notes = ["Written by scripts/nvfuser_minigpt_probe.py. The first execute of a definition is nvFuser's "
             "segmentation, scheduling and kernel compile, then one run: `time python` this file to see it alone."]
    with open(os.path.join(args.out, "slowest-region.py"), "w") as f:
        f.write(region_file(entry, title, notes))


if __name__ == "__main__":
    sys.exit(main())
