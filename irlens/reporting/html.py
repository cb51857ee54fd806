"""The report as one self-contained HTML page: inline CSS and SVG, no script, no network."""
from __future__ import annotations

from html import escape

from irlens.reporting.blocks import Figure, Gallery, Report, Section, Table, Text

CSS = """
body { font-family: Helvetica, Arial, sans-serif; margin: 24px 32px; color: #222; background: #fff; }
h1 { margin-bottom: 2px; } .subtitle { color: #555; margin-top: 0; }
h2 { border-bottom: 2px solid #ddd; padding-bottom: 4px; margin-top: 36px; }
h3 { margin-top: 22px; } h4 { margin: 14px 0 6px; color: #333; }
nav ul { columns: 3; font-size: 13px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 6px 0 12px; }
th, td { border: 1px solid #d0d0d0; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.bad { background: #fde2e0; color: #a00; font-weight: bold; }
td.good { background: #e3f4e1; color: #1b6e1b; } td.muted { background: #f1f1f1; color: #777; }
svg.fusion-map { max-width: 100%; height: auto; }
.swatch { display: inline-block; width: 11px; height: 11px; border: 1px solid #777; margin-right: 5px;
          vertical-align: -1px; }
.figure { overflow: auto; max-height: 900px; border: 1px solid #e2e2e2; padding: 6px; margin: 6px 0; }
.gallery { display: flex; flex-wrap: wrap; gap: 18px; }
.note { background: #fff6e0; border-left: 4px solid #f0a500; padding: 6px 10px; font-size: 13px; }
.caption { font-size: 12px; color: #555; }
p { max-width: 60em; font-size: 14px; }
"""


def render_html(report: Report) -> str:
    nav = "".join(f'<li><a href="#{s.anchor}">{escape(s.title)}</a></li>' for s in report.sections)
    body = "\n".join(_section(s, 2) for s in report.sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>{escape(report.title)}</title><style>{CSS}</style></head>\n<body>'
            f'<h1>{escape(report.title)}</h1><p class="subtitle">{escape(report.subtitle)}</p>'
            f'<nav><ul>{nav}</ul></nav>\n{body}\n</body></html>\n')


def _section(section: Section, level: int) -> str:
    h = min(level, 6)
    parts = [f'<section id="{section.anchor}"><h{h}>{escape(section.title)}</h{h}>']
    parts += [_block(b) for b in section.blocks]
    parts += [_section(s, level + 1) for s in section.subsections]
    parts.append("</section>")
    return "\n".join(parts)


def _block(block) -> str:
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figure):
        return f'<figure class="figure">{block.svg}<figcaption class="caption">{escape(block.caption)}</figcaption></figure>'
    if isinstance(block, Gallery):
        return '<div class="gallery">' + "".join(f"<div>{f.svg}</div>" for f in block.figures) + "</div>"
    if isinstance(block, Text):
        if block.style == "note":
            return '<div class="note">' + "<br>".join(escape(line) for line in block.lines) + "</div>"
        if block.style == "list":
            return "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in block.lines) + "</ul>"
        return "".join(f"<p>{escape(line)}</p>" for line in block.lines)
    raise TypeError(f"no HTML for {type(block).__name__}")


def _table(table: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.header) if any(table.header) else ""
    rows = []
    for i, row in enumerate(table.rows):
        cells = []
        for j, cell in enumerate(row):
            classes = [c for c, on in (("num", j in table.numeric), ("bad", (i, j) in table.flagged),
                                       ("good", (i, j) in table.good), ("muted", (i, j) in table.muted)) if on]
            attr = f' class="{" ".join(classes)}"' if classes else ""
            swatch = ""
            if j == 0 and table.swatches and table.swatches[i]:
                swatch = f'<span class="swatch" style="background:{table.swatches[i]}"></span>'
            cells.append(f"<td{attr}>{swatch}{escape(cell)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table>{'<tr>' + head + '</tr>' if head else ''}{''.join(rows)}</table>"
