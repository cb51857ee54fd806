"""Results documents on disk: strict JSON, gzip-compressed when the path ends in `.gz`.

One reader and one writer for every document irlens writes or reads back (compare, cross,
bench, report `--from`, bench `--rerun`), so a compressed document works wherever a plain one
does. A bench document is mostly graphs and kernel records: compressed it is a tenth of the size.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def _open(path: str | Path, mode: str):
    return gzip.open(path, mode + "t", encoding="utf-8") if str(path).endswith(".gz") else open(path, mode)


def write_json(doc: Any, path: str | Path) -> None:
    """Strict JSON (NaN and Inf must already be null): indented when plain, compact when compressed."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    compressed = str(path).endswith(".gz")
    with _open(path, "w") as f:
        json.dump(doc, f, indent=None if compressed else 1, separators=(",", ":") if compressed else None,
                  allow_nan=False)


def read_json(path: str | Path) -> Any:
    """The JSON in `path` (plain or `.gz`); OSError / ValueError (json.JSONDecodeError, a bad gzip) as raised."""
    try:
        with _open(path, "r") as f:
            return json.load(f)
    except (EOFError, gzip.BadGzipFile) as e:
        raise ValueError(f"not a readable gzip file: {e}") from None
