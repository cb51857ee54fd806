"""Tensors of a Thunder trace that share memory, and the values a write into one of them gives the
others.

Thunder's traces are functional but for `prims.copy_`, which writes a tensor in place: every tensor
sharing its memory then holds new values (the views of one base; `update_aliases`, which gives
them new names in the execution traces). `Views` keeps, per tensor made by a view op, its base
(the tensor that owns the memory: a base maps to itself) and its chain: the common-view nodes that
make its value from the base's (reshape, permute, slice, broadcast, unfold; copies, the identity,
are left out), or None where that is not known exactly. A write counts a new version of the base:
- through a chain it can invert (slice: slice_scatter; reshape, permute and a broadcast that adds
  only ones: their inverse), it gives the base's new value, and a tensor sharing that memory read
  afterwards reads its chain replayed on that value;
- otherwise (a chain not known, an op it cannot invert: a real broadcast, unfold) the write is
  flagged unknown as soon as a tensor sharing its memory (the base included) is read after it, as is
  every write a tensor whose chain is not known missed: such a read would get values from before.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from irlens.core.ir import Arg

# Common-view ops a view symbol's nodes may hold: each a function of its one input, as torch's view.
_STEPS = frozenset({"copy", "reshape", "permute", "slice", "broadcast", "unfold"})


@dataclass(frozen=True)
class Step:
    """One view op from a tensor's value to its view's (a common-view node, without its names)."""

    op: str
    attrs: dict
    in_shape: tuple[int, ...]
    shape: tuple[int, ...]
    dtype: str
    native: str

    def cannot_invert(self) -> str | None:
        """Why a write into this step's output cannot give its input's new values (None: it can)."""
        if self.op in ("reshape", "permute", "slice"):
            return None
        if self.op == "broadcast" and _adds_only_ones(self):
            return None
        return f"{self.native or self.op} ({self.op})"


def _adds_only_ones(s: Step) -> bool:
    """A broadcast that only adds dims of size one (an unsqueeze): each element once, in order."""
    dims = s.attrs.get("broadcast_dims")
    dims = list(range(len(s.shape) - len(s.in_shape), len(s.shape))) if dims is None else list(dims)
    return (dims == sorted(dims) and all(s.shape[d] == n for d, n in zip(dims, s.in_shape))
            and math.prod(s.shape) == math.prod(s.in_shape))


@dataclass(frozen=True)
class Write:
    version: int  # the base's version it made
    at: int  # the index of the copy_'s node
    written: str
    followed: bool  # the base's new value was derived
    why: str  # why not, where not followed


# (op, inputs, attrs, shape, dtype, native, name hint) -> the new node's output name
Emit = Callable[[str, list[Arg], dict, tuple, str, str, str], str]


@dataclass
class Views:
    current: dict[str, str] = field(default_factory=dict)  # a tensor -> the name of its value now
    base: dict[str, str] = field(default_factory=dict)
    chain: dict[str, tuple[Step, ...] | None] = field(default_factory=dict)
    seen: dict[str, int] = field(default_factory=dict)  # a tensor -> its base's version its value is of
    version: dict[str, int] = field(default_factory=dict)  # a base -> how many writes it took
    writes: dict[str, tuple[Write, ...]] = field(default_factory=dict)
    flags: dict[int, str] = field(default_factory=dict)  # a copy_'s node index -> why it is unknown
    # bases known to own their memory though Thunder's alias analysis takes them for views (a `to` that converts)
    owners: frozenset[str] = frozenset()

    def snapshot(self) -> "Views":
        """A copy to go back to (every value held is immutable)."""
        return Views(*(dict(d) for d in (self.current, self.base, self.chain, self.seen, self.version, self.writes,
                                          self.flags)), self.owners)

    def own(self, name: str) -> None:
        """`name` owns its memory, though made by a symbol that may return a view (`join` keeps it apart)."""
        self.base[name], self.chain[name], self.seen[name] = name, (), 0
        self.owners |= {name}

    def value(self, name: str) -> str:
        return self.current.get(name, name)

    def note(self, source: str, view: str, steps: tuple[Step, ...] | None) -> None:
        """`view` shares `source`'s memory, its value made from `source`'s by `steps` (None: not known)."""
        if view == source:
            return
        self._as_base(source)
        base, chain = self.base[source], self.chain[source]
        self.base[view] = base
        self.chain[view] = None if chain is None or steps is None else chain + tuple(s for s in steps if s.op != "copy")
        self.seen[view] = self.version.get(base, 0)

    def _as_base(self, name: str) -> None:
        """`name`, where nothing shares its memory yet: a base of its own."""
        if name not in self.base:
            self.base[name], self.chain[name] = name, ()
            self.seen[name] = self.version.get(name, 0)

    def join(self, names: list[str]) -> None:
        """`names` (each noted) share one memory, as Thunder's alias analysis says (update_aliases), but
        for those known to own theirs (`own`). Where they are of several bases here (a view op not
        recognized), the larger group takes the others' tensors, with chains not known; where a write
        came before, their values are not known to agree: the other group's writes are taken as not
        followed, and its tensors as made before every write, so a read of any of them flags the writes."""
        bases = [b for b in dict.fromkeys(self.base[n] for n in names) if b not in self.owners]
        if len(bases) < 2:
            return
        groups: dict[str, list[str]] = {}
        for name, base in self.base.items():
            groups.setdefault(base, []).append(name)
        major = max(bases, key=lambda b: len(groups[b]))
        for base in bases:
            if base == major:
                continue
            theirs = self.writes.pop(base, ())
            for name in groups[base]:
                self.base[name], self.chain[name] = major, None
                self.seen[name] = -1 if theirs or self.writes.get(major) else self.version.get(major, 0)
            if theirs:
                version = self.version.get(major, 0) + 1
                self.version[major] = version
                self.writes[major] = (*self.writes.get(major, ()), *(
                    Write(version, w.at, w.written, False, f"{w.written} shares memory with {major}, which the adapter "
                                                           "found no view op for") for w in theirs))
            self.version.pop(base, None)

    def read(self, name: str, emit: Emit) -> str:
        """The name of `name`'s value now: its chain replayed on its base's value where a write into its
        memory came after its value was made; where that cannot be done exactly, the writes it missed
        are flagged."""
        base = self.base.get(name)
        if base is None or self.seen[name] == self.version.get(base, 0):
            return self.value(name)
        writes = self.writes.get(base, ())
        missed = [w for w in writes if w.version > self.seen[name]]
        chain = self.chain[name]
        lost = [w for w in writes if not w.followed]  # the base's value misses these
        if chain is None or lost:
            for w in missed if chain is None else lost:
                self.flags.setdefault(w.at, _reason(w, name, f"{name} is a view the adapter cannot replay"
                                                    if chain is None else w.why))
            return self.value(name)
        value = self.value(base)
        for i, s in enumerate(chain):
            value = emit(s.op, [value], s.attrs, s.shape, s.dtype, s.native, f"{name}_{i}" if i + 1 < len(chain)
                         else name)
        self.current[name], self.seen[name] = value, self.version[base]
        return value

    def write(self, written: str, value: str, at: int, native: str, emit: Emit) -> None:
        """`prims.copy_` wrote `value` (the name of its output, `written`'s new value) into `written`:
        the base's new value where the chain can be inverted; then `value` shares the memory too (in
        torch it is `written` itself: `r = y.add_(1)` is y, and a write into r later writes y)."""
        self.current[written] = value
        self._as_base(written)
        base, chain = self.base[written], self.chain[written]
        why = (f"{written} is a view the adapter cannot invert" if chain is None
               else next((f"{written} is made by {s.cannot_invert()}, which the adapter cannot invert" for s in chain
                          if s.cannot_invert()), ""))
        if not why and any(not w.followed for w in self.writes.get(base, ())):
            why = f"an earlier write into {base}'s memory was not followed"
        version = self.version.get(base, 0) + 1
        if not why:
            self.current[base] = _inverse(chain, self.value(base), value, base, native, emit)
            self.seen[base] = version
        self.version[base] = version
        self.writes[base] = (*self.writes.get(base, ()), Write(version, at, written, not why, why))
        self.seen[written] = version
        self.note(written, value, ())


def chain_of(nodes, source: str, source_shape: tuple[int, ...], out: str) -> tuple[Step, ...] | None:
    """The steps `nodes` (a view symbol's) make `out` by from `source` (the value it read), or None
    where they hold anything else."""
    made = {o.name: n for n in nodes for o in n.outputs}
    shapes = {o.name: tuple(o.shape) for n in nodes for o in n.outputs} | {source: tuple(source_shape)}
    steps: list[Step] = []
    while out != source:
        node = made.get(out)
        if node is None or node.op not in _STEPS or len(node.inputs) != 1 or node.inputs[0] not in shapes:
            return None
        o = node.outputs[0]
        steps.insert(0, Step(node.op, dict(node.attrs), shapes[node.inputs[0]], tuple(o.shape), o.dtype, node.native))
        out = node.inputs[0]
    return tuple(steps)


def _reason(w: Write, reader: str, why: str) -> str:
    return (f"an in-place update of {w.written}, whose memory {reader} shares and is read after it: {why} "
            f"(the views would read values from before)")


def _inverse(chain: tuple[Step, ...], base: str, value: str, base_name: str, native: str, emit: Emit) -> str:
    """The base's value after `value` is written into the view `chain` makes of it (`base`: its value
    before): the chain's inputs replayed up to its last slice, then each step undone from the view up."""
    last_slice = max((i for i, s in enumerate(chain) if s.op == "slice"), default=-1)
    inputs = [base]  # inputs[i]: the value step i reads
    for i, s in enumerate(chain[:last_slice]):
        inputs.append(emit(s.op, [inputs[-1]], s.attrs, s.shape, s.dtype, s.native, f"{base_name}_view{i}"))
    for i in reversed(range(len(chain))):
        s = chain[i]
        hint = f"{base_name}_updated" if i == 0 else f"{base_name}_updated{i}"
        if s.op == "slice":
            value = emit("slice_scatter", [inputs[i], value], {k: s.attrs.get(k) for k in ("start", "limit", "step")},
                         s.in_shape, s.dtype, native, hint)
        elif s.op == "permute":
            perm = list(s.attrs["perm"])
            value = emit("permute", [value], {"perm": [perm.index(d) for d in range(len(perm))]}, s.in_shape, s.dtype,
                         native, hint)
        else:  # a reshape, or a broadcast that adds only ones
            value = emit("reshape", [value], {"shape": list(s.in_shape)}, s.in_shape, s.dtype, native, hint)
    return value
