"""One registry per kind of thing (workload, frontend, backend): adding one is one entry."""
from __future__ import annotations

from typing import Generic, Iterator, TypeVar

T = TypeVar("T")


class UnknownName(KeyError):
    """Raised for a name no entry has; the message lists the valid choices."""

    def __init__(self, kind: str, name: str, choices: list[str]):
        self.kind, self.name, self.choices = kind, name, choices
        super().__init__(f"unknown {kind} {name!r}; choose from: {', '.join(choices)}")

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

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return iter(self._entries.values())
