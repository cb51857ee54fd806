"""The GPU bench in minutes: its ceilings kept per device and software, its cells
compiled ahead in parallel workers, the compilers' caches reused from run to run, its progress
with an estimate of the time left. Everything here runs on the CPU (a bench on the CPU, with the
ceilings' worker call stubbed: they need a GPU); the GPU measurement is
`scripts/gpu_jobs.sh bench-cold-warm`."""
from __future__ import annotations

import io
import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from irlens.backends.thunder import kernel_db
from irlens.bench.run import bench
from irlens.bench.progress import BenchProgress
from irlens.bench.sweep import Sweep
from irlens.core.cost import Gemm
from irlens.bench.ceilings_cache import cache_key, cached_sweep
from irlens.bench.compile_caches import NVFUSER_DB_ENV, NVFUSER_RUN_ENV, cache_env, compile_caches
from irlens.runtime.pool import WorkerPool
from tests.support.nvfuser_kernel_db import compile_into


def _stub_ceilings(monkeypatch) -> None:
    """The ceilings' worker call (it needs a GPU) answers with fixed ceilings."""
    real_call = WorkerPool.call
    sweep = Sweep("stub", {"copy of 256 MiB": 1000.0}, {"float32": {"mm [8x8]@[8x8]": 10.0}})

    def call(self, fn, *args, **kwargs):
        if fn == "irlens.bench.ceilings_cache:measure_in_worker":
            return {"ceilings": sweep.ceilings().to_json(), "source": "from a stub"}
        return real_call(self, fn, *args, **kwargs)

    monkeypatch.setattr(WorkerPool, "call", call)


# --- the ceilings, kept per device and software ---------------------------------------------------

def test_the_ceilings_are_kept_and_only_new_shapes_are_timed(tmp_path):
    asked = []

    def measure(gemms, known):  # a sweep that times what `known` lacks, as measure_sweep does
        sweep = Sweep.from_json(known.to_json()) if known else Sweep("GPU", {"copy of 256 MiB": 3000.0})
        for g in gemms:
            if [g.batch, g.m, g.n, g.k] not in sweep.timed.setdefault("bfloat16", []):
                asked.append(g)
                sweep.timed["bfloat16"].append([g.batch, g.m, g.n, g.k])
                sweep.matmul.setdefault("bfloat16", {})[f"mm {g}"] = 500.0 + g.m / 1000
        return sweep

    path = tmp_path / "ceilings" / "key.json"
    a, b = Gemm(1, 4096, 4096, 1024), Gemm(1, 8192, 1024, 1024)
    first, source = cached_sweep([a], path, False, measure)
    assert asked == [a] and "measured in this run, kept in" in source and path.is_file()
    second, source = cached_sweep([a, b], path, False, measure)
    assert asked == [a, b] and source == f"from {path}, with 1 new matrix product shapes timed in this run"
    assert second.ceilings().matmul_tflops["bfloat16"] == pytest.approx(500.0 + 8.192)  # the best of every shape
    third, source = cached_sweep([a, b], path, False, measure)
    assert asked == [a, b] and source == f"from {path}"  # nothing timed again
    cached_sweep([a], path, True, measure)  # --remeasure: all of it
    assert asked == [a, b, a]
    path.write_text("not json")
    cached_sweep([a], path, False, measure)  # an unreadable cache is measured again
    assert asked == [a, b, a, a]


def test_the_ceilings_key_names_the_gpu_driver_and_libraries():
    versions = {"torch": "2.11.0+cu130", "triton": "3.6.0", "jax": "0.11.2", "jaxlib": "0.11.2"}
    key = cache_key("NVIDIA H100 80GB HBM3", "580.159.04", versions, "13.0", False)
    assert key == "NVIDIA_H100_80GB_HBM3_driver_580.159.04_cuda_13.0_torch_2.11.0+cu130_triton_3.6.0_jax_0.11.2_" \
                  "jaxlib_0.11.2_no_tf32"
    assert cache_key("NVIDIA H200", "580.159.04", versions, "13.0", False) != key
    assert cache_key("NVIDIA H100 80GB HBM3", "580.159.04", {**versions, "triton": "3.7.0"}, "13.0", False) != key


# --- the compilers' caches ----------------------------------------------------------------------

def test_the_compilers_caches_point_under_the_cache_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    env = cache_env(tmp_path)
    assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "inductor")
    assert env["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "jax")
    assert env["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] == "0"
    import os

    with compile_caches(tmp_path) as caches:
        assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / "triton") and os.environ[NVFUSER_RUN_ENV] == caches.run
        assert (tmp_path / "jax").is_dir()
    assert "TORCHINDUCTOR_CACHE_DIR" not in os.environ and NVFUSER_DB_ENV not in os.environ


def test_nvfusers_kernel_database_is_copied_per_worker_and_merged(tmp_path):
    """Two workers of a run, each with its own copy, compile kernels numbered alike (both write
    kernel_1); merged, the shared database holds each kernel once, its binary beside its own
    source; a later worker's copy holds them all, linked."""
    root = tmp_path / "nvfuser"
    a, b = kernel_db.worker_copy(root, "run1"), kernel_db.worker_copy(root, "run1")
    compile_into(a, ["kernel A", "kernel B"])
    compile_into(b, ["kernel C", "kernel A"])
    assert kernel_db.merge(root, "run1") == 3
    shared = root / kernel_db.SHARED / kernel_db.DB
    entries = kernel_db.read_entries(shared)
    sources = [(shared / code).read_text() for _, _, code, _ in entries]
    assert sorted(sources) == ["kernel A", "kernel B", "kernel C"]  # each once
    assert all((shared / binary).read_bytes() == (shared / code).read_text().encode()[::-1] for _, _, code, binary in entries)
    assert not (root / kernel_db.RUNS / "run1").exists()
    later = kernel_db.worker_copy(root, "run2") / kernel_db.DB
    assert kernel_db.read_entries(later) == entries
    assert (later / "kernel_2.cu").stat().st_ino == (shared / "kernel_2.cu").stat().st_ino
    env = kernel_db.worker_env({kernel_db.ROOT_ENV: str(root), kernel_db.RUN_ENV: "run2",
                                "NVFUSER_ENABLE": "kernel_profile"})
    assert env["NVFUSER_ENABLE"] == "kernel_profile,kernel_db" and Path(env["TMPDIR"]).parent.name == "run2"
    assert kernel_db.worker_env({"NVFUSER_ENABLE": "kernel_profile"}) == {}  # no run keeps a database


# --- progress, with the time left -------------------------------------------------------------------

def test_progress_estimates_the_time_left_from_the_cells_finished():
    now = [0.0]
    out = io.StringIO()
    progress = BenchProgress(out, clock=lambda: now[0])
    progress.plan("compiling ahead", 4, width=2)
    progress.plan("timed float32", 4)
    progress.phase("compiling ahead")
    assert progress.estimate_left() is None
    progress.start("gelu · inductor · fwd")
    now[0] = 10.0
    progress.finish()
    # 3 cells to compile at 10 s, 2 at once (15 s); 4 timed cells, none yet: 10 s each (40 s)
    assert progress.estimate_left() == pytest.approx(55.0)
    assert out.getvalue().splitlines()[-1] == ("irlens bench: compiling ahead: 1/4 cells (gelu · inductor · fwd: 10 s) "
                                               "· 0:10 elapsed, about 0:55 left")
    progress.expect(2)  # two of the four needed compiling
    assert progress.estimate_left() == pytest.approx(10.0 + 40.0)
    progress.phase("timed float32")  # the compiles are over: one ran
    progress.start("gelu · inductor · fwd")
    now[0] = 12.0
    progress.finish()
    assert progress.estimate_left() == pytest.approx(3 * 2.0)


# --- the whole bench on the CPU: compiled ahead, caches reused --------------------------------------

CRASHING_BACKEND = '''
import os

from irlens.backends.base import Backend
from irlens.frontends.base import Availability


class Crash(Backend):
    name, frontend, description = "crash", None, "ends its process"

    def availability(self, device):
        return Availability(True)

    def compile(self, inst, mode):
        with open(os.environ["CRASH_LOG"], "a") as f:
            f.write("ran\\n")
        os._exit(3)


crash = Crash()
'''


@pytest.mark.slow
def test_a_bench_compiles_ahead_then_a_second_one_reuses_the_caches(tmp_path, monkeypatch, capfd):
    """A bench on the CPU with a cache folder: its cells are compiled ahead, Inductor's kernels
    and XLA's executables land in the folder, and the log says which cells were compiled; a
    cell that crashed while compiling ahead is not run again (it would crash again after the same
    compile: minigpt fwd+bwd through nvFuser took its whole timeout), its row says where it
    crashed. The next bench compiles ahead only the cell that crashed, and gives the same rows."""
    path = tmp_path / "crash.py"
    path.write_text(textwrap.dedent(CRASHING_BACKEND))
    monkeypatch.setenv("CRASH_LOG", str(tmp_path / "ran.log"))
    _stub_ceilings(monkeypatch)
    cache = tmp_path / "cache"
    args = (["gelu"], ["inductor", "xla", f"{path}:crash"], ["fwd"], ["float32"])
    first = bench(*args, device="cpu", preset="tiny", compile_jobs=2, cache_dir=cache, timeout=300)
    log = capfd.readouterr().err
    assert [(r.backend, r.status) for r in first.rows] == [("inductor", "ok"), ("xla", "ok"), ("crash", "failed")]
    crashed = first.rows[2]
    assert (crashed.phase, crashed.reason) == ("compile ahead", "while compiling ahead: worker process exited "
                                                                       "with status 3")
    assert (tmp_path / "ran.log").read_text() == "ran\n"  # once: not in its timed turn
    assert len(re.findall(r"compiling ahead: \d/3 cells", log)) == 3
    assert re.search(r"timed float32: 3/3 cells \(.*\) · \d+:\d\d elapsed, about 0:00 left", log)
    assert any((cache / "inductor").rglob("*.py")) and any((cache / "jax").iterdir())
    (cells,) = json.loads((cache / "compiled-ahead.json").read_text()).values()
    assert sorted(cells) == ["gelu/fwd/inductor/float32/tiny/cpu", "gelu/fwd/xla/float32/tiny/cpu"]

    second = bench(*args, device="cpu", preset="tiny", compile_jobs=2, cache_dir=cache, timeout=300)
    log = capfd.readouterr().err
    assert re.findall(r"compiling ahead: (\d/\d) cells \(([^:]*):", log) == [("1/1", "gelu · crash · fwd · float32")]
    assert [(r.backend, r.status) for r in second.rows] == [(r.backend, r.status) for r in first.rows]



@pytest.mark.slow
def test_compiling_ahead_stops_at_its_share_of_the_budget(tmp_path, monkeypatch, capfd):
    """A budget spent on compiles alone would leave every cell untimed (an H200 run: 0 of 28 rows
    in a 120 s budget): past its share, compiling ahead starts no cell; those cells compile in
    their timed turn, and are timed."""
    import irlens.bench.run

    monkeypatch.setattr(irlens.bench.run, "COMPILE_SHARE", 0.0)
    _stub_ceilings(monkeypatch)
    cache = tmp_path / "cache"
    doc = bench(["gelu"], ["eager", "inductor"], ["fwd"], ["float32"], device="cpu", preset="tiny",
                compile_jobs=2, cache_dir=cache, timeout=300, budget_s=600)
    log = capfd.readouterr().err
    assert [(r.backend, r.status) for r in doc.rows] == [("eager", "ok"), ("inductor", "ok")]
    assert "compiling ahead stopped at its share of the time budget: 2 of 2 cells compile in their timed turn" in log
    assert not re.search(r"compiling ahead: \d/\d cells", log)
    assert not any(json.loads((cache / "compiled-ahead.json").read_text()).values())  # nothing compiled ahead


@pytest.mark.slow
def test_a_bench_stopped_by_an_error_keeps_its_rows_and_a_rerun_completes_it(tmp_path, monkeypatch, capfd):
    """The GPU run that lost 5 minutes of results to one OSError: now the document is written from
    the ceilings on and after every row; an error stops the run with the rows that finished and
    one not-run row per cell left, naming the error; `--rerun` on it runs those cells alone and
    puts their rows in place."""
    import errno

    import irlens.bench.run
    from irlens.bench.run import BenchConfig, restrict_to_rerun
    from irlens.matrix import read_document, write_document
    from irlens.matrix.join import RERUN, join, part
    from irlens.matrix.row import STOPPED_PHASE

    _stub_ceilings(monkeypatch)
    path, finished_rows = tmp_path / "bench.json", []
    real = irlens.bench.run.annotate_kernels

    def save(doc) -> None:
        write_document(doc, path)
        finished_rows.append(sum(r.phase != STOPPED_PHASE for r in doc.rows))

    def annotate(row) -> None:  # the run's own work fails after the inductor cell: a disk that filled
        if row.backend == "inductor":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(row)

    monkeypatch.setattr(irlens.bench.run, "annotate_kernels", annotate)
    matrix = (["gelu"], ["eager", "inductor"], ["fwd"], ["float32"])
    with pytest.raises(OSError):
        bench(*matrix, device="cpu", preset="tiny", timeout=300, checkpoint=save, cache_dir=tmp_path / "cache")
    assert ("irlens bench: the run stopped at OSError: [Errno 28] No space left on device; its document written with "
            "the 1 rows that finished and 1 not run") in capfd.readouterr().err
    assert finished_rows == [0, 1, 1]  # at the ceilings, after the eager row, at the error
    stopped = read_document(path)
    assert [(r.backend, r.status, r.phase) for r in stopped.rows] == [("eager", "ok", ""),
                                                                      ("inductor", "unavailable", STOPPED_PHASE)]
    assert stopped.rows[1].reason == "not run: the run stopped at OSError: [Errno 28] No space left on device"
    assert stopped.rows[0].bench.must is not None and stopped.ceilings is not None  # a bench row, against its ceilings

    monkeypatch.setattr(irlens.bench.run, "annotate_kernels", real)
    config = BenchConfig(*matrix, preset="tiny")
    assert restrict_to_rerun(config, stopped) and config.only == {"float32": frozenset({("gelu", "fwd", "inductor")})}
    rerun = bench(config.workloads, config.backends, config.modes, config.dtypes, "cpu", "tiny", 300, only=config.only,
                  cache_dir=tmp_path / "cache")
    assert [(r.backend, r.status) for r in rerun.rows] == [("inductor", "ok")]
    whole = join([stopped, part(rerun, None)], RERUN)
    assert [(r.backend, r.status) for r in whole.rows] == [("eager", "ok"), ("inductor", "ok")]


# --- the check against Nsight Compute's counters: everything but ncu itself -------------------------

def _ncu_check():
    import importlib.util

    path = Path(__file__).parents[2] / "scripts" / "ncu_check.py"
    spec = importlib.util.spec_from_file_location("ncu_check", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _csv(launches: list[tuple[str, dict[str, float]]]) -> str:
    """Nsight Compute's CSV form (`--csv --print-units base`), one line per launch and metric."""
    lines = ['"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",'
             '"Metric Name","Metric Unit","Metric Value"', '==PROF== Disconnected']
    for i, (name, metrics) in enumerate(launches):
        lines += [f'"{i}","1","python","h","{name}","1","7","Command line profiler metrics","{m}","byte","{v:,.0f}"'
                  for m, v in metrics.items()]
    return "\n".join(lines)


def test_the_ncu_check_sets_counters_beside_the_model(tmp_path):
    """The script's CPU part on a real record (block fwd through XLA on the CPU): the
    sample, each kernel's last launch matched to its record, agreement within 10 % and, outside
    it, the reason; the table."""
    from irlens.bench.ncu import kernel_base, parse_csv

    check = _ncu_check()
    path = tmp_path / "records.json"
    check.record("block:fwd:float32", "xla", path, device="cpu", preset="tiny")
    records = json.loads(path.read_text())
    records["l2_bytes"] = 50 << 20
    names = check.sample(records["kernels"], 4)
    assert len(names) == 4 and not any(n.startswith(("extern_kernels", "custom")) for n in names)
    sampled = [k for k in records["kernels"] if k["device_name"] in names]
    first = sampled[0]
    warmup = [(first["device_name"], {"dram__bytes_read.sum": 1.0, "dram__bytes_write.sum": 1.0})]
    step = [(k["device_name"], {"dram__bytes_read.sum": k["bytes_read"] * (2.0 if k is first else 1.0),
                                "dram__bytes_write.sum": k["bytes_written"], "gpu__time_duration.sum": 5000.0,
                                "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": (k["flops"] or 0) / 2})
            for k in sampled]
    launches = parse_csv(_csv(warmup + step))
    assert [launch.name for launch in launches] == [kernel_base(n) for n, _ in warmup + step]
    rows = check.compare(records, launches)
    assert [r["kernel"] for r in rows] == [k["name"] for k in sampled]
    assert rows[0]["read_delta"] == pytest.approx(1.0) and not rows[0]["agrees"] and "reads:" in rows[0]["why"]
    assert all(r["agrees"] and r["why"] == "agrees" and r["time_us"] == 5.0 for r in rows[1:])
    assert all(r["flops_delta"] in (None, 0.0) for r in rows)
    check.write_table(tmp_path, rows, ["a note"], "cpu")
    table = (tmp_path / "ncu-check.md").read_text()
    assert f"## xla: {len(rows) - 1} of {len(rows)} kernels within 10 % (bytes)" in table
    assert "| +100 % |" in table and "- a note" in table
    assert json.loads((tmp_path / "ncu-check.json").read_text())["rows"][0]["kernel"] == first["name"]


def test_an_nvfuser_record_names_its_device_kernel_and_aten_calls_are_not_sampled():
    """nvFuser's records carry their fusion region (`nvFusion5/...`), which the device name does not; the
    same kernel name in two regions keeps both records; Thunder's ATen calls (`torch.matmul`) launch
    kernels of other names and are not sampled."""
    from irlens.bench.ncu import kernel_base

    assert kernel_base("nvFusion5/nvfuser_pointwise_f0_c1_r0_g1") == "nvfuser_pointwise_f0_c1_r0_g1"
    assert kernel_base("nvf::nvfuser_pointwise_f0_c1_r0_g1(nvf::Tensor<nvf::__bfloat, 3, 3>)") == \
        "nvfuser_pointwise_f0_c1_r0_g1"
    check = _ncu_check()
    kernels = [{"name": n, "device_name": kernel_base(n), "kind": kind, "bytes_read": 10, "bytes_written": 10,
                "combines": 1} for n, kind in [("nvFusion2/nvfuser_pointwise_f0_c1_r0_g0", "fused"),
                                               ("torch.matmul", "matmul"), ("torch.split", "extern"),
                                               ("nvFusion3/nvfuser_pointwise_f0_c1_r0_g0", "fused")]]
    assert check.sample(kernels, 8) == ["nvfuser_pointwise_f0_c1_r0_g0"]
