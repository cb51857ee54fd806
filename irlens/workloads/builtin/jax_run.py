"""Run a workload's JAX twin in a mode and name its results as `run_eager` does
(`out0..`, `loss`, `grad:input<i>`, `grad:<param>`), so JAX numerics compare by name."""
from __future__ import annotations

from typing import Callable

import numpy as np

from irlens.workloads.workload import MODES, Instance, as_tuple


def results_fn(inst: Instance, mode: str, fn: Callable | None = None) -> Callable:
    """A pure function `(params, inputs) -> {name: array}` for `mode`, ready for `jax.jit`.

    `fn` defaults to the workload's twin, `fn(params, *inputs)`; `params` holds the module's
    parameters and buffers by name (`inst.jax_params()`). In fwdbwd mode the gradients are taken
    w.r.t. every parameter and every floating input (`inst.grad_input_indices()`), never a buffer.
    """
    import jax

    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from: {', '.join(MODES)}")
    if inst.dtype == "float64" and not jax.config.jax_enable_x64:
        # without it JAX silently computes a float64 instance in float32
        raise ValueError("float64 in JAX needs 64-bit mode: set JAX_ENABLE_X64=1 or jax.config.update('jax_enable_x64', True)")
    fn = fn or inst.jax_fn()
    grad_idx = inst.grad_input_indices()

    def outputs(params, inputs):
        outs = as_tuple(fn(params, *inputs))
        return {f"out{i}": o for i, o in enumerate(outs)}

    if mode == "fwd":
        return outputs

    trainable = set(inst.params())

    def loss(weights, grad_inputs, buffers, inputs):
        inputs = list(inputs)
        for i, x in zip(grad_idx, grad_inputs):
            inputs[i] = x
        outs = outputs({**buffers, **weights}, inputs)
        return inst.workload.loss(tuple(outs.values())), outs

    def fwdbwd(params, inputs):
        weights = {k: v for k, v in params.items() if k in trainable}
        buffers = {k: v for k, v in params.items() if k not in trainable}
        grad_inputs = [inputs[i] for i in grad_idx]
        (value, outs), (grad_params, grad_in) = jax.value_and_grad(loss, argnums=(0, 1), has_aux=True)(
            weights, grad_inputs, buffers, inputs)
        results = dict(outs, loss=value)
        results.update({f"grad:input{i}": g for i, g in zip(grad_idx, grad_in)})
        results.update({f"grad:{name}": g for name, g in grad_params.items()})
        return results

    return fwdbwd


def jax_results(inst: Instance, mode: str, fn: Callable | None = None) -> dict[str, np.ndarray]:
    """Run the twin (eagerly, op by op) on the instance's weights and inputs; numpy results."""
    results = results_fn(inst, mode, fn)(inst.jax_params(), inst.jax_inputs())
    return {k: np.asarray(v) for k, v in results.items()}
