"""What each pass is summarized by, before and after (nodes, collectives, bucket sizes): `PassRecord`;
and the context a pass runs in (`PassContext`)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx

from irlens.parallel.parallelize.async_tp import FUSED_OPS
from irlens.wording import plural

COLLECTIVE_KINDS = ("all_gather", "reduce_scatter", "all_reduce", "all_to_all", *FUSED_OPS.values(), "wait")


def collective_kind(node: fx.Node) -> str | None:
    """all_gather / reduce_scatter / all_reduce / all_to_all / wait for functional collectives,
    all_gather_matmul / matmul_reduce_scatter for async TP's fused ops, else None."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return None
    if target.namespace == "symm_mem":
        return FUSED_OPS.get(target._opname)
    if target.namespace not in ("_c10d_functional", "c10d_functional", "_c10d_functional_autograd"):
        return None
    name = target._opname
    if name == "wait_tensor":
        return "wait"
    for kind in ("all_gather", "reduce_scatter", "all_reduce", "all_to_all"):
        if name.startswith(kind):
            return kind
    return None


def _nbytes(val: Any) -> int:
    vals = val if isinstance(val, (list, tuple)) else [val]
    return sum(v.numel() * v.element_size() for v in vals if isinstance(v, torch.Tensor))


def bucket_bytes(node: fx.Node, kind: str) -> int:
    """The full bucket a collective moves: the gathered output, the reduced input."""
    if kind == "reduce_scatter":
        return _nbytes(node.args[0].meta.get("val")) if isinstance(node.args[0], fx.Node) else 0
    return _nbytes(node.meta.get("val"))


@dataclass
class GraphSummary:
    nodes: int
    collectives: dict[str, int]  # kind -> count (waits included)
    bucket_bytes: dict[str, list[int]]  # kind -> bytes of each collective, in graph order

    @classmethod
    def of(cls, gm: fx.GraphModule) -> "GraphSummary":
        counts: Counter = Counter()
        sizes: dict[str, list[int]] = {}
        n = 0
        for node in gm.graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            n += 1
            kind = collective_kind(node)
            if kind is None:
                continue
            counts[kind] += 1
            if kind not in ("wait", *FUSED_OPS.values()):
                sizes.setdefault(kind, []).append(bucket_bytes(node, kind))
        return cls(n, {k: counts[k] for k in COLLECTIVE_KINDS if counts[k]}, sizes)

    def to_json(self) -> dict:
        return {"nodes": self.nodes, "collectives": dict(self.collectives),
                "bucket_bytes": {k: list(v) for k, v in self.bucket_bytes.items()}}

    def line(self) -> str:
        colls = ", ".join(f"{k} {v}" for k, v in self.collectives.items()) or "no collectives"
        buckets = "; ".join(f"{k} max {max(v) / 2**20:.2f} MiB" for k, v in self.bucket_bytes.items() if v)
        return f"{plural(self.nodes, 'node')}, {colls}" + (f" ({buckets})" if buckets else "")


@dataclass
class PassRecord:
    stage: str  # joint | forward | backward
    name: str
    before: GraphSummary
    after: GraphSummary | None  # None once the pass made the graph an opaque compiled callable
    note: str = ""

    def to_json(self) -> dict:
        return {"stage": self.stage, "pass": self.name, "before": self.before.to_json(),
                "after": self.after.to_json() if self.after else None, "note": self.note}

    def line(self) -> str:
        if self.after == self.before:  # capture, partition, or a pass that only tags nodes
            return f"[{self.stage}] {self.name}: {self.after.line()}" + (f"  # {self.note}" if self.note else "")
        after = self.after.line() if self.after else "compiled (opaque)"
        return f"[{self.stage}] {self.name}: {self.before.line()} -> {after}" + (f"  # {self.note}" if self.note else "")


@dataclass
class PassContext:
    stage: str
    example_inputs: list  # fake tensors of the graph's placeholders
    records: list[PassRecord] = field(default_factory=list)
    graphs: dict[str, fx.GraphModule] = field(default_factory=dict)  # stage -> graph after graph passes
    note: str = ""  # what the running pass wants its record to say (e.g. which cost model it used)
    shared: dict[str, Any] = field(default_factory=dict)  # state the forward's and backward's passes share
    partitioner: str = ""  # how the joint graph was split (the partition record's note)
    groups: dict[str, str] = field(default_factory=dict)  # mesh dim name (dp_shard, tp) -> process group name
