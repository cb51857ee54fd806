"""Counted nouns and articles in messages and pages: "1 row", "2 rows", "an int"."""
from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and the noun, singular for one: plural(1, "row") is "1 row", plural(3, "row") "3 rows"."""
    return f"{n} {noun if n == 1 else many or noun + 's'}"


def article(word: str) -> str:
    """`word` after a or an, by its first letter (a, e, i, o: an): "an int", "a float", "a Workload"."""
    return f"{'an' if word[:1].lower() in 'aeio' else 'a'} {word}"
