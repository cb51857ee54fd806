"""Per-step throughput, model FLOPs utilization, peak memory and (MoE) the router's load balance."""
from __future__ import annotations

import resource
import sys
from dataclasses import asdict, dataclass

import torch

# dense bf16 tensor-core peak per device (the vendors' spec sheets), the first name contained in
# the device's wins (H100 PCIe and NVL before the SXM part); fp32 runs count TF32's half of it
_PEAK_BF16_FLOPS = {"H200": 989e12, "H100 PCIe": 756e12, "H100 NVL": 835e12, "H100": 989e12, "A100": 312e12}


def peak_flops(device: torch.device, dtype: torch.dtype) -> float | None:
    """The device's peak FLOP/s for `dtype` matmuls, or None where unknown (CPUs)."""
    if device.type != "cuda":
        return None
    name = torch.cuda.get_device_name(device)
    for key, flops in _PEAK_BF16_FLOPS.items():
        if key in name:
            return flops if dtype in (torch.bfloat16, torch.float16) else flops / 2
    return None


def reset_peak_memory(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_gib(device: torch.device) -> float:
    """Peak allocated device memory on the GPU; the process's peak resident set on the CPU."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux, bytes on macOS
    return rss / (2**30 if sys.platform == "darwin" else 2**20)


@dataclass
class StepMetrics:
    step: int
    loss: float
    grad_norm: float
    time_s: float
    tokens_per_s: float  # global: every data-parallel rank's tokens
    mfu: float | None  # fraction of the devices' peak, None where the peak is unknown
    peak_mem_gib: float
    # MoE only: assignments routed to each expert this step (all ranks, all MoE layers), the
    # imbalance max/mean of those counts (1.0 = perfectly even), the share dropped by capacity
    expert_tokens: list[int] | None = None
    expert_imbalance: float | None = None
    dropped_frac: float | None = None
    profiled: bool = False  # under the profiler (its host overhead is in time_s)

    def line(self) -> str:
        mfu = f"{100 * self.mfu:.1f}%" if self.mfu is not None else "n/a"
        moe = (f"  expert_imbalance {self.expert_imbalance:.2f}  dropped {100 * self.dropped_frac:.1f}%"
               if self.expert_tokens is not None else "")
        return (f"step {self.step:4d}  loss {self.loss:.4f}  grad_norm {self.grad_norm:.4f}  "
                f"tok/s {self.tokens_per_s:,.0f}  mfu {mfu}  peak_mem {self.peak_mem_gib:.2f} GiB  "
                f"time {1000 * self.time_s:.1f} ms{moe}{'  (profiled)' if self.profiled else ''}")

    def to_json(self) -> dict:
        return asdict(self)


def load_balance(load: torch.Tensor) -> dict:
    """[2, n_experts] routed and kept assignment counts -> StepMetrics' MoE fields."""
    routed, kept = load.double()
    return {"expert_tokens": [int(c) for c in routed.tolist()],
            "expert_imbalance": (routed.max() / routed.mean()).item(),
            "dropped_frac": (1 - kept.sum() / routed.sum()).item()}
