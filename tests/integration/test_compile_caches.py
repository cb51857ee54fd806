"""A cache never costs a result: the compilers' persistent caches (irlens.bench.compile_caches,
irlens.caches.upkeep, irlens.backends.thunder.kernel_db) on a full disk, a folder that cannot be
written, a corrupt database, a run that died before merging, a size cap, and the half-written C++
builds a killed compile leaves; and the bench document written row by row (irlens.bench.checkpoint)."""
from __future__ import annotations

import errno
import fcntl
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from irlens.caches import upkeep
from irlens.backends.thunder import kernel_db
from irlens.bench.compile_caches import NVFUSER_RUN_ENV, compile_caches
from irlens.runtime.isolation import CallFailed, Worker
from tests.support.nvfuser_kernel_db import compile_into

FULL = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.fixture(autouse=True)
def _each_test_a_run():
    upkeep.new_run()  # a cache warns once per run; each test is one


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("irlens: warning:")]


def _shared_sources(root: Path) -> dict[str, bytes]:
    shared = root / kernel_db.SHARED / kernel_db.DB
    return {(shared / code).read_text(): (shared / binary).read_bytes() for _, _, code, binary in kernel_db.read_entries(shared)}


# --- errors of a cache are warnings -----------------------------------------------------------------

def test_a_merge_on_a_full_disk_is_one_warning_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    """The GPU run's error (ENOSPC copying a worker's kernel into the shared database) no longer
    ends the run: one warning, the database off for the workers after, the copies removed."""
    with compile_caches(tmp_path) as caches:
        copy = Path(kernel_db.worker_env(dict(os.environ))["TMPDIR"])
        compile_into(copy, ["kernel A"])
        with monkeypatch.context() as m:
            m.setattr(kernel_db.os, "link", lambda *a: (_ for _ in ()).throw(FULL))
            m.setattr(kernel_db.shutil, "copyfile", lambda *a: (_ for _ in ()).throw(FULL))
            assert caches.merge_kernels() == 0
            assert caches.merge_kernels() == 0
        assert NVFUSER_RUN_ENV not in os.environ  # later workers get no copy
        assert kernel_db.worker_env(dict(os.environ)) == {}
    err = capsys.readouterr().err
    assert _warnings(err) == ["irlens: warning: not using nvFuser's kernel database for the rest of this run: "
                              "OSError: [Errno 28] No space left on device"]
    assert not (tmp_path / "nvfuser" / kernel_db.RUNS / caches.run).exists()
    assert kernel_db.read_entries(tmp_path / "nvfuser" / kernel_db.SHARED / kernel_db.DB) == []
    assert f"irlens: compiler caches in {tmp_path}: Inductor " in err


def test_a_worker_copy_that_cannot_be_made_is_a_warning_and_the_worker_runs_without(tmp_path, capsys):
    root = tmp_path / "nvfuser"
    root.mkdir()
    (root / kernel_db.RUNS).write_text("a file where the runs' folder goes")
    env = {kernel_db.ROOT_ENV: str(root), kernel_db.RUN_ENV: "run1"}
    assert kernel_db.worker_env(env) == {} and kernel_db.worker_env(env) == {}
    warned = _warnings(capsys.readouterr().err)
    assert len(warned) == 1 and warned[0].startswith("irlens: warning: not using nvFuser's kernel database")


def test_a_cache_folder_that_cannot_be_written_is_a_warning(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)  # Inductor sets it on its first compile here
    root = tmp_path / "cache"
    root.write_text("a file, not a folder")
    with compile_caches(root) as caches:
        assert caches.root is None and "TORCHINDUCTOR_CACHE_DIR" not in os.environ
    warned = _warnings(capsys.readouterr().err)
    assert len(warned) == 1 and warned[0].startswith("irlens: warning: not using the compilers' persistent caches "
                                                     "for the rest of this run: ")


def test_a_nearly_full_disk_turns_caching_off(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(upkeep, "disk_free", lambda path: 1 << 20)
    with compile_caches(tmp_path / "a") as caches:
        assert caches.root is None and "JAX_COMPILATION_CACHE_DIR" not in os.environ
    assert "1.0 MiB free on the disk of" in _warnings(capsys.readouterr().err)[0]
    monkeypatch.undo()
    with compile_caches(tmp_path / "b") as caches:  # the disk fills during the run
        assert os.environ["JAX_COMPILATION_CACHE_DIR"] == str(tmp_path / "b" / "jax")
        monkeypatch.setattr(upkeep, "disk_free", lambda path: 1 << 20)
        caches.check_disk()
        caches.check_disk()
        assert "JAX_COMPILATION_CACHE_DIR" not in os.environ and NVFUSER_RUN_ENV not in os.environ
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "b" / "inductor")  # needed to build at all
    warned = _warnings(capsys.readouterr().err)
    assert [w.split(" for the rest")[0] for w in warned] == ["irlens: warning: not using XLA's executables cache",
                                                             "irlens: warning: not using nvFuser's kernel database"]


def test_a_corrupt_shared_database_is_read_as_empty_and_rebuilt(tmp_path):
    root = tmp_path / "nvfuser"
    shared = root / kernel_db.SHARED / kernel_db.DB
    shared.mkdir(parents=True)
    (shared / kernel_db.LIST).write_bytes(b"\xff\xfe not a list\n")
    (shared / "kernel_4.cu").write_text("a stray source")
    (shared / "kernel_9.cubin").write_bytes(b"")
    copy = kernel_db.worker_copy(root, "run1")
    assert kernel_db.read_entries(copy / kernel_db.DB) == []
    compile_into(copy, ["kernel A"])
    assert kernel_db.merge(root, "run1") == 1
    assert _shared_sources(root) == {"kernel A": b"A lenrek"}
    assert sorted(p.name for p in shared.iterdir()) == ["db.csv", "kernel_10.cu", "kernel_10.cubin"]  # strays gone


def test_a_kernel_cut_short_by_a_full_disk_is_not_merged(tmp_path):
    root = tmp_path / "nvfuser"
    copy = kernel_db.worker_copy(root, "run1")
    compile_into(copy, ["kernel A", "kernel B"])
    (copy / kernel_db.DB / "kernel_1.cubin").write_bytes(b"")
    assert kernel_db.merge(root, "run1") == 1 and list(_shared_sources(root)) == ["kernel A"]


def test_a_workers_new_kernels_never_write_through_a_linked_one(tmp_path):
    """Shared names need not be numbered 0..N-1 (merged after strays, or some removed): the copy numbers
    them so, so nvFuser's next number (the count of entries) names a file the copy lacks."""
    root = tmp_path / "nvfuser"
    first = kernel_db.worker_copy(root, "run1")
    compile_into(first, ["kernel A", "kernel B", "kernel C"])
    kernel_db.merge(root, "run1")
    shared = root / kernel_db.SHARED / kernel_db.DB
    lines = (shared / kernel_db.LIST).read_text().splitlines()
    (shared / kernel_db.LIST).write_text("\n".join([lines[0], lines[2], lines[3]]) + "\n")  # kernel_1, kernel_2 left
    before = _shared_sources(root)
    copy = kernel_db.worker_copy(root, "run2")
    assert [e[2] for e in kernel_db.read_entries(copy / kernel_db.DB)] == ["kernel_0.cu", "kernel_1.cu"]
    compile_into(copy, ["kernel D"])  # writes kernel_2, a name the shared folder has
    assert _shared_sources(root) == before
    assert kernel_db.merge(root, "run2") == 1
    assert _shared_sources(root) == {**before, "kernel D": b"D lenrek"}


def test_a_run_that_died_before_merging_is_merged_and_removed_by_the_next(tmp_path):
    root = tmp_path / "nvfuser"
    dead = kernel_db.worker_copy(root, "111-dead")
    compile_into(dead, ["kernel A"])
    (root / kernel_db.RUNS / "111-dead.lock").write_text("")  # its process is gone: nobody holds it
    with kernel_db.claimed(root, "222-alive"):
        alive = kernel_db.worker_copy(root, "222-alive")
        compile_into(alive, ["kernel B"])
        with compile_caches(tmp_path) as caches:
            pass
        assert (root / kernel_db.RUNS / "222-alive").is_dir()  # its lock is held: alive
    assert not (root / kernel_db.RUNS / "111-dead").exists() and not (root / kernel_db.RUNS / "111-dead.lock").exists()
    assert "kernel A" in _shared_sources(root) and "kernel B" not in _shared_sources(root)
    assert not (root / kernel_db.RUNS / caches.run).exists()


# --- the size cap -------------------------------------------------------------------------------------

def _entry(path: Path, size: int, age_s: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    when = time.time() - age_s
    os.utime(path, (when, when))


def test_the_caches_are_kept_under_their_cap_the_oldest_entries_first(tmp_path, capsys):
    kib = 1 << 10
    _entry(tmp_path / "triton" / "OLDEST" / "k.cubin", 400 * kib, 400)
    _entry(tmp_path / "triton" / "OLDEST" / "k.json", 10 * kib, 400)
    _entry(tmp_path / "jax" / "jit_old-cache", 300 * kib, 300)
    _entry(tmp_path / "inductor" / "ab" / "cabc.py", 200 * kib, 100)
    _entry(tmp_path / "inductor" / "locks" / "cabc.lock", 0, 500)
    _entry(tmp_path / "jax" / "jit_new-cache", 300 * kib, 10)
    with open(tmp_path / "in-use", "a") as other:  # another run uses the folder: nothing is removed
        fcntl.flock(other, fcntl.LOCK_SH)
        with compile_caches(tmp_path, max_gb=600 * kib / upkeep.GiB):
            pass
    assert (tmp_path / "triton" / "OLDEST").is_dir()
    with compile_caches(tmp_path, max_gb=600 * kib / upkeep.GiB):
        pass
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    listing = [f"nvfuser/{kernel_db.SHARED}/lock", f"nvfuser/{kernel_db.SHARED}/{kernel_db.DB}/{kernel_db.LIST}"]
    assert left == ["in-use", "inductor/ab/cabc.py", "inductor/locks/cabc.lock", "jax/jit_new-cache", *listing]
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    nvfuser = len(kernel_db.HEADER) + 1  # an empty database's list
    assert summary == (f"irlens: compiler caches in {tmp_path}: Inductor 200.0 KiB, Triton 0 B, XLA 300.0 KiB, "
                       f"nvFuser {nvfuser} B: {(500 * kib + nvfuser) / kib:.1f} KiB of its 600.0 KiB cap; "
                       f"710.0 KiB of older entries removed")


# --- a killed compile leaves nothing a later one loads ----------------------------------------------

HALF_BUILT = '''
import fcntl, os, struct, time


def build(folder, finished):
    """Half of an ELF file written where Inductor builds, under its lock, then a hang."""
    os.makedirs(os.path.join(folder, "locks"), exist_ok=True)
    lock = open(os.path.join(folder, "locks", "cabc.lock"), "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.makedirs(os.path.join(folder, "ab"), exist_ok=True)
    head = bytearray(64)
    head[:6] = b"\\x7fELF\\x02\\x01"
    struct.pack_into("<Q", head, 0x28, 1 << 20)  # its section headers start 1 MiB in
    struct.pack_into("<HH", head, 0x3A, 64, 30)
    open(os.path.join(folder, "ab", "cabc.main.so"), "wb").write(bytes(head) + bytes(4096))
    open(os.path.join(folder, "ab", "cdef.main.so"), "wb").write(open(finished, "rb").read())
    time.sleep(600)
'''


def test_a_worker_killed_mid_build_leaves_no_file_a_later_compile_loads(tmp_path, monkeypatch):
    (tmp_path / "half_built.py").write_text(HALF_BUILT)
    monkeypatch.syspath_prepend(str(tmp_path))
    inductor = tmp_path / "inductor"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(inductor))
    finished = Path(sys.executable).resolve()  # a complete ELF file
    worker = Worker(preload=("half_built",))
    try:
        with pytest.raises(CallFailed, match="timed out"):
            worker.call("half_built:build", {"folder": str(inductor), "finished": str(finished)}, timeout=5)
    finally:
        worker.close()
    assert not (inductor / "ab" / "cabc.main.so").exists()
    assert (inductor / "ab" / "cdef.main.so").read_bytes() == finished.read_bytes()


def test_an_unfinished_build_whose_lock_is_held_is_left_to_its_builder(tmp_path):
    (tmp_path / "ab").mkdir()
    (tmp_path / "ab" / "cabc.main.o").write_bytes(b"")
    (tmp_path / "ab" / "cxyz.main.o").write_bytes(b"\x7fELF")
    (tmp_path / "locks").mkdir()
    with open(tmp_path / "locks" / "cabc.lock", "a") as building:
        fcntl.flock(building, fcntl.LOCK_EX)
        assert upkeep.drop_unfinished([tmp_path]) == [tmp_path / "ab" / "cxyz.main.o"]
    assert upkeep.drop_unfinished([tmp_path]) == [tmp_path / "ab" / "cabc.main.o"]


COMPILE = textwrap.dedent('''
    import torch

    def f(x):
        return torch.sin(x) * x + 1

    x = torch.linspace(-3, 3, 1000, dtype=torch.float32)
    got = torch.compile(f)(x).double()
    want = f(x.double())
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), (got - want).abs().max()
    print("ok")
''')


@pytest.mark.slow
def test_an_empty_library_left_in_inductors_cache_breaks_compiles_until_removed(tmp_path):
    """The CPU's failure: a cell timed out in Inductor's C++ build left 0-byte .so files, and every
    later compile of that graph failed with `file too short`. An empty probe of the CPU's vector
    instructions is worse: the next compile silently builds other (unvectorized) code. The sweep a
    run does after a killed worker (and before a bench) removes both; the compile then builds the
    same code as at first, and computes right."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path), "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", COMPILE], env=env, capture_output=True, text=True, timeout=600)

    def libraries() -> list[Path]:
        return sorted(tmp_path.rglob("*.main.so"))

    assert run().stdout.strip() == "ok"
    built, probes = libraries(), sorted(set(tmp_path.rglob("*.so")) - set(libraries()))
    assert built and probes
    for path in built:
        path.write_bytes(b"")
    broken = run()
    assert broken.returncode != 0 and "file too short" in broken.stderr
    for path in probes:
        path.write_bytes(b"")
    assert sorted(upkeep.drop_unfinished([tmp_path])) == sorted(built + probes)
    assert run().stdout.strip() == "ok"
    assert libraries() == built and all(p.stat().st_size for p in built + probes)


# --- the zoo's document, written after every row ---------------------------------------------------

def test_a_zoo_run_stopped_after_a_row_leaves_that_row_for_fill(tmp_path, monkeypatch, capsys):
    """run_zoo hands each finished row to its checkpoint (irlens zoo writes zoo.json there, whole
    or not at all): a run stopped after one row leaves a document of that row, and `--fill` on it
    picks exactly the cells that had not run. The matrix run itself is replaced by one that
    finishes a row and is then interrupted (a real zoo cell takes minutes on this CPU)."""
    import irlens.zoo.run
    from irlens.matrix import Row, read_document, write_document
    from irlens.zoo.run import ZooConfig, fill_cells, run_zoo

    def interrupted(plan, *args, on_row=None, **kwargs):
        cell = plan.cells()[0]
        on_row(cell, Row(plan.workloads[cell.workload].name, cell.mode, plan.backends[cell.backend].name, None,
                         status="ok", preset=plan.preset))
        raise KeyboardInterrupt

    monkeypatch.setattr(irlens.zoo.run, "run_plan", interrupted)
    path = tmp_path / "zoo.json"
    cfg = ZooConfig(models=["hf_llama"], backends=["eager", "inductor"], modes=["fwd"])
    with pytest.raises(KeyboardInterrupt):
        run_zoo(cfg, progress=False, checkpoint=lambda doc: write_document(doc, path))
    assert "irlens zoo: the run stopped at KeyboardInterrupt: ; its document holds the 1 row that finished" \
        in capsys.readouterr().err
    doc = read_document(path)
    assert [(r.workload, r.mode, r.backend, r.status) for r in doc.rows] == [("hf_llama", "fwd", "eager", "ok")]
    assert fill_cells(doc, ["hf_llama"], ["inductor"], ["fwd"], "cpu", "tiny", None) == {("hf_llama", "fwd", "inductor")}


def test_an_entry_removed_while_the_cap_walks_the_cache_is_left_out(tmp_path, monkeypatch):
    """Another run may remove an entry's files between the walk and their stat: no entry, no error."""
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "a.bin").write_bytes(b"x" * 10)
    (tmp_path / "gone").mkdir()
    (tmp_path / "gone" / "b.bin").write_bytes(b"y")
    real = upkeep._stat
    monkeypatch.setattr(upkeep, "_stat", lambda path: None if "gone" in path else real(path))
    assert [(size, path.name) for _, size, path in upkeep.entries(tmp_path)] == [(10, "kept")]
