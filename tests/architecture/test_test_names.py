"""No two test files share a name: pytest imports tests/ without packages, by file name, and a second
file of the same name in another folder fails the whole run's collection ("import file mismatch")."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_file_has_a_name_of_its_own():
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)
    assert names and not [n for n, count in names.items() if count > 1]
