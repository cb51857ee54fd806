"""The regions a row's stack split the workload into, where it captured it through ThunderFX
(notes["thunderfx"]: which regions Thunder took, which fell back to Inductor and why): a table
per row in the report, under the row's capture note (`Row.capture_note`)."""
from __future__ import annotations

from irlens.matrix.row import Row
from irlens.reporting.blocks import Section, Table, Text


def split_sections(key: str, rows: list[Row]) -> list[Section]:
    """A "Regions" section per row that was split: each region, who took it, its ops and why it fell back."""
    sections = []
    for r in rows:
        summary = r.notes.get("thunderfx")
        if not summary:
            continue
        table = Table(["region", "taken by", "ops", "why it fell back"], [], numeric={2})
        for region in summary["regions"]:
            reasons = region.get("reasons") or [""]
            table.rows.append([region["region"], region["taken_by"], str(region["ops"]), "; ".join(reasons)])
            if region["taken_by"] != "thunder":
                table.muted.add((len(table.rows) - 1, 1))
        sections.append(Section(f"Regions: {r.backend}", f"{key}-regions-{r.backend}",
                                [Text([f"{r.backend}: {r.capture_note}"], style="note"), table]))
    return sections
