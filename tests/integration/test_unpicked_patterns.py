"""What models outside the zoo (docs/results/zoo-unpicked/) found, each as a small module or row
that failed (or was reported) the way the real model was before its fix: grouped-query attention's
common view names what it computes, computes it in float64 as torch does, and XLA runs it; a
wrapper's mixed train/eval mode, a stack's own crash and a failure in generated code are reported
as what they are."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from irlens.backends.base import Backend
from irlens.errors import CaptureFailed
from irlens.frontends import get_frontend
from irlens.frontends.base import Availability
from irlens.core.interpret import interpret
from irlens.matrix import run_matrix
from irlens.workloads.workload import MODES, Workload


class GroupedQueryAttention(torch.nn.Module):
    """transformers' SDPA attention with fewer key/value heads and no mask (StableLM, Starcoder2):
    it passes `enable_gqa=True`, and on the CPU Dynamo's AOT graph holds the flash kernel, which
    has no such argument and takes the 2 key/value heads as grouped by their shape alone."""

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


GQA = Workload.from_module("gqa_flash", GroupedQueryAttention(), ((2, 4, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8)))


def ref(name: str) -> str:
    return f"{__file__}:{name}"


def test_the_cpu_flash_kernels_grouped_heads_are_grouped_in_the_common_view():
    inst = GQA.instantiate("tiny")
    acq = get_frontend("dynamo").acquire(inst, "fwdbwd")
    fwd, bwd = acq.stage("aot.forward"), acq.stage("aot.backward")
    assert "_scaled_dot_product_flash_attention_for_cpu" in fwd.native_text
    (sdpa,) = [n for n in fwd.common().nodes if n.op == "sdpa"]
    (grad,) = [n for n in bwd.common().nodes if n.op == "sdpa_backward"]
    assert sdpa.attrs["enable_gqa"] is True and grad.attrs["enable_gqa"] is True
    assert [o.shape for o in grad.outputs[:3]] == [(2, 4, 6, 8), (2, 2, 6, 8), (2, 2, 6, 8)]
    # the forward's primitive view (what XLA runs) computes torch's float64 attention; the backward's
    # gradients are checked against float64 by the xla rows below
    q, k, v = (t.double() for t in inst.inputs)
    want = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    got = interpret(fwd.common("primitive"), [q, k, v])[0]
    assert torch.allclose(got, want, rtol=1e-12, atol=1e-12)
    assert not bwd.common("primitive").unknown_ops()


@pytest.mark.parametrize("mode", MODES)
def test_xla_runs_grouped_query_attention_via_dynamo(mode):
    doc = run_matrix([ref("GQA")], ["eager", "xla"], [mode], progress=False, isolate=False).to_json()
    for row in doc["rows"]:
        assert row["status"] == "ok", f"{row['backend']}: {row['reason']}\n{row['detail']}"
    (xla,) = [r for r in doc["rows"] if r["backend"] == "xla"]
    assert xla["via"] == "dynamo" and xla["coverage"]["unknown"] == []
    assert ({"grad:input1", "grad:input2"} <= set(xla["per_result"])) == (mode == "fwdbwd")


class _Wrapper(torch.nn.Module):
    """The usual user wrapper (docs/results/zoo-unpicked/models.py): built in train mode, around a
    model put in eval mode."""

    def __init__(self):
        super().__init__()
        self.model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5)).eval()

    def forward(self, x):
        return self.model(x)


WRAPPED = Workload.from_module("wrapped", _Wrapper(), ((2, 4),))


def test_a_wrapper_in_train_mode_around_an_eval_model_is_mixed_not_train():
    from irlens.matrix.table import format_table
    from irlens.reporting.zoo_page import zoo_markdown

    inst = WRAPPED.instantiate("tiny")
    assert inst.module_mode == "mixed" and not inst.module.model.training  # kept as handed over
    doc = run_matrix([ref("WRAPPED")], ["eager"], ["fwd"], progress=False, isolate=False)
    assert doc.rows[0].status == "ok" and doc.rows[0].module_mode == "mixed"  # dropout off: eval inside
    for text in (format_table(doc), zoo_markdown(doc)):
        assert "submodules in train mode and in eval mode, each run in its own (as handed over): wrapped" in text
        assert "in train mode (BatchNorm" not in text


class _CrashingStack(Backend):
    """A backend whose own stack tries the workload and crashes (as Thunder's torchcompile executor
    did on ghostnet's backward), and which has no lowering to run instead."""

    name, frontend, description = "test-crashing-stack", "thunder", "test-only: its stack raises, no lowering"

    def availability(self, device: str) -> Availability:
        return Availability(True)

    def compile(self, inst, mode: str):
        try:
            _compile_region()
        except Exception as e:
            raise CaptureFailed(f"Thunder cannot take {inst.name}: ThunderFX failed too ({e})") from e


def _compile_region():
    raise RuntimeError("failed to find name in frame builtins")


CRASHING = _CrashingStack()


def test_a_stack_that_tried_and_failed_is_a_failure_not_unavailable():
    (row,) = run_matrix([ref("WRAPPED")], [ref("CRASHING")], ["fwd"], progress=False, isolate=False).rows
    assert (row.status, row.phase) == ("failed", "acquire")
    assert row.reason.startswith("acquire: CaptureFailed: Thunder cannot take wrapped: ThunderFX failed too")
    # the detail is the stack's own traceback: its innermost frame is where it failed
    assert row.detail.rstrip().endswith("RuntimeError: failed to find name in frame builtins")
    assert "in _compile_region" in row.detail


def test_a_failure_in_a_compilers_generated_code_is_upstreams():
    """ghostnet's fwd+bwd through Thunder: the last frame is Thunder's generated region, which has
    no file; the innermost frame with one (the code that ran it) is upstream's."""
    from irlens.matrix.row import Row
    from irlens.reporting.zoo_page import upstream_of

    detail = ('Traceback (most recent call last):\n'
              '  File "/v/lib/python3.11/site-packages/thunder/executors/torchex.py", line 169, in no_autocast_fn\n'
              '  File "/v/lib/python3.11/site-packages/torch/_dynamo/eval_frame.py", line 1177, in compile_wrapper\n'
              'torch._dynamo.exc.Unsupported: Attempted to read undefined local variable\n'
              'from user code:\n   File "thunder.to_be_compiled_11", line 1038, in to_be_compiled\n')
    row = Row("ghostnet", "fwdbwd", "thunder+torchcompile", "thunder", status="failed", detail=detail)
    assert upstream_of(row) == "torch"
    assert upstream_of(Row("m", "fwd", "xla", "dynamo", status="failed",
                           detail=detail + '  File "/w/irlens/core/ops/core.py", line 3\n')) is None


def test_the_zoos_reproducers_say_how_to_make_one_for_a_users_workload(tmp_path):
    from irlens.matrix import Document
    from irlens.matrix.row import Row
    from irlens.zoo.repro import write_repros

    row = Row("ghostnet", "fwdbwd", "thunder+torchcompile", "thunder", status="failed", reason="acquire: boom",
              detail='Traceback (most recent call last):\n  File "/v/lib/python3.11/site-packages/thunder/core/x.py", line 1, in f\n')
    (why,) = write_repros(Document("compare", [row], "cpu"), tmp_path, "cpu").values()
    assert why == ("not written: 'ghostnet' is not a built-in workload (a user's file): irlens repro "
                   "path/to/file.py:ghostnet --backend thunder+torchcompile --mode fwdbwd writes it")
