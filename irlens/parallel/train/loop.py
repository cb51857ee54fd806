"""`irlens train`: llama3 or deepseek_v3 with SimpleFSDP (+ TP, + EP), eager or as a compiled joint graph.

    irlens train --model llama3:debug --dp-shard 2 --tp 1 --mode compiled \\
        --joint-passes selective_activation_checkpoint --passes transformer_block_bucketing

Under torchrun each process is one rank; without it the command spawns dp_shard x tp ranks
itself (expert parallelism borrows its ep ranks from dp_shard). gloo on the CPU, NCCL on the GPU (bf16 compute, fp32 gradient reduction). Rank 0
prints a line per step and, last, one JSON line with the configuration and its tokens/s,
MFU and peak memory (and, for MoE models, the router's load balance), for collecting results.
With `--profile DIR` the last steps are profiled: each rank's trace goes to DIR, rank 0 prints
where its step time went (irlens.parallel.train.profile) and writes the JSON line to DIR/summary.json too.

A run is described by one TrainConfig (irlens.parallel.config: its parts; irlens.cli.train builds
it from the command line, nothing here parses flags). The ranks `run_training` spawns get that
dataclass itself (pickled by torch.multiprocessing); under torchrun each rank's `irlens train`
parses the same command line; a worker process gets its JSON (`training_in_worker`).
"""
from __future__ import annotations

import json
import math
import statistics
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from irlens.parallel.train import checkpoint as ckpt
from irlens.parallel.parallelize.async_tp import PassUnavailable, require_symmetric_memory, unsupported_here
from irlens.parallel.capture import compile_joint
from irlens.parallel.train.data import TokenDataset
from irlens.parallel.config import TrainConfig
from irlens.parallel.parallelize.distributed import init_process_group, launched_by_torchrun, mesh_groups, spawn
from irlens.parallel.train.metrics import StepMetrics, load_balance, peak_flops, peak_memory_gib, reset_peak_memory
from irlens.parallel.models.families import ModelFamily, TrainStep
from irlens.parallel.passes.catalog import numerics_changing, symmetric_memory_passes
from irlens.parallel.train.profile import ProfileReport, StepProfiler
from irlens.parallel.parallelize.simple_fsdp import DP_DIM, TP_DIM, data_parallel
from irlens.parallel.parallelize.tensor_parallel import loss_context

WARMUP_STEPS = 2  # left out of the summary's throughput: first-touch allocations, autotuning, cudagraph capture


@dataclass
class TrainResult:
    config: dict
    steps: list[StepMetrics]
    compile_s: float
    numerics_changed: list[str]  # passes that change numerics, as run
    device_name: str = ""
    profile: ProfileReport | None = None  # rank 0's, with --profile
    pass_records: list[str] = field(default_factory=list)  # compiled: each pass's summary line (passes.PassRecord)

    def summary(self) -> dict:
        # throughput from the steps after the warm-up, and not profiled (the profiler costs host time) if any are left
        timed = self.steps[WARMUP_STEPS:] or self.steps
        timed = [s for s in timed if not s.profiled] or timed
        last = self.steps[-1] if self.steps else None
        mfus = [s.mfu for s in timed if s.mfu is not None]
        moe = {k: getattr(last, k) for k in ("expert_tokens", "expert_imbalance", "dropped_frac")} \
            if last and last.expert_tokens is not None else {}
        return {
            "config": self.config,
            "status": "ok",
            "device_name": self.device_name,
            "steps": len(self.steps),
            "final_loss": last.loss if last else None,
            "final_grad_norm": last.grad_norm if last else None,
            "tokens_per_s": statistics.median(s.tokens_per_s for s in timed) if timed else None,
            "mfu": statistics.median(mfus) if mfus else None,
            "peak_mem_gib": max((s.peak_mem_gib for s in self.steps), default=None),
            "compile_s": self.compile_s,
            "numerics_changed_by": self.numerics_changed,
            **({"passes": self.pass_records} if self.pass_records else {}),
            **moe,  # the last step's load balance
            **({"profile": self.profile.to_json()} if self.profile else {}),
        }


def build_model(family: ModelFamily, cfg: Any, tc: TrainConfig, mesh, device: torch.device) -> nn.Module:
    """The same full weights on every rank (same seed), then TP, then EP (experts), then SimpleFSDP sharding."""
    p = tc.parallelism
    torch.manual_seed(tc.training.seed)
    with torch.device(device):
        model = family.module(cfg)
    if p.tp > 1:
        family.tensor_parallel(model, mesh[TP_DIM], p.sequence_parallel, p.loss_parallel)
    mp = tc.training.precision(device)
    if p.ep > 1:
        family.expert_parallel(model, p.dims.build_expert_mesh(device.type), mp)
    return data_parallel(model, mesh, mp)


def grad_norm(model: nn.Module) -> torch.Tensor:
    """The global L2 norm of the gradients: each shard's squares, replicas counted once, summed over
    ranks. One multi-tensor norm per replication count, not kernels per parameter."""
    by_copies: dict[int, list[torch.Tensor]] = {}
    for p in model.parameters():
        if p.grad is None:
            continue
        g = p.grad
        copies = math.prod(g.device_mesh.size(d) for d, pl in enumerate(g.placements) if pl.is_replicate())
        by_copies.setdefault(copies, []).append(g.to_local().float())
    total = sum(torch.stack(torch._foreach_norm(gs)).square().sum() / copies for copies, gs in by_copies.items())
    dist.all_reduce(total)
    return total.sqrt()


def _global_mean(x: torch.Tensor) -> float:
    x = x.detach().float().clone()
    dist.all_reduce(x)
    return (x / dist.get_world_size()).item()


def train(tc: TrainConfig) -> TrainResult:
    """Train on this rank (the process group is initialized); returns rank-local metrics."""
    family, cfg = tc.validate()
    # the summary states the batch run
    tc = replace(tc, training=replace(tc.training, batch_size=tc.training.batch_size or cfg.batch_size))
    p, t, c = tc.parallelism, tc.training, tc.compile
    device = init_process_group(t.device)
    mesh = p.dims.build_mesh(device.type)
    model = build_model(family, cfg, tc, mesh, device)
    step_module = TrainStep(model)
    # fused: one multi-tensor kernel per step (DTensor shards included) instead of a dozen foreach passes
    optimizer = torch.optim.AdamW(model.parameters(), lr=tc.optimizer.lr, weight_decay=0.1, fused=True)
    start = ckpt.load(tc.checkpoint.folder, model, optimizer) if tc.checkpoint.resume else 0

    dp_rank = mesh[DP_DIM].get_local_rank()
    data = TokenDataset(cfg.vocab_size, cfg.seq_len, cfg.doc_len, t.batch_size, t.seed)
    compile_s = 0.0
    run = step_module
    records = []
    if c.mode == "compiled":
        t0 = time.perf_counter()
        tokens, labels = (x.to(device) for x in data.batch(start, dp_rank))
        groups = mesh_groups(mesh)
        if symmetric_memory_passes(c.passes):
            require_symmetric_memory(groups[TP_DIM])
        with loss_context(p.uses_loss_parallel):  # the export traces the loss's backward too
            run = compile_joint(step_module, (tokens, labels), c.joint_passes, c.passes, groups)
        records = [r.line() for r in run.records]
        compile_s = time.perf_counter() - t0

    peak = peak_flops(device, torch.bfloat16 if t.uses_mixed_precision(device) else torch.float32)
    global_tokens = t.batch_size * cfg.seq_len * p.dp_shard
    reset_peak_memory(device)
    end = start + t.steps
    profiling = tc.profiling
    profiler = StepProfiler(profiling.folder, device, dist.get_rank(), first=end - min(profiling.steps, t.steps) + 1)
    steps = []
    for step in range(start, end):
        tokens, labels = (x.to(device) for x in data.batch(step, dp_rank))
        _sync(device)
        with profiler.step(step + 1) as profiled:
            t0 = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            with loss_context(p.uses_loss_parallel):
                loss = run(tokens, labels)
                loss.backward()
            norm = grad_norm(model)
            optimizer.step()
            _sync(device)
            dt = time.perf_counter() - t0
        tps = global_tokens / dt
        mfu = cfg.flops_per_token() * tps / (peak * dist.get_world_size()) if peak else None
        moe = load_balance(_expert_load(family, model, p.tp)) if family.expert_load else {}
        m = StepMetrics(step + 1, _global_mean(loss), norm.item(), dt, tps, mfu, peak_memory_gib(device),
                        profiled=profiled, **moe)
        steps.append(m)
        if dist.get_rank() == 0:
            print(m.line(), flush=True)
    report = profiler.finish(analyze_trace=dist.get_rank() == 0)
    if report is not None:
        print(report.table(), flush=True)
    if tc.checkpoint.folder:
        ckpt.save(tc.checkpoint.folder, model, optimizer, end)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    return TrainResult(tc.to_json(), steps, compile_s, numerics_changing(c.joint_passes, c.passes), device_name, report,
                       records)


def _expert_load(family: ModelFamily, model: nn.Module, tp: int) -> torch.Tensor:
    """The step's routed and kept counts over all ranks; TP ranks route the same tokens: counted once."""
    load = family.expert_load(model)
    dist.all_reduce(load)
    return load / tp


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def not_run(tc: TrainConfig, reason: str) -> dict:
    """The summary of a run a pass kept from running here (status "not run", the reason)."""
    return {"config": tc.to_json(), "status": "not run", "reason": reason}


def _train_summary(tc: TrainConfig) -> dict:
    try:
        summary = train(tc).summary()
    except PassUnavailable as e:  # every rank raises it (the ranks agree on the probe)
        summary = not_run(tc, str(e))
    if tc.profiling.folder and dist.get_rank() == 0:
        Path(tc.profiling.folder, "summary.json").write_text(json.dumps(summary, indent=1))
    return summary


def run_training(tc: TrainConfig) -> dict:
    """Train under torchrun, or on spawned ranks; returns rank 0's summary (status "ok", or "not
    run" with the reason where a pass needs what this machine lacks)."""
    tc.validate()
    for name in symmetric_memory_passes(tc.compile.passes):
        reason = unsupported_here(tc.training.device)
        if reason:  # known before any rank starts
            return not_run(tc, f"{name}: {reason}")
    if launched_by_torchrun():
        return _train_summary(tc)
    return spawn(_train_summary, tc.parallelism.dims.world_size, tc)


def training_in_worker(config: dict) -> dict:
    """A worker's entry point (irlens.runtime.isolation calls it by name): `run_training` of the TrainConfig
    whose JSON (`TrainConfig.to_json`) is `config`."""
    return run_training(TrainConfig.from_json(config))
