"""XLA's own IRs for one compiled program, as `irlens dump --backend xla` shows them.

The optimized HLO comes from the compiled executable itself. What XLA generates from it is
only written to a dump folder: `compile(compiler_options={"xla_dump_to": DIR})` sets XLA's
debug options for that one compilation (XLA_FLAGS would be read once per process). There
XLA writes, per module `module_<id>.<name>.`, the PTX on GPU (`*.ptx`) and on CPU the LLVM IR
of each kernel after LLVM's optimizations (`*.<kernel>_kernel_module.ir-with-opt.ll`); some
files go to a folder per module, so the whole tree is read.

On the GPU that compilation left no PTX (jax 0.11.2, H200). Where the platform's generated
code is missing, the program's StableHLO is compiled once more in a fresh Python process
started with `XLA_FLAGS=--xla_dump_to=DIR`: XLA reads the flag when its backend starts, and
dumps every compilation of that process.
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

from irlens.frontends.base import Stage
from irlens.ir_adapters.hlo import hlo_to_graph

# dump file suffix -> (stage name prefix, what it holds)
GENERATED = {
    ".ptx": ("xla.ptx", "PTX XLA generated for the GPU"),
    ".ir-with-opt.ll": ("xla.llvm_ir", "LLVM IR XLA generated, after LLVM's optimizations"),
}
_DUMP_NAME = re.compile(r"^module_\d+\.(?P<module>[^.]+)\.?(?P<rest>.*)$")


# the generated code each platform's compiler dumps (a jax Device's `platform`)
EXPECTED = {"gpu": ".ptx", "cuda": ".ptx", "cpu": ".ir-with-opt.ll"}
FRESH_PROCESS_TIMEOUT_S = 600.0

# Run by `dump_in_fresh_process`: compiles a StableHLO module for one device of a platform.
# The backend API (not jax.jit) because the module is all the child has; jax.export's
# serialization would need the flatbuffers package, which the GPU machine may lack.
_COMPILE_IN_CHILD = """
import sys
import jax.extend.backend as jb
module, platform, device_id = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
backend = jb.get_backend(platform)
devices = [d for d in backend.local_devices() if d.id == device_id] or backend.local_devices()[:1]
options = jb.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=tuple(devices))
try:
    from jax._src.lib import xla_client
    devices = xla_client.DeviceList(tuple(devices))
except (ImportError, AttributeError):
    pass
backend.compile_and_load(module, devices, options)
"""


def generated_files(folder) -> dict[str, str]:
    """{file name: text} of the generated-code files (`GENERATED`) anywhere under a dump folder."""
    return {p.name: p.read_text() for p in sorted(Path(folder).rglob("*"))
            if p.is_file() and any(p.name.endswith(suffix) for suffix in GENERATED)}


def compile_with_dump(lowered):
    """`lowered.compile()`, keeping what XLA dumps: (compiled, {file name: text}). Where that
    dump lacks the platform's generated code, the files are `dump_in_fresh_process`'s (all from
    that one compilation: two dumps of one module would name their files alike)."""
    with tempfile.TemporaryDirectory(prefix="irlens-xla-") as folder:
        compiled = lowered.compile(compiler_options={"xla_dump_to": folder})
        files = generated_files(folder)
    device = compiled.runtime_executable().local_devices()[0]
    expected = EXPECTED.get(device.platform)
    if expected and not any(name.endswith(expected) for name in files):
        files = dump_in_fresh_process(lowered.as_text(), device.platform, device.id) or files
    return compiled, files


def dump_in_fresh_process(module: str, platform: str, device_id: int) -> dict[str, str]:
    """The generated-code files XLA dumps when a fresh process, started with XLA_FLAGS'
    `--xla_dump_to`, compiles `module` (StableHLO text) for `platform`; {} with a warning if it fails."""
    from irlens.isolation import worker_env

    with tempfile.TemporaryDirectory(prefix="irlens-xla-") as folder:
        path, dump = Path(folder, "module.mlir"), Path(folder, "dump")
        path.write_text(module)
        env = worker_env()
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_dump_to={dump}".strip()
        try:
            done = subprocess.run([sys.executable, "-c", _COMPILE_IN_CHILD, str(path), platform, str(device_id)],
                                  env=env, capture_output=True, text=True, timeout=FRESH_PROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            warnings.warn(f"XLA's dump in a fresh process took over {FRESH_PROCESS_TIMEOUT_S:.0f} s; skipped")
            return {}
        if done.returncode != 0:
            warnings.warn(f"XLA's dump in a fresh process failed (status {done.returncode}):\n{done.stderr[-2000:]}")
            return {}
        return generated_files(dump)


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
