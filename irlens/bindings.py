"""How a frontend's common views execute a workload: which value feeds each graph input,
which result each graph output is, and how a forward graph feeds its backward graph.

A `Program` is one or two `Step`s over a name environment. Its keys are the workload's values
(`input<i>` and the module's parameter and buffer names, as the JAX frontend names its
inputs), the results `run_eager` names (`out<i>`, `loss`, `grad:<value>`, `buffer:<name>` for
a buffer the step updates in place), and the values
that flow between the steps (`saved:<k>`, the forward's tensors kept for the backward;
`cotangent:out<i>`, d loss / d out<i>). Between a forward and a backward step the loss is
taken in torch from the forward's outputs (the workload's loss), as autograd does in
`run_eager`: the frontends' backward graphs start from the outputs' cotangents.
A program may supply values of its own (`Program.values`: an effect token Dynamo's AOT graphs
take), which no workload holds.

    frontend  fwd                      fwdbwd
    dynamo    aot.forward (inference)  aot.forward -> aot.backward  (by AOTAutograd's descriptors)
    thunder   its final forward trace  final forward -> final backward  (saved by name)
    jax       jax.jaxpr                jax.grad (one graph: outputs, loss and gradients)

`run_program` runs a program with any executor of one step (the float64 interpreter, or a
lowering compiled by a backend), so faithfulness tests and cross cells chain graphs alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

import torch

from irlens.ir import Graph
from irlens.workload import Instance

if TYPE_CHECKING:  # the dynamo frontend imports this module
    from irlens.frontends.base import Acquisition, Stage


class NoProgram(RuntimeError):
    """An acquisition whose common views make no one program (ThunderFX's regions, each with its
    own traces, glued by Dynamo's split graph): the cross grid's cell is unavailable, saying so."""


@dataclass
class Step:
    stage: Stage
    inputs: list[str]  # environment key per graph input
    outputs: list[str | None]  # environment key per graph output (None: not kept, e.g. a gradient that is None)

    def graph(self, level: str) -> Graph:
        graph = self.stage.common(level)
        if len(graph.inputs) != len(self.inputs) or len(graph.outputs) != len(self.outputs):
            raise ValueError(f"{self.stage.name} ({level}) has {len(graph.inputs)} inputs and {len(graph.outputs)} "
                             f"outputs; its binding says {len(self.inputs)} and {len(self.outputs)}")
        return graph


@dataclass
class Program:
    frontend: str
    mode: str
    forward: Step
    backward: Step | None = None  # runs after the loss and the outputs' cotangents are known
    # values the program supplies itself, by environment key (Dynamo's effect tokens)
    values: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def steps(self) -> list[Step]:
        return [self.forward] + ([self.backward] if self.backward else [])


# Runs one step's graph: (step, graph inputs in order) -> graph outputs in order.
Executor = Callable[[Step, list], Sequence]


def workload_values(inst: Instance) -> dict[str, torch.Tensor]:
    """The values a program's graphs read: `input<i>`, parameters and buffers by their names."""
    values = {f"input{i}": t for i, t in enumerate(inst.inputs)}
    values.update({n: t.detach() for n, t in inst.module.named_buffers()})
    values.update({n: p.detach() for n, p in inst.module.named_parameters()})
    return values


def result_names(inst: Instance, mode: str, n_outputs: int) -> list[str]:
    names = [f"out{i}" for i in range(n_outputs)]
    if mode == "fwdbwd":
        names += ["loss"] + [f"grad:input{i}" for i in inst.grad_input_indices()] + [f"grad:{n}" for n in inst.params()]
    return names


def program_values(program: Program, inst: Instance) -> dict[str, torch.Tensor]:
    """Every value a program's first step may read: the workload's and the program's own."""
    return {**workload_values(inst), **program.values}


def run_program(program: Program, inst: Instance, execute: Executor) -> dict:
    """Run `program` on the instance's weights and inputs; returns its results by name, as `run_eager` names them."""
    env = program_values(program, inst)
    _run_step(program.forward, execute, env)
    n_outputs = sum(1 for k in env if k.startswith("out") and k[3:].isdigit())
    if program.backward is not None:
        outs = [env[f"out{i}"] for i in range(n_outputs)]
        loss, cotangents = loss_and_cotangents(inst, outs)
        env["loss"] = loss
        env.update({f"cotangent:out{i}": c for i, c in enumerate(cotangents)})
        _run_step(program.backward, execute, env)
    updated = [k for k in env if k.startswith("buffer:")]  # buffers the step updated in place
    # a parameter that requires no gradient (Whisper's sinusoidal positions) gets none, as in run_eager
    frozen = {f"grad:{n}" for n, p in inst.params().items() if not p.requires_grad}
    return {k: None if k in frozen and k not in env else env[k]
            for k in result_names(inst, program.mode, n_outputs) + updated}


def _run_step(step: Step, execute: Executor, env: dict) -> None:
    missing = [k for k in step.inputs if k not in env]
    if missing:
        raise KeyError(f"{step.stage.name}: no value for {', '.join(missing)}")
    outputs = execute(step, [env[k] for k in step.inputs])
    env.update({k: v for k, v in zip(step.outputs, outputs) if k is not None})


def loss_and_cotangents(inst: Instance, outputs: list) -> tuple[torch.Tensor, list]:
    """The workload's loss of `outputs` and d loss / d output, in the outputs' dtype (torch autograd)."""
    leaves = [torch.as_tensor(o).detach().requires_grad_(True) for o in outputs]
    with torch.enable_grad():
        loss = inst.loss(tuple(leaves))
        cotangents = torch.autograd.grad(loss, leaves)
    return loss.detach(), list(cotangents)


# --- per frontend ------------------------------------------------------------------------

def program_for(acq: Acquisition, inst: Instance) -> Program:
    """The program the frontend's acquisition runs for its mode (see the module docstring)."""
    build = {"dynamo": dynamo_program, "thunder": thunder_program, "jax": jax_program}.get(acq.frontend)
    if build is None:
        raise ValueError(f"no binding for frontend {acq.frontend!r}")
    return build(acq, inst)


def stage_programs(acq: Acquisition, inst: Instance) -> dict[str, Program]:
    """Every way the acquisition's common views compute the mode's results, by the stage that
    names it: `program_for`'s program, and in fwd mode every other forward stage (Dynamo's FX
    graph, each Thunder trace), and JAX's StableHLO and optimized HLO modules (one function
    over the flattened arguments jit kept, `notes["lowered_inputs"]`)."""
    program = program_for(acq, inst)
    programs = {program.forward.stage.name: program}
    if acq.frontend == "jax":  # the lowered modules take only the arguments the function reads
        inputs = list(acq.notes["lowered_inputs"])
        for name in ("jax.stablehlo", "jax.hlo"):
            programs[name] = Program("jax", acq.mode, Step(acq.stage(name), inputs, program.forward.outputs))
        return programs
    if acq.mode != "fwd":
        return programs
    if acq.frontend == "dynamo":  # Dynamo's graph reads its inputs and returns the outputs, then the inputs it updates
        keys = acq.notes["graph_inputs"][0]
        graph = acq.stage("dynamo.fx").common()
        position = {t.name: i for i, t in enumerate(graph.inputs)}
        outputs = [k for k in program.forward.outputs if k is not None and k.startswith("out")]
        outputs += [updated_key(keys[position[name]], inst) for name in graph.updates.values()]
        programs["dynamo.fx"] = Program("dynamo", "fwd", Step(acq.stage("dynamo.fx"), keys, outputs))
    if acq.frontend == "thunder":
        keys = dict(zip((t.name for t in program.forward.stage.common().inputs), program.forward.inputs))
        n_out = len([k for k in program.forward.outputs if k is not None])
        for stage in acq.stages.values():
            graph = stage.common()
            outputs = [f"out{i}" if i < n_out else None for i in range(len(graph.outputs))]
            programs.setdefault(stage.name, Program("thunder", "fwd", Step(stage, [keys[t.name] for t in graph.inputs], outputs)))
    return programs


def value_keys(tensors: Sequence, inst: Instance) -> list[str]:
    """Which workload value each tensor is: parameters and buffers by identity, inputs by value
    (a frontend calls the function on copies of the inputs)."""
    named = {id(t): n for n, t in [*inst.module.named_parameters(), *inst.module.named_buffers()]}
    free = list(range(len(inst.inputs)))
    keys = []
    for t in tensors:
        if id(t) in named:
            keys.append(named[id(t)])
            continue
        i = next((i for i in free if _same(t, inst.inputs[i])), None)
        if i is None:
            raise ValueError(f"a graph input ({tuple(t.shape)}, {t.dtype}) is no parameter, buffer or input of the workload")
        free.remove(i)
        keys.append(f"input{i}")
    return keys


def _same(t, x) -> bool:
    return (isinstance(x, torch.Tensor) and t.shape == x.shape and t.dtype == x.dtype
            and torch.equal(t.detach().cpu(), x.detach().cpu()))


def dynamo_program(acq: Acquisition, inst: Instance) -> Program:
    """AOTAutograd's graphs of the first Dynamo graph, bound by what AOTAutograd says each of
    their inputs and outputs is (`notes["roles"]`, from its descriptors; not by position). The
    forward reads the Dynamo graph's inputs (placeholders in first-use order,
    `notes["graph_inputs"]`) and an effect token per kind of side effect it orders (the program
    supplies it: the empty tensor AOTAutograd's runtime passes); it returns the tokens again, the
    new values of the inputs it updates in place, the outputs, then the tensors saved for the
    backward. The backward takes those and one cotangent per output, and returns one gradient
    (or None) per Dynamo graph input."""
    if acq.notes.get("graphs", 1) != 1:
        from irlens.frontends.base import Unavailable

        reasons = "; ".join(acq.notes.get("break_reasons") or [])
        raise Unavailable(f"{acq.workload}: Dynamo made {acq.notes['graphs']} graphs (graph breaks"
                          f"{': ' + reasons if reasons else ''}); a program runs one")
    keys = acq.notes["graph_inputs"][0]
    key_of = {"arg": keys.__getitem__, "mutated": lambda i: updated_key(keys[i], inst), "out": "out{}".format,
              "saved": "saved:{}".format,
              "cotangent": "cotangent:out{}".format, "grad": lambda i: _grad_key(keys[i], inst), "none": lambda i: None}
    tokens: dict[str, torch.Tensor] = {}

    def key(stage: str, side: str, j: int, role) -> str | None:
        if role.kind == "token":  # fed a fresh token; the one a graph returns is no result
            if side == "output":
                return None
            name = f"token:{role.what.strip('_')}"
            tokens[name] = _effect_token(inst)
            return name
        if role.kind not in key_of:
            raise ValueError(f"{acq.workload}: {stage} {side} {j} is {role}, which irlens does not bind")
        return key_of[role.kind](role.index)

    def step(stage: str) -> Step:
        inputs, outputs = acq.notes["roles"][stage]
        return Step(acq.stage(stage), [key(stage, "input", j, r) for j, r in enumerate(inputs)],
                    [key(stage, "output", j, r) for j, r in enumerate(outputs)])

    fwd = step("aot.forward")
    if acq.mode == "fwd":
        return Program("dynamo", "fwd", fwd, values=tokens)
    bwd = step("aot.backward")
    return Program("dynamo", "fwdbwd", fwd, bwd, values=tokens)


def _effect_token(inst: Instance) -> torch.Tensor:
    from irlens.frontends.dynamo.aot import new_token

    return new_token().to(inst.device)


def updated_key(key: str, inst: Instance) -> str:
    """The result an in-place update of value `key` is: `buffer:<name>` for a buffer (compared
    like an output); an input's new value replaces it."""
    return f"buffer:{key}" if key in inst.buffers() else key


def _grad_key(key: str, inst: Instance) -> str | None:
    """The result a gradient of value `key` is, None where the workload reports none (buffers)."""
    wanted = {f"input{i}" for i in inst.grad_input_indices()} | set(inst.params())
    return f"grad:{key}" if key in wanted else None


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
    grad_of = {g.name: _grad_key(arg_keys[a], inst) for a, g in zip(args, returned) if g is not None}
    bwd = Step(backward, binputs, [grad_of.get(o) if isinstance(o, str) else None for o in bgraph.outputs])
    return Program("thunder", "fwdbwd", fwd, bwd)


def jax_program(acq: Acquisition, inst: Instance) -> Program:
    """One jaxpr over the flattened (params, inputs): `notes["inputs"]` names its inputs,
    `notes["outputs"]` its results (in fwdbwd: outputs, loss and gradients)."""
    stage = acq.stage("jax.grad" if acq.mode == "fwdbwd" else "jax.jaxpr")
    return Program("jax", acq.mode, Step(stage, list(acq.notes["inputs"]), list(acq.notes["outputs"])))


def dynamo_input_keys(example_inputs: list[list], inst: Instance) -> list[list[str] | None]:
    """`value_keys` of each Dynamo graph's example inputs; None for a graph whose inputs are not
    all workload values (a graph after a break reads intermediate tensors)."""
    keys = []
    for tensors in example_inputs:
        try:
            keys.append(value_keys(tensors, inst))
        except ValueError:
            keys.append(None)
    return keys
