"""Typed values back from a results document's JSON: each value checked against the type its
dataclass field declares, nested records built through their own `from_json`.

Besides builtins, containers and such records, a field may be `Annotated[T, read]` (a type of
another module read by its own function, `read(value, where)`: a common-view graph) or a
TypedDict (a JSON object kept as one, its declared keys checked; keys it does not declare are kept
as they are: a stack's own notes may carry more than irlens reads).

A value of the wrong type (`"max_rel_err": "abc"`, a kernel with no name) is a BadDocument
(a usage error: exit 2) that names where it is, as `where` spells it (the file, the row, the
field, the item), and what was expected; nothing half-read reaches the reports. Writing goes
the other way through `to_plain`: a record's own `to_json`, containers item by item.
"""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Annotated, Any, Union

from irlens.errors import UsageError


class BadDocument(UsageError):
    """A results document irlens cannot read; the message names the file, the row and the field."""


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
          dict: "a JSON object", list: "a list"}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _fail(value: Any, expected: str, where: str) -> typing.NoReturn:
    raise BadDocument(f"{where} is {_shown(value)}, not {expected}")


_SCALARS = (int, float, str, bool, dict, list)


def _is_scalar(value: Any, hint: type) -> bool:
    if hint in (int, float):  # JSON has one kind of number; true and false are not numbers
        return not isinstance(value, bool) and isinstance(value, (int, float) if hint is float else int)
    return isinstance(value, hint)


@functools.lru_cache(maxsize=None)
def _plain(hint: Any) -> tuple[type, bool] | None:
    """(the scalar, whether None is allowed) where `hint` is a scalar or an optional one: most of a
    document's values, read without taking the hint apart each time."""
    if hint in _SCALARS:
        return hint, False
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (Union, types.UnionType) and len(args) == 2 and type(None) in args:
        scalar = next(a for a in args if a is not type(None))
        return (scalar, True) if scalar in _SCALARS else None
    return None


def read_value(value: Any, hint: Any, where: str) -> Any:
    """`value` as the type `hint` declares (a dataclass with `from_json(d, where)` is built by
    it); BadDocument names `where` when it is not one."""
    if hint is Any:
        return value
    plain = _plain(hint)
    if plain is not None:
        if value is None and plain[1]:
            return None
        if not _is_scalar(value, plain[0]):
            _fail(value, _NAMES[plain[0]], where)
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return args[1](value, where)
    if typing.is_typeddict(hint):
        return _read_typeddict(value, hint, where)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        for option in options[:-1]:
            try:
                return read_value(value, option, where)
            except BadDocument:
                pass
        return read_value(value, options[-1], where)
    if hasattr(hint, "from_json"):
        return hint.from_json(value, where)
    if origin is list:
        if not isinstance(value, list):
            _fail(value, "a list", where)
        if args[0] in _SCALARS:  # a list of numbers (a shape, a profile): its items' place named only for a bad one
            for i, v in enumerate(value):
                if not _is_scalar(v, args[0]):
                    _fail(v, _NAMES[args[0]], f"{where} item {i + 1}")
            return list(value)
        return [read_value(v, args[0], f"{where} item {i + 1}") for i, v in enumerate(value)]
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:  # any number of one type, written as a JSON list
        if not isinstance(value, list):
            _fail(value, "a list", where)
        return tuple(read_value(v, args[0], f"{where} item {i + 1}") for i, v in enumerate(value))
    if origin is tuple:  # a fixed pair or triple, written as a JSON list
        if not isinstance(value, list) or len(value) != len(args):
            _fail(value, f"a list of {len(args)}", where)
        return tuple(read_value(v, a, f"{where} item {i + 1}") for i, (v, a) in enumerate(zip(value, args)))
    if origin is dict:
        if not isinstance(value, dict):
            _fail(value, "a JSON object", where)
        return {k: read_value(v, args[1], f"{where}[{k!r}]") for k, v in value.items()}
    raise TypeError(f"no JSON reading for the type {hint!r}")  # a field declared with a type this module lacks


def _read_typeddict(value: Any, hint: Any, where: str) -> dict:
    if not isinstance(value, dict):
        _fail(value, "a JSON object", where)
    for key in hint.__required_keys__:
        if key not in value:
            raise BadDocument(f"{where}: missing field {key!r}")
    declared = type_hints(hint)
    return {k: read_value(v, declared[k], f"{where}: field {k!r}") if k in declared else v for k, v in value.items()}


def read_record(cls: type, d: Any, where: str, required: tuple[str, ...] = (),
                names: tuple[tuple[str, str], ...] = (), derived: tuple[str, ...] = ()) -> Any:
    """The dataclass `cls` from the JSON object `d`: every key a field (`names` maps JSON names
    to other field names; `derived` keys are written for readers and not read back), each value
    of its field's type, `required` keys present."""
    if not isinstance(d, dict):
        _fail(d, "a JSON object", where)
    attribute = dict(names)
    hints, fields = _fields(cls)
    for key in required:
        if key not in d:
            raise BadDocument(f"{where}: missing field {key!r}")
    values = {}
    for key, value in d.items():
        if key in derived:
            continue
        name = attribute.get(key, key)
        if name not in fields:
            raise BadDocument(f"{where}: unknown field {key!r}")
        values[name] = read_value(value, hints[name], f"{where}: field {key!r}")
    return cls(**values)


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, include_extras=True)


@functools.cache
def _fields(cls: type) -> tuple[dict[str, Any], frozenset[str]]:
    return type_hints(cls), frozenset(f.name for f in dataclasses.fields(cls))


def set_fields(record: Any, always: tuple[str, ...] = ()) -> dict:
    """A record's fields as JSON, by `to_plain`: those in `always`, and any other that is set (not None)."""
    return {f.name: to_plain(getattr(record, f.name)) for f in dataclasses.fields(record)
            if f.name in always or getattr(record, f.name) is not None}


def to_plain(value: Any) -> Any:
    """A value as JSON holds it: a record through its `to_json()`, containers item by item."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, dict):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value
