"""A captured graph's recorded output metadata against its ops' rules (`irlens.core.ops.infer`):
each node's outputs (shape, dtype), as the adapter wrote them, against what its op infers from
the node's inputs and attributes. A disagreement is an adapter's mistake (a swapped operand,
an ignored attribute, a hand-computed shape) or a rule's; either way it is listed, never fixed
up here.

    found = check_metadata(graph)
    for d in found.disagreements: print(d)       # node, op, recorded, inferred
    found.not_inferred                           # node -> why its op gives no inference

Unknown ops have no rule and are left out (they are counted as unknown everywhere else). Nodes
inside a control-flow node's subgraphs are checked against their own graph's values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from irlens.core.ops.infer import Meta, Misfit, NotInferable, infer


@dataclass(frozen=True)
class Disagreement:
    node: str
    op: str
    recorded: list[Meta]
    inferred: list[Meta]
    reason: str = ""  # inputs the op refuses (`Misfit`): nothing inferred, torch's reason

    def __str__(self) -> str:
        inferred = f"its inputs do not fit: {self.reason}" if self.reason else f"inferred {_fmt(self.inferred)}"
        return f"{self.node} ({self.op}): recorded {_fmt(self.recorded)}, {inferred}"


@dataclass
class MetadataCheck:
    disagreements: list[Disagreement] = field(default_factory=list)
    not_inferred: dict[str, str] = field(default_factory=dict)  # node id -> why
    checked: int = 0  # nodes whose outputs were inferred and compared

    @property
    def ok(self) -> bool:
        return not self.disagreements


def check_metadata(graph, found: MetadataCheck | None = None) -> MetadataCheck:
    """Every node of `graph` (and of its subgraphs): recorded outputs against inferred ones, as far
    as both go: recorded ones past the inferred (outputs no meaning computes) are not compared, nor
    inferred ones a node leaves out (optional outputs: its op's schema checks their count)."""
    found = found if found is not None else MetadataCheck()
    metas = {t.name: (tuple(t.shape), t.dtype) for t in graph.inputs}
    for node in graph.nodes:
        recorded = [(tuple(o.shape), o.dtype) for o in node.outputs]
        metas.update({o.name: r for o, r in zip(node.outputs, recorded)})
        for sub in node.subgraphs.values():
            check_metadata(sub, found)
        if node.is_unknown:
            continue
        try:
            inferred = infer(node.op, node.inputs, metas, node.attrs, node.subgraphs)
        except NotInferable as e:
            found.not_inferred[node.id] = str(e)
            continue
        except Misfit as e:
            found.disagreements.append(Disagreement(node.id, node.op, recorded, [], str(e)))
            continue
        found.checked += 1
        n = min(len(recorded), len(inferred))
        if recorded[:n] != inferred[:n]:
            found.disagreements.append(Disagreement(node.id, node.op, recorded, inferred))
    return found


def _fmt(metas: list[Meta]) -> str:
    return ", ".join(f"{dtype}[{','.join(map(str, shape))}]" for shape, dtype in metas) or "nothing"
