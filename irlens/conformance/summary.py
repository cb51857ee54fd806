"""The sweep's tables: per frontend, stage and level, how many cases its common view carries
faithfully, and why the others are not.

Columns (per frontend x stage x level; a case is one op x dtype x sample):
  cases     the cases this frontend was given = excluded + random + failed + captured
  excluded  out of scope before capture: complex or sparse values, no tensor result, the sample
            fails eagerly or has no float64 reference
  random    random ops (results differ between seeds) and uninitialized results (torch.empty):
            classified, not acquired
  failed    in scope but not captured in one graph: the capture raised, Dynamo broke the graph
            (data-dependent shapes among the causes), a timeout or a crash
  captured  acquired in one graph; these split into
  faithful  no unknown op, and the float64 interpreter reproduces eager float64
  in_dtype  no unknown op; the interpreter misses eager float64 but is faithful in the case's dtype:
            the graph reads a float's bits (agrees with eager in its dtype), or its error stays
            within k x eager's own error in that dtype + rtol, in float32 at most 1e-4
            (`check.dtype_verdict`)
  unknown   at least one `unknown:` op (counted by native name, with the cases each blocks)
  wrong     no unknown op, yet the interpreter disagrees with eager: a wrong meaning
  broken    no unknown op, yet the adapter, the bindings or the interpreter raised
  faithful% faithful / captured (in_dtype not included)
Beside the table: the cases whose graphs record an output shape or dtype their op's rule
(`irlens.core.ops.infer`) disagrees with, whatever their status.
"""
from __future__ import annotations

from collections import Counter, defaultdict

from irlens.conformance.check import BROKEN, CAPTURED, EXCLUDED, FAILED, FAITHFUL, IN_DTYPE, LEVELS, RANDOM, \
    STAGE_STATUSES, WRONG
from irlens.frontends import get_frontend
from irlens.wording import plural

CASE_STATUSES = (EXCLUDED, RANDOM, FAILED)
COLUMNS = ("cases", *CASE_STATUSES, "captured", *STAGE_STATUSES)
UNAVAILABLE = "unavailable"


def summarize(doc: dict) -> dict:
    """{"rows": one per frontend x stage x level, "unknown": per frontend x stage x level the
    unknown natives as [native, cases it is in, cases it alone blocks], "reasons": per frontend
    and case status (excluded, random, failed) the count per reason class}."""
    by_frontend: dict[str, list[dict]] = defaultdict(list)
    for r in doc["records"]:
        by_frontend[r["frontend"]].append(r)
    rows, unknown, reasons = [], {}, {}
    for fe, records in by_frontend.items():
        status = Counter(r["status"] for r in records)
        reasons[fe] = {s: dict(Counter(r["class"] for r in records if r["status"] == s).most_common())
                       for s in CASE_STATUSES}
        captured = [r for r in records if r["status"] == CAPTURED]
        for stage in get_frontend(fe).conformance_stages:
            for level in LEVELS:
                counts = Counter(r["stages"][stage][level]["status"] for r in captured)
                rows.append({"frontend": fe, "stage": stage, "level": level, "cases": len(records),
                             "unavailable": status[UNAVAILABLE], **{s: status[s] for s in CASE_STATUSES},
                             "captured": len(captured), **{s: counts[s] for s in STAGE_STATUSES},
                             "faithful_pct": round(100.0 * counts[FAITHFUL] / len(captured), 1) if captured else None})
                unknown[f"{fe} {stage} {level}"] = unknown_natives(captured, stage, level)
    return {"rows": rows, "unknown": unknown, "reasons": reasons}


def unknown_natives(records: list[dict], stage: str, level: str) -> list[list]:
    """[native, cases it appears in, cases where it is the only unknown native], most first."""
    within, alone = Counter(), Counter()
    for r in records:
        natives = r["stages"][stage][level].get("unknown", {})
        within.update(natives.keys())
        if len(natives) == 1:
            alone.update(natives.keys())
    return [[native, n, alone[native]] for native, n in sorted(within.items(), key=lambda kv: (-kv[1], kv[0]))]


def stage_results(doc: dict):
    """(record, stage, level, result) of every captured case's every stage at every level."""
    for r in doc["records"]:
        if r["status"] == CAPTURED:
            for stage, levels in r["stages"].items():
                for level, result in levels.items():
                    yield r, stage, level, result


def meaning_problems(doc: dict, status: str) -> list[dict]:
    """The captured cases with `status` (wrong, broken, in_dtype) somewhere: one entry per case and
    frontend, with its first error (and how many other errors it has) and where it shows
    ("aot.forward (composite, primitive)")."""
    found: dict[tuple, dict] = {}
    for r, stage, level, result in stage_results(doc):
        if result["status"] != status:
            continue
        entry = found.setdefault((r["case"], r["frontend"]), {
            "case": r["case"], "frontend": r["frontend"], "errors": [], "where": {},
            **{k: v for k, v in result.items() if k.startswith("rel_err") or k == "why"}})
        if result.get("error") not in entry["errors"]:
            entry["errors"].append(result.get("error"))
        entry["where"].setdefault(stage, []).append(level)
    for entry in found.values():
        errors = entry.pop("errors")
        entry["error"] = errors[0] + (f" (and {len(errors) - 1} other errors)" if len(errors) > 1 else "")
        entry["where"] = ", ".join(f"{stage} ({', '.join(levels)})" for stage, levels in entry["where"].items())
    return list(found.values())


def metadata_problems(doc: dict) -> list[dict]:
    """The captured cases whose graphs record an output shape or dtype their op's rule disagrees
    with (`irlens.conformance.metadata`): one entry per case and frontend, its first disagreement
    (and how many others), and where it shows."""
    found: dict[tuple, dict] = {}
    for r, stage, level, result in stage_results(doc):
        for d in result.get("metadata", []):
            entry = found.setdefault((r["case"], r["frontend"]), {
                "case": r["case"], "frontend": r["frontend"], "found": [], "where": {}})
            if d not in entry["found"]:
                entry["found"].append(d)
            levels_at = entry["where"].setdefault(stage, [])
            if level not in levels_at:
                levels_at.append(level)
    for entry in found.values():
        seen = entry.pop("found")
        entry["disagreement"] = seen[0] + (f" (and {len(seen) - 1} others)" if len(seen) > 1 else "")
        entry["where"] = ", ".join(f"{stage} ({', '.join(levels)})" for stage, levels in entry["where"].items())
    return list(found.values())


def one_word(record: dict) -> str:
    """A record in a few words, for the progress line."""
    if record["status"] != CAPTURED:
        return f"{record['status']}: {record.get('class', '')}".rstrip(": ")
    statuses = Counter(res["status"] for levels in record["stages"].values() for res in levels.values())
    return "captured (" + ", ".join(f"{s} {n}" for s, n in statuses.most_common()) + ")"


# --- text and Markdown -------------------------------------------------------------------------

_HEADER = ("frontend", "stage", "level", *COLUMNS, "faithful%")


def _cells(row: dict) -> list[str]:
    pct = "-" if row["faithful_pct"] is None else f"{row['faithful_pct']:.1f}"
    return [row["frontend"], row["stage"], row["level"], *(str(row[c]) for c in COLUMNS), pct]


def table_text(doc: dict) -> str:
    """The summary table, aligned for a terminal, and the wrong meanings under it."""
    rows = [list(_HEADER)] + [_cells(r) for r in doc["summary"]["rows"]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_HEADER))]
    lines = ["  ".join(cell.ljust(w) if i < 3 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths)))
             for row in rows]
    lines += [f"{what}: unavailable ({reason})" for what, reason in _unavailable(doc)]
    lines += empty_corpora(doc)
    for status, what in ((WRONG, "wrong meanings (no unknown op, the interpreter disagrees with eager)"),
                         (BROKEN, "broken (no unknown op, the adapter, bindings or interpreter raised)")):
        found = meaning_problems(doc, status)
        if found:
            lines.append(f"{len(found)} {what}:")
            lines += [f"  {f['frontend']} {f['case']}: {f['error']}  [{f['where']}]" for f in found]
    found = metadata_problems(doc)
    if found:
        lines.append(f"{len(found)} {_METADATA}:")
        lines += [f"  {f['frontend']} {f['case']}: {f['disagreement']}  [{f['where']}]" for f in found]
    return "\n".join(lines)


_METADATA = "with recorded output shapes or dtypes their ops' rules disagree with (irlens.core.ops.infer)"


def _md_table(header: list[str], rows: list[list]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
           ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]


def markdown(doc: dict, top: int = 25, examples: int = 6) -> str:
    """The results page: how it was made, the summary table, reasons, meanings, unknown natives."""
    cfg, versions = doc["config"], doc["versions"]
    lines = ["# Conformance sweep", "",
             f"Made by `{doc.get('command') or 'irlens conformance'}` on {doc['started']} "
             f"(commit {doc.get('commit') or 'unknown'}), in {doc['seconds']:.0f} s with {plural(cfg['jobs'], 'job')}, "
             f"timeout {cfg['timeout']:g} s per case, rtol {cfg['rtol']:g}.",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in versions.items() if v) + ".", "",
             "Corpora: " + "; ".join(f"`{name}` ({plural(c['cases'], 'case')} through {', '.join(c['frontends'])}): "
                                     f"{c['description']}" for name, c in doc["corpora"].items()) + ".", "",
             "Columns: see `irlens/conformance/summary.py` and docs/conformance.md. "
             "`faithful%` = faithful / captured.", ""]
    lines += _md_table(list(_HEADER), [_cells(r) for r in doc["summary"]["rows"]])
    for what, reason in _unavailable(doc):
        lines += ["", f"**{what} unavailable**: {reason}"]
    lines += [line for empty in empty_corpora(doc) for line in ("", empty)]

    by_class = defaultdict(list)
    for r in doc["records"]:
        if r["status"] in CASE_STATUSES:
            by_class[(r["frontend"], r["status"], r["class"])].append(r["case"])
    lines += ["", "## Excluded, random and failed, by reason", ""]
    order = sorted(by_class.items(), key=lambda kv: (kv[0][0], CASE_STATUSES.index(kv[0][1]), -len(kv[1])))
    rows = [[fe, status, cls, len(cases), _examples(cases, examples)] for (fe, status, cls), cases in order]
    lines += _md_table(["frontend", "status", "reason", "cases", "e.g."], rows)

    found = meaning_problems(doc, IN_DTYPE)
    lines += ["", f"## Faithful in its dtype: eager float64 missed, the case's dtype met ({plural(len(found), 'case')})", ""]
    if found:
        lines += _md_table(["frontend", "case", "error vs float64", "why", "where"],
                           [[f["frontend"], f["case"], f["error"], f["why"], f["where"]] for f in found])
    for status, title in ((WRONG, "Wrong meanings: no unknown op, the interpreter disagrees with eager"),
                          (BROKEN, "Broken: no unknown op, the adapter, bindings or interpreter raised")):
        found = meaning_problems(doc, status)
        lines += ["", f"## {title} ({plural(len(found), 'case')})", ""]
        if found:
            hint = status == WRONG  # the error against eager in the op's own dtype, beside
            rows = [[f["frontend"], f["case"], f["error"], f["where"]] + ([_num(f.get("rel_err_vs_eager_dtype"))] * hint)
                    for f in found]
            lines += _md_table(["frontend", "case", "error", "where"] + ["rel err vs eager in its dtype"] * hint, rows)

    found = metadata_problems(doc)
    lines += ["", f"## Output metadata: cases {_METADATA} ({plural(len(found), 'case')})", ""]
    if found:
        lines += _md_table(["frontend", "case", "node (op): recorded, inferred", "where"],
                           [[f["frontend"], f["case"], f["disagreement"], f["where"]] for f in found])

    lines += ["", f"## Unknown natives (the {top} in most cases per frontend and stage; all of them in the JSON)", "",
              "`cases`: captured cases whose graph holds it; `alone`: cases where it is the only unknown native."]
    for fe, stage in dict.fromkeys(tuple(key.split(" ")[:2]) for key in doc["summary"]["unknown"]):
        merged: dict[str, list] = defaultdict(lambda: [0] * (2 * len(LEVELS)))
        for i, level in enumerate(LEVELS):
            for native, n, alone in doc["summary"]["unknown"][f"{fe} {stage} {level}"]:
                merged[native][2 * i:2 * i + 2] = [n, alone]
        if merged:
            rows = sorted(merged.items(), key=lambda kv: (-kv[1][-2], kv[0]))
            lines += ["", f"**{fe} {stage}**: {len(rows)} distinct", ""]
            lines += _md_table(["native", *(f"{w} ({level})" for level in LEVELS for w in ("cases", "alone"))],
                               [[native, *counts] for native, counts in rows[:top]])
    return "\n".join(lines) + "\n"


def _unavailable(doc: dict) -> list[tuple[str, str]]:
    """(frontend or corpus, why) for each one that could not run here."""
    frontends = [(f"frontend {fe}", why) for fe, why in doc["availability"].items() if why]
    return frontends + [(f"corpus {name}", c["unavailable"]) for name, c in doc["corpora"].items() if "unavailable" in c]


def empty_corpora(doc: dict) -> list[str]:
    """A line for each corpus asked for that gave no case, so that its frontends' rows are not
    silently missing."""
    patterns = doc["config"].get("patterns") or []
    why = f"-k {' -k '.join(patterns)} matches none of its cases" if patterns else "it lists no case here"
    return [f"corpus {name}: no case ({why}), so no row of {', '.join(c['frontends'])} from it"
            for name, c in doc["corpora"].items() if not c["cases"] and "unavailable" not in c]


def _examples(cases: list[str], n: int) -> str:
    return ", ".join(_op(c) for c in cases[:n]) + (" ..." if len(cases) > n else "")


def _op(case_id: str) -> str:
    return case_id.split(":", 1)[1].rsplit(":", 1)[0]


def _num(x) -> str:
    return "" if x is None else f"{x:.2e}"
