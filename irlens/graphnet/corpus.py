"""`irlens graphnet`: GraphNet's samples through every stack, as `irlens zoo` runs the zoo.

`select` picks samples under a GraphNet root from their meta alone (model.py is not read): by
source (the folder under `samples/`), by size (elements and bytes of inputs and weights together),
by a seeded random draw and by shard (irlens.zoo.run.shard_of). `run_corpus` plans the rest as an
ordinary compare matrix; a sample that cannot be a workload (malformed meta, files missing from
the copy) or is too large for the device gets rows saying why, never a lost run. Shards join with
irlens.matrix.join (SHARDS).
"""
from __future__ import annotations

import dataclasses
import os
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from irlens.backends import get_backend
from irlens.errors import UsageError
from irlens.matrix import Document, plan_matrix, run_plan
from irlens.matrix.document import Run
from irlens.matrix.header import GraphnetRun
from irlens.matrix.row import Row
from irlens.workloads.graphnet import PREFIX, SAMPLES, BadSample, label, missing_files, sample_dirs, sample_workload
from irlens.workloads.graphnet.meta import sizes
from irlens.workloads.workload import MODES
from irlens.core.precision import DEFAULT as DEFAULT_PRECISION
from irlens.matrix.call_plan import listed_cells
from irlens.zoo.run import CorpusRows, listed_backends, shard_of, zoo_backends

# a sample's inputs and weights take this many times their float64 size at most on the device: the
# float64 reference's copy, the run's, eager's results and the backend's (a bound, not a measurement)
MEMORY_FACTOR = 4


@dataclass
class Sample:
    path: Path
    source: str
    elements: int | None = None  # None: its meta could not be read (`problem` says why)
    bytes: int | None = None
    problem: str = ""  # why it cannot run ("" when it can)

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.path}"


@dataclass
class GraphNetConfig:
    root: Path
    sources: list[str] | None = None
    max_elements: int | None = None
    max_bytes: int | None = None
    sample: int | None = None  # a seeded random draw of this many
    seed: int = 0
    shard: tuple[int, int] | None = None
    backends: list[str] | None = None
    modes: list[str] | None = None
    device: str = "cpu"
    dtype: str | None = None  # default: each sample's own
    jobs: int = 1
    timeout: float = 300.0
    budget_s: float | None = None
    precision: str = DEFAULT_PRECISION  # the float32 policy (irlens.core.precision; --tf32: "tf32")
    # run exactly these (sample, mode, backend) of the selection, a sample by its path below samples/ (`cell_name`)
    cells: frozenset[tuple[str, str, str]] | None = None


def cell_name(workload: str | Path) -> str:
    """A sample as a list of cells names it: its path below GraphNet's samples/ (`source/name`), the
    same on the machine that plans a run and the one that runs it."""
    return label(workload)[1]


def samples_root(root: Path) -> Path:
    """The folder whose subfolders are sources: a clone's `samples/`, or `root` itself."""
    root = Path(root)
    if not root.is_dir():
        raise UsageError(f"--root {root}: no such folder (give a GraphNet clone or its samples/ folder)")
    return root / SAMPLES if (root / SAMPLES).is_dir() else root


def find_samples(root: Path) -> list[Sample]:
    """Every sample folder under `root` with its source and size; one whose meta cannot be read keeps why."""
    base = samples_root(root)
    dirs = sample_dirs(base)
    if not dirs:
        raise UsageError(f"--root {root}: no GraphNet sample under it (no folder with a model.py)")
    found = []
    for d in dirs:
        sample = Sample(d, d.relative_to(base).parts[0] if d != base else d.parent.name)
        missing = missing_files(d)
        if missing:
            sample.problem = f"missing from this copy: {', '.join(missing)}"
        else:
            try:
                sample.elements, sample.bytes = sizes(d)
            except BadSample as e:
                sample.problem = str(e)
        found.append(sample)
    return found


def select(samples: list[Sample], cfg: GraphNetConfig) -> list[Sample]:
    """The samples a run takes: by source, size, draw and shard, in that order (sizes known: a
    sample whose meta cannot be read passes the size filters and becomes a row saying why)."""
    sources = sorted({s.source for s in samples})
    if cfg.sources:
        unknown = [s for s in cfg.sources if s not in sources]
        if unknown:
            raise UsageError(f"--sources: no samples of {', '.join(unknown)} under {cfg.root}; "
                             f"choose from: {', '.join(sources)}")
        samples = [s for s in samples if s.source in cfg.sources]
    if cfg.max_elements is not None:
        samples = [s for s in samples if s.elements is None or s.elements <= cfg.max_elements]
    if cfg.max_bytes is not None:
        samples = [s for s in samples if s.bytes is None or s.bytes <= cfg.max_bytes]
    if cfg.sample is not None:
        samples = sorted(random.Random(cfg.seed).sample(samples, min(cfg.sample, len(samples))), key=lambda s: s.path)
    if cfg.shard is not None:
        chosen = set(shard_of([str(s.path) for s in samples], *cfg.shard))
        samples = [s for s in samples if str(s.path) in chosen]
    return samples


def corpus_cells(chosen: list[Sample], backends: list[str], modes: list[str],
                 listed: frozenset[tuple[str, str, str]] | None = None) -> frozenset[tuple[str, str, str]]:
    """(sample's cell_name, mode, backend) of the chosen samples x modes x backends (names): all of
    them, or `listed` (a UsageError names one outside them)."""
    cells = frozenset((cell_name(s.path), m, b) for s in chosen for m in modes for b in backends)
    return cells if listed is None else listed_cells(listed, cells, "root, sources, sizes, draw, shard, backends, modes")


def device_memory(device: str) -> int:
    """Bytes the device has: the GPU's total, or the host's physical memory."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_properties(torch.device(device)).total_memory
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def too_large(sample: Sample, device: str) -> str:
    """Why the sample does not fit the device ("" when it may)."""
    if sample.elements is None:
        return ""
    need, have = MEMORY_FACTOR * 8 * sample.elements, device_memory(device)
    if need <= have:
        return ""
    return (f"too large for {device}: {sample.elements:,} elements of inputs and weights, "
            f"{MEMORY_FACTOR} float64 copies of them ({need / 2**30:.1f} GiB) over its {have / 2**30:.1f} GiB")


def run_corpus(cfg: GraphNetConfig, command: str | None = None, progress: bool = True, checkpoint=None) -> Document:
    """Run the selected samples; see the module docstring. The document's `runs` names the root,
    the selection and the backends left out. `checkpoint(doc)` gets the document of the rows
    finished so far after each row (the samples that cannot run included), so a run stopped at any
    point leaves one whose page shows what finished."""
    chosen = select(find_samples(cfg.root), cfg)
    if not chosen:
        raise UsageError(f"no sample under {cfg.root} matches the selection")
    backends, skipped = zoo_backends(cfg.device, cfg.backends or listed_backends(cfg.cells))
    modes = cfg.modes or list(MODES)
    frontends = {b.name: b.frontend for b in map(get_backend, backends)}
    cells = corpus_cells(chosen, list(frontends), modes, cfg.cells)
    chosen = [s for s in chosen if any(c[0] == cell_name(s.path) for c in cells)]
    modes = [m for m in modes if any(c[1] == m for c in cells)]
    runnable, rows = [], []
    for s in chosen:
        why = s.problem or too_large(s, cfg.device)
        if not why:
            try:
                sample_workload(s.path)
            except BadSample as e:
                why = str(e)
        if why:
            status = "unavailable" if why.startswith(("missing from", "too large")) else "failed"
            rows += [Row(s.name, m, b, frontends[b], status=status, reason=why, phase="sample", preset="tiny")
                     for m in modes for b in frontends if (cell_name(s.path), m, b) in cells]
        else:
            runnable.append(s.name)
    commands = [command] if command else None
    runs = [Run(graphnet=GraphnetRun(str(Path(cfg.root).resolve()), [s.name for s in chosen],
                                     list(cfg.shard) if cfg.shard else None, skipped))]

    plan = plan_matrix(runnable, backends, modes, cfg.device, "tiny", cfg.dtype, precision=cfg.precision)
    if cfg.cells is not None:  # the plan's workloads by their own names (absolute paths)
        plan = dataclasses.replace(plan, only=frozenset((w.name, m, b) for w in plan.workloads.values()
                                                        for n, m, b in cells if n == cell_name(w.name)))
    on_row = CorpusRows(checkpoint, [], rows, cfg.device, "tiny", cfg.dtype, runs, commands)
    try:
        doc = run_plan(plan, cfg.timeout, progress=progress, jobs=cfg.jobs, budget_s=cfg.budget_s, on_row=on_row) \
            if runnable else Document("compare", [], cfg.device, preset="tiny", dtype=cfg.dtype)
    finally:
        on_row.close()
    doc.rows += rows
    doc.commands, doc.runs = commands, runs
    return doc
