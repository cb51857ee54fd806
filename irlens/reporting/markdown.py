"""The report's Markdown twin: the same blocks as pipe tables and lists; each figure is written
as an SVG file beside it (figures/<name>.svg), linked, and said in words below the link."""
from __future__ import annotations

from pathlib import Path

from irlens.reporting.blocks import Figure, Gallery, Report, Section, Table, Text


def render_markdown(report: Report, figures_dir: Path | None = None) -> str:
    """Markdown text; with `figures_dir`, also write every figure there (linked relative to its parent)."""
    lines = [f"# {report.title}", "", f"_{report.subtitle}_", ""]
    lines += [f"- [{s.title}](#{s.anchor})" for s in report.sections] + [""]
    for s in report.sections:
        lines += _section(s, 2, figures_dir)
    return "\n".join(lines).rstrip() + "\n"


def _section(section: Section, level: int, figures_dir: Path | None) -> list[str]:
    lines = [f'<a id="{section.anchor}"></a>', "", f"{'#' * min(level, 6)} {section.title}", ""]
    for block in section.blocks:
        lines += _block(block, figures_dir) + [""]
    for sub in section.subsections:
        lines += _section(sub, level + 1, figures_dir)
    return lines


def _block(block, figures_dir: Path | None) -> list[str]:
    if isinstance(block, Table):
        return _table(block)
    if isinstance(block, Figure):
        return _figure(block, figures_dir)
    if isinstance(block, Gallery):
        return [line for f in block.figures for line in _figure(f, figures_dir)]
    if isinstance(block, Text):
        if block.style == "note":
            return [f"> {line}  " for line in block.lines]
        if block.style == "list":
            return [f"- {line}" for line in block.lines]
        return [line + "\n" for line in block.lines]
    raise TypeError(f"no Markdown for {type(block).__name__}")


def _figure(figure: Figure, figures_dir: Path | None) -> list[str]:
    lines = []
    if figures_dir is not None:
        figures_dir.mkdir(parents=True, exist_ok=True)
        (figures_dir / f"{figure.name}.svg").write_text(figure.svg)
        lines += [f"![{figure.caption}]({figures_dir.name}/{figure.name}.svg)", ""]
    lines += [f"**{figure.caption}**", ""] + [f"- {t}" for t in figure.text] + [""]
    return lines


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _table(table: Table) -> list[str]:
    header = table.header if any(table.header) else [""] * len(table.header)
    marks = ["---:" if j in table.numeric else "---" for j in range(len(header))]
    lines = ["| " + " | ".join(map(_cell, header)) + " |", "| " + " | ".join(marks) + " |"]
    for i, row in enumerate(table.rows):
        cells = [f"**{_cell(c)}** ✗" if (i, j) in table.flagged else _cell(c) for j, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines
