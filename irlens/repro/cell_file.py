"""The standalone file of a whole cell: the workload's model code and weights, the backend's path.

The model is Dynamo's graph of the workload's module (`torch_source.capture`; a GraphNet sample's
own model.py instead, `irlens.repro.graphnet_sample`), once in the cell's dtype and once cast to
float64 (the reference irlens computes runs the module in float64: where the code names a dtype
the two differ, and both are written). In fwd+bwd the workload's loss is captured the same way,
from the module's outputs. The xla path writes the JAX twin's program
(`irlens.workloads.builtin.jax_run.results_fn`, what the xla backend jits) as source.
"""
from __future__ import annotations

from typing import Callable

import torch

from irlens.frontends.bindings import value_keys, workload_values
from irlens.matrix.spec import CellSpec
from irlens.numerics.verdicts import judged_bounds, tolerance
from irlens.repro.emit import JaxSection, ReproFile, TorchModel
from irlens.backends.repro_path import ReproPath
from irlens.repro.tensors import EMBED_MAX
from irlens.repro.torch_source import TorchFunction, capture
from irlens.workloads.graphnet import is_graphnet
from irlens.workloads.workload import Instance

# the module of an instance as code: (a function `name` of the workload's values, what the module returned)
ModelCode = Callable[[Instance, str, bool], tuple[TorchFunction, tuple]]


def dynamo_code(inst: Instance, name: str, grad: bool) -> tuple[TorchFunction, tuple]:
    """Dynamo's graph of the module (one graph: NotExpressible where it makes several)."""
    return capture(inst.module, inst.fresh_inputs(grad), name, lambda ex: value_keys(ex, inst), grad)


def torch_model(inst: Instance, mode: str, code: ModelCode = dynamo_code) -> tuple[TorchModel, dict[str, torch.Tensor]]:
    """The module (and in fwd+bwd its loss) as torch code, and the values the code reads by key."""
    grad = mode == "fwdbwd"
    forward, outs = code(inst, "model", grad)
    values = workload_values(inst)
    ref = inst.cast("float64")
    reference, outs64 = code(ref, "model_float64", grad)
    reference = forward.or_same(reference)
    names = [f"out{i}" for i in range(len(outs))]
    model = TorchModel(forward, reference, names)
    if grad:
        model.loss = _loss(inst, outs, names, "loss")
        model.loss_reference = model.loss.or_same(_loss(ref, outs64, names, "loss_float64"))
    functions = [forward, reference, *([model.loss, model.loss_reference] if grad else [])]
    keys = {k for f in functions for k in f.args}
    if grad:
        keys |= {f"input{i}" for i in inst.grad_input_indices()} | set(inst.params())
    values = {k: v for k, v in values.items() if k in keys}
    for f in functions:  # what the graphs read as attributes (the zoo loss's projections)
        values.update(f.constant_values())
    return model, values


def _loss(inst: Instance, outs: tuple, names: list[str], fn_name: str) -> TorchFunction:
    leaves = [o.detach().requires_grad_(True) for o in outs]
    by_id = {id(t): n for t, n in zip(leaves, names)}
    loss, _ = capture(lambda *o: inst.workload.loss(o), leaves, fn_name, lambda ex: [by_id[id(t)] for t in ex], True)
    return loss


def jax_section(inst: Instance, mode: str) -> JaxSection:
    """The twin's program for `mode` as source over flat arguments (parameters by name, inputs)."""
    import jax

    from irlens.frontends.jax.frontend import MATMUL_PRECISION, jax_program
    from irlens.repro.jax_source import jaxpr_source

    program = jax_program(inst, mode)
    flat, tree = jax.tree_util.tree_flatten(program.args)

    def flat_fn(*leaves):
        return jax.tree_util.tree_leaves(program.fn(*jax.tree_util.tree_unflatten(tree, leaves)))

    with jax.default_matmul_precision(MATMUL_PRECISION):
        closed = jax.make_jaxpr(flat_fn)(*flat)
    return JaxSection(jaxpr_source(closed, "jax_program", program.input_names), list(program.input_names),
                      [str(v.aval.dtype) for v in closed.jaxpr.invars], list(program.output_names))


def cell_file(spec: CellSpec, path: ReproPath, notes: list[str], embed_max: int = EMBED_MAX,
              timed: bool = False) -> ReproFile:
    from irlens.repro.graphnet_sample import describe, sample_code, sample_draws
    from irlens.workloads.builtin import resolve_workload

    inst = resolve_workload(spec.workload).instantiate(spec.preset, spec.dtype, spec.device)
    sample = is_graphnet(inst.workload.name)
    model, values = torch_model(inst, spec.mode, sample_code if sample else dynamo_code)
    grads = [f"input{i}" for i in inst.grad_input_indices()] + list(inst.params()) if spec.mode == "fwdbwd" else []
    jax = jax_section(inst, spec.mode) if path.kind == "jax" else None
    if jax is not None:
        workload = workload_values(inst)
        values.update({k: workload[k] for k in jax.args})
    what = describe(inst, spec.mode) if sample else (
        "The model: Dynamo's FX graph of the workload's module (torch-level calls), its parameters and "
        "inputs as arguments" + ("; the workload's loss likewise." if spec.mode == "fwdbwd" else "."))
    if jax is not None:
        what += (" The backend runs the workload's JAX twin, written out as a jaxpr (one primitive per line); "
                 "the torch model computes the float64 reference, as irlens's reference runs the torch module.")
    return ReproFile(title=f"irlens repro: {spec.label(inst.dtype, inst.name, path.name)}", notes=[*notes, what], device=spec.device,
                     dtype=inst.dtype, tol=tolerance(inst.dtype, spec.mode), values=values, model=model, path=path,
                     grads=grads, jax=jax, embed_max=embed_max, timed=timed, allowed=cell_bounds(spec, inst.dtype),
                     draws=sample_draws(inst) if sample else {})


def cell_bounds(spec: CellSpec, dtype: str) -> dict[str, tuple[float, str]]:
    """Each result's bound as `irlens compare` judges the cell: from the same reference (eager's
    own error in the cell's dtype beside float64, the loss's condition; irlens.matrix.references),
    through `irlens.numerics.verdicts.judged_bounds` (an ill-conditioned result's bound is not capped)."""
    from irlens.matrix.references import compute_reference
    from irlens.workloads.builtin import resolve_workload

    ref = compute_reference(resolve_workload(spec.workload), spec.mode, spec.device, spec.preset, spec.dtype)
    _, bounds = judged_bounds(ref.results, dtype, spec.mode, ref.eager_errors, ref.conditions)
    return {name: (b.value, b.why) for name, b in bounds.items()}

