"""How Thunder's traces bind to the workload: the final forward trace's arguments by Thunder's
prologue, and the final backward trace by the names of what the forward saved."""
from __future__ import annotations

from irlens.frontends.base import Acquisition, NoProgram, Program, Step
from irlens.frontends.bindings import grad_key
from irlens.workloads.workload import Instance


def thunder_program(acq: Acquisition, inst: Instance) -> Program:
    """The final forward trace, and in fwdbwd the final backward trace. Which workload value
    each forward argument holds comes from Thunder's prologue (`notes["arg_values"]`); the forward
    returns the outputs, then the tensors saved for the backward, which the backward reads by
    name; the backward's other inputs are the cotangents, and it returns one gradient (or None)
    per forward argument. A ThunderFX acquisition has none (`NoProgram`)."""
    if "thunderfx" in acq.notes:
        summary = acq.notes["thunderfx"]
        raise NoProgram(f"ThunderFX split {acq.workload} into {summary['thunder_regions'] + summary['inductor_regions']}"
                        f" regions ({summary['thunder_regions']} Thunder's, {summary['inductor_regions']} Inductor's); "
                        "irlens runs one thunder.jit trace as a program (" + acq.notes["capture"] + ")")
    forward_stages = [s for s in acq.stages.values() if not s.backward]
    acquired, final = forward_stages[0], forward_stages[-1]
    args = [a.name for a in final.native.args]
    unbound = [a for a in args if a not in acq.notes["arg_values"]]
    if unbound:
        raise ValueError(f"{acq.workload}: Thunder's prologue does not unpack the trace arguments {unbound} "
                         "from the inputs, parameters or buffers")
    arg_keys = {a: acq.notes["arg_values"][a] for a in args}
    n_out = len(acquired.common().outputs)
    graph = final.common()
    inputs = [arg_keys[t.name] for t in graph.inputs]
    # what the backward may read by name: the forward's arguments and outputs (an output it
    # saves is returned once)
    known = dict(arg_keys)
    for i, name in enumerate(graph.outputs):
        known.setdefault(name, f"out{i}" if i < n_out else f"saved:{name}")
    # an output may be an argument returned as it is (x.float() of a float32 x); past the
    # outputs, an argument the backward reads is not a value of its own
    fwd = Step(final, inputs, [f"out{i}" if i < n_out else None if name in arg_keys else known[name]
                               for i, name in enumerate(graph.outputs)])
    if acq.mode == "fwd":
        return Program("thunder", "fwd", fwd)
    backward = [s for s in acq.stages.values() if s.backward][-1]
    bgraph = backward.common()
    cotangents = iter(f"cotangent:out{i}" for i in range(n_out))
    binputs = [known[t.name] if t.name in known else next(cotangents) for t in bgraph.inputs]
    returned = backward.native.bound_symbols[-1].args[0]  # one gradient (or None) per forward argument
    grad_of = {g.name: grad_key(arg_keys[a], inst) for a, g in zip(args, returned) if g is not None}
    bwd = Step(backward, binputs, [grad_of.get(o) if isinstance(o, str) else None for o in bgraph.outputs])
    return Program("thunder", "fwdbwd", fwd, bwd)




def trace_programs(acq: Acquisition, program: Program) -> dict[str, Program]:
    """In fwd mode, every forward trace as a program of its own: it reads the final trace's
    arguments by name and returns the outputs first."""
    if acq.mode != "fwd":
        return {}
    keys = dict(zip((t.name for t in program.forward.stage.common().inputs), program.forward.inputs))
    n_out = len([k for k in program.forward.outputs if k is not None])
    programs = {}
    for stage in acq.stages.values():
        graph = stage.common()
        outputs = [f"out{i}" if i < n_out else None for i in range(len(graph.outputs))]
        programs[stage.name] = Program("thunder", "fwd", Step(stage, [keys[t.name] for t in graph.inputs], outputs))
    return programs
