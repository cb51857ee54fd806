"""The named configurations: `irlens bench --config NAME` (zoo, compare alike), `python -m
irlens.cli.configs NAME` for any of them, `irlens list --configs` for the list. Adding one is one entry."""
from __future__ import annotations

from irlens.core.registry import Registry
from irlens.cli.configs.kinds import Bench, Compare, GpuTests, RunConfig, Table, Zoo
from irlens.parallel.table_rows import (COMPILED, EAGER, FULL_INDUCTOR, FULL_INDUCTOR_CUDAGRAPH,
                                        SAC_FULL_INDUCTOR_CUDAGRAPH, Row)

CONFIGS: Registry[RunConfig] = Registry("configuration")
add = CONFIGS.register

# --- the bench: its times are the ones reported as performance

# the caches the one-GPU runs keep between calls (scripts/gpu_jobs.sh bench-cold-warm empties them first)
BENCH_CACHE = "/tmp/irlens-bench-cache"
GPU_SUBSET = ("gelu", "attention", "block", "llama_block", "llama_rmsnorm", "lm_cross_entropy", "moe_topk")

add(Bench(name="bench-4gpu", description="the whole bench over 4 GPUs, a dtype x mode part on each beside its own "
          "measured ceilings", gpus=("0", "1", "2", "3"), jobs=6, timeout=170, budget_s=300,
          json="bench-4gpu.json.gz", md="bench-4gpu.md"))
add(Bench(name="bench-1gpu-bf16", description="bfloat16 bench of gelu, attention, block and four ordinary-code "
          "workloads on one GPU", workloads=GPU_SUBSET, dtypes=("bfloat16",), jobs=4, timeout=150, budget_s=210,
          json="bench-1gpu-bf16.json.gz", md="bench-1gpu-bf16.md",
          expected_s=241, expected_from="one H100, tests/data/h100-bench.json.gz"))
ONE_GPU = dict(jobs=3, compile_jobs=4, timeout=240)
add(Bench(name="bench-1gpu-bf16-fwd", description="bfloat16 forward alone on one GPU; 120 s of cells, the first "
          "run filling its caches", dtypes=("bfloat16",), modes=("fwd",), budget_s=120,
          cache_dir=f"{BENCH_CACHE}/fwd", json="bench-1gpu-bf16-fwd.json.gz", **ONE_GPU,
          expected_s=144, expected_from="one H200 with empty caches, docs/results/bench1-h200-bf16-fwd/times.txt"))
add(Bench(name="bench-1gpu-bf16-fwd-warm", description="bfloat16 forward alone on one GPU, 60 s of cells from the "
          "caches bench-1gpu-bf16-fwd filled", dtypes=("bfloat16",), modes=("fwd",), budget_s=60,
          cache_dir=f"{BENCH_CACHE}/fwd", json="bench-1gpu-bf16-fwd-warm.json.gz", **ONE_GPU,
          expected_s=121, expected_from="one H200, docs/results/bench1-h200-bf16-fwd/times.txt"))
add(Bench(name="bench-1gpu", description="the whole built-in bench on one GPU for 190 s of cells: from empty caches, "
          "it fills them for bench-1gpu-warm", budget_s=190, cache_dir=f"{BENCH_CACHE}/all",
          json="bench-1gpu.json.gz", md="bench-1gpu.md", **ONE_GPU))
add(Bench(name="bench-1gpu-warm", description="the whole built-in bench on one GPU, from the caches and ceilings "
          "bench-1gpu left", budget_s=500, cache_dir=f"{BENCH_CACHE}/all", json="bench-1gpu-warm.json.gz",
          md="bench-1gpu-warm.md", **ONE_GPU))

# --- the frontend x backend grid on a GPU

for workload, timeout in (("gelu", 90), ("block", 100)):
    add(Compare(name=f"cross-gpu-{workload}", description=f"the frontend x backend grid of {workload} on a GPU, "
                "fwd and fwd+bwd", cross=True, workloads=(workload,), device="cuda", timeout=timeout,
                json=f"cross-gpu-{workload}.json"))

# --- the zoo at bench size, bfloat16 (zoo's default there)

ZOO_GPU = dict(device="cuda", preset="bench")
# a model per family and kind; the ones slowest to compile last (a budget then cuts those)
ZOO_SAMPLE = ("hf_gpt2", "hf_vit", "timm_resnet50", "timm_convnext", "timm_vit", "timm_efficientnet",
              "timm_mobilenetv3", "timm_swin", "hf_bert", "hf_whisper_encoder", "hf_wav2vec2", "hf_qwen2", "hf_llama",
              "hf_t5", "hf_mixtral", "hf_mamba")
for mode in ("fwd", "fwdbwd"):
    # cells of 170 s starting within 360 s: a call of at most about 9.8 minutes (bound_s), its whole document written
    add(Zoo(name=f"zoo-gpu-bf16-{mode}", description=f"16 zoo models (a model per family and kind), {mode}, every "
            "stack", models=ZOO_SAMPLE, modes=(mode,), jobs=2, timeout=170, budget_s=360,
            out=f"zoo-gpu-bf16-{mode}", **ZOO_GPU))
add(Zoo(name="zoo-gpu-bf16-quick-stacks", description="every zoo model, fwd and fwd+bwd, through eager, Inductor and "
        "XLA, 6 cells at once", backends=("eager", "inductor", "xla"), modes=("fwd", "fwdbwd"), jobs=6, timeout=300,
        out="zoo-gpu-bf16-quick-stacks", **ZOO_GPU))
# compile-heavy: two cells at once (sized when a timing still waited for every other cell's compile)
add(Zoo(name="zoo-gpu-bf16-thunder-nvfuser", description="every zoo model, fwd and fwd+bwd, through eager, Thunder "
        "and nvFuser, 2 cells at once", backends=("eager", "thunder+torchcompile", "nvfuser"), modes=("fwd", "fwdbwd"),
        jobs=2, timeout=480, out="zoo-gpu-bf16-thunder-nvfuser", **ZOO_GPU))
add(Zoo(name="zoo-gpu-bf16-fill", description="the cells the committed H200 zoo page holds no row that ran for "
        "(never run, left by a budget, starved), eager beside them", fill="docs/results/zoo-h200-bench/zoo.json.gz",
        fill_not_run=True, modes=("fwd", "fwdbwd"), jobs=4, timeout=180, budget_s=320, out="zoo-gpu-bf16-fill",
        **ZOO_GPU))

# --- GPU test subsets. CUPTI takes one subscriber per process: the Thunder facts need nvFuser's own
# profiler, Inductor's kernel timing torch's, so each group runs in a pytest process of its own

NVFUSER_TESTS = ("tests/integration/test_compare_thunder_facts.py", "tests/integration/test_thunder.py")
INDUCTOR_TESTS = ("tests/integration/test_compare_inductor_facts.py",)
ROOFLINE_TESTS = ("tests/gpu/test_roofline_gpu.py",)
PARALLEL_TESTS = ("tests/integration/test_parallel.py",)
add(GpuTests(name="gpu-tests", description="the GPU-marked tests but the groups with a configuration of their own, "
          "4 processes", files=("tests",), workers=4,
          ignore=(*NVFUSER_TESTS, *INDUCTOR_TESTS, *ROOFLINE_TESTS, *PARALLEL_TESTS,
                  "tests/integration/test_parallel_moe.py")))
add(GpuTests(name="gpu-tests-nvfuser", description="the Thunder facts and Thunder's GPU tests (nvFuser's profiler)",
          files=NVFUSER_TESTS))
add(GpuTests(name="gpu-tests-inductor", description="the Inductor facts (torch's kernel timing)", files=INDUCTOR_TESTS))
add(GpuTests(name="gpu-tests-roofline", description="the roofline's checks: Nsight Compute, the ceilings, a small "
          "bench; they time kernels, so alone on their GPU", files=ROOFLINE_TESTS))
add(GpuTests(name="gpu-tests-parallel", description="the parallel path's one-GPU tests", files=PARALLEL_TESTS))
add(GpuTests(name="gpu-tests-tp", description="2 GPUs: sequence parallelism and async TP against eager on 2 NCCL "
          "ranks, with the real fused ops", files=("tests/integration/test_parallel_tp.py",)))
add(GpuTests(name="gpu-tests-lowering", description="the JAX HLO reader's GPU forms and the lowerings on a GPU",
          files=("tests/integration/test_jax_gpu_calls.py", "tests/integration/test_lowering_ops.py",
                 "tests/integration/test_jax.py")))

# --- the parallel path's tables (scripts/parallel_table.py), each within 9 minutes on its GPUs

for table, what in (("llama3-1b-2gpu", "2 GPUs: llama3:1B DP2, TP2 with and without sequence parallelism, async TP, "
                                       "the gradient reduce dtype"),
                    ("llama3-1b-4gpu", "4 GPUs: llama3:1B DP4, DP2 x TP2, TP4, async TP"),
                    ("llama3-8b-4gpu", "4 GPUs: Llama 3 8B's shapes, 32 layers, DP2 x TP2 with FSDP"),
                    ("deepseek-2b-4gpu", "4 GPUs: deepseek_v3:2B with expert parallelism (the all-to-all's share)"),
                    ("llama3-8b-8gpu", "8 GPUs: Llama 3 8B's shapes, DP2 x TP4")):
    add(Table(name=f"parallel-{table}", description=what, table=table, out=f"parallel-{table}"))
# one GPU: full Inductor rows before their cudagraph twins reuse their compiled code (Inductor's FX graph cache)
add(Table(name="parallel-llama3-1b-1gpu", description="one GPU: llama3:1B eager vs compiled at batch 8 (16k tokens), "
          "then batch 2 and 16", model="llama3:1B", steps=8, timeout=150, budget_s=330,
          rows=(Row(EAGER, batch=8), Row(FULL_INDUCTOR, batch=8), Row(FULL_INDUCTOR_CUDAGRAPH, batch=8),
                Row(COMPILED, batch=8), Row(EAGER, batch=2), Row(FULL_INDUCTOR_CUDAGRAPH, batch=2),
                Row(SAC_FULL_INDUCTOR_CUDAGRAPH, batch=16)), out="parallel-llama3-1b-1gpu"))
add(Table(name="parallel-llama3-8b-1gpu", description="one GPU: Llama 3 8B's shapes with 4 layers, eager vs full "
          "Inductor with cudagraph", model="llama3:8B", n_layers=4, steps=6, timeout=120, budget_s=140,
          rows=(Row(EAGER), Row(FULL_INDUCTOR_CUDAGRAPH)), out="parallel-llama3-8b-1gpu"))
