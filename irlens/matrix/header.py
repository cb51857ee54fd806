"""The records of a results document's header besides plain values (irlens.matrix.document): a
bench run's parts (one per GPU of a `--gpus` run, and per rerun) and where its wall time went, and
what a corpus run (the zoo, GraphNet) chose to run. The ceilings are irlens.core.ceilings'.

Each is written as the JSON it always was and read back checked field by field
(irlens.core.json_values: a bad field is a BadDocument naming the file and the field).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from irlens.core.ceilings import Ceilings
from irlens.core.json_values import read_record, set_fields, to_plain


@dataclass
class Part:
    """One GPU's run of a bench document (`--gpus`), or one rerun's: the rows it ran (their dtypes
    and modes) and the ceilings it measured (None: it stopped before measuring them)."""

    gpu: str | None  # None: the one GPU of a run without --gpus
    dtypes: list[str]
    modes: list[str]
    ceilings: Ceilings | None
    wall_s: float | None = None  # its run's wall time (None: the part stands for a whole single-GPU run)
    rerun: bool | None = None  # a later run's part (bench --rerun)

    def to_json(self) -> dict:
        return set_fields(self, always=("gpu", "dtypes", "modes", "ceilings"))

    @classmethod
    def from_json(cls, d: Any, where: str = "part") -> "Part":
        return read_record(cls, d, where, required=("gpu", "dtypes", "modes", "ceilings"))


@dataclass
class Share:
    """One backend's cells in a phase."""

    cells: int
    busy_s: float  # their seconds, added up
    start_s: float  # its first cell's start, seconds since the run's
    end_s: float  # its last cell's end

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "share") -> "Share":
        return read_record(cls, d, where, required=("cells", "busy_s", "start_s", "end_s"))


@dataclass
class Span:
    """A phase or step of the run, seconds since its start; a phase of cells says how they ran."""

    name: str
    start_s: float
    end_s: float
    cells: int | None = None  # None: a step that runs no cells
    busy_s: float | None = None  # the cells' seconds, added up
    width: int | None = None  # cells at once
    backends: dict[str, Share] | None = None  # where its cells say which backend they served

    def to_json(self) -> dict:
        return set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "span") -> "Span":
        return read_record(cls, d, where, required=("name", "start_s", "end_s"))


@dataclass
class TimeSpent:
    """Where one GPU's bench run spent its wall time (irlens.bench.timeline writes it,
    irlens.reporting.time_spent pages it)."""

    spans: list[Span]

    def to_json(self) -> dict:
        return {"spans": to_plain(self.spans)}

    @classmethod
    def from_json(cls, d: Any, where: str = "time_spent") -> "TimeSpent":
        return read_record(cls, d, where, required=("spans",))


@dataclass
class ZooRun:
    """What a zoo run chose (`runs: [{"zoo": ...}]`): its models, its shard, the backends it could not run."""

    shard: list[int] | None  # [i, n]: the i-th of n shards (None: all)
    models: list[str]
    backends_not_run: dict[str, str]  # backend -> why

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "zoo") -> "ZooRun":
        return read_record(cls, d, where, required=("shard", "models", "backends_not_run"))


@dataclass
class GraphnetRun:
    """What a GraphNet run chose (`runs: [{"graphnet": ...}]`): its samples' root and names, its
    shard, the backends it could not run."""

    root: str
    samples: list[str]
    shard: list[int] | None
    backends_not_run: dict[str, str]  # backend -> why

    def to_json(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "graphnet") -> "GraphnetRun":
        return read_record(cls, d, where, required=("root", "samples", "shard", "backends_not_run"))
