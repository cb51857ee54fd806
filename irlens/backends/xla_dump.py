"""XLA's own IRs for one compiled program, as `irlens dump --backend xla` shows them.

The optimized HLO comes from the compiled executable itself. What XLA generates from it is
only written to a dump folder: `compile(compiler_options={"xla_dump_to": DIR})` sets XLA's
debug options for that one compilation (XLA_FLAGS would be read once per process). There
XLA writes, per module `module_<id>.<name>.`, the PTX on GPU (`*.ptx`) and on CPU the LLVM IR
of each kernel after LLVM's optimizations (`*.<kernel>_kernel_module.ir-with-opt.ll`).
"""
from __future__ import annotations

import re
import tempfile
from pathlib import Path

from irlens.frontends.base import Stage
from irlens.ir_adapters.hlo import hlo_to_graph

# dump file suffix -> (stage name prefix, what it holds)
GENERATED = {
    ".ptx": ("xla.ptx", "PTX XLA generated for the GPU"),
    ".ir-with-opt.ll": ("xla.llvm_ir", "LLVM IR XLA generated, after LLVM's optimizations"),
}
_DUMP_NAME = re.compile(r"^module_\d+\.(?P<module>[^.]+)\.?(?P<rest>.*)$")


def compile_with_dump(lowered):
    """`lowered.compile()`, keeping what XLA dumps: (compiled, {file name: text})."""
    with tempfile.TemporaryDirectory(prefix="irlens-xla-") as folder:
        compiled = lowered.compile(compiler_options={"xla_dump_to": folder})
        files = {p.name: p.read_text() for p in Path(folder).iterdir()
                 if any(p.name.endswith(suffix) for suffix in GENERATED)}
    return compiled, files


def _label(file_name: str, suffix: str) -> str:
    """What one dump file holds: module_0004.jit_f.multiply_fusion_kernel_module.ir-with-opt.ll ->
    multiply_fusion (CPU, a kernel); module_0004.jit_f.ptx -> jit_f (GPU, the module)."""
    found = _DUMP_NAME.match(file_name.removesuffix(suffix))
    if found is None:
        return file_name.removesuffix(suffix)
    return (found["rest"] or found["module"]).removesuffix("_kernel_module")


def xla_stages(compiled, files: dict[str, str], workload: str, backward: bool) -> dict[str, Stage]:
    """The optimized HLO (with its common view) and the code XLA generated from it."""
    module = compiled.runtime_executable().hlo_modules()[0]
    stages = {"xla.hlo": Stage(
        "xla.hlo", "XLA-optimized HLO: each ENTRY fusion / custom-call is one kernel", compiled.as_text(),
        lambda level: hlo_to_graph(module, name=workload, stage="xla.hlo", level=level), module, backward)}
    for suffix, (prefix, what) in GENERATED.items():
        found = sorted(name for name in files if name.endswith(suffix))
        for name in found:
            label = _label(name, suffix)
            stage = prefix if len(found) == 1 else f"{prefix}.{label}"
            stages[stage] = Stage(stage, f"{what} ({label})", files[name], backward=backward)
    return stages
