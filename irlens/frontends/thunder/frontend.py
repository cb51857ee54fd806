"""The Lightning Thunder frontend: every trace `thunder.jit` keeps, forward and backward.

`thunder.last_traces(jfn)` lists the computation traces of the last compile: the trace the
interpreter acquired, then one per transform (return wrapping, DCE, the grad transform, ...)
up to the final execution trace. With inputs that require grad, `thunder.last_backward_traces`
holds the backward's. Each becomes a stage `thunder.trace[i]` / `thunder.backward[i]`.

Where thunder.jit cannot trace the workload, it is acquired through ThunderFX (`capture.py`,
`thunderfx.py`): `thunderfx.splits` says which regions Thunder took and why the others fell back
to Inductor; each Thunder region's traces are `thunderfx.g<graph>.thunder_<k>.trace[i]` (and
`.backward[i]`), each fallback region's FX graph `thunderfx.g<graph>.inductor_<k>.fx`.

The folder owns the Thunder frontend whole: the capture (here, capture.py, thunderfx.py) and the
traces -> common view adapter: its walk (trace.py), name tables (ops.py), how a normalizer reads
a symbol call (call.py), the normalizers by family (normalize_compute.py, normalize_movement.py)
and the torch functions Thunder keeps whole (torch_fallback.py).
"""
from __future__ import annotations

import re

from irlens.frontends.base import FRONTENDS, Acquisition, Availability, Frontend, Program, Setting, Stage, Unavailable
from irlens.frontends.dynamo.capture import fx_stage
from irlens.frontends.thunder.binding import thunder_program, trace_programs
from irlens.frontends.thunder.capture import capture, capture_as, set_capture
from irlens.frontends.thunder.thunderfx import Region, ThunderFX, split_line, split_summary, split_table
from irlens.frontends.thunder.trace import trace_to_graph
from irlens.workloads.workload import Instance, run_eager


def import_thunder_or_raise():
    from irlens._compat import import_thunder

    try:
        return import_thunder()
    except ImportError as e:
        raise Unavailable(f"lightning-thunder is not importable: {e}") from e


def executor_names(thunder, jfn) -> list[str]:
    """The executors a jitted function ran with, in priority order (not Thunder's ad hoc ones)."""
    return [ex.name for ex in thunder.compile_data(jfn).executors_list if not ex.name.startswith("__")]


def traces(thunder, jfn, mode: str, prefix: str = "thunder") -> list[tuple[str, list]]:
    """(stage-name prefix, traces) of the last compile of `jfn`: forward, and backward in fwdbwd
    (where it computed a gradient: a ThunderFX region may not)."""
    kept = [(f"{prefix}.trace", thunder.last_traces(jfn))]
    if mode == "fwdbwd":
        kept.append((f"{prefix}.backward", thunder.last_backward_traces(jfn)))
    return [(name, trs) for name, trs in kept if trs]


def final_traces(thunder, jfn, mode: str, prefix: str = "thunder") -> list[tuple[str, object]]:
    """(stage name, trace) of the execution traces that ran: the last forward and backward ones."""
    return [(f"{name}[{len(kept) - 1}]", kept[-1]) for name, kept in traces(thunder, jfn, mode, prefix)]


def trace_stages(thunder, jfn, workload: str, mode: str, prefix: str = "thunder") -> dict[str, Stage]:
    """Every trace of the last compile of `jfn` as a stage, forward then backward."""
    stages: dict[str, Stage] = {}
    for name, kept in traces(thunder, jfn, mode, prefix):
        for i in range(len(kept)):
            stages[f"{name}[{i}]"] = _stage(f"{name}[{i}]", kept, i, workload, backward=name.endswith(".backward"))
    return stages


SPLITS = "thunderfx.splits"


def region_part(region: Region) -> str:
    """The stage of a region that is its share of the forward: a Thunder region's acquired trace,
    a fallback region's FX graph."""
    return f"{region.stage_prefix}.trace[0]" if region.thunder else f"{region.stage_prefix}.fx"


def thunderfx_stages(thunder, regions: list[Region], summary: dict, workload: str, mode: str) -> dict[str, Stage]:
    """A ThunderFX acquisition's stages: the split summary, then per region in order its traces
    (Thunder's) or its FX graph (Inductor's); each region's part says which region of how many it is."""
    stages = {SPLITS: Stage(SPLITS, "which regions Thunder took, and why the others fell back to Inductor "
                                    "(ThunderFX's split reasons)", split_table(summary, workload))}
    for k, region in enumerate(regions, 1):
        which = f"region {k} of {len(regions)} ({region.key})"
        if region.thunder:
            stages.update(trace_stages(thunder, region.jitted, workload, mode, region.stage_prefix))
            part = stages[region_part(region)]
            part.description = f"{which}, Thunder's: {part.description}"
        else:
            stages[region_part(region)] = fx_stage(
                region_part(region), f"{which}, left to Inductor: its FX graph as Dynamo traced it "
                                     f"({'; '.join(region.reasons)})", region.module, workload)
    return stages


def _stage(name: str, kept: list, index: int, workload: str, backward: bool) -> Stage:
    trace = kept[index]

    def to_common(level: str):
        return trace_to_graph(trace, name=workload, frontend="thunder", stage=name, level=level)

    return Stage(name, describe_trace(kept, index, backward), str(trace), to_common, native=trace, backward=backward)


_TOOK = re.compile(r"\s*\(took \d+ milliseconds\)$")


def describe_trace(kept: list, index: int, backward: bool) -> str:
    """One line from the trace's provenance ("Constructed by Dead Code Elimination") and position."""
    trace = kept[index]
    provenance = trace.get_provenance()
    what = _TOOK.sub("", provenance.pss) if provenance is not None else ""
    if index == 0 and not backward:
        text = "acquired: the computation trace Thunder's interpreter recorded (torch-level ops)"
    else:
        text = f"after {what}" if what else "transformed trace"
    if index == len(kept) - 1:
        text = f"final execution trace ({text})"
    if backward:
        text = f"backward: {text}"
    earlier = next((j for j in range(index) if kept[j] is trace), None)
    if earlier is not None:  # thunder lists a trace again when a pass (e.g. a sanity check) keeps it
        text += f"; the same trace object as [{earlier}]"
    return text


def argument_values(thunder, jfn) -> dict[str, str]:
    """Which workload value each argument of the last compile's computation traces holds, by
    proxy name: `input<i>` for the i-th positional input, else a parameter's or buffer's name.
    Read from the prologue trace, which unpacks them (`args[i]`, `module.get_parameter(name)`):
    a proxy's own name follows the variable Thunder first saw it as (`weight` for a Conv1d's
    weight, whose forward passes it on to `_conv_forward(input, weight, bias)`), not its path."""
    from thunder.core.prims import PrimIDs

    values = {}
    for bsym in thunder.last_prologue_traces(jfn)[-1].bound_symbols:
        if bsym.sym.id == PrimIDs.UNPACK_GETITEM and getattr(bsym.args[0], "name", None) == "args":
            values[bsym.output.name] = f"input{bsym.args[1]}"
        elif bsym.sym.id in (PrimIDs.UNPACK_PARAMETER, PrimIDs.UNPACK_BUFFER):
            values[bsym.output.name] = bsym.args[1]
    return values


class ThunderFrontend(Frontend):
    name = "thunder"
    description = "Lightning Thunder: thunder.jit traces, from the acquired trace to the execution traces"
    settings = (Setting("capture", "auto|jit|thunderfx", "how Thunder (its frontend, thunder+torchcompile, nvfuser) "
                        "captures a workload: auto (default: thunder.jit, and ThunderFX where it fails), jit, or "
                        "thunderfx", set_capture),)

    def availability(self) -> Availability:
        from irlens._compat import import_thunder

        try:
            import_thunder()
        except ImportError as e:
            return Availability(False, str(e))
        return Availability(True)

    def acquire(self, inst: Instance, mode: str) -> Acquisition:
        thunder = import_thunder_or_raise()
        return capture(inst, mode, lambda: self._jit(thunder, inst, mode),
                       lambda why, jit_error: self._thunderfx(thunder, inst, mode, why, jit_error))

    def _jit(self, thunder, inst: Instance, mode: str) -> Acquisition:
        jfn = thunder.jit(inst.module)
        run_eager(jfn, inst, mode)  # one call (with the backward in fwdbwd) makes the traces
        stages = trace_stages(thunder, jfn, inst.name, mode)
        notes = {"executors": executor_names(thunder, jfn), "arg_values": argument_values(thunder, jfn)}
        return Acquisition(self.name, inst.name, mode, stages, notes)

    def _thunderfx(self, thunder, inst: Instance, mode: str, why: str, jit_error: BaseException | None) -> Acquisition:
        fx = ThunderFX(inst.module, jit_error)
        fx.calls(lambda compiled: run_eager(compiled, inst, mode))()
        regions = fx.regions()
        summary = split_summary(regions, fx.graph_breaks)
        notes = {"capture": why, "splits": split_line(summary), "thunderfx": summary, **fx.graph_breaks}
        return Acquisition(self.name, inst.name, mode, thunderfx_stages(thunder, regions, summary, inst.name, mode),
                           notes, default_stage=SPLITS, parts=[region_part(r) for r in regions])

    def default_stage(self, mode: str) -> str:
        return "thunder.trace[0]" if mode == "fwd" else "thunder.backward[0]"

    def stage_parts(self, acq: Acquisition, stage: str, view: str) -> list[str]:
        # the split's common view is its regions', in order: Thunder's traces and the FX graphs left to Inductor
        if stage == SPLITS and view == "common" and acq.parts:
            return acq.parts
        return [stage]

    def program(self, acq: Acquisition, inst: Instance) -> Program:
        return thunder_program(acq, inst)

    def stage_programs(self, acq: Acquisition, inst: Instance, program: Program) -> dict[str, Program]:
        return trace_programs(acq, program)

    # traces are numbered per compile: [0] is the acquired trace, [-1] the execution trace
    conformance_stages = ("thunder.trace[0]", "thunder.trace[-1]")

    def conformance_acquire(self, inst: Instance) -> Acquisition:
        # an op's own trace is swept: ThunderFX would hand what thunder.jit fails on to Inductor
        with capture_as("jit"):
            return self.acquire(inst, "fwd")

    def conformance_stage(self, acq: Acquisition, label: str) -> str:
        position = {"thunder.trace[0]": 0, "thunder.trace[-1]": -1}.get(label)
        if position is None:
            return label
        traces = [n for n, s in acq.stages.items() if n.startswith("thunder.trace[") and not s.backward]
        return traces[position] if traces else ""


FRONTENDS.register(ThunderFrontend())
