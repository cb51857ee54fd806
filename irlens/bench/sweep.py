"""The ceilings' sweep, measured on the device in the same run (irlens.core.ceilings: the record it gives).

Memory bandwidth: the best of a copy (bytes read + written), a read-only reduction and a
write-only fill, each over sizes far beyond the L2 cache, so the figure is DRAM's. Matrix
products, per dtype: the best rate over a sweep of square sizes and the workload's own GEMM
shapes (`irlens.core.cost.gemm_shapes`), each as mm, as addmm with a bias, and as nn.Linear runs it
(addmm of the bias, x and the transpose of a weight stored [n, k]), or bmm: a single large
square product under-states what the device does on other shapes (an H200 ran a 16384 x 1024 x
3072 bf16 addmm 4 % faster than an 8192³ mm), and cuBLAS picks other kernels for each layout.
float32 products run as the workloads' do: with TF32 exactly where torch allows it
(`torch.backends.cuda.matmul.allow_tf32`, off by default; XLA runs at precision `highest`),
and the result says which. Each figure stands beside the vendor's dense (no sparsity) figure
for the device where `SPECS` knows it. Times are medians (triton.testing.do_bench).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from irlens.core.ceilings import Ceilings, spec_for
from irlens.core.cost import Gemm

SQUARE_SIZES = (2048, 4096, 8192, 16384)
BANDWIDTH_BYTES = (1 << 28, 1 << 30, 1 << 31)  # 256 MiB .. 2 GiB per buffer: all far beyond an L2
MAX_WORKLOAD_GEMMS = 24  # the largest distinct shapes a workload set brings, by flops


def sweep(gemms: list[Gemm], squares: tuple[int, ...] = SQUARE_SIZES) -> list[Gemm]:
    """The shapes to time: the square sizes, then the workloads' largest distinct shapes."""
    own = sorted(set(gemms), key=lambda g: -g.flops)[:MAX_WORKLOAD_GEMMS]
    return [Gemm(1, s, s, s) for s in squares] + [g for g in own if g not in {Gemm(1, s, s, s) for s in squares}]


@dataclass
class Sweep:
    """Every figure a sweep measured, not only the best: what the cache keeps (irlens.bench.ceilings_cache),
    so that a later run on the same device and software times only the shapes it has not yet."""

    device: str
    memory: dict[str, float] = field(default_factory=dict)  # "copy of 256 MiB" -> GB/s
    matmul: dict[str, dict[str, float]] = field(default_factory=dict)  # dtype -> {"addmm [..]@[..]": TFLOP/s}
    timed: dict[str, list[list[int]]] = field(default_factory=dict)  # dtype -> shapes timed (out of memory too)
    tf32: bool = False
    l2_bytes: int | None = None

    def ceilings(self) -> Ceilings:
        """The best of each: memory over the bandwidth kernels, per dtype over every shape timed."""
        memory_best = max(self.memory, key=self.memory.get) if self.memory else "nothing measured"
        best = {d: max(rates, key=rates.get) for d, rates in self.matmul.items() if rates}
        return Ceilings(self.device, self.memory.get(memory_best, 0.0), memory_best,
                        {d: self.matmul[d][label] for d, label in best.items()}, best, tf32=self.tf32,
                        l2_bytes=self.l2_bytes, spec=spec_for(self.device))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Sweep":
        return cls(**d)


def measure_sweep(gemms: list[Gemm] | None = None, dtypes: tuple[str, ...] = ("bfloat16", "float32"),
                  known: Sweep | None = None) -> Sweep:
    """Measure on the current CUDA device (see the module docstring) what `known` (an earlier
    sweep on the same device and software) does not hold: the bandwidth kernels if it has none,
    the shapes it has not timed."""
    import torch
    from triton.testing import do_bench

    def bench_ms(fn) -> float:
        return do_bench(fn, warmup=25, rep=100, return_mode="median")

    torch.cuda.empty_cache()  # what the work counts before it held
    name = torch.cuda.get_device_name()
    l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", None)
    result = Sweep.from_json(known.to_json()) if known is not None else Sweep(name)
    result.tf32, result.l2_bytes = bool(torch.backends.cuda.matmul.allow_tf32), l2

    if not result.memory:
        for nbytes in BANDWIDTH_BYTES:
            n = nbytes // 4
            src = torch.randn(n, device="cuda")
            dst = torch.empty_like(src)
            for what, fn, moved in (("copy", lambda: dst.copy_(src), 2 * nbytes),
                                    ("read (sum)", lambda: src.sum(), nbytes),
                                    ("write (fill)", lambda: dst.fill_(1.0), nbytes)):
                result.memory[f"{what} of {nbytes >> 20} MiB"] = moved / (bench_ms(fn) * 1e-3) / 1e9
            del src, dst
            torch.cuda.empty_cache()

    for dtype in dtypes:
        dt = getattr(torch, dtype)
        rates, timed = result.matmul.setdefault(dtype, {}), result.timed.setdefault(dtype, [])
        for g in sweep(gemms or []):
            if [g.batch, g.m, g.n, g.k] in timed:
                continue
            timed.append([g.batch, g.m, g.n, g.k])
            try:
                a = torch.randn(g.batch, g.m, g.k, device="cuda", dtype=dt)
                b = torch.randn(g.batch, g.k, g.n, device="cuda", dtype=dt)
            except torch.OutOfMemoryError:
                continue
            bias = torch.randn(g.n, device="cuda", dtype=dt)
            # a bias epilogue, and nn.Linear's transposed weight, make cuBLAS pick other kernels
            w = b[0].t().contiguous() if g.batch == 1 else None  # a weight as nn.Linear stores it: [n, k]
            variants = ([("mm", lambda: torch.mm(a[0], b[0])), ("addmm", lambda: torch.addmm(bias, a[0], b[0])),
                         ("linear addmm", lambda: torch.addmm(bias, a[0], w.t()))]
                        if g.batch == 1 else [("bmm", lambda: torch.bmm(a, b))])
            for how, fn in variants:
                rates[f"{how} {g}"] = g.flops / (bench_ms(fn) * 1e-3) / 1e12
            del a, b, bias, w
            torch.cuda.empty_cache()
    return result


def measure_ceilings(gemms: list[Gemm] | None = None, dtypes: tuple[str, ...] = ("bfloat16", "float32")) -> Ceilings:
    """Measure on the current CUDA device (see the module docstring)."""
    return measure_sweep(gemms, dtypes).ceilings()
