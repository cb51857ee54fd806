"""What nvFuser does to a worker's copy of its kernel database, for the tests of irlens's copies and merges."""
from __future__ import annotations

from pathlib import Path

from irlens.backends.thunder import kernel_db


def kernel_line(db: Path, number: int, source: str) -> str:
    """A kernel's two files written as `kernel_<number>`, and its line of the database's list."""
    (db / f"kernel_{number}.cu").write_text(source)
    (db / f"kernel_{number}.cubin").write_bytes(source.encode()[::-1])  # a "binary" that tells its source
    return f"sig{number},-O3 --std=c++17,kernel_{number}.cu,kernel_{number}.cubin"


def compile_into(copy: Path, sources: list[str]) -> None:
    """New kernels numbered by how many entries the list holds, as nvFuser numbers them in a worker."""
    db = copy / kernel_db.DB
    lines = (db / kernel_db.LIST).read_text().splitlines()
    for source in sources:
        lines.append(kernel_line(db, len(lines) - 1, source))
    (db / kernel_db.LIST).write_text("\n".join(lines) + "\n")
