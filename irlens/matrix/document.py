"""A results document: the rows of one run and what they ran on, as `--json` writes it.

One reader (`read_document`) and one writer (`write_document`) for every kind: `compare`,
`bench` (which adds the measured ceilings, the GPUs of a `--gpus` run and its reruns) and
`cross` (`"kind": "cross"`, the frontends and backends of the grid), their rows in the one form
of `Row.to_json` (a bench row's own fields in its `bench`, a cross row's in its `cross`). The
header's records are typed as the rows' are: the ceilings (irlens.core.ceilings), a bench run's
parts and time spent (irlens.matrix.header), the runs of a joined or corpus document (`Run`). The
writer makes strict JSON (NaN and Inf become null; the row's reason says why) with the version of its form
(irlens.matrix.schema); the reader takes any document irlens wrote, migrating an older form to
the current one first, and says which row and field it cannot read.
"""
from __future__ import annotations

import gzip
import json
import os
import platform
import threading
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from irlens.core.ceilings import Ceilings
from irlens.core.ir import jsonable
from irlens.core.json_values import read_record, read_value, set_fields, to_plain, type_hints
from irlens.matrix.header import GraphnetRun, Part, TimeSpent, ZooRun
from irlens.matrix.row import STARVED_PHASE, BadDocument, Row
from irlens.matrix.schema import FIELD as SCHEMA_FIELD, SCHEMA, document_kind, migrate

KINDS = ("compare", "bench", "cross")
# written in every document of a kind, in this order (rows last); any other field only when set
_ALWAYS = {"compare": ("device", "device_name", "versions", "preset", "dtype"),
           "bench": ("device", "device_name", "versions", "preset", "driver"),
           "cross": ("kind", "device", "device_name", "versions", "preset", "dtype", "acquired_by", "executed_by")}


@dataclass
class Document:
    kind: str  # compare | bench | cross
    rows: list[Row]
    device: str | None = None  # cpu | cuda (a merged report: each run's, joined)
    device_name: str | None = None
    versions: dict[str, str | None] = field(default_factory=dict)
    preset: str | None = None
    dtype: str | None = None  # compare and cross: the one dtype asked for (None: each workload's own)
    threads: int | None = None  # each worker's intra-op threads (None: run in one process, or before it was written)
    # cross: the grid's frontends (down) and backends (across)
    acquired_by: list[str] | None = None
    executed_by: list[str] | None = None
    # bench
    driver: str | None = None
    ceilings: Ceilings | None = None  # measured in this run (one GPU)
    wall_s: float | None = None
    time_spent: TimeSpent | None = None  # one GPU's run: where its wall time went (irlens.bench.timeline)
    parts: list[Part] | None = None  # one per GPU of a `--gpus` run, and per rerun
    missing: list[str] | None = None  # GPUs whose run produced no rows, and why
    reruns: int | None = None
    commands: list[str] | None = None  # the irlens commands that made it, in order
    # a report merged from several documents: each one's header; a corpus run's: what it chose
    runs: list[Run] | None = None

    def machine(self) -> str:
        """The device and the machine's name, `cpu (AMD EPYC 7B13)`; the device alone where it names
        its machines already (a joined document's) or no machine was asked its name (no cell ran)."""
        device = str(self.device or "?")
        return device if not self.device_name or self.device_name in device else f"{device} ({self.device_name})"

    def to_json(self) -> dict:
        rows = [row.to_json() for row in self.rows]
        return jsonable({SCHEMA_FIELD: SCHEMA, **self.header(), "rows": rows}, finite=True)

    def header(self) -> dict:
        """What the JSON form says besides its version and rows (a joined document keeps each run's: `runs`)."""
        out: dict[str, Any] = {}
        for key in _ALWAYS[self.kind]:
            out[key] = self.kind if key == "kind" else getattr(self, key)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name not in out and f.name not in ("kind", "rows") and value is not None:
                out[f.name] = value
        return jsonable(to_plain(out), finite=True)

    @classmethod
    def from_json(cls, d: Any, where: str = "the document") -> "Document":
        """A document as irlens wrote it (any version: irlens.matrix.schema migrates it first);
        BadDocument says which row and field it cannot read."""
        if not isinstance(d, dict) or not isinstance(d.get("rows"), list):
            raise BadDocument(f"{where} is not an irlens results document (no 'rows' list)")
        d = {k: v for k, v in migrate(d, where).items() if k != SCHEMA_FIELD}
        kind = document_kind(d)
        if kind not in KINDS:
            raise BadDocument(f"{where}: field 'kind' is {kind!r}, not one of {', '.join(KINDS)}")
        hints = type_hints(cls)
        header = {}
        for key, value in d.items():
            if key not in hints:
                raise BadDocument(f"{where}: unknown field {key!r}")
            if key not in ("kind", "rows"):
                header[key] = read_value(value, hints[key], f"{where}: field {key!r}")
        count = len(d["rows"])
        rows = [Row.from_json(r, f"{where}: row {i + 1} of {count}") for i, r in enumerate(d["rows"])]
        return cls(kind, rows, **header)


@dataclass
class Run:
    """One of a document's `runs`. In a document joined from several (irlens.matrix.join), one of
    them by its header (`header`: that document without its rows), written as its header is; in a
    corpus run's, what it chose to run, written as `{"zoo": ...}` or `{"graphnet": ...}`."""

    header: Document | None = None
    zoo: ZooRun | None = None
    graphnet: GraphnetRun | None = None

    def to_json(self) -> dict:
        return self.header.header() if self.header is not None else set_fields(self)

    @classmethod
    def from_json(cls, d: Any, where: str = "run") -> "Run":
        d = read_value(d, dict, where)
        if "zoo" in d or "graphnet" in d:
            return read_record(cls, d, where)
        # the header of a document already read in the current form (its migration brings its runs' too)
        return cls(header=Document.from_json({**d, "rows": [], SCHEMA_FIELD: SCHEMA}, where))


def _open(path: str | Path, mode: str):
    """A results file, gzip-compressed when its name ends in `.gz` (a bench document shrinks 20x)."""
    return gzip.open(path, mode + "t", encoding="utf-8") if str(path).endswith(".gz") else open(path, mode)


def read_document(path: str | Path) -> Document:
    """The one reader of results files (plain or `.json.gz`); BadDocument (exit 2) names the file,
    and the row and field."""
    try:
        with _open(path, "r") as f:
            data = json.load(f)
    except (OSError, EOFError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadDocument(f"cannot read compare results from {path}: {e}") from None
    return Document.from_json(data, str(path))


def write_document(doc: Document, path: str | Path) -> None:
    """The one writer of results files: strict JSON (NaN and Inf were made null by `to_json`);
    indented when plain, compact and gzip-compressed when `path` ends in `.gz`; the file is
    replaced only by a complete one."""
    data = doc.to_json()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    compressed = str(path).endswith(".gz")
    # written beside, then renamed over: a run killed mid-write leaves the previous document whole
    partial = Path(path).with_name(f".partial-{os.getpid()}-{threading.get_ident()}-{Path(path).name}")  # same suffix
    try:
        with _open(partial, "w") as f:
            json.dump(data, f, indent=None if compressed else 1, separators=(",", ":") if compressed else None,
                      allow_nan=False)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def exit_status(doc: Document) -> int:
    """0 when every available row is ok, 1 on any mismatch or failure, or a cell the run's other
    cells starved of the device (not measured: STARVED_PHASE)."""
    return 1 if any(r.status in ("mismatch", "failed") or r.phase == STARVED_PHASE for r in doc.rows) else 0


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    import torch

    found = {"python": platform.python_version(), "platform": platform.platform(), "torch": torch.__version__}
    for key, dist in (("jax", "jax"), ("jaxlib", "jaxlib"), ("thunder", "lightning-thunder"),
                      ("triton", "triton"), ("irlens", "irlens")):
        try:
            found[key] = version(dist)
        except PackageNotFoundError:
            found[key] = None
    if found["irlens"] is None:  # run from a checkout on the import path, not installed
        from irlens.version import __version__

        found["irlens"] = f"{__version__} (source checkout)"
    return found


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.get_device_name(torch.device(device))
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"
