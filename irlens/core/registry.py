"""One registry per kind of thing (workload, frontend, backend, graph pass): adding one is one entry.

A `Registry` reads like a dict of its entries by name (`REG[name]`, `name in REG`, iteration
over names, `values()`), except that an entry is added once, by `register(entry)` (which
returns it, so it also serves as a decorator), and an unknown name raises `UnknownName`,
whose message lists the valid choices.
"""
from __future__ import annotations

from typing import Generic, Iterator, TypeVar

from irlens.errors import UsageError

T = TypeVar("T")


class UnknownName(UsageError, KeyError):
    """Raised for a name no entry has; the message lists the valid choices."""

    def __init__(self, kind: str, name: str, choices: list[str], hint: str = ""):
        self.kind, self.name, self.choices = kind, name, choices
        super().__init__(f"unknown {kind} {name!r}; choose from: {', '.join(choices)}{hint}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.args[0]


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, entry: T) -> T:
        name = entry.name  # type: ignore[attr-defined]
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownName(self.kind, name, self.names()) from None

    __getitem__ = get

    def names(self) -> list[str]:
        return list(self._entries)

    def values(self) -> list[T]:
        return list(self._entries.values())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
