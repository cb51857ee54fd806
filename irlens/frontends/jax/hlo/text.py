"""What only an optimized HLO instruction's text carries, parsed: `parse_instruction` (shapes,
layouts, attributes, a constant's value) and `parse_stack_frames` (the module's source
locations, `SourceFrame`). jaxlib's `HloModule` API exposes names, opcodes and operands only."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from irlens.core.ir import Arg, canonical_dtype
from irlens.frontends.jax.jaxpr.walk import source_span


_ARRAY_SHAPE = re.compile(r"(\w+)\[([\d,]*)\](?:\{([\d,]*))?")
# `%name = <shape> <opcode>(` : the shape is everything between `= ` and the opcode
_HEAD = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>\S+)\s+=\s+(?P<shape>.+?)\s+(?P<opcode>[\w\-]+)\(")


@dataclass(frozen=True)
class SourceFrame:
    file: str
    function: str
    line: int
    column: int
    end_line: int
    end_column: int

    def __str__(self) -> str:
        """file:line:column-end_line:end_column, as `irlens.frontends.jax.jaxpr.walk.source_span` writes it."""
        return source_span(self.file, self.line, self.column, self.end_line, self.end_column)


@dataclass
class Instruction:
    """One HLO instruction: the API's name/opcode/operands plus what only its text carries."""

    name: str
    opcode: str
    operands: list[str]
    shapes: list[tuple[str, tuple[int, ...]]]  # (dtype, dims) per result (several for a tuple)
    attrs: dict[str, str]  # key=value pairs after the operand list, values unparsed
    text: str
    args_text: str  # what the parentheses hold: operand names, a constant's value, a parameter's index
    layouts: list[tuple[int, ...]] = field(default_factory=list)  # minor-to-major dims per result ({1,0})

    @property
    def is_tuple(self) -> bool:
        return self.text.split("=", 1)[1].lstrip().startswith("(")


def parse_instruction(ins) -> Instruction:
    """An `HloInstruction` (jaxlib._hlo) as an `Instruction`."""
    text = ins.to_string()
    head = _HEAD.match(text)
    if head is None:
        raise ValueError(f"unrecognized HLO instruction text: {text[:200]}")
    found = _ARRAY_SHAPE.findall(head.group("shape"))
    shapes = [(canonical_dtype(dt), tuple(int(d) for d in dims.split(",") if d)) for dt, dims, _ in found]
    layouts = [tuple(int(d) for d in layout.split(",") if d) for _, _, layout in found]
    rest = text[head.end():]
    close = _matching_paren(rest)
    return Instruction(ins.name, head.group("opcode"), [o.name for o in ins.operands()], shapes,
                       _split_attrs(rest[close + 1:]), text, rest[:close], layouts)


def _matching_paren(s: str) -> int:
    """Index of the `)` closing the operand list that `s` starts inside of."""
    depth = 1
    for i, ch in enumerate(s):
        depth += ch in "({"
        depth -= ch in ")}"
        if depth == 0:
            return i
    return len(s)


def _split_attrs(s: str) -> dict[str, str]:
    """`, dims={0,1}, metadata={op_name="a, b"}` -> {dims: '{0,1}', metadata: '{op_name="a, b"}'}."""
    attrs, depth, quoted, start = {}, 0, False, 0
    parts = []
    for i, ch in enumerate(s):
        if ch == '"' and (i == 0 or s[i - 1] != "\\"):
            quoted = not quoted
        elif not quoted:
            depth += ch in "{(["
            depth -= ch in "})]"
            if ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
    parts.append(s[start:])
    for part in parts:
        key, sep, value = part.strip().partition("=")
        if sep:
            attrs[key] = value
    return attrs


def int_list(value: str) -> list[int]:
    return [int(x) for x in re.findall(r"-?\d+", value)]


def metadata_fields(value: str) -> dict[str, str]:
    return dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+?)(?=[ }])', value))


def parse_stack_frames(module_text: str) -> dict[int, SourceFrame]:
    """stack_frame_id -> the innermost source frame, from an HLO module's text header."""
    sections: dict[str, dict[int, str]] = {}
    current = None
    for line in module_text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            current = sections.setdefault(line, {})
        elif not line.strip() or line.startswith(("%", "ENTRY", "HloModule")):
            current = None if not line.strip() else current
            if line.startswith(("%", "ENTRY")):
                break
        elif current is not None:
            key, _, value = line.partition(" ")
            current[int(key)] = value
    files = {k: v.strip('"') for k, v in sections.get("FileNames", {}).items()}
    functions = {k: v.strip('"') for k, v in sections.get("FunctionNames", {}).items()}
    locations = {}
    for k, v in sections.get("FileLocations", {}).items():
        f = dict(re.findall(r"(\w+)=(\d+)", v))
        locations[k] = SourceFrame(files.get(int(f["file_name_id"]), ""), functions.get(int(f["function_name_id"]), ""),
                                   int(f["line"]), int(f.get("column", 0)), int(f.get("end_line", f["line"])),
                                   int(f.get("end_column", 0)))
    return {k: locations[int(dict(re.findall(r"(\w+)=(\d+)", v))["file_location_id"])]
            for k, v in sections.get("StackFrames", {}).items()}


def scalar_literal(text: str) -> Arg | None:
    """A scalar constant's value; None for an array's."""
    try:
        return literal_value(text)
    except ValueError:
        return None


def literal_value(text: str) -> Arg:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        return float(text)  # also parses inf, -inf, nan
