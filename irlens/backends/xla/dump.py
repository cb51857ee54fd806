"""XLA's own IRs for one compiled program, as `irlens dump --backend xla` shows them.

The optimized HLO comes from the compiled executable itself. What XLA generates from it is
only written to a dump folder: `compile(compiler_options={"xla_dump_to": DIR})` sets XLA's
debug options for that one compilation (XLA_FLAGS would be read once per process). There
XLA writes, per module `module_<id>.<name>.`, on CPU the LLVM IR of each kernel after LLVM's
optimizations (`*.<kernel>_kernel_module.ir-with-opt.ll`) and on GPU the PTX: openxla/xla
`NVPTXCompiler::CompileTargetBinary` (xla/service/gpu/nvptx_compiler.cc) calls
`DumpToFileInDirOrStdout(*debug_module, "", shard ? "<shard>.ptx" : "ptx", ptx)` right after
`nvptx::CompileToPtx`, whenever `DumpingEnabledForHloModule` holds (xla_dump_to set,
xla_enable_dumping true, the module matching xla_dump_hlo_module_re): `module_0001.jit_f.ptx`,
or `module_0001.jit_f.<i>.ptx` per LLVM-module shard when
xla_gpu_enable_llvm_module_compilation_parallelism splits the module (GpuCompiler::CompileAndLink).
Some files go to a folder per module, so the whole tree is read.

XLA writes no PTX where no LLVM is compiled for the program: a JAX persistent-cache hit (JAX drops
xla_dump_* from its cache key, jax/_src/cache_key.py, so the dump compile can be a cache read),
kernels reused from XLA's kernel cache (xla_gpu_kernel_cache_file, set by JAX when its persistent
cache is on: they are left out of the LLVM module, so out of the PTX), PTX loaded from
xla_gpu_ptx_file, or only library calls (cuBLAS, cuDNN). The XLA of jax 0.11.2 on a GPU also
needs emitter dumping (xla_dump_emitter_re) before it writes any LLVM IR or PTX (on the CPU it is
not needed, and it crashes jaxlib 0.10.2's compiler). The dump compile therefore asks for all of
it explicitly (emitter dumping on GPUs only) and turns the kernel cache off. Where the dump still lacks
the platform's code, two more sources are read: the serialized executable
(GpuExecutable::ToProto / GpuThunkAotCompilationResult keep the PTX as `asm_text`), and a
compilation of the program's StableHLO in a fresh Python process started with
`XLA_FLAGS=--xla_dump_to=DIR` (XLA reads the flag when its backend starts). Where all of them
come back without it, the stages say so: a `<prefix>.missing` stage holds what was tried and seen.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from irlens.frontends.base import Stage
from irlens.frontends.jax.hlo.walk import hlo_to_graph
from irlens.wording import plural

# dump file suffix -> (stage name prefix, what it holds)
GENERATED = {
    ".ptx": ("xla.ptx", "PTX XLA generated for the GPU"),
    ".ir-with-opt.ll": ("xla.llvm_ir", "LLVM IR XLA generated, after LLVM's optimizations"),
}
_DUMP_NAME = re.compile(r"^module_\d+\.(?P<module>[^.]+)\.?(?P<rest>.*)$")


# the generated code each platform's compiler dumps (a jax Device's `platform`)
EXPECTED = {"gpu": ".ptx", "cuda": ".ptx", "cpu": ".ir-with-opt.ll"}
FRESH_PROCESS_TIMEOUT_S = 600.0

# Debug options for the dump compile (XLA's names; set per compile as env_option_overrides).
# xla_dump_to alone enables dumping (xla/service/dump_options.cc); these undo settings that
# would keep generated code out of the dump: XLA_FLAGS' xla_enable_dumping=false or a module
# regex, and XLA's kernel cache (reused kernels are not compiled, so not in the PTX).
EXTRA_DUMP_OPTIONS = {"xla_enable_dumping": True, "xla_dump_hlo_module_re": ".*", "xla_gpu_kernel_cache_file": ""}
# The XLA of jax 0.11.2 writes a GPU kernel's LLVM IR and PTX (`module_<id>.<name>.<shard>.ptx`)
# only with emitter dumping asked for too (tried on an H200, docs/results/README.md). The CPU
# compiler writes its LLVM IR without it, and with it the CPU XLA of jaxlib 0.10.2 crashes
# (SIGSEGV or abort) in most compiles of block's fwd+bwd in bfloat16: GPUs only.
GPU_DUMP_OPTIONS = {"xla_dump_emitter_re": ".*"}


def dump_options(platform: str) -> dict:
    """The debug options of a dump compile for a jax platform (cpu, gpu, cuda)."""
    return {**EXTRA_DUMP_OPTIONS, **(GPU_DUMP_OPTIONS if platform in ("gpu", "cuda") else {})}

# Run by `dump_in_fresh_process`: compiles a StableHLO module for one device of a platform and
# writes the serialized executable next to it. The backend API (not jax.jit) because the module
# is all the child has; jax.export's serialization would need the flatbuffers package, which
# the GPU machine may lack.
_COMPILE_IN_CHILD = """
import json, os, sys
import jax.extend.backend as jb
module, platform, device_id = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3])
executable_path, overrides = sys.argv[4], json.loads(sys.argv[5])
backend = jb.get_backend(platform)
devices = [d for d in backend.local_devices() if d.id == device_id] or backend.local_devices()[:1]
def options(overrides):
    return jb.get_compile_options(num_replicas=1, num_partitions=1, device_assignment=tuple(devices),
                                  env_options_overrides=overrides)
try:
    from jax._src.lib import xla_client
    device_list = xla_client.DeviceList(tuple(devices))
except (ImportError, AttributeError):
    device_list = devices
try:
    executable = backend.compile_and_load(module, device_list, options(overrides))
except Exception as e:  # an option this XLA does not know: XLA_FLAGS' --xla_dump_to is enough
    print(f"compile with {sorted(overrides)} failed ({e!r}); compiled with XLA_FLAGS alone", file=sys.stderr)
    executable = backend.compile_and_load(module, device_list, options(None))
try:
    if hasattr(executable, "serialize"):
        data = executable.serialize()
    else:
        data = executable.client.serialize_executable(executable)
    open(executable_path, "wb").write(data)
except Exception as e:
    print(f"could not serialize the executable: {e!r}", file=sys.stderr)
"""


def generated_files(folder) -> dict[str, str]:
    """{file name: text} of the generated-code files (`GENERATED`) anywhere under a dump folder."""
    return {p.name: p.read_text(errors="replace") for p in sorted(Path(folder).rglob("*"))
            if p.is_file() and any(p.name.endswith(suffix) for suffix in GENERATED)}


def compile_with_dump(lowered, platform: str):
    """`lowered.compile()` for a jax `platform` (cpu, gpu), keeping what XLA dumps: (compiled,
    {file name: text}, missing).

    Where that dump lacks the platform's generated code, the PTX is taken from the serialized
    executable, then from `dump_in_fresh_process` (all files from that one compilation: two dumps
    of one module would name their files alike). `missing` is None when the platform's code was
    found, else what each attempt saw (for the `<prefix>.missing` stage)."""
    with tempfile.TemporaryDirectory(prefix="irlens-xla-") as folder:
        compiled, tried = _compile_dumping(lowered, folder, platform)
        files = generated_files(folder)
        seen = _describe_dump(folder)
    device = compiled.runtime_executable().local_devices()[0]
    expected = EXPECTED.get(device.platform)
    if not expected or _has(files, expected):
        return compiled, files, None
    report = [f"platform {device.platform!r} ({_versions()}); expected *{expected} files.",
              f"1. this process: compile(compiler_options={tried}): {seen}", _jax_cache_state()]
    if expected == ".ptx":
        ptx, how = ptx_of_executable(compiled.runtime_executable())
        report.append(f"2. the compiled executable, serialized: {how}")
        if ptx:
            return compiled, {**files, "executable.ptx": ptx}, None
    fresh, how = dump_in_fresh_process(lowered.as_text(), device.platform, device.id)
    report.append(f"3. a fresh process (XLA_FLAGS=--xla_dump_to): {how}")
    if _has(fresh, expected):
        return compiled, fresh, None
    report.append(f"XLA_FLAGS here: {os.environ.get('XLA_FLAGS', '(unset)')!r}")
    return compiled, files, "\n".join(report)


def _has(files: dict[str, str], suffix: str) -> bool:
    return any(name.endswith(suffix) for name in files)


def _compile_dumping(lowered, folder: str, platform: str):
    """(compiled, the compiler options it used): the dump options, else xla_dump_to alone where
    this XLA refuses one of the others."""
    options = {"xla_dump_to": folder, **dump_options(platform)}
    try:
        return lowered.compile(compiler_options=options), sorted(options)
    except Exception:  # noqa: BLE001 - an option name this XLA does not know
        return lowered.compile(compiler_options={"xla_dump_to": folder}), ["xla_dump_to"]


def _describe_dump(folder: str) -> str:
    """What XLA wrote into a dump folder: the file names, and the debug options relevant to the
    generated code (XLA writes `module_*.debug_options` for each module it compiles)."""
    paths = sorted(p for p in Path(folder).rglob("*") if p.is_file())
    if not paths:
        return ("XLA wrote no file at all: it compiled nothing (a compilation-cache hit) "
                "or ignored the dump options")
    names = [p.name for p in paths]
    text = f"{len(names)} files ({', '.join(names[:12])}{', ...' if len(names) > 12 else ''})"
    for p in paths:
        if p.name.endswith(".debug_options"):
            keep = [line.strip() for line in p.read_text(errors="replace").splitlines()
                    if re.search(r"dump|kernel_cache|ptx_file|llvm_ir_file|compilation_parallelism|autotune_level",
                                 line)]
            if keep:
                text += f"; {p.name}: {'; '.join(keep)}"
            break
    return text


def _jax_cache_state() -> str:
    try:
        import jax

        directory = jax.config.jax_compilation_cache_dir
        enabled = jax.config.jax_enable_compilation_cache
    except Exception as e:  # noqa: BLE001 - a diagnostic only
        return f"JAX persistent cache: unknown ({e!r})"
    if directory and enabled:
        return (f"JAX persistent cache ON at {directory}: a hit compiles nothing, so dumps nothing; "
                "JAX also sets XLA's kernel cache, whose kernels are not compiled again")
    return "JAX persistent cache off"


def _versions() -> str:
    try:
        import jax
        import jaxlib

        return f"jax {jax.__version__}, jaxlib {jaxlib.__version__}"
    except Exception:  # noqa: BLE001
        return "jax version unknown"


# PTX as LLVM's NVPTX backend writes it: its first lines (XLA's kernels and Triton's both come from LLVM)
_PTX_HEADER = b"//\n// Generated by LLVM NVPTX Back-End"
_PTX_DIRECTIVES = re.compile(rb"\.version \d+\.\d+\s+\.target sm_\w+")
_TEXT_BYTES = re.compile(rb"[\t\n\r\x20-\x7e]+")


def ptx_of_executable(executable) -> tuple[str, str]:
    """(PTX, how it was found) from a loaded executable, through its serialization."""
    try:
        data = executable.serialize() if hasattr(executable, "serialize") else \
            executable.client.serialize_executable(executable)
    except Exception as e:  # noqa: BLE001
        return "", f"not serializable ({type(e).__name__}: {str(e)[:200]})"
    found = ptx_in_serialized(bytes(data))
    if not found:
        return "", f"{len(data)} bytes, no PTX among them (no '.version ... .target sm_' text)"
    return "\n".join(found), f"{plural(len(found), 'PTX text')} in {len(data)} bytes"


def ptx_in_serialized(data: bytes) -> list[str]:
    """The PTX texts held in a serialized XLA GPU executable (protobuf: the `asm_text` string field).

    A protobuf string is its tag, its length as a varint, then its bytes: the PTX's first line is
    found, the varint that ends right before it read backwards (its last byte is the only one
    below 0x80), and the text cut to that length. Where the length does not fit, the text runs to
    the first byte that is not printable."""
    found, end = [], 0
    starts = [m.start() for m in re.finditer(re.escape(_PTX_HEADER), data)]
    for start in starts:
        if start < end:
            continue  # a later shard of a text already taken (XLA joins shards' PTX with "\n")
        length = _varint_ending_at(data, start)
        stop = start + length if length and start + length <= len(data) else _text_end(data, start)
        text = data[start:stop]
        if not _PTX_DIRECTIVES.search(text):
            stop = _text_end(data, start)
            text = data[start:stop]
        if _PTX_DIRECTIVES.search(text):
            found.append(text.decode("ascii", "replace"))
            end = stop
    if not found:  # PTX from elsewhere than LLVM: the printable run around its directives
        for m in _PTX_DIRECTIVES.finditer(data):
            if m.start() < end:
                continue
            run = next(r for r in _TEXT_BYTES.finditer(data, max(0, m.start() - 4096)) if r.end() >= m.end())
            found.append(run.group().decode("ascii").lstrip())
            end = run.end()
    return found


def _varint_ending_at(data: bytes, stop: int) -> int | None:
    """The varint whose last byte is data[stop - 1], or None."""
    if stop == 0 or data[stop - 1] >= 0x80:
        return None
    begin = stop - 1
    while begin > 0 and data[begin - 1] >= 0x80 and stop - begin < 10:
        begin -= 1
    value = 0
    for i, byte in enumerate(data[begin:stop]):
        value |= (byte & 0x7F) << (7 * i)
    return value


def _text_end(data: bytes, start: int) -> int:
    run = _TEXT_BYTES.match(data, start)
    return run.end() if run else start


def dump_in_fresh_process(module: str, platform: str, device_id: int) -> tuple[dict[str, str], str]:
    """The generated-code files XLA dumps when a fresh process, started with XLA_FLAGS'
    `--xla_dump_to`, compiles `module` (StableHLO text) for `platform`, with a line saying what
    that process did; for the GPU, the PTX of its serialized executable where the dump has none."""
    with tempfile.TemporaryDirectory(prefix="irlens-xla-") as folder:
        path, dump, executable = Path(folder, "module.mlir"), Path(folder, "dump"), Path(folder, "executable.bin")
        path.write_text(module)
        env = dict(os.environ)  # the child imports jax alone, through this interpreter's own site
        env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} --xla_dump_to={dump}".strip()
        env["JAX_ENABLE_COMPILATION_CACHE"] = "false"  # or JAX would set XLA's kernel cache
        overrides = {"xla_dump_to": str(dump), **dump_options(platform)}
        command = [sys.executable, "-c", _COMPILE_IN_CHILD, str(path), platform, str(device_id),
                   str(executable), json.dumps(overrides)]
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=FRESH_PROCESS_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {}, f"took over {FRESH_PROCESS_TIMEOUT_S:.0f} s; stopped"
        stderr = done.stderr.strip()
        if done.returncode != 0:
            return {}, f"failed (status {done.returncode}): {stderr[-2000:]}"
        files = generated_files(dump)
        how = f"compiled; dump: {_describe_dump(dump)}"
        if EXPECTED.get(platform) == ".ptx" and not _has(files, ".ptx"):
            ptx = ptx_in_serialized(executable.read_bytes()) if executable.exists() else []
            how += f"; its executable: {plural(len(ptx), 'PTX text')}" if executable.exists() else "; no executable written"
            if ptx:
                files = {**files, "executable.ptx": "\n".join(ptx)}
        if stderr:
            how += f"; its stderr ends: {stderr[-1500:]}"
        return files, how


def _label(file_name: str, suffix: str) -> str:
    """What one dump file holds: module_0004.jit_f.multiply_fusion_kernel_module.ir-with-opt.ll ->
    multiply_fusion (CPU, a kernel); module_0004.jit_f.ptx -> jit_f (GPU, the module);
    module_0004.jit_f.1.ptx -> jit_f.1 (GPU, one LLVM module of several)."""
    found = _DUMP_NAME.match(file_name.removesuffix(suffix))
    if found is None:
        return file_name.removesuffix(suffix)
    rest = found["rest"]
    if not rest or rest.isdigit():
        return ".".join(filter(None, (found["module"], rest)))
    return rest.removesuffix("_kernel_module")


def xla_stages(compiled, files: dict[str, str], workload: str, backward: bool,
               missing: str | None = None) -> dict[str, Stage]:
    """The optimized HLO (with its common view) and the code XLA generated from it; where that
    code could not be had (`missing`, from `compile_with_dump`), a `<prefix>.missing` stage
    saying so and why."""
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
    if missing:
        platform = compiled.runtime_executable().local_devices()[0].platform
        prefix, what = GENERATED[EXPECTED[platform]]
        stages[f"{prefix}.missing"] = Stage(
            f"{prefix}.missing", f"NOT FOUND: the {what} (XLA wrote none; this stage's text says what was tried)",
            f"No {what} could be read for this program.\n{missing}\n", backward=backward)
    return stages
