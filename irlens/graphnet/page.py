"""The page of a GraphNet run: the zoo page's tables (irlens.reporting.zoo_page) over the samples,
pass rates per source, GraphNet's S(t) and ES(t) per stack beside irlens's own verdict, the
samples where the two disagree, and each kind of failure with the reproducer written for it."""
from __future__ import annotations

import dataclasses

from irlens.graphnet.score import B, LADDER, NOTE, P, StackScore, scores
from irlens.matrix.document import Document
from irlens.workloads.graphnet import label
from irlens.reporting.zoo_page import by_kind, failures, model_table, stack_table, summarize, whose, with_eager_base
from irlens.numerics.tolerance_ladder import ABOVE_ZERO
from irlens.wording import plural

CHECK_LEVEL = -5  # GraphNet's reference point: atol 1e-5, rtol 1.3e-6 in float32 (PyTorch's testing defaults)


def short(doc: Document) -> Document:
    """The document with each sample named `source/name` (its rows' eager bases kept)."""
    return dataclasses.replace(doc, rows=[dataclasses.replace(r, workload=label(r.workload)[1])
                                          for r in with_eager_base(doc).rows])


def source_table(doc: Document) -> list[str]:
    """numerics ok / asked (not unavailable) per source, stack and mode."""
    counts: dict[tuple[str, str, str], list[int]] = {}
    for r in doc.rows:
        if r.status != "unavailable":
            c = counts.setdefault((label(r.workload)[0], r.backend, r.mode), [0, 0])
            c[0] += r.status == "ok" and not r.compared_nothing
            c[1] += 1
    lines = ["| source | stack | mode | numerics ok |", "|---|---|---|---|"]
    for (src, backend, mode), (ok, asked) in sorted(counts.items()):
        lines.append(f"| {src} | {backend} | {mode} | {ok}/{asked} ({1000 * ok // asked / 10:g} %) |")
    return lines


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


def score_table(stacks: list[StackScore]) -> list[str]:
    head = ["stack", "samples", *[f"t={t}" for t in LADDER]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in stacks:
        lines.append("| " + " | ".join([f"{s.backend} S", str(len(s.outcomes)),
                                        *[_fmt(s.s(t)) if t <= 0 else "" for t in LADDER]]) + " |")
        lines.append("| " + " | ".join([f"{s.backend} ES", str(len(s.outcomes)), *[_fmt(s.es(t)) for t in LADDER]]) + " |")
    return lines


def disagreements(doc: Document) -> list[str]:
    """fwd rows that ran where irlens's verdict and GraphNet's check at CHECK_LEVEL differ."""
    lines = []
    for r in doc.rows:
        level = (r.notes or {}).get(NOTE)
        if r.mode != "fwd" or not r.ran or level is None or r.backend == "eager":
            continue
        graphnet_ok = level <= CHECK_LEVEL
        if graphnet_ok != (r.status == "ok"):
            passes = "at no t <= 0" if level == ABOVE_ZERO else f"from t={level}"
            lines.append(f"- {r.workload} {r.backend}: irlens {r.status} (error {r.max_rel_err:.2g}, eager's "
                         f"{r.eager_err:.2g}); GraphNet's check passes {passes}" if r.max_rel_err is not None
                         and r.eager_err is not None else
                         f"- {r.workload} {r.backend}: irlens {r.status}; GraphNet's check passes {passes}")
    return lines


def graphnet_markdown(doc: Document, repros: dict[str, str] | None = None) -> str:
    """The page; `repros`: signature -> the reproducer file written for it (or why none was)."""
    gpu = str(doc.device or "").startswith("cuda")
    page = short(doc)
    chosen = next((run.graphnet for run in doc.runs or [] if run.graphnet is not None), None)
    versions = ", ".join(f"{k} {v}" for k, v in (doc.versions or {}).items() if v and k not in ("python", "platform"))
    lines = ["# GraphNet samples through every stack", "",
             f"Device: {doc.machine()}; dtype {doc.dtype or 'each sample its own'}; "
             f"{plural(len({r.workload for r in doc.rows}), 'sample')}" + (f" from {chosen.root}" if chosen and chosen.root else "") + ".",
             f"Versions: {versions}.", ""]
    if doc.commands:
        lines += ["Made by:", "", *[f"    {c}" for c in doc.commands], ""]
    lines += ["## Per stack", "", *stack_table(summarize(page), gpu), "",
              "numerics ok: irlens's verdict, each result against the float64 reference within k x eager's own "
              "error (irlens.numerics); rates count the rows that could run here.", "",
              "## Per source", "", *source_table(doc), ""]
    stacks = scores(page.rows)
    lines += ["## GraphNet's scores (fwd)", "",
              f"S(t) and ES(t) as the GraphNet report defines them (arXiv 2510.24035, eq. 1-3; b = {B}, p = {P}): "
              "a sample is correct at t when each output passes assert_close against eager in the same dtype with "
              "atol(t), rtol(t) (t <= 0); ES(t) at t = 1, 2, 3 forgives accuracy errors, runtime crashes, "
              "compilation failures. Speedups are eager's step time over the stack's, both from this run"
              + ("" if gpu else " (host wall time on the CPU)") + ". docs/graphnet.md says how to read it.", ""]
    lines += [*score_table(stacks), ""] if stacks else ["No stack besides eager ran fwd.", ""]
    left = [f"- {s.backend}: {w} — {why}" for s in stacks for w, why in s.left_out.items()]
    if left:
        lines += ["Left out of the scores:", "", *left, ""]
    correct = [f"{s.backend} {s.correct(CHECK_LEVEL)}/{len(s.outcomes)}" for s in stacks]
    summary = {s.backend: s for s in summarize(page) if s.mode == "fwd"}
    if stacks:
        lines += [f"Correct at t={CHECK_LEVEL} (GraphNet): {', '.join(correct)}; numerics ok (irlens): "
                  + ", ".join(f"{s.backend} {summary[s.backend].ok}/{summary[s.backend].models - summary[s.backend].unavailable}"
                              for s in stacks if s.backend in summary) + ".", ""]
    differ = disagreements(page)
    if differ:
        lines += [f"## Where irlens and GraphNet (t={CHECK_LEVEL}) disagree", "", *differ, ""]
    lines += ["## Per sample", "", *model_table(page, gpu), ""]
    found = failures(page)
    if found:
        lines += ["## Failures", "", "Each kind once, with the samples it hit; upstream: the innermost frame of its "
                  "traceback is in that package" + ("; reproducer: the `irlens repro` file --repro wrote for its first "
                                                    "row (its path from this page), or why none was" if repros else "")
                  + ".", ""]
        lines += [f"- **{sig}** — {whose(rows[0], up)}; {plural(len(rows), 'row')}: "
                  f"{', '.join(sorted({r.workload for r in rows}))}"
                  + (f"; reproducer: `{repros[sig]}`" if sig in (repros or {}) else "") for sig, rows, up in found]
        lines.append("")
    not_run = by_kind(page.rows, ("unavailable",))
    if not_run:
        lines += ["## Not run", "", *[f"- **{sig}** — {plural(len(rows), 'row')}: {', '.join(sorted({r.workload for r in rows}))}"
                                      for sig, rows in not_run.items()], ""]
    return "\n".join(lines)


__all__ = ["graphnet_markdown"]
