"""Inline SVG bar charts: one bar per backend, a value (or the reason there is none) beside it."""
from __future__ import annotations

from html import escape

BACKEND_COLORS = {"eager": "#9e9e9e", "inductor": "#e4572e", "thunder+torchcompile": "#7b3fa0",
                  "nvfuser": "#76b900", "xla": "#2e86de"}
OTHER_COLOR = "#5d6d7e"
LABEL_W, BAR_W, VALUE_W, BAR_H, GAP, TITLE_H = 150, 200, 90, 16, 6, 22


def bar_chart(title: str, items: list[tuple[str, float | str | None]], fmt: str = "{:.3g}", unit: str = "",
              missing: str = "n/a") -> str:
    """Horizontal bars scaled to the largest value; an item whose value is None shows `missing`,
    one whose value is a string shows that string (why it has no bar) instead."""
    top = max((v for _, v in items if isinstance(v, (int, float))), default=0.0) or 1.0
    height = TITLE_H + len(items) * (BAR_H + GAP) + GAP
    width = LABEL_W + BAR_W + VALUE_W
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           f'<text x="0" y="14" font-weight="bold" font-size="12">{escape(title)}</text>']
    for i, (label, value) in enumerate(items):
        y = TITLE_H + i * (BAR_H + GAP)
        out.append(f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>')
        if value is None or isinstance(value, str):
            why, color = (missing, "#888") if value is None else (value, "#a00")
            out.append(f'<text x="{LABEL_W}" y="{y + 12}" fill="{color}" font-style="italic">{escape(why)}</text>')
            continue
        w = max(BAR_W * value / top, 1.0)
        color = BACKEND_COLORS.get(label, OTHER_COLOR)
        out.append(f'<rect class="bar" x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H}" fill="{color}">'
                   f'<title>{escape(label)}: {escape(fmt.format(value))}{escape(unit)}</title></rect>')
        out.append(f'<text x="{LABEL_W + w + 4:.1f}" y="{y + 12}">{escape(fmt.format(value))}{escape(unit)}</text>')
    out.append("</svg>")
    return "\n".join(out)
