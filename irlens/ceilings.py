"""The hardware's ceilings, measured on the device in the same run, beside the vendor's figures.

Memory bandwidth: the best of a copy (bytes read + written), a read-only reduction and a
write-only fill, each over sizes far beyond the L2 cache, so the figure is DRAM's. Matrix
products, per dtype: the best rate over a sweep of square sizes and the workload's own GEMM
shapes (`irlens.cost.gemm_shapes`), each as mm, as addmm with a bias, and as nn.Linear runs it
(addmm of the bias, x and the transpose of a weight stored [n, k]), or bmm: a single large
square product under-states what the device does on other shapes (an H200 ran a 16384 x 1024 x
3072 bf16 addmm 4 % faster than an 8192³ mm), and cuBLAS picks other kernels for each layout.
float32 products run as the workloads' do: with TF32 exactly where torch allows it
(`torch.backends.cuda.matmul.allow_tf32`, off by default; XLA runs at precision `highest`),
and the result says which. Each figure stands beside the vendor's dense (no sparsity) figure
for the device where `SPECS` knows it. Times are medians (triton.testing.do_bench).

The sweep still under-states the device: event timing against the profiler's, kernels cuBLAS
picks for other layouts, clocks that depend on the data. So a run's ceilings are the sweep's
raised to the best rate any of its kernels was timed at (`raised_to`: GB/s of any kernel,
TFLOP/s per dtype), where that rate stays at or below the vendor's figure; a kernel above the
vendor's figure is a model error, not a faster device. Where `SPECS` does not know the device
nothing is raised: with no figure above them, the best kernel would be 100 % by definition and
no over-count could show.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace


@dataclass(frozen=True)
class Spec:
    """A device's datasheet figures: dense tensor-core rates (no sparsity), memory bandwidth."""

    name: str
    memory_gbps: float
    tflops: dict[str, float]  # bfloat16, float16, tfloat32 (tensor cores), float32 (no TF32)


_HOPPER_SXM = {"bfloat16": 989.4, "float16": 989.4, "tfloat32": 494.7, "float32": 66.9}
# Keyed by torch.cuda.get_device_name(); figures from NVIDIA's H100 and H200 datasheets
SPECS = {
    "NVIDIA H100 80GB HBM3": Spec("H100 SXM5 80 GB", 3350.0, _HOPPER_SXM),
    "NVIDIA H200": Spec("H200 SXM 141 GB", 4800.0, _HOPPER_SXM),
}


def spec_for(device_name: str) -> Spec | None:
    return SPECS.get(device_name)


@dataclass(frozen=True)
class Gemm:
    """A matrix product's shape: `batch` products of [m, k] @ [k, n]."""

    batch: int
    m: int
    n: int
    k: int

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.m * self.n * self.k

    def __str__(self) -> str:
        product = f"[{self.m}x{self.k}]@[{self.k}x{self.n}]"
        return f"{self.batch} x {product}" if self.batch > 1 else product


@dataclass
class Ceilings:
    device: str
    memory_gbps: float  # DRAM bandwidth: the best of the bandwidth kernels, bytes moved per second / 1e9
    memory_best: str  # which kernel and size gave it
    matmul_tflops: dict[str, float]  # dtype -> the best matrix-product rate of the sweep
    matmul_best: dict[str, str] = field(default_factory=dict)  # dtype -> the shape that gave it
    tf32: bool = False  # float32 products used TF32 (as the workloads' do)
    l2_bytes: int | None = None
    spec: dict | None = None  # the vendor's figures (Spec) where known
    # "memory" or a matmul dtype -> {"sweep": the sweep's own figure, "by": the kernel that ran
    # faster}: that figure above was raised to a kernel's rate (`raised_to`)
    raised: dict[str, dict] = field(default_factory=dict)
    source: str = ""  # where the sweep's figures came from: measured in the run, or kept (irlens.bench.ceilings_cache)

    def matmul_key(self, dtype: str) -> str:
        """The matmul ceiling a dtype's work is held to (float16 by bfloat16's where not measured)."""
        return "bfloat16" if dtype == "float16" and "float16" not in self.matmul_tflops else dtype

    def peak_tflops(self, dtype: str) -> float | None:
        return self.matmul_tflops.get(self.matmul_key(dtype))

    def vendor(self, what: str) -> float | None:
        """The vendor's figure for "memory" (GB/s) or a matmul key (TFLOP/s; float32 as TF32 where used)."""
        spec = self.spec or {}
        if what == "memory":
            return spec.get("memory_gbps")
        return (spec.get("tflops") or {}).get("tfloat32" if what == "float32" and self.tf32 else what)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "Ceilings":
        """Also reads the older form (`copy_gbps`, `bf16_tflops`, `fp32_tflops`: one copy, 8192³ products)."""
        if "copy_gbps" in d:
            return cls(d.get("device", "?"), d["copy_gbps"], "one 2 GiB device copy, all an older run measured",
                       {"bfloat16": d["bf16_tflops"], "float32": d["fp32_tflops"]},
                       {"bfloat16": str(Gemm(1, 8192, 8192, 8192)), "float32": str(Gemm(1, 8192, 8192, 8192))},
                       spec=_spec_json(d.get("device")))
        return cls(**d)


@dataclass(frozen=True)
class Seen:
    """A rate a kernel of the run was timed at: `what` is "memory" (GB/s) or a matmul key (TFLOP/s)."""

    what: str
    rate: float
    by: str  # the kernel, and the row it ran in


def swept(c: Ceilings) -> Ceilings:
    """The ceilings as the sweep measured them, any raise undone."""
    tflops = {**c.matmul_tflops, **{d: r["sweep"] for d, r in c.raised.items() if d != "memory"}}
    memory = c.raised["memory"]["sweep"] if "memory" in c.raised else c.memory_gbps
    return replace(c, memory_gbps=memory, matmul_tflops=tflops, raised={})


def raised_to(c: Ceilings, seen: Iterable[Seen]) -> Ceilings:
    """The sweep's ceilings `c`, each raised to the best rate seen for it that is at or below the
    vendor's figure; none raised where the vendor's figure is unknown (see the module docstring).
    A matmul dtype the sweep did not measure gets no ceiling from kernels alone."""
    figures = {"memory": c.memory_gbps, **c.matmul_tflops}
    raised: dict[str, dict] = {}
    for s in seen:
        vendor = c.vendor(s.what) if s.what in figures else None
        if vendor is not None and figures[s.what] < s.rate <= vendor:
            raised[s.what] = {"sweep": raised.get(s.what, {}).get("sweep", figures[s.what]), "by": s.by}
            figures[s.what] = s.rate
    return replace(c, memory_gbps=figures.pop("memory"), matmul_tflops=figures, raised=raised)


def _spec_json(device: str | None) -> dict | None:
    spec = spec_for(device or "")
    return asdict(spec) if spec else None


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
                        l2_bytes=self.l2_bytes, spec=_spec_json(self.device))

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


def describe(c: Ceilings) -> str:
    """One line: each ceiling, the shape that gave it in the sweep or the kernel that raised it,
    beside the vendor's figure."""

    def source(what: str, best: str) -> str:
        vendor = c.vendor(what)
        spec = f"; {c.spec['name']} spec {vendor:.0f}" if vendor else ""
        if what in c.raised:
            r = c.raised[what]
            return f"raised from the sweep's {r['sweep']:.0f} by {r['by']}; the sweep's {best}{spec}"
        return best + spec

    parts = [f"memory **{c.memory_gbps:.0f} GB/s** ({source('memory', 'best: ' + c.memory_best)})"]
    for dtype, rate in c.matmul_tflops.items():
        label = {"bfloat16": "bf16", "float32": "fp32 (TF32)" if c.tf32 else "fp32 (no TF32)"}.get(dtype, dtype)
        parts.append(f"{label} matmul **{rate:.0f} TFLOP/s** "
                     f"({source(dtype, 'best at ' + c.matmul_best.get(dtype, '?'))})")
    if c.l2_bytes:
        parts.append(f"L2 {c.l2_bytes / 2**20:.0f} MiB")
    if c.source:
        parts.append(f"the sweep's figures {c.source}")
    return "; ".join(parts)
