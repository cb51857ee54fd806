"""The XLA backend's kernel records: the instructions of an optimized module's ENTRY computation
that launch work (`EntryOp`), each with the common-view nodes it covers (the frontend's HLO walk,
`irlens.frontends.jax.hlo.walk.walk_entry`), its HLO text and the bytes it touches (traffic.py)."""
from __future__ import annotations

import re
from dataclasses import dataclass

from irlens.backends.xla import traffic
from irlens.frontends.jax.hlo.walk import HloReader, walk_entry
from irlens.frontends.jax.hlo.text import Instruction
from irlens.core.ir import Graph


@dataclass
class EntryOp:
    """One ENTRY-computation instruction that launches work, and the nodes it covers."""

    name: str
    opcode: str
    fusion_kind: str  # kLoop, kInput, kOutput, kCustom ... ("" when not a fusion)
    node_ids: list[str]
    text: str  # the instruction, and for a fusion its fused computation(s)
    custom_kind: str = ""  # backend_config's fusion kind (__ynn_fusion, __triton_gemm ...) or custom-call target
    bytes_read: int = 0  # its operands, each once (see `_io_bytes`)
    bytes_written: int = 0  # its results


@dataclass
class HloView:
    graph: Graph
    entry_ops: list[EntryOp]


# instructions that only name or regroup values; they launch nothing and become no node
_STRUCTURAL = {"parameter", "tuple", "get-tuple-element", "constant", "after-all", "opt-barrier"}
# instructions that become a node but launch nothing (a bitcast reinterprets a buffer in place)
_NO_LAUNCH = _STRUCTURAL | {"bitcast"}


def read_hlo(module, *, name: str, frontend: str = "jax", stage: str = "jax.hlo") -> HloView:
    """An optimized `HloModule` (e.g. `compiled.runtime_executable().hlo_modules()[0]`): its graph,
    and the instructions of its ENTRY computation that launch work, each with the nodes it covers."""
    walk = walk_entry(module, name=name, frontend=frontend, stage=stage)
    by_name = {ins.name: ins for ins, _ in walk.instructions}
    entry_ops = [EntryOp(ins.name, ins.opcode, ins.attrs.get("kind", ""), node_ids, _source_text(walk.reader, ins),
                         _custom_kind(ins), *_io_bytes(walk.reader, ins, by_name))
                 for ins, node_ids in walk.instructions if ins.opcode not in _NO_LAUNCH]
    return HloView(walk.graph, entry_ops)


def _io_bytes(reader: HloReader, ins: Instruction, entry: dict[str, Instruction]) -> tuple[int, int]:
    """(bytes read, bytes written) by an ENTRY instruction: what it touches (traffic.py)."""
    called = ins.attrs.get("calls", "").lstrip("%")
    body = reader.instructions(called) if ins.opcode == "fusion" and called in reader.computations else []
    return traffic.io_bytes(ins, entry, body, reader.root(called) if body else None, reader.instructions)


def _source_text(reader: HloReader, ins: Instruction) -> str:
    """The instruction's HLO text, followed by the computations it calls (fusion bodies)."""
    lines = [ins.text]
    for called in re.findall(r"(?:calls|to_apply)=%?([\w.\-]+)", ins.text):
        if called in reader.computations:
            lines.append(f"{called}:")
            lines += ["  " + i.text for i in reader.instructions(called)]
    return "\n".join(lines)


def _custom_kind(ins: Instruction) -> str:
    if ins.opcode == "custom-call":
        return ins.attrs.get("custom_call_target", "").strip('"')
    found = re.search(r'"kind":"(\w+)"', ins.attrs.get("backend_config", ""))
    return found.group(1) if found else ""
