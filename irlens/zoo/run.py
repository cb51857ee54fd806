"""`irlens zoo`: the zoo of real models through every stack, fwd and fwd+bwd, and its summary.

A zoo run is an ordinary compare matrix over the zoo's workloads (`irlens.workloads.zoo`) and the
backends available on the device; its document is a compare document, so `irlens report` draws
it and `irlens zoo --from` rebuilds the summary (irlens.reporting.zoo_page) from it. A run can be
split: `shard_of` gives shard K of N (0 <= K < N) a deterministic share of the models (every
N-th of the sorted names, from the K-th: like PyTorch's benchmark runner's `--partition-id K
--total-partitions N`), so a Slurm array or Kubernetes indexed jobs spread the zoo over machines
and a join (irlens.matrix.join, SHARDS) makes one document of theirs. `fill_cells` picks the cells
an earlier document has no ok row for (irlens.matrix.cells: failed, mismatched, timed out, left by a
budget, never run), so a run fills them and a join (RERUN) puts them in. `ZooConfig.cells` runs
exactly a list of cells, as `irlens zoo --plan-calls` writes one per call of a machine with a time
limit (irlens.matrix.call_plan).
"""
from __future__ import annotations

import dataclasses
import re
import sys
import threading
from dataclasses import dataclass

from irlens.backends import BACKENDS, get_backend
from irlens.errors import UsageError
from irlens.matrix import Document, plan_matrix, run_plan
from irlens.matrix.call_plan import listed_cells
from irlens.matrix.cells import cells_not_ok
from irlens.matrix.document import Run, device_name, versions
from irlens.matrix.header import ZooRun
from irlens.matrix.row import Row
from irlens.matrix.saving import BackgroundSave
from irlens.workloads.builtin import get_workload
from irlens.workloads.zoo import FAMILIES, zoo_names
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION
from irlens.workloads.workload import MODES
from irlens.wording import plural


@dataclass
class ZooConfig:
    models: list[str] | None = None  # default: the whole zoo (of `family`)
    family: str | None = None  # hf | timm
    backends: list[str] | None = None  # default: every backend available on the device
    modes: list[str] | None = None
    device: str = "cpu"
    preset: str = "tiny"
    dtype: str | None = None  # default: bfloat16 at the bench size, the models' own (float32) at tiny
    shard: tuple[int, int] | None = None  # (K, N)
    jobs: int = 1
    timeout: float = 300.0
    budget_s: float | None = None  # cells not started by then are `unavailable` rows saying so
    fill: Document | None = None  # run only the cells this earlier document has no ok row for
    fill_not_run: bool = False  # with `fill`: only those it has no row that ran for (not its failures)
    precision: str = DEFAULT_PRECISION  # the float32 policy (irlens.core.precision; --tf32: "tf32")
    cells: frozenset[tuple[str, str, str]] | None = None  # run exactly these (model, mode, backend) of the selection

    @property
    def run_dtype(self) -> str | None:
        return self.dtype or ("bfloat16" if self.preset == "bench" else None)


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` -> (K, N), 0 <= K < N; a UsageError otherwise."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m or not int(m.group(1)) < int(m.group(2)):
        raise UsageError(f"--shard takes K/N with 0 <= K < N (shard K of N, as a Slurm array's or an indexed "
                         f"job's index), not {text!r}")
    return int(m.group(1)), int(m.group(2))


def shard_of(names: list[str], k: int, n: int) -> list[str]:
    """Shard k of n: every n-th of the sorted names from the k-th. Deterministic, disjoint, and the
    shards together are all of them; sorting mixes the families (hf_*, timm_*) into every shard."""
    return sorted(names)[k::n]


def zoo_models(models: list[str] | None = None, family: str | None = None) -> list[str]:
    """The models a run takes, validated (a UsageError names the choices)."""
    if family is not None and family not in FAMILIES:
        raise UsageError(f"unknown family {family!r}; choose from: {', '.join(FAMILIES)}")
    known = zoo_names(family)
    if not models:
        return known
    unknown = [m for m in models if m not in known]
    if unknown:
        raise UsageError(f"not in the zoo{f' (family {family})' if family else ''}: {', '.join(unknown)}; "
                         f"choose from: {', '.join(known)}")
    return list(models)


def zoo_backends(device: str, backends: list[str] | None) -> tuple[list[str], dict[str, str]]:
    """(the backends that run, {backend: why not} for those that cannot run on the device). Named
    ones run even where unavailable (their rows say why); by default every registered backend
    that is available on the device runs."""
    if backends:
        return list(backends), {}
    skipped = {}
    for b in BACKENDS.values():
        available = b.availability(device) if device.split(":")[0] in b.devices else None
        if available is None or not available:
            skipped[b.name] = available.reason if available is not None else f"{b.name} does not run on {device}"
    return [name for name in BACKENDS.names() if name not in skipped], skipped


def listed_backends(cells: frozenset[tuple[str, str, str]] | None) -> list[str] | None:
    """The registered backends a list of cells names (None without one): they run even where
    unavailable, as named ones do (their rows say why)."""
    return [b for b in BACKENDS.names() if any(c[2] == b for c in cells)] if cells else None


def device_backends(device: str) -> list[str]:
    """Every registered backend that runs on the device's type, available here or not (a plan made
    on another machine than the one that runs it)."""
    return [b.name for b in BACKENDS.values() if device.split(":")[0] in b.devices]


def zoo_cells(cfg: ZooConfig, names: list[str], backends: list[str], modes: list[str]) -> frozenset[tuple[str, str, str]]:
    """The (model, mode, backend) a run of `cfg` takes among names x modes x backends (backend names):
    all of them, or `cfg.cells` (a UsageError names one outside them), and of those only what `cfg.fill`
    lacks (fill_cells)."""
    cells = {(n, m, b) for n in names for m in modes for b in backends}
    if cfg.cells is not None:
        cells = set(listed_cells(cfg.cells, cells, "models, family, shard, backends, modes"))
    if cfg.fill is not None:
        cells &= fill_cells(cfg.fill, names, backends, modes, cfg.device, cfg.preset, cfg.run_dtype, cfg.fill_not_run)
    return frozenset(cells)


def fill_cells(previous: Document, names: list[str], backends: list[str], modes: list[str],
               device: str, preset: str, dtype: str | None, not_run: bool = False) -> frozenset[tuple[str, str, str]]:
    """(model, mode, backend) of the cells among names x modes x backends (backend names) that
    `previous` holds no ok row for (with `not_run`: no row that ran, ok or not: only cells never run,
    left by a budget, starved or unavailable, not its failures and mismatches), and eager's cell for
    each model and mode among them where `backends` has eager (the speedups' base is eager timed in
    the same run). `previous` must be a zoo (compare) document of the same device type, preset and
    dtype: its rows are of these cells."""
    if previous.kind != "compare":
        raise UsageError(f"--fill takes a zoo (compare) document, not a {previous.kind} document")
    theirs = (previous.device or "").split(" ")[0].split(":")[0]
    if theirs != device.split(":")[0]:
        raise UsageError(f"--fill: that document ran on {previous.device or 'an unnamed device'}; this run is on "
                         f"{device}: its rows are not of these cells")
    if previous.preset != preset or dtype not in {previous.dtype, _rows_dtype(previous)}:
        raise UsageError(f"--fill: that document is of preset {previous.preset}, dtype "
                         f"{previous.dtype or _rows_dtype(previous) or 'each model its own'}; this run is of preset "
                         f"{preset}, dtype {dtype or 'each model its own'}: its rows are not of these cells")
    cells = set(cells_not_ok(previous, [(n, m, b) for n in names for m in modes for b in backends], not_run))
    if "eager" in backends:
        cells |= {(n, m, "eager") for n, m, _ in cells}
    return frozenset(cells)


def _rows_dtype(doc: Document) -> str | None:
    """The one dtype a document's rows ran in (a run in each model's own dtype names none itself)."""
    dtypes = {r.dtype for r in doc.rows if r.dtype}
    return dtypes.pop() if len(dtypes) == 1 else None


def run_zoo(cfg: ZooConfig, command: str | None = None, progress: bool = True, checkpoint=None) -> Document:
    """Run the zoo (its shard) through the backends; models whose library is missing get an
    `unavailable` row per backend and mode, saying what to install. The document's `commands`
    holds `command`, and `runs` which models ran, and which backends were left out and why. With
    `cfg.fill`, only the cells that document has no ok row for (none: a document without rows).
    `checkpoint(doc)` gets the document of the rows finished so far after each row, so a run
    stopped at any point leaves one that `--fill` completes (the cells it lacks never ran)."""
    names = zoo_models(cfg.models, cfg.family)
    if cfg.shard is not None:
        names = shard_of(names, *cfg.shard)
    backends, skipped = zoo_backends(cfg.device, cfg.backends or listed_backends(cfg.cells))
    modes = cfg.modes or list(MODES)
    frontends = {b.name: b.frontend for b in map(get_backend, backends)}  # by name: references resolved
    backend_names = list(frontends)
    cells = zoo_cells(cfg, names, backend_names, modes)
    only = cfg.fill is not None or cfg.cells is not None
    if only:
        names = [n for n in names if any(c[0] == n for c in cells)]
        modes = [m for m in modes if any(c[1] == m for c in cells)]
    missing = {n: get_workload(n).missing() for n in names}
    runnable = [n for n in names if not missing[n]]
    not_installed = [Row(n, m, b, frontends[b], status="unavailable", reason=missing[n], phase="availability",
                         preset=cfg.preset) for n in names if missing[n] for m in modes for b in backend_names
                     if (n, m, b) in cells]
    runs = [Run(zoo=ZooRun(list(cfg.shard) if cfg.shard else None, names, skipped))]
    commands = [command] if command else None
    done: list[Row] = []
    on_row = CorpusRows(checkpoint, done, not_installed, cfg.device, cfg.preset, cfg.run_dtype, runs, commands)

    if runnable:
        plan = dataclasses.replace(plan_matrix(runnable, backends, modes, cfg.device, cfg.preset, cfg.run_dtype,
                                               precision=cfg.precision),
                                   only=frozenset(cells) if only else None)
        try:
            doc = run_plan(plan, cfg.timeout, progress=progress, jobs=cfg.jobs, budget_s=cfg.budget_s,
                           on_row=on_row)
        except BaseException as e:
            if checkpoint is not None:
                print(f"irlens zoo: the run stopped at {type(e).__name__}: {e}; its document holds the "
                      f"{plural(len(done), 'row')} that finished (`irlens zoo --fill` on it runs the rest)",
                      file=sys.stderr, flush=True)
            raise
        finally:
            on_row.close()
    else:
        plan_matrix([], backends, modes, cfg.device, cfg.preset, cfg.run_dtype, precision=cfg.precision)  # the checks
        doc = Document("compare", [], cfg.device, preset=cfg.preset, dtype=cfg.run_dtype)
    doc.rows += not_installed
    doc.commands, doc.runs = commands, runs
    return doc


class CorpusRows:
    """A run_plan `on_row` for a corpus run (the zoo, GraphNet): each finished row, without its graphs
    (a corpus document stays small; one cell's graphs are an `irlens compare` or `irlens dump` of it
    away), is added to `done`; with `checkpoint(doc)`, the document of those rows and `other_rows`
    (rows made without running) is written off the cells' threads (irlens.matrix.saving) until
    `close()`."""

    def __init__(self, checkpoint, done: list[Row], other_rows: list[Row], device: str, preset: str,
                 dtype: str | None, runs: list[Run], commands: list[str] | None):
        self.done, self._lock, self._saver = done, threading.Lock(), None
        if checkpoint is None:
            return
        header = dict(device=device, device_name=device_name(device), versions=versions(), preset=preset, dtype=dtype,
                      runs=runs, commands=commands)

        def save() -> None:
            with self._lock:
                rows = [*done, *other_rows]
            checkpoint(Document("compare", rows, **header))

        self._saver = BackgroundSave(save)

    def __call__(self, cell, row: Row) -> None:
        row.graphs = {}
        with self._lock:
            self.done.append(row)
        if self._saver is not None:
            self._saver.request()

    def close(self) -> None:
        if self._saver is not None:
            self._saver.close()
