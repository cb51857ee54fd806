"""`irlens train --profile DIR`: where a train step's time goes, from a torch.profiler trace.

The last steps of the run are profiled (torch.profiler, CPU and CUDA activity); each rank
saves its Chrome trace as `DIR/trace-rank<r>.json.gz` (Perfetto and chrome://tracing open it).
Each profiled step is a `record_function` span, `irlens_step#<n>`, around exactly the region the
step's time is measured over. Within it, device activity is cut into parts that sum to the
step's time, by interval arithmetic over the trace's events (a sweep over their starts and ends):

  matmul, attention, fused, other   time some compute kernel runs (split evenly between the
                                    kernels running at once, where streams overlap)
  comm_exposed                      a communication kernel runs and no compute kernel does
  idle                              nothing runs on the device: host-bound time (Python and
                                    dispatch overhead, launches, synchronizations)

and `comm_overlapped`, the time a communication kernel runs while a compute kernel runs on
another stream, is reported beside them (it is hidden inside the compute parts). Communication is
also cut by collective (`comm_kinds`: all_gather, reduce_scatter, all_reduce, all_to_all, other):
the time each runs in the step, and of it the exposed time (where kinds run at once without
compute, split evenly between them), e.g. the all-to-all share of an expert-parallel step.

On the GPU the events are the kernels, copies and memsets CUPTI recorded (every stream). On the
CPU there are no kernels: the events are each thread's matmul and attention ops, gloo's
collectives (run on its own threads), the c10d calls that launch and wait for them, and the
innermost of the other ATen ops, so `idle` is the interpreter's and dispatcher's own time there.
"""
from __future__ import annotations

import contextlib
import gzip
import itertools
import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator

import torch

STEP_PREFIX = "irlens_step#"
COMPUTE = ("matmul", "attention", "fused", "other")
COMMUNICATION = "communication"
# the parts a step's time is cut into: they sum to the step's time
PARTS = (*COMPUTE, "comm_exposed", "idle")
LABELS = {
    "matmul": "matmul (cuBLAS, CUTLASS, Triton mm templates)",
    "attention": "attention (flash, cuDNN, efficient, flex)",
    "fused": "fused (Inductor's Triton kernels)",
    "other": "other kernels (ATen elementwise, copies, optimizer)",
    "comm_exposed": "communication, exposed",
    "idle": "idle (host-bound: nothing on the device)",
    "comm_overlapped": "communication, overlapped (inside the above)",
}

# Kernel classes by name, first match wins. Inductor's pointwise/reduction kernels come first:
# their names list the ATen ops they fuse, `addmm` or `_scaled_dot_product_flash_attention`
# included (a bias add, a layout copy), and they are neither. FlashAttention and cuDNN's SDPA
# kernels carry cutlass and gemm in their template names: attention before matmul.
_CLASSES: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
    # peer-to-peer copies (Memcpy PtoP): symmetric memory's transfers where CUDA reports them as such
    (COMMUNICATION, r"nccl|^gloo:|c10d|^record_param_comms|^Memcpy PtoP"),
    ("fused", r"^triton_(poi|red|per)_"),
    ("attention", r"flash|fmha|attention|sdpa|flex_|dot_do_o|convert_dq"),
    ("matmul", r"gemm|gemv|nvjet|xmma|cutlass|cublas|splitkreduce|^triton_tem_|"
               r"^aten::(mm|addmm|bmm|baddbmm|_addmm_activation|_scaled_mm)$"),
    ("fused", r"^triton_"),
))


# Collective kinds by kernel or op name: NCCL's kernels (ncclDevKernel_AllGather_RING_LL,
# ..._SendRecv, which all-to-all is made of), gloo's and c10d's ops on the CPU
COMM_KINDS: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(pattern, re.IGNORECASE)) for name, pattern in (
    ("all_gather", r"all_?gather"),
    ("reduce_scatter", r"reduce_?scatter"),
    ("all_reduce", r"all_?reduce"),
    ("all_to_all", r"all_?to_?all|sendrecv"),
))


def comm_kind(name: str) -> str:
    """all_gather / reduce_scatter / all_reduce / all_to_all of a communication kernel or op, else other."""
    return next((kind for kind, pattern in COMM_KINDS if pattern.search(name)), "other")


def classify(name: str) -> str:
    """The class of a kernel (GPU) or innermost op (CPU) by its name: communication, attention,
    matmul, fused or other."""
    for cls, pattern in _CLASSES:
        if pattern.search(name):
            return cls
    return "other"


@dataclass(frozen=True)
class DeviceEvent:
    name: str
    start: float  # µs, the trace's clock
    end: float
    lane: str  # CUDA stream or CPU thread
    cls: str

    @property
    def part(self) -> str:
        """What the sweep counts it as: its class, or `comm:<kind>` for communication."""
        return f"comm:{comm_kind(self.name)}" if self.cls == COMMUNICATION else self.cls


@dataclass
class StepBreakdown:
    step: int
    time_ms: float  # the step's span: sum of PARTS
    matmul: float = 0.0  # ms
    attention: float = 0.0
    fused: float = 0.0
    other: float = 0.0
    comm_exposed: float = 0.0
    idle: float = 0.0
    comm_overlapped: float = 0.0  # not a part: communication hidden behind compute
    kernels: int = 0  # events that started in the step
    # collective kind -> [ms it runs, ms of it exposed]
    comm_kinds: dict[str, list[float]] = field(default_factory=dict)

    @property
    def comm_ms(self) -> float:
        return self.comm_exposed + self.comm_overlapped

    def parts_ms(self) -> float:
        return sum(getattr(self, p) for p in PARTS)


def breakdown(events: list[DeviceEvent], step: int, start: float, end: float) -> StepBreakdown:
    """Cut [start, end] into PARTS by what runs at each instant (see the module's docstring)."""
    out = StepBreakdown(step, (end - start) / 1e3)
    edges: list[tuple[float, int, str]] = []
    for e in events:
        s, t = max(e.start, start), min(e.end, end)
        if t > s:
            edges += [(s, 1, e.part), (t, -1, e.part)]
        out.kernels += start <= e.start < end
    edges.sort(key=lambda x: x[0])
    running: Counter = Counter()
    acc: dict[str, float] = defaultdict(float)
    prev = start
    for t, at_t in itertools.groupby(edges, key=lambda x: x[0]):
        _attribute(t - prev, running, acc)  # what ran since the last edge
        for _, delta, cls in at_t:
            running[cls] += delta
        prev = t
    _attribute(end - prev, running, acc)
    for part, us in acc.items():
        if part.startswith("comm:"):  # comm:<kind> (running) or comm:<kind>:exposed
            kind = part[len("comm:"):].removesuffix(":exposed")
            out.comm_kinds.setdefault(kind, [0.0, 0.0])[part.endswith(":exposed")] += us / 1e3
        else:
            setattr(out, part, us / 1e3)
    out.comm_kinds = dict(sorted(out.comm_kinds.items()))
    return out


def _attribute(span: float, running: Counter, acc: dict) -> None:
    if span <= 0:
        return
    compute = {c: running[c] for c in COMPUTE if running[c] > 0}
    kinds = [p for p, k in running.items() if k > 0 and p.startswith("comm:")]
    for kind in kinds:
        acc[kind] += span
    if compute:
        n = sum(compute.values())
        for c, k in compute.items():
            acc[c] += span * k / n
        if kinds:
            acc["comm_overlapped"] += span
    elif kinds:
        acc["comm_exposed"] += span
        for kind in kinds:
            acc[f"{kind}:exposed"] += span / len(kinds)
    else:
        acc["idle"] += span


# --- reading a trace ------------------------------------------------------------------------

_GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")


def load_trace(path: str | Path) -> dict:
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return json.load(f)


def _spans(trace: dict) -> list[dict]:
    return [e for e in trace.get("traceEvents", []) if e.get("ph") == "X" and "dur" in e]


def step_windows(trace: dict) -> list[tuple[int, float, float]]:
    """(step, start µs, end µs) of each `irlens_step#<n>` span, in step order."""
    wins = [(int(e["name"][len(STEP_PREFIX):]), float(e["ts"]), float(e["ts"]) + float(e["dur"]))
            for e in _spans(trace) if e.get("cat") == "user_annotation" and e["name"].startswith(STEP_PREFIX)]
    return sorted(wins)


def device_events(trace: dict) -> tuple[str, list[DeviceEvent]]:
    """("cuda", kernels, copies and memsets) where the trace has GPU activity, else ("cpu", the
    ops and spans `_cpu_events` keeps)."""
    spans = _spans(trace)
    gpu = [e for e in spans if e.get("cat") in _GPU_CATEGORIES]
    if gpu:
        return "cuda", [_event(e, f"stream {e.get('args', {}).get('stream', e.get('tid'))}") for e in gpu]
    return "cpu", _cpu_events([e for e in spans if e.get("cat") in ("cpu_op", "user_annotation")])


def _event(e: dict, lane: str) -> DeviceEvent:
    start = float(e["ts"])
    return DeviceEvent(e["name"], start, start + float(e["dur"]), lane, classify(e["name"]))


def _cpu_events(spans: list[dict]) -> list[DeviceEvent]:
    """Per thread, nest the spans by time. An op of a known class (matmul, attention,
    communication) counts whole, with what it calls; otherwise only ATen ops with no op inside
    count (the callers' own time is dispatch: idle)."""
    by_thread: dict = defaultdict(list)
    for e in spans:
        by_thread[(e.get("pid"), e.get("tid"))].append(_Nested(_event(e, f"thread {e.get('tid')}"), e["cat"] == "cpu_op"))
    out = []
    for nodes in by_thread.values():
        nodes.sort(key=lambda n: (n.event.start, -n.event.end))
        stack: list[_Nested] = []
        for node in nodes:
            while stack and stack[-1].event.end <= node.event.start:
                stack.pop()
            if stack:
                parent = stack[-1]
                parent.children += 1
                node.in_known = parent.in_known or parent.known
            stack.append(node)
        out += [n.event for n in nodes if not n.in_known and (n.known or (n.is_op and n.children == 0))]
    return out


@dataclass
class _Nested:
    event: DeviceEvent
    is_op: bool  # an ATen op (cpu_op), not a record_function span (user_annotation)
    in_known: bool = False  # inside a span of a known class
    children: int = 0

    @property
    def known(self) -> bool:
        return self.event.cls in ("matmul", "attention", COMMUNICATION)


# --- the report -------------------------------------------------------------------------------


@dataclass
class ProfileReport:
    device: str  # cuda | cpu
    trace: str
    steps: list[StepBreakdown]
    top: list[dict] = field(default_factory=list)  # the events that take most time, per step

    def mean(self) -> StepBreakdown:
        m = StepBreakdown(0, statistics.fmean(s.time_ms for s in self.steps))
        for f in (*PARTS, "comm_overlapped", "kernels"):
            setattr(m, f, statistics.fmean(getattr(s, f) for s in self.steps))
        kinds = sorted({k for s in self.steps for k in s.comm_kinds})
        m.comm_kinds = {k: [statistics.fmean(s.comm_kinds.get(k, (0.0, 0.0))[i] for s in self.steps) for i in (0, 1)]
                        for k in kinds}
        return m

    def to_json(self) -> dict:
        mean = self.mean()
        return {"device": self.device, "trace": self.trace,
                "mean": {**asdict(mean), "step": None,
                         "fraction": {p: getattr(mean, p) / mean.time_ms for p in (*PARTS, "comm_overlapped")}},
                "steps": [asdict(s) for s in self.steps], "top": self.top}

    def table(self) -> str:
        m = self.mean()
        steps = ", ".join(str(s.step) for s in self.steps)
        lines = [f"profile: steps {steps} on {self.device}, mean step {m.time_ms:.1f} ms, "
                 f"{m.kernels:.0f} {'kernels' if self.device == 'cuda' else 'ops'} per step; trace {self.trace}",
                 f"  {'part':<52} {'ms/step':>9} {'% step':>7}"]
        for p in (*PARTS, "comm_overlapped"):
            v = getattr(m, p)
            lines.append(f"  {LABELS[p]:<52} {v:9.2f} {100 * v / m.time_ms:7.1f}")
        for kind, (runs, exposed) in m.comm_kinds.items():
            label = f"  {kind} (runs; exposed: {exposed:.2f} ms)"
            lines.append(f"  {label:<52} {runs:9.2f} {100 * runs / m.time_ms:7.1f}")
        lines.append(f"  top {len(self.top)} by time (ms/step, calls/step, class):")
        for k in self.top:
            lines.append(f"    {k['ms']:9.2f} {k['calls']:7.1f}  {k['class']:<13} {k['name'][:100]}")
        return "\n".join(lines)


def analyze(trace: dict, trace_path: str = "", top: int = 12) -> ProfileReport:
    """The breakdown of every `irlens_step#<n>` span in the trace."""
    wins = step_windows(trace)
    if not wins:
        raise ValueError(f"no {STEP_PREFIX}<n> spans in the trace {trace_path}: nothing to break down")
    device, events = device_events(trace)
    steps = [breakdown(events, n, s, e) for n, s, e in wins]
    per_name: dict[str, list] = {}
    for ev in events:
        if any(s <= ev.start < e for _, s, e in wins):
            acc = per_name.setdefault(ev.name, [0.0, 0, ev.cls])
            acc[0] += (ev.end - ev.start) / 1e3
            acc[1] += 1
    ranked = sorted(per_name.items(), key=lambda kv: -kv[1][0])[:top]
    return ProfileReport(device, trace_path, steps,
                         [{"name": n, "class": c, "ms": ms / len(wins), "calls": k / len(wins)}
                          for n, (ms, k, c) in ranked])


# --- profiling the run ------------------------------------------------------------------------


class StepProfiler:
    """Profiles steps `first`.. of a run; `step(n)` wraps the measured region of step n."""

    def __init__(self, out_dir: str | None, device: torch.device, rank: int, first: int):
        self.out_dir, self.device, self.rank, self.first = out_dir, device, rank, first
        self.prof = None

    @property
    def path(self) -> Path:
        return Path(self.out_dir) / f"trace-rank{self.rank}.json.gz"

    @contextlib.contextmanager
    def step(self, n: int) -> Iterator[bool]:
        """Yields whether step n is profiled."""
        if self.out_dir is None or n < self.first:
            yield False
            return
        if self.prof is None:  # started outside the step's span: Kineto's start-up is not the step's
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
            self.prof = profile(activities=activities, record_shapes=False, with_stack=False, profile_memory=False)
            self.prof.start()
        with torch.profiler.record_function(f"{STEP_PREFIX}{n}"):
            yield True

    def finish(self, analyze_trace: bool) -> ProfileReport | None:
        """Stop, save this rank's trace; its breakdown where `analyze_trace` (rank 0)."""
        if self.prof is None:
            return None
        self.prof.stop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.prof.export_chrome_trace(str(self.path))
        self.prof = None
        return analyze(load_trace(self.path), str(self.path)) if analyze_trace else None
