"""`attention` and `block`, both modes, all three frontends: the ops one expects are there.

Compared at the primitive level, where every frontend's graph is lowered by the same rules:
whatever a frontend kept composite (sdpa, layer_norm, linear) or wrote out (JAX's softmax)
shows as the same matmuls, reductions and elementwise ops. The forward stage is each
frontend's main one; in fwdbwd the backward stage (JAX's `jax.grad` holds both passes).
"""
import functools

import pytest

from irlens.frontends import get_frontend
from irlens.workloads.builtin import get_workload

FRONTENDS = ("dynamo", "thunder", "jax")
BACKWARD_STAGE = {"dynamo": "aot.backward", "thunder": "thunder.backward[0]", "jax": "jax.grad"}


@functools.cache
def primitive_ops(workload: str, frontend: str, mode: str):
    fe = get_frontend(frontend)
    acq = fe.acquire(get_workload(workload).instantiate("tiny"), mode)
    stage = fe.default_stage("fwd") if mode == "fwd" else BACKWARD_STAGE[frontend]
    graph = acq.stage(stage).common("primitive")
    assert not graph.unknown_ops(), graph.unknown_ops()
    return graph.op_counts()


# (workload, mode) -> {op: at least this many}
EXPECTED = {
    # QKᵀ and PV, and the softmax between them: max, subtract, exp, sum, divide
    ("attention", "fwd"): {"matmul": 2, "amax": 1, "sub": 1, "exp": 1, "sum": 1, "div": 1},
    ("attention_manual", "fwd"): {"matmul": 2, "amax": 1, "exp": 1, "sum": 1, "div": 1, "where": 1},
    # dQ, dK, dV and dP, and the softmax backward's row sum
    ("attention", "fwdbwd"): {"matmul": 4, "sum": 1, "mul": 1},
    # two layer norms (rsqrt), QKV / attention / projection / MLP matmuls, softmax, tanh-GELU
    ("block", "fwd"): {"matmul": 6, "rsqrt": 2, "exp": 1, "amax": 1, "tanh": 1, "pow": 1, "add": 4},
    # each of the 4 linear layers' input and weight gradients, plus attention's 4
    ("block", "fwdbwd"): {"matmul": 12, "sum": 4, "mul": 8},
}


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("workload,mode", sorted(EXPECTED))
def test_expected_ops_from_every_frontend(workload, mode, frontend):
    counts = primitive_ops(workload, frontend, mode)
    missing = {op: n for op, n in EXPECTED[(workload, mode)].items() if counts.get(op, 0) < n}
    assert not missing, f"{frontend} {workload} {mode}: expected at least {missing}, got {dict(counts)}"
