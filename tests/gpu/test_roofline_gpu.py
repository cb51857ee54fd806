"""On a GPU: the bytes irlens charges kernels against an independent count (Nsight Compute's
DRAM counters), the measured ceilings against the sweep and the vendor's figures, and a
small bench whose rows and kernels stay within its ceilings (the sweep's, raised to its
fastest kernels within the vendor's figures)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import torch

pytestmark = pytest.mark.gpu

NCU = os.environ.get("NCU", "/usr/local/cuda/bin/ncu")
MiB = 1 << 20

# Three Triton kernels Inductor makes on its own (no library call): a pointwise one with two
# inputs, a row softmax (a persistent reduction), and a sum of two halves of one buffer.
# 128 MiB per operand: far beyond the L2, so DRAM sees nearly every byte.
SHAPE = (32768, 1024)
FNS = [lambda x, y: x * 2.0 + y, lambda x, y: torch.softmax(x, dim=-1), lambda x, y: x[:, :512] + x[:, 512:]]


def inductor_steps(backend="inductor") -> None:
    """Each function compiled and run twice (the first run also autotunes; the second is measured)."""
    x, y = torch.randn(SHAPE, device="cuda"), torch.randn(SHAPE, device="cuda")
    for fn in FNS:
        compiled = torch.compile(fn, backend=backend, dynamic=False)
        compiled(x, y)
        compiled(x, y)
    torch.cuda.synchronize()


def xla_step():
    import jax
    import jax.numpy as jnp

    x, y = jnp.full(SHAPE, 0.5, jnp.float32), jnp.full(SHAPE, 2.0, jnp.float32)  # two buffers
    f = jax.jit(lambda x, y: (jnp.tanh(x) * y + 1.0, jnp.sum(x * y, axis=-1)))
    jax.block_until_ready(f(x, y))
    jax.block_until_ready(f(x, y))
    return f.lower(x, y).compile()


def script(call: str) -> str:
    """A script that runs `call` of this module (for Nsight Compute to profile)."""
    return f"import sys\nsys.path.insert(0, {os.path.dirname(__file__)!r})\nimport test_roofline_gpu as t\nt.{call}\n"


def ncu(script: str, kernel_regex: str, tmp_path) -> dict[str, tuple[int, int]]:
    """{kernel name: (DRAM bytes read, written)} of each kernel's last launch, by Nsight Compute."""
    from irlens.bench.ncu import parse_csv

    if not shutil.which(NCU):
        pytest.skip(f"Nsight Compute is not at {NCU}")
    path = tmp_path / "step.py"
    path.write_text(script)
    proc = subprocess.run([NCU, "--metrics", "dram__bytes_read.sum,dram__bytes_write.sum", "--csv",
                           "--print-units", "base", "-k", f"regex:{kernel_regex}", sys.executable, str(path)],
                          capture_output=True, text=True, timeout=400, env=os.environ)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    last = {launch.name: launch.metrics for launch in parse_csv(proc.stdout)}  # launch order: the last one stays
    assert last, proc.stdout[-3000:]
    return {name: (int(m["dram__bytes_read.sum"]), int(m["dram__bytes_write.sum"])) for name, m in last.items()}


def assert_close_to_dram(name: str, charged: tuple[int, int], measured: tuple[int, int], l2_bytes: int) -> None:
    """Reads within 5 % (+1 MiB); writes between what was charged less what the L2 can still hold
    dirty at the kernel's end (PITFALLS: it writes back later) and 5 % above what was charged."""
    (read, written), (dram_read, dram_written) = charged, measured
    assert abs(dram_read - read) <= 0.05 * read + MiB, (name, charged, measured)
    assert written - l2_bytes - MiB <= dram_written <= 1.05 * written + MiB, (name, charged, measured)


def test_inductor_triton_kernel_bytes_match_nsight_compute(tmp_path):
    from irlens.backends.inductor.backend import InductorCapture
    from irlens.backends.inductor.code import map_kernels

    capture = InductorCapture("t")
    inductor_steps(capture)
    charged = {k.name: (k.bytes_read, k.bytes_written) for g in capture.compiled for k in map_kernels(g)
               if k.name.startswith("triton_")}
    assert len(charged) == 3, charged
    x = SHAPE[0] * SHAPE[1] * 4
    assert sorted(charged.values()) == sorted([(2 * x, x), (x, x), (x, x // 2)])
    measured = ncu(script("inductor_steps()"), "^triton_", tmp_path)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for name, io_bytes in charged.items():
        assert name in measured, (name, list(measured))
        assert_close_to_dram(name, io_bytes, measured[name], l2)


def test_xla_fusion_bytes_match_nsight_compute(tmp_path):
    import re

    from irlens.backends.xla.kernels import read_hlo

    view = read_hlo(xla_step().runtime_executable().hlo_modules()[0], name="t")
    charged = {re.sub(r"\W", "_", op.name): (op.bytes_read, op.bytes_written) for op in view.entry_ops
               if op.opcode == "fusion"}
    assert charged
    measured = ncu(script("xla_step()"), "fusion", tmp_path)
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    for name, io_bytes in charged.items():
        assert name in measured, (name, list(measured))
        assert_close_to_dram(name, io_bytes, measured[name], l2)


def test_ceilings_are_the_best_of_the_sweep_and_within_the_datasheet():
    from triton.testing import do_bench

    from irlens.bench.sweep import measure_ceilings
    from irlens.core.ceilings import spec_for
    from irlens.core.cost import Gemm

    own = Gemm(1, 16384, 3072, 1024)  # block's MLP product at the bench size
    c = measure_ceilings([own], dtypes=("bfloat16",))
    a = torch.randn(own.m, own.k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(own.k, own.n, device="cuda", dtype=torch.bfloat16)
    w, bias = b.t().contiguous(), torch.randn(own.n, device="cuda", dtype=torch.bfloat16)  # nn.Linear's weight: [n, k]
    for fn in (lambda: a @ b, lambda: torch.nn.functional.linear(a, w, bias)):
        rate = own.flops / (do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3) / 1e12
        assert rate <= 1.03 * c.matmul_tflops["bfloat16"], (rate, c)  # the sweep holds the shape, in both layouts
    assert not c.tf32 and c.l2_bytes and c.l2_bytes >= 40 * MiB and not c.raised  # raised only by a run's kernels
    spec = spec_for(torch.cuda.get_device_name())
    if spec is not None:
        assert 0.7 * spec.memory_gbps <= c.memory_gbps <= spec.memory_gbps, c
        assert c.matmul_tflops["bfloat16"] <= spec.tflops["bfloat16"], c


def test_a_bench_keeps_rows_and_kernels_within_the_ceilings():
    """gelu and block, bf16 fwd, Inductor and XLA: the ceilings (the sweep's, raised to the
    fastest kernel within the datasheet) within the vendor's figures; no row and no kernel above
    100 % of them (a kernel faster than DRAM for all its bytes judged on those beyond the L2,
    said so); a kernel above the datasheet's figure fails here."""
    from irlens.bench.run import bench
    from irlens.core.ceilings import Ceilings
    from irlens.matrix import Document
    from irlens.reporting.roofline import recompute

    doc = bench(["gelu", "block"], ["inductor", "xla"], ["fwd"], ["bfloat16"], device="cuda", preset="bench",
                timeout=400).to_json()
    assert [r["status"] for r in doc["rows"]] == ["ok"] * 4
    c = Ceilings.from_json(doc["ceilings"])
    for what, figure in (("memory", c.memory_gbps), ("bfloat16", c.matmul_tflops["bfloat16"])):
        assert c.vendor(what) is None or figure <= c.vendor(what), (what, c)
    names = {k["name"] for r in doc["rows"] for k in r["kernels"]}
    assert all(raise_.by.split(" in ")[0] in names for raise_ in c.raised.values()), c.raised
    assert recompute(Document.from_json(doc)).to_json()["rows"] == doc["rows"]  # the bench's figures, by the one rule
    for r in doc["rows"]:
        roofline = r["bench"]["roofline"]
        assert roofline["pct_of_ceiling"] <= 100.0 and not roofline.get("model_error"), roofline
        assert r["bench"]["device_timing"]["kernel_launches"] >= 1 and r["kernels"]
        timed = [k for k in r["kernels"] if k.get("time_us")]
        assert timed, r["backend"]
        for k in r["kernels"]:
            assert k["bytes"] is not None or k["kind"] == "library", (r["backend"], k["name"])
            assert not k.get("model_error"), (r["backend"], k["name"], k["model_error"])
            assert not k.get("via_l2") or k["pct_of_ceiling"] <= 100.0, (r["backend"], k["name"])
