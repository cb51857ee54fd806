"""JAX functions whose optimized GPU HLO holds cuBLAS GEMMs with alpha, beta and epilogues,
cuDNN convolutions forward and backward, and bodies XLA's GPU passes rewrite (bf16 pooling,
argmax and top-k, a stable argsort), each read into its jax.hlo common view and interpreted
against JAX's own result. Prints one JSON line: per function, the library calls (target and
epilogue / activation), the unknown ops with their reasons, and the largest error relative to
the result's scale. Its own process (run by tests/integration/test_jax_gpu_calls.py, or directly), because
XLA_FLAGS must be set before JAX starts: Triton GEMMs off, cuBLASLt on, so that XLA writes the
library calls."""
from __future__ import annotations

import json
import os
import re
import traceback

os.environ.setdefault("XLA_FLAGS", "--xla_gpu_enable_triton_gemm=false --xla_gpu_enable_cublaslt=true")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from jax import lax  # noqa: E402

from irlens.frontends.jax.hlo.walk import hlo_to_graph  # noqa: E402
from irlens.core.interpret import interpret  # noqa: E402


def _conv(x, w, stride=1):
    return lax.conv_general_dilated(x, w, (stride, stride), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _max_pool(x):
    return lax.reduce_window(x, jnp.array(-jnp.inf, x.dtype), lax.max, (1, 3, 3, 1), (1, 2, 2, 1),
                             ((0, 0), (1, 1), (1, 1), (0, 0)))


def _pool_with_indices(x):
    """irlens' own JAX lowering of a max-pool with indices (the zoo's timm ResNet): an argmax over
    each window's elements."""
    from irlens.core.ops.spatial import max_pool

    attrs = {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "dilation": [1, 1], "ceil_mode": False}
    return max_pool.lowerings["jax"](attrs, x)


CASES = {  # name -> (function, argument shapes[, argument dtype: float32 by default])
    "dense_bias_gelu": (lambda x, w, b: jax.nn.gelu(x @ w + b, approximate=True), [(256, 512), (512, 1024), (1024,)]),
    "dense_bias_relu": (lambda x, w, b: jax.nn.relu(x @ w + b), [(256, 512), (512, 1024), (1024,)]),
    "dense_plus_matrix": (lambda x, w, c: x @ w + c, [(256, 512), (512, 1024), (256, 1024)]),
    "scaled_scores": (lambda q, k: jnp.einsum("bqd,bkd->bqk", q, k) * 0.125, [(8, 256, 64), (8, 256, 64)]),
    "conv_bias_relu": (lambda x, w, b: jax.nn.relu(_conv(x, w) + b), [(8, 32, 32, 64), (3, 3, 64, 128), (128,)]),
    "conv_grads": (jax.grad(lambda x, w: (_conv(x, w, 2) ** 2).sum(), argnums=(0, 1)),
                   [(8, 32, 32, 64), (3, 3, 64, 128)]),
    # bodies XLA's GPU passes rewrite (hlo_gpu_bodies): bf16 ops run in f32 with bf16 round trips,
    # a stable sort's tie-break on its iota
    "bf16_max_pool": (_max_pool, [(8, 32, 32, 64)], "bfloat16"),
    "bf16_max_pool_indices": (_pool_with_indices, [(8, 64, 32, 32)], "bfloat16"),
    "bf16_argmax": (lambda x: jnp.argmax(x, axis=-1), [(256, 9)], "bfloat16"),
    "bf16_top_k": (lambda x: lax.top_k(x, 4), [(256, 32)], "bfloat16"),
    "int_argsort": (lambda x: jnp.argsort(x, stable=True), [(4096,)], "int32"),
}


def _library_calls(text: str) -> list[str]:
    """Each custom call's target, with its epilogue or activation where it has one."""
    calls = []
    for line in text.splitlines():
        target = re.search(r'custom_call_target="([^"]+)"', line)
        if target:
            mode = re.search(r'"(?:epilogue|activation_mode)":"(\w+)"', line)
            calls.append(target.group(1) + (f":{mode.group(1)}" if mode else ""))
    return sorted(calls)


def _arg(rng, shape, dtype: str):
    """Floats (rounded to `dtype`), or small integers (many ties)."""
    if dtype.startswith("int"):
        return rng.integers(0, 8, shape).astype(dtype)
    return rng.standard_normal(shape).astype(np.float32).astype(jnp.dtype(dtype))


def _f64(a) -> torch.Tensor:
    """Floats in float64 (the interpretation's precision); integers and booleans as they are (their
    bitwise ops have no float64 meaning)."""
    a = np.asarray(a)
    return torch.from_numpy(np.array(a) if a.dtype.kind in "iub" else a.astype(np.float64))


def run_case(fn, shapes, dtype: str = "float32") -> dict:
    rng = np.random.default_rng(0)
    args = [_arg(rng, s, dtype) for s in shapes]
    with jax.default_matmul_precision("highest"):  # no TF32: the float64 interpretation is the reference
        compiled = jax.jit(fn).lower(*args).compile()
        want = jax.tree_util.tree_leaves(compiled(*args))
    module = compiled.runtime_executable().hlo_modules()[0]
    graph = hlo_to_graph(module, name="case")
    unknown = {f"{n.op}: {n.attrs.get('target', '')} {n.attrs.get('reason', '')}" for n in graph.nodes if n.is_unknown}
    result = {"calls": _library_calls(module.to_string()), "unknown": sorted(unknown)}
    if not unknown:
        try:
            got = interpret(graph, [_f64(a) for a in args])
        except Exception as e:  # every case is reported; a failing one with the HLO it was read from
            return {**result, "error": f"{type(e).__name__}: {e}", "hlo": module.to_string(),
                    "traceback": traceback.format_exc()[-3000:]}
        want = [_f64(w) for w in want]
        result["rel_err"] = max(float((g - w).abs().max() / max(float(w.abs().max()), 1e-30))
                                for g, w in zip(got, want, strict=True))
    return result


if __name__ == "__main__":
    print(json.dumps({"platform": jax.devices()[0].platform,
                      **{name: run_case(*case) for name, case in CASES.items()}}))
