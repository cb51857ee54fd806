"""The corpus of ordinary model code (`workload_names(corpus=True)`: llama's RMSNorm, RoPE, SwiGLU
and block, GQA attention, cross-entropy with integer targets, embedding, masked attention, top-k
MoE routing, Mamba's causal conv, a pre-norm residual) through every frontend and mode, at both
levels of the common view: no `unknown:` op in any stage, and the float64 interpreter reproduces
the workload's outputs, loss and gradients from every program (as tests/integration/test_faithfulness.py
checks the built-ins); then every CPU backend row of one `irlens.compare` over the whole corpus
is ok. Acquisitions are made once per test process."""
from __future__ import annotations


import pytest

import irlens.matrix as cmp
from irlens.frontends.bindings import program_for, run_program, stage_programs
from irlens.core.interpret import Uninterpretable, interpret
from irlens.numerics.verdicts import compare_results
from irlens.workloads.builtin import get_workload, workload_names
from irlens.workloads.workload import MODES

from tests.support.workload_cache import acquired, instance, reference

CORPUS = workload_names(corpus=True)
FRONTENDS = ("dynamo", "thunder", "jax")
LEVELS = ("composite", "primitive")
# as in test_faithfulness: torch's graphs hold float64-exact constants (only reassociation
# differs); jaxprs hold their literals as float32 constants, which shows at ~1e-8.
TOLERANCE = {"dynamo": 1e-12, "thunder": 1e-12, "jax": 1e-7}
CPU_BACKENDS = ("eager", "inductor", "thunder+torchcompile", "xla")
# parts of llama_block (its RMSNorm, RoPE, SwiGLU and GQA attention) or of the built-in workloads that
# other files test (minigpt's embeddings, block's LayerNorm and Linear): their own rows run in the slow tier
SUBSUMED = {"llama_rmsnorm", "llama_rope", "llama_swiglu", "gqa_attention", "embedding", "layernorm_linear"}
TIERED = [  # the whole corpus, the SUBSUMED ones marked slow
    pytest.param(n, marks=pytest.mark.slow) if n in SUBSUMED else n for n in CORPUS]


def test_the_corpus_is_registered_apart_from_the_default_workloads():
    assert len(CORPUS) >= 10 and not set(CORPUS) & set(workload_names())
    for name in CORPUS:
        wl = get_workload(name)
        assert wl.jax is not None and set(wl.presets) == {"tiny", "bench"} and wl.description


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", TIERED)
def test_no_unknown_ops(name, mode, frontend):
    """Every stage the frontend captured, at both levels."""
    acq = acquired(name, mode, frontend)
    unknown = {}
    for stage in acq.stages.values():
        for level in LEVELS:
            ops = stage.common(level).unknown_ops()
            if ops:
                unknown[f"{stage.name} ({level})"] = dict(ops)
    assert not unknown, unknown


@pytest.mark.parametrize("frontend", FRONTENDS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", TIERED)
def test_interpreter_reproduces_the_workload(name, mode, frontend):
    """Each program (fwd: every forward stage; fwdbwd: forward -> loss -> backward), at both levels."""
    acq = acquired(name, mode, frontend)
    inst = instance(name)
    programs = stage_programs(acq, inst)
    assert program_for(acq, inst).forward.stage.name in programs
    problems = []
    for stage, program in programs.items():
        for level in LEVELS:
            try:
                got = run_program(program, inst, lambda step, inputs: interpret(step.graph(level), inputs))
            except Uninterpretable as e:
                problems.append(f"{stage} ({level}): {e}")
                continue
            cmp_ = compare_results(got, reference(name, mode), TOLERANCE[frontend])
            if not cmp_.ok:
                problems.append(f"{stage} ({level}): {cmp_.reason}")
    assert not problems, "\n".join(problems)


def test_thunder_programs_bind_arguments_by_the_prologue():
    """Thunder names a Conv1d's weight `weight` (after `_conv_forward`'s argument), not `t_conv1d_weight`:
    which value each trace argument holds is read from the prologue that unpacks it."""
    acq = acquired("mamba_conv", "fwd", "thunder")
    program = program_for(acq, instance("mamba_conv"))
    names = [t.name for t in program.forward.stage.common().inputs]
    bound = dict(zip(names, program.forward.inputs))
    assert bound["weight"] == "conv1d.weight" and bound["bias"] == "conv1d.bias"
    assert bound["t_in_proj_weight"] == "in_proj.weight" and bound["hidden_states"] == "input0"
    assert sorted(bound.values()) == sorted([*instance("mamba_conv").params(), "input0"])


@pytest.fixture(scope="module")
def compare_rows():
    """A corpus workload's rows over every CPU backend and both modes, from one in-process
    compare, computed when its first test asks (so that the workloads deselected cost nothing)."""
    rows: dict[tuple[str, str, str], dict] = {}

    def row(name: str, backend: str, mode: str) -> dict:
        if (name, backend, mode) not in rows:
            doc = cmp.run_matrix([name], list(CPU_BACKENDS), MODES, device="cpu", preset="tiny", progress=False,
                                 isolate=False).to_json()
            rows.update({(r["workload"], r["backend"], r["mode"]): r for r in doc["rows"]})
        return rows[name, backend, mode]

    return row


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", CPU_BACKENDS)
# the slow tier (test_compare_matrix.py checks compare's rows on the built-ins in the default one)
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) for n in CORPUS])
def test_every_cpu_backend_row_is_ok(compare_rows, name, backend, mode):
    row = compare_rows(name, backend, mode)
    if row["status"] == "unavailable":
        assert row["reason"]
        pytest.skip(f"{backend} unavailable: {row['reason']}")
    assert row["status"] == "ok", f"{row['reason']}\n{row['detail']}"
    assert 0 <= row["max_rel_err"] <= row["tol"]
    if backend != "eager":
        assert row["kernels"], "a compiling backend reports the kernels it ran"
        coverage = row["coverage"]
        if coverage is not None:  # each compute node of the common view is in exactly one kernel
            assert coverage["uncovered"] == [] and coverage["duplicates"] == [], coverage
