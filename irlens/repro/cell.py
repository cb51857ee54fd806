"""How a run of a cell to reproduce (irlens.matrix.spec.CellSpec) ended: `Outcome`.

An outcome has a status class (ok, mismatch, exception, crash, timeout) and the first line of
its error: an exception's `Type: message`, a crash's first error line on stderr (see
`irlens.runtime.isolation.first_error`), or the signal. Two failures are the same failure when both
agree; numbers in the line are not compared (a shape in a message shrinks with the graph).

A CUDA fault (an illegal memory access, a device-side assert, ...) is one failure however it
surfaced: the error is sticky, and whichever CUDA call comes next reports it, as a Python
exception (a synchronize) or as an abort (a destructor that throws). Its signature is the fault,
found in the whole error text, not the first line (nvFuser's says only "INTERNAL ASSERT FAILED").
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass

from irlens.runtime.isolation import CallFailed, cuda_fault, describe_exit, first_error, stderr_excerpt

STATUSES = ("ok", "mismatch", "exception", "crash", "timeout", "reference")  # reference: a file's float64 run failed
FAILURES = ("mismatch", "exception", "crash", "timeout")


@dataclass(frozen=True)
class Outcome:
    status: str  # one of STATUSES
    first_line: str = ""  # the error's first line ("" for ok and mismatch)
    detail: str = ""  # more of it: the mismatch's reason, a traceback, stderr's tail
    exit_status: int | None = None  # a file's run: its process's exit status (negative: the signal)

    @property
    def failed(self) -> bool:
        return self.status != "ok"

    @property
    def cuda_fault(self) -> str | None:
        """The CUDA fault this failure is (its name in irlens.runtime.isolation.CUDA_FAULTS), if it is one."""
        if self.status not in ("crash", "exception"):
            return None
        return cuda_fault(f"{self.first_line}\n{self.detail}")

    def signature(self) -> tuple[str, str]:
        fault = self.cuda_fault
        if fault is not None:
            return "cuda fault", fault
        return self.status, re.sub(r"\d+", "#", self.first_line)

    def same_failure(self, other: "Outcome | None") -> bool:
        return other is not None and self.failed and self.signature() == other.signature()

    def __str__(self) -> str:
        if self.status == "mismatch":
            return f"mismatch ({self.detail.splitlines()[0][:200]})" if self.detail else "mismatch"
        return f"{self.status}: {self.first_line}" if self.first_line else self.status

    def to_json(self) -> dict:
        return {"status": self.status, "first_line": self.first_line, "detail": self.detail,
                "exit_status": self.exit_status}

    @classmethod
    def from_json(cls, d: dict) -> "Outcome":
        return cls(d["status"], d.get("first_line", ""), d.get("detail", ""), d.get("exit_status"))


def exception_outcome(e: BaseException, detail: str = "") -> Outcome:
    text = str(e).strip()
    line = f"{type(e).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")
    return Outcome("exception", line[:300], detail)


def crash_line(exit_text: str) -> str:
    """`crashed (SIGSEGV)` / `exited with status 1`, from a worker's or a process's exit as
    `irlens.runtime.isolation.describe_exit` words it."""
    found = re.search(r"(crashed \([\w ]+\)|exited with status -?\d+)", exit_text)
    return found.group(1) if found else exit_text


def worker_failure(e: CallFailed) -> Outcome:
    """A worker call that died (crash) or hung (timeout); a raise inside it arrives as an exception."""
    if "timed out" in e.reason:
        return Outcome("timeout", e.reason, e.detail)
    if "worker process" in e.reason:
        return Outcome("crash", first_error(e.detail) or crash_line(e.reason), e.detail)
    return Outcome("exception", e.reason.splitlines()[0][:300], e.detail)


# How a file runs: as its own __main__, in a process where `import irlens` fails (irlens may be
# installed where the file runs; a standalone file must not need it).
_RUN = ("import runpy, sys; sys.modules['irlens'] = None; sys.argv = [sys.argv[1]]; "
        "runpy.run_path(sys.argv[0], run_name='__main__')")


def run_file(path: str, timeout: float) -> Outcome:
    """Run a standalone file in a fresh Python process that cannot import irlens, and read its
    outcome from its exit status and its first line (see `irlens.repro.emit`)."""
    path = os.path.abspath(path)
    try:
        proc = subprocess.run([sys.executable, "-c", _RUN, path], capture_output=True, text=True, timeout=timeout,
                              cwd=os.path.dirname(path))
    except subprocess.TimeoutExpired as e:
        return Outcome("timeout", f"timed out after {timeout:g} s", _text(e.stderr)[-3000:])
    out = proc.stdout.strip().splitlines()
    head = out[0] if out else ""
    tail = stderr_excerpt(proc.stdout + proc.stderr)  # the first error line in front of a long teardown
    code = proc.returncode
    if code == 0:
        return Outcome("ok", "", proc.stdout[:3000], code)
    if code == 1 and head.startswith("mismatch:"):
        return Outcome("mismatch", "", head.removeprefix("mismatch: "), code)
    if code == 2 and head.startswith("exception:"):
        return Outcome("exception", head.removeprefix("exception: "), tail, code)
    if code < 0:
        return Outcome("crash", first_error(proc.stderr) or crash_line(describe_exit(code)), tail, code)
    line = first_error(proc.stderr) or head or f"exit status {code}"
    return Outcome("reference" if code == 3 else "exception", line, tail, code)


def _text(x) -> str:
    return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
