"""Nsight Compute's hardware counters beside irlens's model of a kernel (`scripts/ncu_check.py`).

`ncu --csv --print-units base --print-kernel-base function --metrics METRICS -k regex:NAMES
python ...` prints one line per kernel launch and metric. What is compared, per kernel:
- bytes: DRAM bytes read and written (`dram__bytes_read.sum`, `dram__bytes_write.sum`) against
  what irlens charges the kernel (`Kernel.bytes_read`, `bytes_written`). Nsight Compute flushes
  the caches before each profiled launch (`--cache-control all`), so a kernel's reads all come
  from DRAM; a kernel's writes still in the L2 when it ends are written back later, outside
  its counters (PITFALLS: x*2 over 2^24 float32 read 67.1 MB and wrote 44.0 MB), so a write
  agrees when it lies between irlens's figure less the L2's size and irlens's figure.
- flops: fadd + fmul + 2 x ffma per thread (`sm__sass_thread_inst_executed_op_*_pred_on.sum`),
  the same for half precision, plus 2 x each tensor-core operation counted
  (`sm__ops_path_tensor_*`), against irlens's flops of the kernel's nodes. Elementwise ops
  differ by construction (irlens counts one flop per op and element; a tanh or an exp runs on
  the special-function unit, a division as a reciprocal and a multiply): the table says so.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum")
FLOAT_OPS = tuple(f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum" for p in ("f", "h") for op in ("add", "mul", "fma"))
TENSOR_PREFIX = "sm__ops_path_tensor_"
AGREE = 0.10  # the target: within 10 %


def kernel_base(name: str) -> str:
    """A kernel's function name: no namespace, template or parameters (CUPTI and Nsight Compute
    print nvFuser's as `nvf::nvfuser_pointwise_f0_c1_r0_g0(...)`), and no fusion region (irlens
    names an nvFuser kernel `nvFusion5/nvfuser_pointwise_f0_c1_r0_g1`: the same kernel name
    recurs in other regions, their launches keep the regions' order)."""
    name = re.sub(r"\(.*$", "", name.strip())
    name = re.sub(r"<.*>$", "", name)
    return name.split("::")[-1].split(" ")[-1].split("/")[-1]


def name_filter(names: list[str]) -> str:
    """Nsight Compute's `-k` argument selecting these kernels (and the odd other that contains
    one of them as a word: `launches` keeps only exact names)."""
    return "regex:\\b(" + "|".join(re.escape(n) for n in sorted(set(names))) + ")\\b"


@dataclass
class Launch:
    """One profiled launch: its kernel, its place among the process's launches, its metrics."""

    name: str
    id: int
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def flops(self) -> float | None:
        """fadd + fmul + 2 ffma (single and half precision) + 2 x tensor-core operations, where counted."""
        if not any(k in self.metrics for k in FLOAT_OPS) and not self.tensor_ops:
            return None
        m = self.metrics
        scalar = sum(m.get(f"sm__sass_thread_inst_executed_op_{p}{op}_pred_on.sum", 0.0) * (2 if op == "fma" else 1)
                     for p in ("f", "h") for op in ("add", "mul", "fma"))
        return scalar + 2 * self.tensor_ops

    @property
    def tensor_ops(self) -> float:
        return sum(v for k, v in self.metrics.items() if k.startswith(TENSOR_PREFIX) and k.endswith(".sum"))


def parse_csv(text: str) -> list[Launch]:
    """The launches of `ncu --csv --print-units base` output, in launch order (lines that are not
    the table's, ncu's own messages and the program's output, are skipped)."""
    rows = list(csv.DictReader(io.StringIO("\n".join(line for line in text.splitlines() if line.startswith('"')))))
    launches: dict[int, Launch] = {}
    for r in rows:
        try:
            launch = launches.setdefault(int(r["ID"]), Launch(kernel_base(r["Kernel Name"]), int(r["ID"])))
            launch.metrics[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
    return [launches[i] for i in sorted(launches)]


def last_launches(launches: list[Launch], counts: dict[str, int]) -> dict[str, list[Launch]]:
    """Per kernel name, its last `counts[name]` launches (one step's, the compile's and warm-up's
    before them left out), in order; a name launched fewer times gets what there is."""
    found: dict[str, list[Launch]] = {}
    for launch in launches:
        if launch.name in counts:
            found.setdefault(launch.name, []).append(launch)
    return {name: found[name][-counts[name]:] for name in found}


def agreement(model: float | None, measured: float | None) -> float | None:
    """(measured - model) / model; None where either is missing or the model is 0."""
    if model is None or measured is None or not model:
        return None
    return (measured - model) / model


def write_agrees(model: int | None, measured: float | None, l2_bytes: int) -> bool:
    """A kernel's DRAM writes agree with its modelled writes when they lie between the model less
    what the L2 can still hold dirty at the kernel's end and the model, give or take 10 %."""
    if model is None or measured is None:
        return False
    return (1 - AGREE) * max(model - l2_bytes, 0) <= measured <= (1 + AGREE) * model + (1 << 20)
