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
              several graphs (graph breaks): the workload under Dynamo, each graph's step where it runs
    thunder   its final forward trace  final forward -> final backward  (saved by name)
    jax       jax.jaxpr                jax.grad (one graph: outputs, loss and gradients)

`run_program` runs a program with any executor of one step (the float64 interpreter, or a
lowering compiled by a backend), so faithfulness tests and cross cells chain graphs alike.
"""
from __future__ import annotations

from typing import Callable, Sequence

import torch

from irlens.frontends.base import FRONTENDS, Acquisition, Program, Step
from irlens.workloads.workload import Instance


# Runs one step's graph: (step, graph inputs in order) -> graph outputs in order.
Executor = Callable[[Step, list], Sequence]

# a value a forward graph returns that is no result: a tensor the module stores (Dynamo's graph
# returns what its bytecode puts in a cache); the loss does not read it, so its cotangent is zero
EFFECT = "effect:"


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
    if program.runs is not None:  # several graphs with code between them: the program runs the workload itself
        return program.runs(inst, execute)
    env = program_values(program, inst)
    _run_step(program.forward, execute, env)
    n_outputs = output_count(env)
    if program.backward is not None:
        add_loss_and_cotangents(inst, env)
        _run_step(program.backward, execute, env)
    updated = [k for k in env if k.startswith("buffer:")]  # buffers the step updated in place
    # a parameter that requires no gradient (Whisper's sinusoidal positions) gets none, as in run_eager
    frozen = {f"grad:{n}" for n, p in inst.params().items() if not p.requires_grad}
    return {k: None if k in frozen and k not in env else env[k]
            for k in result_names(inst, program.mode, n_outputs) + updated}


def output_count(env: dict) -> int:
    return sum(1 for k in env if k.startswith("out") and k[3:].isdigit())


def add_loss_and_cotangents(inst: Instance, env: dict) -> None:
    """After a forward step: the loss of its outputs and each output's cotangent, a value that
    is no result (`EFFECT`) zero's, as the backward step reads them."""
    loss, cotangents = loss_and_cotangents(inst, [env[f"out{i}"] for i in range(output_count(env))])
    env["loss"] = loss
    env.update({f"cotangent:out{i}": c for i, c in enumerate(cotangents)})
    env.update({f"cotangent:{k}": torch.zeros_like(v) for k, v in list(env.items()) if k.startswith(EFFECT)})


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


# --- dispatch to the acquisition's frontend ------------------------------------------------

def program_for(acq: Acquisition, inst: Instance) -> Program:
    """The program the frontend's acquisition runs for its mode (see the module docstring)."""
    return FRONTENDS.get(acq.frontend).program(acq, inst)


def stage_programs(acq: Acquisition, inst: Instance) -> dict[str, Program]:
    """Every way the acquisition's common views compute the mode's results, by the stage that
    names it: `program_for`'s program, then those its frontend adds (`Frontend.stage_programs`:
    in fwd mode Dynamo's FX graph and each Thunder trace; JAX's StableHLO and optimized HLO
    modules in either mode)."""
    program = program_for(acq, inst)
    programs = {program.forward.stage.name: program}
    for name, other in FRONTENDS.get(acq.frontend).stage_programs(acq, inst, program).items():
        programs.setdefault(name, other)
    return programs


# --- what the frontends' bindings share --------------------------------------------------

def module_tensors(inst: Instance) -> dict[str, torch.Tensor]:
    """The module's parameters and buffers by name, the tensors themselves (identity matters)."""
    return dict([*inst.module.named_parameters(), *inst.module.named_buffers()])


def value_keys(tensors: Sequence, inst: Instance, module: dict[str, torch.Tensor] | None = None) -> list[str]:
    """Which workload value each tensor is: parameters and buffers by identity (those of `module`,
    taken before a call that reassigns a buffer; by default the module's now), inputs by value (a
    frontend calls the function on copies of the inputs)."""
    named = {id(t): n for n, t in (module or module_tensors(inst)).items()}
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


def updated_key(key: str, inst: Instance) -> str:
    """The result an in-place update of value `key` is: `buffer:<name>` for a buffer (compared
    like an output); an input's new value replaces it."""
    return f"buffer:{key}" if key in inst.buffers() else key


def grad_key(key: str, inst: Instance) -> str | None:
    """The result a gradient of value `key` is, None where the workload reports none (buffers)."""
    wanted = {f"input{i}" for i in inst.grad_input_indices()} | set(inst.params())
    return f"grad:{key}" if key in wanted else None
