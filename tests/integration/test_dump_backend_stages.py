"""`irlens dump --backend`: each backend's own IRs (fusion IR, generated code) as stages."""
import re

import pytest
import torch

from irlens.backends import get_backend
from irlens.cli import main
from irlens.workloads.builtin import get_workload

_STAGES: dict = {}


def stages(backend: str, workload: str, mode: str = "fwd", device: str = "cpu") -> dict:
    """Compiled once per test process: Inductor's debug capture bypasses its graph cache."""
    key = (backend, workload, mode, device)
    if key not in _STAGES:
        inst = get_workload(workload).instantiate("tiny", None, device)
        _STAGES[key] = get_backend(backend).stages(inst, mode)
    return _STAGES[key]


def scheduler_nodes(ir: str) -> dict[str, str]:
    """{node name: node class} of every node Inductor's IR dump describes (fused ones list their parts too)."""
    return dict(re.findall(r"^(\w+): (\w+)\(", ir, re.M))


def top_level(nodes: dict[str, str]) -> dict[str, str]:
    """Nodes that are not parts of a fused node (a fused node is named after its parts: op1_op2)."""
    parts = {p for name, kind in nodes.items() if kind.endswith("FusedSchedulerNode") for p in name.split("_")}
    return {name: kind for name, kind in nodes.items() if name not in parts}


def defined_kernels(code: str) -> list[str]:
    return re.findall(r"^(\w+) = async_compile\.(?:cpp_pybinding|cpp|triton)\(", code, re.M)


# --- inductor ----------------------------------------------------------------------------------

def test_inductor_stages_gelu():
    st = stages("inductor", "gelu")
    assert list(st) == ["inductor.post_grad.forward", "inductor.pre_fusion.forward",
                        "inductor.post_fusion.forward", "inductor.output_code.forward"]
    assert all(s.native_text.strip() and not s.backward for s in st.values())
    # Lowering already inlines gelu's pointwise ops into one loop body: one node before and after fusion.
    pre = scheduler_nodes(st["inductor.pre_fusion.forward"].native_text)
    assert list(pre.values()) == ["SchedulerNode"]
    assert "ops.tanh(" in st["inductor.pre_fusion.forward"].native_text
    assert scheduler_nodes(st["inductor.post_fusion.forward"].native_text) == pre
    kernels = defined_kernels(st["inductor.output_code.forward"].native_text)
    assert len(kernels) == 1 and "tanh" in kernels[0]
    common = st["inductor.post_grad.forward"].common()
    assert "tanh" in {n.op for n in common.nodes}
    assert "tanh" in st["inductor.post_grad.forward"].native_text


def test_inductor_fuses_softmax_scheduler_nodes():
    st = stages("inductor", "tinyhead")
    pre = scheduler_nodes(st["inductor.pre_fusion.forward"].native_text)
    post = scheduler_nodes(st["inductor.post_fusion.forward"].native_text)
    computed = [n for n, kind in pre.items() if kind == "SchedulerNode"]
    assert len(computed) >= 3  # amax, sum, div ... each its own buffer before fusion
    assert not any(kind.endswith("FusedSchedulerNode") for kind in pre.values())
    fused = [n for n, kind in post.items() if kind.endswith("FusedSchedulerNode")]
    assert len(fused) == 1 and set(fused[0].split("_")) == set(computed)
    # the kind docs/dump.md names: the C++ backend fuses the softmax's loops over their shared outer loop
    assert post[fused[0]] == "OuterLoopFusedSchedulerNode"
    after = top_level(post)
    assert len(after) < len(pre)
    # One generated kernel per fused/computed node after fusion; the GEMM stays an extern call.
    kernels = defined_kernels(st["inductor.output_code.forward"].native_text)
    assert len(kernels) == sum(kind != "ExternKernelSchedulerNode" for kind in after.values())
    assert "extern_kernels.addmm" in st["inductor.output_code.forward"].native_text


def test_inductor_backward_stages():
    st = stages("inductor", "gelu", "fwdbwd")
    backward = [name for name, s in st.items() if s.backward]
    assert backward == ["inductor.post_grad.backward", "inductor.pre_fusion.backward",
                        "inductor.post_fusion.backward", "inductor.output_code.backward"]
    assert defined_kernels(st["inductor.output_code.backward"].native_text)


# --- xla ---------------------------------------------------------------------------------------

def entry_fusions(hlo: str) -> list[str]:
    entry = hlo[hlo.index("\nENTRY"):]
    return re.findall(r"^\s*(?:ROOT )?%(\S+) = .*? fusion\(", entry, re.M)


def test_xla_stages_gelu_one_fusion():
    st = stages("xla", "gelu")
    assert list(st) == ["xla.hlo", "xla.llvm_ir"]
    assert len(entry_fusions(st["xla.hlo"].native_text)) == 1
    assert "define " in st["xla.llvm_ir"].native_text
    assert {"tanh", "mul", "add"} <= {n.op for n in st["xla.hlo"].common().nodes}


def test_xla_llvm_ir_per_fusion_tinyhead():
    st = stages("xla", "tinyhead")
    fusions = entry_fusions(st["xla.hlo"].native_text)
    generated = [name.removeprefix("xla.llvm_ir.") for name in st if name.startswith("xla.llvm_ir.")]
    assert len(generated) >= 2 and set(generated) <= set(fusions)
    assert all(s.native_text.strip() for s in st.values())


def test_xla_dump_in_a_fresh_process_reads_xla_flags():
    """The fallback where the per-compilation dump option leaves no generated code (the GPU's PTX):
    the StableHLO compiled again by a fresh process started with XLA_FLAGS=--xla_dump_to."""
    from irlens.backends.xla.dump import dump_in_fresh_process
    from irlens.frontends.jax.frontend import jax_program, lower

    lowered = lower(jax_program(get_workload("gelu").instantiate("tiny", None, "cpu"), "fwd"))
    files, how = dump_in_fresh_process(lowered.as_text(), "cpu", 0)
    assert files and all(name.endswith(".ir-with-opt.ll") and "define " in text for name, text in files.items())
    assert how.startswith("compiled; dump: ") and ".debug_options" in how


def gelu_lowered():
    from irlens.frontends.jax.frontend import jax_program, lower

    return lower(jax_program(get_workload("gelu").instantiate("tiny"), "fwd"))


def test_xla_dump_falls_back_to_a_fresh_process_when_the_platform_code_is_missing(monkeypatch):
    import irlens.backends.xla.dump as xla_dump

    calls = []
    monkeypatch.setattr(xla_dump, "EXPECTED", {"cpu": ".ptx"})  # as on the GPU: no PTX in the folder
    monkeypatch.setattr(xla_dump, "ptx_of_executable", lambda executable: ("", "no PTX"))
    monkeypatch.setattr(xla_dump, "dump_in_fresh_process", lambda module, platform, device:
                        calls.append((platform, device)) or ({"m.ptx": ".entry"}, "ok"))
    _, files, missing = xla_dump.compile_with_dump(gelu_lowered(), "cpu")
    assert calls == [("cpu", 0)] and files == {"m.ptx": ".entry"} and missing is None


def test_xla_ptx_from_the_serialized_executable_before_a_fresh_process(monkeypatch):
    import irlens.backends.xla.dump as xla_dump

    monkeypatch.setattr(xla_dump, "EXPECTED", {"cpu": ".ptx"})
    monkeypatch.setattr(xla_dump, "ptx_of_executable", lambda executable: (PTX, "1 PTX text"))
    monkeypatch.setattr(xla_dump, "dump_in_fresh_process", lambda *a: pytest.fail("not needed"))
    compiled, files, missing = xla_dump.compile_with_dump(gelu_lowered(), "cpu")
    assert missing is None and files["executable.ptx"] == PTX
    st = xla_dump.xla_stages(compiled, files, "gelu", backward=False)
    assert st["xla.ptx"].native_text == PTX  # the one PTX file: its stage has no suffix


def test_xla_stages_say_when_the_generated_code_is_missing(monkeypatch):
    """No PTX from any source (the H200 run with jax 0.11.2): an explicit stage says what was tried."""
    import irlens.backends.xla.dump as xla_dump

    monkeypatch.setattr(xla_dump, "EXPECTED", {"cpu": ".ptx"})
    monkeypatch.setattr(xla_dump, "dump_in_fresh_process", lambda *a: ({}, "compiled; dump: 3 files (x, y, z)"))
    compiled, files, missing = xla_dump.compile_with_dump(gelu_lowered(), "cpu")
    assert "1. this process" in missing and "2. the compiled executable" in missing and "3. a fresh process" in missing
    assert ".debug_options" in missing  # what XLA wrote and the debug options it compiled with
    st = xla_dump.xla_stages(compiled, files, "gelu", backward=False, missing=missing)
    assert "xla.ptx.missing" in st and st["xla.ptx.missing"].description.startswith("NOT FOUND")
    assert "3. a fresh process" in st["xla.ptx.missing"].native_text


PTX = """//
// Generated by LLVM NVPTX Back-End
//

.version 8.7
.target sm_90a
.address_size 64

.visible .entry loop_tanh_fusion(
\t.param .u64 .ptr .align 16 loop_tanh_fusion_param_0
)
{
\tret;
}
"""


def _string_field(tag: int, text: bytes) -> bytes:
    length, varint = len(text), b""
    while True:
        byte, length = length & 0x7F, length >> 7
        varint += bytes([byte | (0x80 if length else 0)])
        if not length:
            return bytes([tag << 3 | 2]) + varint + text


@pytest.mark.parametrize("padding", [0, 200, 5000])  # one- and two-byte lengths
def test_ptx_in_a_serialized_executable(padding):
    from irlens.backends.xla.dump import ptx_in_serialized

    ptx = PTX + "// pad\n" * (padding // 8)
    shards = ptx + "\n" + ptx.replace("loop_tanh_fusion", "loop_mul_fusion")  # XLA joins shards with \n
    data = (_string_field(1, b"jit_f") + _string_field(3, shards.encode()) + _string_field(4, b"\x7fELF\x00\x01$")
            + _string_field(5, b"trailing ascii"))
    assert ptx_in_serialized(b"\x0a\x02" + data) == [shards]
    assert ptx_in_serialized(b"no ptx here") == []


def test_ptx_in_serialized_bytes_without_a_length():
    from irlens.backends.xla.dump import ptx_in_serialized

    assert ptx_in_serialized(b"\x00\x01" + PTX.encode() + b"\x00\xff") == [PTX]


# --- thunder+torchcompile --------------------------------------------------------------------------

def test_thunder_torchcompile_region_output_code():
    st = stages("thunder+torchcompile", "gelu")
    traces = [name for name in st if name.startswith("thunder.trace[")]
    regions = [name for name in st if name.startswith("inductor.output_code.forward.")]
    assert len(traces) == 1 and len(regions) == 1
    region = regions[0].rsplit(".", 1)[1]
    assert region in st[traces[0]].native_text  # the trace calls the region
    kernels = defined_kernels(st[regions[0]].native_text)
    assert len(kernels) == 1 and "tanh" in kernels[0]


# --- CLI -----------------------------------------------------------------------------------------

def test_cli_lists_and_dumps_backend_stages(capsys):
    assert main(["dump", "gelu", "--backend", "xla", "--stages"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == ["xla.hlo", "xla.llvm_ir"]
    assert main(["dump", "gelu", "--backend", "xla"]) == 0  # default: the optimized HLO
    assert "ENTRY" in capsys.readouterr().out
    assert main(["dump", "gelu", "--backend", "xla", "--view", "common"]) == 0
    assert "tanh(" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--backend", "bogus"], "unknown backend 'bogus'; choose from: eager, inductor"),
    (["--backend", "xla", "--stage", "nope"], "unknown stage 'nope'; choose from: xla.hlo, xla.llvm_ir"),
    (["--backend", "xla", "--frontend", "jax"], "exactly one of --frontend"),
    ([], "exactly one of --frontend"),
    (["--backend", "eager"], "keeps no IR stages"),
])
def test_cli_usage_errors(capsys, argv, message):
    assert main(["dump", "gelu", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the reason given without a GPU")
def test_cli_nvfuser_on_cpu_says_why(capsys):
    assert main(["dump", "gelu", "--backend", "nvfuser", "--stages"]) == 2
    assert "nvFuser needs CUDA" in capsys.readouterr().err


# --- GPU -------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_inductor_triton_asm_per_kernel():
    st = stages("inductor", "gelu", device="cuda")
    kernels = defined_kernels(st["inductor.output_code.forward"].native_text)
    assert kernels and all(k.startswith("triton_") for k in kernels)
    for kernel in kernels:
        ttir, ttgir, ptx = (st[f"triton.{ext}.forward.{kernel}"].native_text for ext in ("ttir", "ttgir", "ptx"))
        assert "tt.func" in ttir and "tt.func" in ttgir
        assert re.search(rf"\.entry {kernel}\b", ptx)


@pytest.mark.gpu
def test_nvfuser_fusion_ir_and_cuda():
    st = stages("nvfuser", "gelu", device="cuda")
    regions = [name.rsplit(".", 1)[1] for name in st if name.startswith("nvfuser.cuda.forward.")]
    assert len(regions) == 1
    region = regions[0]
    assert "fd.ops" in st[f"nvfuser.definition.forward.{region}"].native_text
    fusion_ir = st[f"nvfuser.fusion_ir.forward.{region}"].native_text
    assert "not available" not in fusion_ir and "tanh" in fusion_ir
    assert "__global__" in st[f"nvfuser.cuda.forward.{region}"].native_text


@pytest.mark.gpu
def test_xla_ptx():
    st = stages("xla", "gelu", device="cuda")
    assert "xla.ptx.missing" not in st, st["xla.ptx.missing"].native_text  # what was tried, and seen
    ptx = [s.native_text for name, s in st.items() if name.startswith("xla.ptx")]
    assert ptx and any(".entry" in text for text in ptx), list(st)
    assert len(entry_fusions(st["xla.hlo"].native_text)) == 1


def test_xla_dump_file_labels():
    from irlens.backends.xla.dump import _label

    assert _label("module_0004.jit_f.multiply_fusion_kernel_module.ir-with-opt.ll", ".ir-with-opt.ll") == "multiply_fusion"
    assert _label("module_0004.jit_f.ptx", ".ptx") == "jit_f"
    assert _label("module_1325.jit_outputs.1.ptx", ".ptx") == "jit_outputs.1"  # jax 0.11.2 on an H200


def test_xla_emitter_dumping_is_asked_for_on_gpus_only():
    import irlens.backends.xla.dump as xla_dump

    assert xla_dump.dump_options("gpu")["xla_dump_emitter_re"] == ".*"
    assert "xla_dump_emitter_re" not in xla_dump.dump_options("cpu")


_CPU_DUMP_COMPILES = """
import sys, tempfile
from irlens.backends.xla.dump import compile_with_dump
from irlens.frontends.jax.frontend import jax_program, lower
from irlens.workloads.builtin import resolve_workload

inst = resolve_workload("block").instantiate("tiny", "bfloat16", "cpu")
for _ in range(2):
    _, files, missing = compile_with_dump(lower(jax_program(inst, "fwdbwd")), "cpu")
    assert missing is None and any(name.endswith(".ir-with-opt.ll") for name in files), (missing, sorted(files))
print("ok")
"""


@pytest.mark.slow
def test_xla_cpu_dump_compile_of_block_fwdbwd_bf16_does_not_crash():
    """With emitter dumping, jaxlib 0.10.2's CPU compiler crashed in most such compiles (SIGSEGV
    or abort), losing `irlens dump`'s output; the CPU's LLVM IR is dumped without it. In a child
    process: a crash must fail this test, not the test run."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _CPU_DUMP_COMPILES], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])
