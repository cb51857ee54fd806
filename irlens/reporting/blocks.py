"""What a report is made of, independent of the output format: the HTML and Markdown
renderers draw the same blocks, so the two never say different things."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    swatches: list[str | None] | None = None  # a colour shown in the first cell of each row (HTML only)
    numeric: set[int] = field(default_factory=set)  # right-aligned column indices
    flagged: set[tuple[int, int]] = field(default_factory=set)  # (row, column) cells to highlight as bad
    good: set[tuple[int, int]] = field(default_factory=set)  # ... as good (a status that is ok)
    muted: set[tuple[int, int]] = field(default_factory=set)  # ... as not there (a row that did not run)


@dataclass
class Figure:
    name: str  # file stem when written out (Markdown links to figures/<name>.svg)
    svg: str
    caption: str
    text: list[str] = field(default_factory=list)  # the figure's content in words, for the Markdown twin


@dataclass
class Gallery:
    figures: list[Figure]  # shown side by side


@dataclass
class Text:
    lines: list[str]
    style: str = "p"  # p | note (a reason, a warning) | list


Block = Union[Table, Figure, Gallery, Text]


@dataclass
class Section:
    title: str
    anchor: str
    blocks: list[Block] = field(default_factory=list)
    subsections: list["Section"] = field(default_factory=list)


@dataclass
class Report:
    title: str
    subtitle: str
    sections: list[Section]
