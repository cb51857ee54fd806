"""What a GPU cell's float64 reference costs before its backend runs: building the workload on the
device, the reference itself, and moving its float64 results to the host for the checks.

On the GPU machine, from the repository root, with the GPU environment active:

    python scripts/reference_costs.py        # about a minute on one H100

Prints, in seconds (after a synchronize, wall time):
1. `build`: `Workload.instantiate` on cuda in bfloat16 (bench size for the built-ins, tiny for a few zoo
   models), and whether a factory drew on the CPU instead;
2. `reference` and `results on host`: `reference_anywhere` (instance, float64 eager, eager in the
   run's dtype) and `Reference.results_on_host`, for gelu fwd, minigpt fwd and minigpt fwd+bwd at the
   bench size;
3. `copy`: 2.1 GB of float64 (bench-size gelu's output) to the host three times each way: into fresh
   pageable memory (`.cpu()`) and into pinned memory (`.to("cpu", non_blocking=True)`, kept by torch's
   pinned-memory cache from the second time on).
"""
from __future__ import annotations

import time

import torch

from irlens.matrix.references import reference_anywhere, release_memory
from irlens.workloads.builtin import resolve_workload

BUILDS = [("gelu", "bench"), ("minigpt", "bench"), ("attention", "bench"), ("block", "bench"),
          ("llama_block", "bench"), ("hf_llama", "tiny"), ("hf_bert", "tiny"), ("hf_t5", "tiny"),
          ("hf_whisper_encoder", "tiny"), ("timm_resnet18", "tiny"), ("timm_vit", "tiny"), ("timm_swin", "tiny"),
          ("timm_convnext", "tiny"), ("hf_mamba", "tiny")]
REFERENCES = [("gelu", "fwd"), ("minigpt", "fwd"), ("minigpt", "fwdbwd")]
COPIED = 268_435_456  # float64 elements: bench-size gelu's output


def timed(fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn()
    torch.cuda.synchronize()
    return result, time.perf_counter() - start


def builds() -> None:
    for name, preset in BUILDS:
        try:
            inst, seconds = timed(lambda: resolve_workload(name).instantiate(preset, "bfloat16", "cuda"))
        except Exception as e:  # noqa: BLE001  (a model whose library is missing: said, and the next)
            print(f"build {name} {preset}: failed: {type(e).__name__}: {str(e)[:160]}", flush=True)
            continue
        on_cpu = any(t.device.type == "cpu" for t in [*inst.module.parameters(), *inst.module.buffers()])
        print(f"build {name} {preset}: {seconds:.2f} s{' (drawn on the CPU)' if on_cpu else ''}", flush=True)
        del inst


def references() -> None:
    for name, mode in REFERENCES:
        reference, seconds = timed(lambda: reference_anywhere(resolve_workload(name), mode, "cuda", "bench", "bfloat16"))
        _, moved = timed(reference.results_on_host)
        print(f"reference {name} {mode} bfloat16: {seconds:.2f} s; results on host: {moved:.2f} s", flush=True)
        del reference
        release_memory("cuda")


def copies() -> None:
    x = torch.randn(COPIED, device="cuda", dtype=torch.float64)
    for label, copy in [("pageable", lambda: x.cpu()), ("pinned", lambda: x.to("cpu", non_blocking=True))]:
        for i in range(3):
            _, seconds = timed(copy)
            print(f"copy {x.numel() * 8 / 1e9:.1f} GB {label} #{i}: {seconds:.3f} s", flush=True)


if __name__ == "__main__":
    if not torch.cuda.is_available():
        raise SystemExit("scripts/reference_costs.py needs a CUDA GPU; torch sees none here")
    builds()
    references()
    copies()
