"""The files git tracks in this checkout: what the repository tests check (its size, its words)."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked() -> list[Path]:
    """Every tracked file present in the working tree; skips the calling test outside a git checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked tree is unknown")
    return [ROOT / p for p in out.decode().split("\0") if p and (ROOT / p).is_file()]
