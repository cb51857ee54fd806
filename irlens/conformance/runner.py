"""The sweep: every case of the chosen corpora through each frontend that takes it, each
(case, frontend) in a worker process with a timeout, the records gathered into one document.

Workers (an `irlens.runtime.pool.WorkerPool` slot per job, one thread each) serve cases one after
another and are started again after a failed call (a crash, a timeout). Thunder can wedge a process
after some failed traces, so that every later case times out: a case that times out or crashes in a
worker that had served earlier calls runs once more in a fresh one (the pool's `again_fresh`), and
only its second failure counts.
"""
from __future__ import annotations

import datetime
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from irlens.conformance import check
from irlens.conformance.config import BadConfig, SweepConfig
from irlens.conformance.corpora import corpus_names, get_corpus
from irlens.conformance.corpus import Case
from irlens.conformance.summary import one_word, summarize
from irlens.runtime.isolation import CallFailed, resolve_function
from irlens.runtime.pool import WorkerPool
from irlens.core.registry import UnknownName

CHECK = "irlens.conformance.check"


@dataclass
class Plan:
    corpora: list[str]
    frontends: list[str]


def plan(config: SweepConfig) -> Plan:
    """Check the names and numbers of `config`; raise UnknownName or BadConfig."""
    names = config.corpora or corpus_names()
    for name in names:
        get_corpus(name)  # UnknownName lists the corpora
    fed = list(dict.fromkeys(fe for name in names for fe in get_corpus(name).frontends))
    for fe in config.frontends or []:
        if fe not in fed:
            raise UnknownName("frontend", fe, fed)
    frontends = [fe for fe in fed if not config.frontends or fe in config.frontends]
    for what, value, least in (("--jobs", config.jobs, 1), ("--samples", config.samples, 1),
                               ("--limit", config.limit, 1)):
        if value is not None and value < least:
            raise BadConfig(f"{what} must be at least {least}, got {value}")
    for what, value in (("--timeout", config.timeout), ("--rtol", config.rtol)):
        if not value > 0:
            raise BadConfig(f"{what} must be positive, got {value}")
    for pattern in config.patterns:
        try:
            re.compile(pattern)
        except re.error as e:
            raise BadConfig(f"-k {pattern!r} is not a regular expression: {e}") from None
    return Plan(names, frontends)


def run(config: SweepConfig) -> dict:
    """Sweep; returns the document `irlens conformance --json` writes (see summary.py for its
    tables): config, versions, availability, per corpus its description and case count, one
    record per case and frontend, and the per frontend x stage x level summary."""
    p = plan(config)
    started, t0, commit = datetime.datetime.now(datetime.timezone.utc), time.monotonic(), _commit()
    runner = _Runner(config)
    try:
        listed = runner.call_first(f"{CHECK}:list_cases", {"corpora": p.corpora, "samples": config.samples,
                                                            "frontends": p.frontends})
        missing = listed["unavailable_corpora"]
        if len(missing) == len(p.corpora):
            raise BadConfig("; ".join(f"corpus {name} is unavailable here: {why}" for name, why in missing.items()))
        cases = _select([Case.from_json(c) for name in p.corpora for c in listed["cases"][name]], config)
        tasks = [(case, fe) for case in cases for fe in get_corpus(case.corpus).frontends if fe in p.frontends]
        if not tasks:
            raise BadConfig(f"none of the {len(cases)} cases chosen goes to {', '.join(p.frontends)}")
        records = runner.run_all(tasks, listed["availability"], config.rtol)
    finally:
        runner.close()
    doc = {
        "started": started.isoformat(timespec="seconds"),
        "seconds": round(time.monotonic() - t0, 1),
        "commit": commit,
        "config": asdict(config),
        "versions": listed["versions"],
        "availability": listed["availability"],
        "corpora": {name: {"description": get_corpus(name).description, "frontends": list(get_corpus(name).frontends),
                           "cases": sum(1 for c in cases if c.corpus == name),
                           **({"unavailable": missing[name]} if name in missing else {})} for name in p.corpora},
        "records": records,
    }
    doc["summary"] = summarize(doc)
    return doc


def _select(cases: list[Case], config: SweepConfig) -> list[Case]:
    patterns = [re.compile(p) for p in config.patterns]
    chosen = [c for c in cases if not patterns or any(p.search(c.id) for p in patterns)]
    if not chosen:
        raise BadConfig(f"no case matches -k {' -k '.join(config.patterns)} (case ids look like "
                        f"{cases[0].id if cases else 'opinfo:add:float32#0'})")
    if not config.limit:
        return chosen
    # each corpus its first `limit` cases: one corpus never crowds out the next
    taken: Counter = Counter()
    kept = []
    for case in chosen:
        taken[case.corpus] += 1
        if taken[case.corpus] <= config.limit:
            kept.append(case)
    return kept


def _commit() -> str | None:
    """The irlens checkout's commit (with `+dirty` when it has changes), if it is a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True,
                              timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None


class _Runner:
    """Runs calls in a pool of `jobs` workers (or in this process) and prints progress."""

    def __init__(self, config: SweepConfig):
        self.config = config
        self.pool = WorkerPool(config.jobs, (CHECK,)) if config.isolate else None
        self.lock = threading.Lock()
        self.done = 0
        self.t0 = time.monotonic()

    def call_first(self, fn: str, kwargs: dict):
        """A call in the first worker (it pays the imports the cases need anyway)."""
        if not self.config.isolate:
            return resolve_function(fn)(**kwargs)
        return self.pool.call(fn, kwargs, max(self.config.timeout, 600.0), slot=0)

    def run_all(self, tasks: list[tuple[Case, str]], availability: dict, rtol: float) -> list[dict]:
        def work(task: tuple[Case, str]) -> dict:
            case, fe = task
            if availability.get(fe):
                record = {"case": case.id, "frontend": fe, "status": "unavailable", "reason": availability[fe]}
            else:
                record = self._one(case, fe, rtol)
            self._progress(record, len(tasks))
            return record

        if not self.config.isolate:
            return [work(task) for task in tasks]
        # each thread calls in its own slot of the pool
        with ThreadPoolExecutor(self.config.jobs) as threads:
            try:
                return list(threads.map(work, tasks))
            except BaseException:  # Ctrl-C: the cases running now end with their workers, not at their timeouts
                self.close()
                raise

    def _one(self, case: Case, frontend: str, rtol: float) -> dict:
        kwargs = {"case": case.to_json(), "frontend": frontend, "rtol": rtol}
        if not self.config.isolate:
            return check.check_case(**kwargs)
        start = time.monotonic()
        try:
            return self.pool.call(f"{CHECK}:check_case", kwargs, self.config.timeout, again_fresh=True)
        except CallFailed as e:
            kind = "timeout" if e.timed_out else "sweep error" if e.raised else "worker crashed"
            return {"case": case.id, "frontend": frontend, "status": check.FAILED, "class": kind,
                    "reason": check.one_line(e.reason), "seconds": round(time.monotonic() - start, 3)}

    def _progress(self, record: dict, total: int) -> None:
        with self.lock:
            self.done += 1
            if self.config.progress:
                elapsed = time.monotonic() - self.t0
                print(f"[{self.done:>{len(str(total))}}/{total} {elapsed:6.0f}s] {record['frontend']:<8} "
                      f"{record['case']:<48} {one_word(record)}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()

