"""The fusion map: each backend's common-view graph with its kernels drawn as groups over the nodes.

`build_fusion_map` turns the rows of one workload x mode into a `FusionMap` (columns of
backends, panels of stages, nodes with their row, position and kernel groups); `render_svg`
draws exactly that structure, so a test can check the structure against the kernel records
and the SVG against the structure.

Layout: a layered drawing by topological depth. Only nodes a reader needs are drawn: every
node a kernel covers or recomputes, and every compute node (elementwise, reduction, matmul,
composite, unknown: an unknown op is flagged in red with a "?" and counted in its panel's
title, never drawn as explained); data movement outside every kernel (views, broadcasts) is contracted
away, its edges passed through. Depth counts compute ops only: a data-movement node sits in a
thin lane just above the row of the compute it feeds. Frontends differ mostly in data
movement (JAX broadcasts where torch broadcasts implicitly), so the same computation lands
on the same row in every backend's column, and the columns share their rows: a reader scans
across a row and sees which kernel each backend put that op in.

Width: the map must read at a laptop's width. A lane holds at most `LANE_MAX` nodes side by
side and wraps onto further lines below (the row grows in every column alike), so no column
is wider than about 640 px; columns sit side by side in bands no wider than `MAP_MAX_W`, and a
band that is full continues below, with the same rows.
"""
from __future__ import annotations

import colorsys
from dataclasses import dataclass, field
from html import escape

from irlens.core.ir import Graph
from irlens.matrix import Row
from irlens.core.ops import is_compute
from irlens.reporting.records import first_line, kernel_stage
from irlens.wording import plural

NODE_W, NODE_H, GAP_X, ROW_H, PAD = 88, 22, 8, 34, 14
MOVE_H, MOVE_LANE_H = 16, 22  # data-movement nodes: smaller boxes in a lane above their row
STAGE_TITLE_H, COLUMN_TITLE_H, CHIP_H, CHIP_CHAR_W, TITLE_CHAR_W = 34, 22, 18, 6.3, 7.2
LANE_MAX = 4  # nodes side by side in a lane before it wraps: three columns fit beside each other
MAP_MAX_W = 1290  # a band of columns: what a 1366 px wide window shows beside the page's margins
OUTSIDE_FILL = "#ffffff"  # a drawn node no kernel covers (run outside every kernel)
UNKNOWN_STROKE = "#c62828"  # an op the common view has no meaning for: flagged, never taken as explained


def kernel_color(index: int) -> str:
    """A light, distinct colour per kernel index (golden-ratio hue steps), readable under black text."""
    hue = (index * 0.618033988749895) % 1.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.78, 0.65)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


@dataclass
class MapKernel:
    index: int
    name: str
    kind: str
    color: str
    stage: str | None  # the panel it is drawn in; None when its nodes are in no graph of the row
    node_ids: list[str]
    recompute: list[str]


@dataclass
class MapNode:
    id: str
    op: str
    label: str  # tooltip: value names, shapes, native op
    row: int
    compute: bool = True  # False: a data-movement node, drawn in its row's upper lane
    unknown: bool = False  # an `unknown:` op: drawn flagged (red, "?"), counted in the panel title
    x: float = 0.0
    y: float = 0.0
    kernels: list[int] = field(default_factory=list)  # indices of the kernels whose node_ids hold it
    recomputed_by: list[int] = field(default_factory=list)
    preds: list[str] = field(default_factory=list)  # drawn nodes it reads from (through contracted ones)


@dataclass
class Panel:
    stage: str
    nodes: list[MapNode]
    hidden: int  # data-movement nodes outside every kernel, not drawn
    rows: int
    y: float = 0.0


@dataclass
class Column:
    backend: str
    frontend: str
    kernels: list[MapKernel]
    panels: list[Panel]
    notes: list[str]
    width: float = 0.0
    x: float = 0.0
    y: float = 0.0  # the top of its band


@dataclass
class FusionMap:
    workload: str
    mode: str
    columns: list[Column]
    notes: list[str]  # rows without a map (eager, unavailable, failed) and why
    width: float = 0.0
    height: float = 0.0


def build_fusion_map(workload: str, mode: str, rows: list[Row]) -> FusionMap:
    columns, notes = [], []
    for row in rows:
        graphs = row.graphs
        if row.status in ("unavailable", "failed"):
            notes.append(f"{row.label}: {row.status}: {first_line(row.reason) or 'no reason given'}")
        elif not graphs:
            why = (first_line(row.unmapped_note) or "runs op by op, no kernel records") if not row.kernels \
                else "the row carries no common-view graph"
            notes.append(f"{row.label}: {why}")
        else:
            columns.append(_column(row, graphs))
    fmap = FusionMap(workload, mode, columns, notes)
    _layout(fmap)
    return fmap


def _column(row: Row, graphs: dict[str, Graph]) -> Column:
    records = row.kernels
    kernels = [MapKernel(i, k.name, k.kind, kernel_color(i), kernel_stage(k, graphs), list(k.node_ids), list(k.recompute))
               for i, k in enumerate(records)]
    notes = []
    for k, record in zip(kernels, records):
        if k.stage is None:
            notes.append(f"k{k.index} {k.name}: its stage {record.stage!r} is not among the row's graphs")
        elif not k.node_ids:
            notes.append(f"k{k.index} {k.name} covers no common-view node")
    panels = []
    for stage, graph in graphs.items():
        mine = [k for k in kernels if k.stage == stage]
        if not mine:  # a graph the row carries for reference (e.g. the jaxpr beside XLA's HLO): not a map
            notes.append(f"{stage}: no kernel maps onto it, not drawn")
            continue
        panel, missing = _panel(graph, mine)
        panels.append(panel)
        notes += [f"k{k.index} {k.name}: node {nid} is not in {stage}" if k else f"{stage}: {nid}"
                  for k, nid in missing]
    return Column(row.label, row.frontend or "", kernels, panels, notes)


def _panel(graph: Graph, kernels: list[MapKernel]) -> tuple[Panel, list[tuple[MapKernel | None, str]]]:
    """The drawn panel, and what it could not draw: (kernel, node id it names that the graph
    lacks), or (None, an edge read before its producer)."""
    ids = {n.id for n in graph.nodes}
    groups: dict[str, list[int]] = {}
    recomputed: dict[str, list[int]] = {}
    missing = []
    for k in kernels:
        for target, node_ids in ((groups, k.node_ids), (recomputed, k.recompute)):
            for nid in node_ids:
                if nid in ids:
                    target.setdefault(nid, []).append(k.index)
                else:
                    missing.append((k, nid))
    drawn = {n.id for n in graph.nodes if n.id in groups or n.id in recomputed or is_compute(n.op) or n.is_unknown}
    producers = graph.producers()
    reach: dict[str, set[str]] = {}  # node id -> the drawn nodes its outputs stand for
    nodes: list[MapNode] = []
    for n in graph.nodes:
        preds = set()
        for v in n.value_inputs():
            if v not in producers:
                continue
            if producers[v].id not in reach:  # a graph out of topological order (one an old reader wrote)
                missing.append((None, f"{n.id} reads {v} before {producers[v].id} makes it: edge not drawn"))
                continue
            preds |= reach[producers[v].id]
        if n.id not in drawn:
            reach[n.id] = preds
            continue
        reach[n.id] = {n.id}
        outs = ", ".join(f"{o.name}: {o}" for o in n.outputs)
        native = f" ({n.native})" if n.native and n.native != n.op else ""
        label = f"{n.id}: {n.op}{native} -> {outs}" + ("\nno meaning in the common view: counted as uncovered"
                                                        if n.is_unknown else "")
        nodes.append(MapNode(n.id, n.op, label, 0, is_compute(n.op) or n.is_unknown, n.is_unknown,
                             kernels=groups.get(n.id, []), recomputed_by=recomputed.get(n.id, []), preds=sorted(preds)))
    row_of: dict[str, int] = {}
    by_id = {m.id: m for m in nodes}
    for m in nodes:  # graph order is topological
        m.row = max((row_of[p] + by_id[p].compute for p in m.preds), default=0)
        row_of[m.id] = m.row
    rows = 1 + max(row_of.values(), default=-1)
    return Panel(graph.stage, nodes, len(graph.nodes) - len(nodes), rows), missing


# --- layout ----------------------------------------------------------------------------------

def _chip_w(text: str) -> float:
    return 10 + CHIP_CHAR_W * len(text)


def _chip_text(k: MapKernel) -> str:
    name = k.name if len(k.name) <= 30 else k.name[:29] + "…"
    return f"k{k.index} {name}"


def _legend_lines(column: Column, width: float) -> list[list[tuple[MapKernel, float]]]:
    """Kernel chips flowed into lines no wider than the column: [(kernel, x offset)] per line."""
    lines, line, x = [], [], 0.0
    for k in column.kernels:
        w = _chip_w(_chip_text(k))
        if line and x + w > width:
            lines.append(line)
            line, x = [], 0.0
        line.append((k, x))
        x += w + 4
    if line:
        lines.append(line)
    return lines


def _panel_title(panel: Panel) -> tuple[str, str]:
    """Two lines: the stage, and what is drawn of it."""
    hidden = f" · {plural(panel.hidden, 'data-movement node')} not drawn" if panel.hidden else ""
    unknown = sum(m.unknown for m in panel.nodes)
    flagged = f" · {plural(unknown, 'unknown op')} (red: no meaning)" if unknown else ""
    return panel.stage, f"{plural(len(panel.nodes), 'node')}{hidden}{flagged}"


def _column_title(c: Column) -> str:
    return f"{c.backend} · {c.frontend} graphs · {plural(len(c.kernels), 'kernel')}"


def _lanes(panel: Panel) -> dict[tuple[int, bool], list[MapNode]]:
    lanes: dict[tuple[int, bool], list[MapNode]] = {}
    for m in panel.nodes:
        lanes.setdefault((m.row, m.compute), []).append(m)
    return lanes


def _lines(n: int) -> int:
    return max(1, -(-n // LANE_MAX))


def _bands(columns: list[Column]) -> list[list[Column]]:
    """Columns side by side while they fit in MAP_MAX_W; the next band below."""
    bands: list[list[Column]] = []
    width = 0.0
    for c in columns:
        if bands and width + c.width <= MAP_MAX_W - 2 * PAD:
            bands[-1].append(c)
            width += c.width + 3 * PAD
        else:
            bands.append([c])
            width = c.width + 3 * PAD
    return bands


def _layout(fmap: FusionMap) -> None:
    """Positions: columns side by side in bands; in every column the i-th panel has the same
    height, and its rows (and data-movement lanes) the same offsets, wrapped lanes included."""
    for c in fmap.columns:
        widest = min(max((len(nodes) for p in c.panels for nodes in _lanes(p).values()), default=1), LANE_MAX)
        title = max([len(_column_title(c)) * TITLE_CHAR_W]
                    + [len(line) * CHIP_CHAR_W for p in c.panels for line in _panel_title(p)])
        c.width = max(widest * (NODE_W + GAP_X) - GAP_X, title, 260.0)
    # per panel index: each lane's offset from the panel's top, and the panel's height
    shapes: list[tuple[dict[tuple[int, bool], float], float]] = []
    for b in range(max((len(c.panels) for c in fmap.columns), default=0)):
        panels = [c.panels[b] for c in fmap.columns if b < len(c.panels)]
        lines: dict[tuple[int, bool], int] = {}
        for p in panels:
            for key, lane in _lanes(p).items():
                lines[key] = max(lines.get(key, 0), _lines(len(lane)))
        lane_y: dict[tuple[int, bool], float] = {}
        h = STAGE_TITLE_H
        for r in range(max(p.rows for p in panels)):
            for compute, step in ((False, MOVE_LANE_H), (True, ROW_H)):
                if (r, compute) in lines or compute:
                    lane_y[(r, compute)] = h
                    h += step * lines.get((r, compute), 1)
        shapes.append((lane_y, h))
    y = PAD
    fmap.width = 0.0
    for band in _bands(fmap.columns):
        header_h = COLUMN_TITLE_H + max(len(_legend_lines(c, c.width)) for c in band) * (CHIP_H + 4) + 8
        x = PAD
        for c in band:
            c.x, c.y = x, y
            x += c.width + 3 * PAD
        fmap.width = max(fmap.width, x - 2 * PAD)
        top = y + header_h
        for b, (lane_y, h) in enumerate(shapes):
            for c in band:
                if b < len(c.panels):
                    c.panels[b].y = top
                    _place(c.panels[b], c.width, {k: top + v for k, v in lane_y.items()})
            top += h + PAD
        y = top + PAD
    fmap.height = y


def _place(panel: Panel, width: float, lane_y: dict[tuple[int, bool], float]) -> None:
    """Each lane's lines centred; within a lane, nodes ordered by the mean x of what they read
    (fewer crossings), LANE_MAX to a line."""
    x_of: dict[str, float] = {}
    for key, lane in sorted(_lanes(panel).items(), key=lambda kv: (kv[0][0], kv[0][1])):
        order = {m.id: i for i, m in enumerate(lane)}

        def barycenter(m: MapNode) -> tuple[float, int]:
            xs = [x_of[p] for p in m.preds if p in x_of]
            return (sum(xs) / len(xs) if xs else -1.0, order[m.id])

        lane.sort(key=barycenter)
        step = ROW_H if key[1] else MOVE_LANE_H
        for i, m in enumerate(lane):
            line, pos = divmod(i, LANE_MAX)
            on_line = min(LANE_MAX, len(lane) - line * LANE_MAX)
            start = (width - (on_line * (NODE_W + GAP_X) - GAP_X)) / 2
            m.x, m.y = start + pos * (NODE_W + GAP_X), lane_y[key] + line * step
            x_of[m.id] = m.x


# --- SVG ---------------------------------------------------------------------------------------

def render_svg(fmap: FusionMap) -> str:
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="fusion-map" width="{fmap.width:.0f}" '
           f'height="{fmap.height:.0f}" viewBox="0 0 {fmap.width:.0f} {fmap.height:.0f}" '
           f'font-family="Helvetica, Arial, sans-serif" font-size="11">',
           f'<title>fusion map: {escape(fmap.workload)} {escape(fmap.mode)}</title>']
    for c in fmap.columns:
        out.append(f'<g class="column" data-backend="{escape(c.backend)}" transform="translate({c.x:.1f},0)">')
        rest = _column_title(c)[len(c.backend):]
        out.append(f'<text x="0" y="{c.y + 14:.1f}" font-size="13" font-weight="bold">{escape(c.backend)}'
                   f'<tspan font-weight="normal" fill="#555">{escape(rest)}</tspan></text>')
        for li, line in enumerate(_legend_lines(c, c.width)):
            y = c.y + COLUMN_TITLE_H + li * (CHIP_H + 4)
            for k, dx in line:
                text = _chip_text(k)
                out.append(f'<g class="kernel" data-kernel="{k.index}" data-name="{escape(k.name)}">'
                           f'<title>{escape(k.name)} ({escape(k.kind)}): {plural(len(k.node_ids), "node")}</title>'
                           f'<rect x="{dx:.1f}" y="{y}" width="{_chip_w(text):.1f}" height="{CHIP_H}" rx="4" '
                           f'fill="{k.color}" stroke="#888"/>'
                           f'<text x="{dx + 5:.1f}" y="{y + 13}">{escape(text)}</text></g>')
        for panel in c.panels:
            out.extend(_panel_svg(panel, c))
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _panel_svg(panel: Panel, column: Column) -> list[str]:
    out = [f'<g class="panel" data-stage="{escape(panel.stage)}">',
           *(f'<text x="0" y="{panel.y + 13 + 14 * i:.1f}" fill="#333" font-style="italic">{escape(line)}</text>'
             for i, line in enumerate(_panel_title(panel)))]
    by_id = {m.id: m for m in panel.nodes}
    for m in panel.nodes:
        for p in map(by_id.get, m.preds):
            if p.y == m.y:  # same lane: side to side
                a, b = (p, m) if p.x < m.x else (m, p)
                mid = m.y + _height(m) / 2
                out.append(f'<path class="edge" d="M{a.x + NODE_W:.1f},{mid:.1f} L{b.x:.1f},{mid:.1f}" stroke="#b8b8b8"/>')
                continue
            ax, ay, bx, by = p.x + NODE_W / 2, p.y + _height(p), m.x + NODE_W / 2, m.y
            mid = (ay + by) / 2
            out.append(f'<path class="edge" d="M{ax:.1f},{ay:.1f} C{ax:.1f},{mid:.1f} {bx:.1f},{mid:.1f} {bx:.1f},{by:.1f}" '
                       f'fill="none" stroke="#b8b8b8" stroke-width="1"/>')
    for m in panel.nodes:
        out.extend(_node_svg(m, column))
    out.append("</g>")
    return out


def _height(m: MapNode) -> float:
    return NODE_H if m.compute else MOVE_H


def _node_svg(m: MapNode, column: Column) -> list[str]:
    x, y, h = m.x, m.y, _height(m)
    fill = column.kernels[m.kernels[0]].color if m.kernels else OUTSIDE_FILL
    names = [column.kernels[i].name for i in m.kernels]
    tip = m.label + (f"\nkernel: {', '.join(names)}" if names else "\noutside every kernel")
    if m.recomputed_by:
        tip += "\nrecomputed in: " + ", ".join(column.kernels[i].name for i in m.recomputed_by)
    dash = ' stroke-dasharray="3,2"' if not m.kernels else ""
    width = ' stroke-width="2"' if m.unknown else ""
    out = [f'<g class="node" data-node="{escape(m.id)}" data-kernels="{" ".join(map(str, m.kernels))}" '
           f'data-recomputed-by="{" ".join(map(str, m.recomputed_by))}"><title>{escape(tip)}</title>'
           f'<rect x="{x:.1f}" y="{y:.1f}" width="{NODE_W}" height="{h}" rx="3" fill="{fill}" '
           f'stroke="{UNKNOWN_STROKE if m.unknown else "#555" if m.compute else "#999"}"'
           f'{width}{dash}/>']
    # Extra groups (a node two kernels claim) and recomputing kernels: small swatches on the right.
    extra = m.kernels[1:] + m.recomputed_by
    for j, i in enumerate(extra):
        out.append(f'<rect x="{x + NODE_W - 7 - 7 * j:.1f}" y="{y + 2:.1f}" width="5" height="{h - 4}" '
                   f'fill="{column.kernels[i].color}" stroke="#555" stroke-width="0.5"/>')
    op = ("? " + m.op[len("unknown:"):]) if m.unknown else m.op
    op = op if len(op) <= 11 else op[:10] + "…"
    tag = f"k{m.kernels[0]}" if m.kernels else ""
    base = y + h / 2 + 4
    size = "" if m.compute else ' font-size="10" fill="#444"'
    out.append(f'<text x="{x + 4:.1f}" y="{base:.1f}"{size}>{escape(op)}</text>'
               f'<text x="{x + NODE_W - 4 - 7 * len(extra):.1f}" y="{base:.1f}" text-anchor="end" fill="#333" '
               f'font-size="9">{tag}</text></g>')
    return out
