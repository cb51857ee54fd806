"""Run calls in a separate worker process with a timeout, so a crash or a hang costs one call.

`Worker` starts `python -m irlens.runtime.isolation [MODULE ...]`, which imports the modules, says it
is ready, then serves requests one JSON line at a time:
`{"fn": "package.module:function", "kwargs": {...}}` -> `{"value": ...}` or `{"error": ...}`.
A call's timeout starts once the worker is ready, so a slow start (importing torch on a busy
machine) does not eat into it; nor, up to `max_wait_s`, does its waiting for turns on the device
(irlens.runtime.call_progress, whose file also tells the stage a timed-out call was in). The worker keeps
its imports between calls (torch, a compiler) so a run of calls pays them once. Replies travel on a private copy of the worker's stdout; fd 1 itself is pointed at
stderr, so whatever libraries print cannot corrupt the protocol. The worker's stderr goes
to a file the parent reads the tail of when a call dies.

A worker dies with its parent: it watches its parent process and, once orphaned (the parent
exited or was killed, e.g. by `timeout`), kills its own process group, compiler subprocesses
included, even in the middle of a call. Which worker serves a call, when one is started again
and when it is closed, is irlens.runtime.pool's: every caller runs its calls through a pool.
Every worker computes under its parent's float32 precision policy (irlens.core.precision).
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

from irlens.core import precision
from irlens.runtime import call_progress

STDERR_TAIL_CHARS = 3000
WORKER_ENV = "IRLENS_WORKER"  # set inside a worker process
TURNS_ENV = "IRLENS_TURNS"  # the device turns' lock a worker starts within (irlens.runtime.gpu_turns)
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"  # a container's CPU quota (cgroup v2): "QUOTA PERIOD" or "max PERIOD"
STARTUP_TIMEOUT_S = 180.0
WAIT_POLL_S = 1.0  # how often a parent looks at a call that waits for a turn past its timeout
ORPHAN_POLL_S = 1.0


# the line a crash's cause is on: a Python exception, a C++ exception that ended the process, a CUDA error
_ERROR_LINE = re.compile(r"^(?:[\w.]+(?:Error|Exception)\b.*|terminate called .*|.*CUDA error: .*|\s*what\(\): .*)$")


# the words each CUDA fault is reported with (the runtime's, the driver's), by fault. A fault is sticky:
# whichever CUDA call comes after the kernel that made it reports it, whatever that call's code
CUDA_FAULTS = {
    "illegal memory access": ("illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress"),
    "misaligned address": ("misaligned address", "CUDA_ERROR_MISALIGNED_ADDRESS", "cudaErrorMisalignedAddress"),
    "device-side assert": ("device-side assert", "CUDA_ERROR_ASSERT", "cudaErrorAssert"),
    "illegal instruction": ("illegal instruction", "CUDA_ERROR_ILLEGAL_INSTRUCTION", "cudaErrorIllegalInstruction"),
    "unspecified launch failure": ("unspecified launch failure", "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorLaunchFailure"),
}


def cuda_fault(text: str) -> str | None:
    """The CUDA fault (its name in CUDA_FAULTS) `text` reports, if any."""
    return next((fault for fault, words in CUDA_FAULTS.items() if any(w in text for w in words)), None)


def _first_error_line(lines: list[str]) -> int | None:
    return next((i for i, line in enumerate(lines) if _ERROR_LINE.match(line)), None)


def first_error(stderr: str) -> str | None:
    """The first line of a worker's stderr that names an error: after a crash, the tail holds
    the teardown (e.g. a C++ destructor aborting on the dead CUDA context), the cause is earlier."""
    lines = stderr.splitlines()
    first = _first_error_line(lines)
    if first is None:
        return None
    found = lines[first].strip()
    if found.startswith("terminate called") and first + 1 < len(lines) and "what():" in lines[first + 1]:
        found = lines[first + 1].strip().removeprefix("what():").strip()  # the C++ exception's message
    return found[:300]


def stderr_excerpt(stderr: str) -> str:
    """The tail of a worker's stderr, with its first error line and a few after it in front where
    the tail no longer holds them."""
    tail = stderr[-STDERR_TAIL_CHARS:]
    lines = stderr.splitlines()
    first = _first_error_line(lines)
    if first is None or lines[first] in tail:
        return tail
    return "\n".join(lines[first:first + 8])[:STDERR_TAIL_CHARS] + "\n[...]\n" + tail


class CallFailed(RuntimeError):
    """The worker crashed, hung past its timeout, or raised; `detail` holds the stderr tail or traceback."""

    def __init__(self, reason: str, detail: str = "", starved: bool = False, raised: str | None = None,
                 timed_out: bool = False):
        super().__init__(reason)
        # starved: it timed out for waits on turns the other workers held (`starved`, below)
        self.reason, self.detail, self.starved, self.timed_out = reason, detail, starved, timed_out
        self.raised = raised  # the name of the exception the function raised (None: the worker died or hung)


class Worker:
    def __init__(self, preload: tuple[str, ...] = (), env: dict[str, str] | None = None, turns: str | None = None,
                 threads: int | None = None, log: str | os.PathLike | None = None, cpus: list[int] | None = None):
        """`turns`: the device turns' lock (irlens.runtime.gpu_turns): the worker imports its preload
        sharing the device, so that no timing in another worker runs beside its start.
        `threads`: its thread pools' size, where the environment sets none (`thread_env`).
        `log`: a file its stderr (and what it prints) is appended to and kept, else a temporary one.
        `cpus`: the cores it and the processes it starts keep to (`cpu_slice`); None: any."""
        self._stderr = open(log, "a+b") if log is not None else tempfile.TemporaryFile()
        env = dict(env if env is not None else worker_env())
        env.update(thread_env(threads, env))
        if cpus:
            env[CPUS_ENV] = ",".join(map(str, cpus))
        if turns:
            env[TURNS_ENV] = turns
        # beside the turns' lock: in the run's folder
        folder = os.path.dirname(os.path.abspath(turns)) if turns else None
        fd, self._progress = tempfile.mkstemp(".json", "irlens-progress-", folder)
        os.close(fd)
        env[call_progress.PROGRESS_ENV] = self._progress
        self._env, self._started = env, time.time()
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "irlens.runtime.isolation", *preload],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env,
            start_new_session=True,  # its own process group: a timeout kills compiler subprocesses too
        )
        self._buffer = b""
        self._ready = False

    @property
    def alive(self) -> bool:
        return self._proc.poll() is None

    def call(self, fn: str, kwargs: dict, timeout: float, max_wait_s: float = 0.0):
        """Call `fn` ("module:function") with JSON `kwargs` in the worker; raise CallFailed on any
        failure. Up to `max_wait_s` seconds the call (and the worker's start) waits for turns on the
        device are added to `timeout`."""
        if not self._ready:
            self._wait_ready(max_wait_s)
        with contextlib.suppress(FileNotFoundError):
            os.remove(self._progress)  # the last call's: until this one writes its own
        try:
            stderr_start = os.fstat(self._stderr.fileno()).st_size
            self._proc.stdin.write((json.dumps({"fn": fn, "kwargs": kwargs}) + "\n").encode())
            self._proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died already; reading finds EOF and reports how
        except ValueError:  # its pipes closed by `close` from another thread (a run that stops early)
            raise CallFailed("the worker was closed") from None
        reply = self._reply(timeout, max_wait_s, stderr_start)
        if "error" in reply:
            raise CallFailed(reply["error"], reply.get("traceback", ""), raised=reply.get("raised"))
        return reply["value"]

    def _wait_ready(self, max_wait_s: float) -> None:
        reply = self._reply(STARTUP_TIMEOUT_S, max_wait_s, 0, what="starting the worker")
        if not reply.get("ready"):
            raise CallFailed(f"worker did not start: {reply}")
        self._ready = True

    def _reply(self, timeout: float, max_wait_s: float, stderr_start: int, what: str = "") -> dict:
        prefix = f"{what}: " if what else ""
        start = time.monotonic()
        deadline = start + timeout
        try:
            while (line := self._read_line(deadline)) is None:
                progress, now = call_progress.read(self._progress), time.monotonic()
                waited = min(progress.waited(now), max_wait_s) if progress else 0.0
                if start + timeout + waited <= now:
                    break
                deadline = start + timeout + waited
                if progress.waiting_since is not None:  # its deadline moves on with the clock: look again soon
                    deadline = max(deadline, now + WAIT_POLL_S)
        except EOFError:  # it died; the pipe closes a moment before the process is gone
            detail = self._stderr_tail(stderr_start)
            error = first_error(detail)
            self._drop_unfinished_builds()
            raise CallFailed(prefix + describe_exit(self._proc.wait()) + (f", after: {error}" if error else ""),
                             detail) from None
        if line is None:
            self.kill()
            self._drop_unfinished_builds()
            raise CallFailed(prefix + timed_out(timeout, progress, now, max_wait_s), self._stderr_tail(stderr_start),
                             starved=starved(timeout, progress, now, max_wait_s), timed_out=True)
        return json.loads(line)

    def _drop_unfinished_builds(self) -> None:
        """A compile this worker ran when it was killed or crashed may have left a C++ build half
        written, which Inductor would load in every later process (irlens.caches.upkeep)."""
        from irlens.caches.upkeep import drop_unfinished, inductor_folders

        with contextlib.suppress(OSError):
            drop_unfinished(inductor_folders(self._env), since=self._started - 1)  # mtimes lag the clock a little

    def _read_line(self, deadline: float) -> bytes | None:
        """The next reply line; None at the deadline, EOFError when the worker closed its end."""
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def _stderr_tail(self, start: int) -> str:
        if self._stderr.closed:  # closed from another thread mid-call (a run that stops early)
            return ""
        self._stderr.seek(start)
        return stderr_excerpt(self._stderr.read().decode(errors="replace"))

    def kill(self) -> None:
        if self.alive:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._proc.wait()

    def close(self) -> None:
        if self.alive:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=2)  # an idle worker exits at once; a busy one is killed
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self._stderr.close()
        for path in (self._progress, self._progress + ".partial"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def worker_env() -> dict[str, str]:
    """The parent's environment, with its import path, so the worker resolves the same modules."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and os.path.isdir(p)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


def cpu_cores() -> int:
    """The cores this process may run on: its affinity mask, less where a cgroup quota (a
    container's `--cpus`) allows fewer; os.cpu_count() counts the host's."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        with open(CGROUP_CPU_MAX) as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, cores)


THREAD_COUNTS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")  # torch reads both; MKL's wins where both are set
CPUS_ENV = "IRLENS_CPUS"  # the cores a worker keeps to (`cpu_slice`)


def thread_env(threads: int | None, env: dict[str, str]) -> dict[str, str]:
    """The thread counts a worker gets: `threads` for OpenMP (torch's intra-op pool and the
    loops Inductor generates) and MKL, unless `env` (the user) sets either. XLA's pool and
    Inductor's parallel compile follow the affinity mask (a pinned worker's: `cpu_slice`)."""
    if threads is None or any(k in env for k in THREAD_COUNTS):
        return {}
    return {k: str(threads) for k in THREAD_COUNTS}


def cpu_slice(index: int, count: int) -> list[int] | None:
    """Slice `index` of `count` near-equal slices of the cores this process may run on (its
    affinity mask; slices wrap around where there are more slices than cores): the cores of one
    of `count` workers, so that a timing in one never shares a core with another's compile. None
    where the system has no affinity masks (macOS): the workers run anywhere."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    count = min(count, len(cores))
    index %= count
    size, extra = divmod(len(cores), count)
    start = index * size + min(index, extra)
    return cores[start:start + size + (index < extra)]


def worker_threads(workers: int) -> int:
    """Threads per worker so that `workers` processes computing at once fit the cores. Two
    2-thread pools on two cores stall each other at every parallel region, whoever owns the
    other pool: on the 2-core machine other jobs loaded, a 200 µs step read up to 240,000 µs
    with 2 threads and at most 3x its fastest reading with 1 (docs/timing.md)."""
    return max(1, cpu_cores() // max(1, workers))


def starved(timeout: float, progress: call_progress.Progress | None, now: float, max_wait_s: float) -> bool:
    """Whether a call that timed out did so for its waits on turns on the device (the other
    workers held it), not for its own work: its waits beyond `max_wait_s`, which counted, took at
    least half its timeout, or a quarter and it was killed waiting (a compile that ran to near its
    timeout and then waited a moment stays a timeout of its own)."""
    if progress is None:
        return False
    counted = progress.waited(now) - max_wait_s
    return counted >= timeout / 2 or (counted >= timeout / 4 and progress.waiting_since is not None)


def timed_out(timeout: float, progress: call_progress.Progress | None, now: float, max_wait_s: float) -> str:
    """"timed out after 450 s (compiling, its last 430 s)", and the time it waited for turns on
    the device, which did not count up to `max_wait_s`."""
    if progress is None:
        return f"timed out after {timeout:.0f} s"
    text = f"timed out after {timeout:.0f} s ({progress.where(now)})"
    waited = progress.waited(now)
    excused = min(waited, max_wait_s)
    if round(waited) < 1:
        return text
    if excused == waited:
        return f"{text}, not counting {waited:.0f} s waiting for turns on the device"
    return f"{text}; it waited {waited:.0f} s for turns on the device, of which {excused:.0f} s did not count"


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"worker process crashed ({name})"
    return f"worker process exited with status {returncode}"


def resolve_function(ref: str):
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def exit_when_orphaned(parent: int) -> None:
    """Kill this worker (and what it started) once `parent` is gone: a busy worker never reads
    the end of its stdin, and a killed parent closes nothing for it."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_S)
    if os.getpgrp() == os.getpid():  # started by Worker: the group is this worker and its subprocesses
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(1)


def serve(preload: list[str]) -> None:
    if os.environ.get(CPUS_ENV):  # first: every thread and process it starts keeps to these cores
        os.sched_setaffinity(0, {int(c) for c in os.environ[CPUS_ENV].split(",")})
    threading.Thread(target=exit_when_orphaned, args=(os.getppid(),), daemon=True).start()
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    os.environ[WORKER_ENV] = "1"
    from irlens.runtime.gpu_turns import sharing_gpu

    call_progress.begin("importing " + ", ".join(preload) if preload else "starting")
    with sharing_gpu(os.environ.get(TURNS_ENV)):  # importing torch, a compiler: seconds of CPU
        precision.apply_inherited()  # the run's float32 policy, before anything computes
        for module in preload:
            importlib.import_module(module)
    protocol.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        call_progress.begin(f"in {request['fn']}")  # until the call names its own stages
        try:
            reply = {"value": resolve_function(request["fn"])(**request["kwargs"])}
        except Exception as e:  # the caller turns it into a failed row; the worker serves on
            reply = {"error": f"{type(e).__name__}: {e}", "raised": type(e).__name__,
                     "traceback": traceback.format_exc()[-STDERR_TAIL_CHARS:]}
        protocol.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    serve(sys.argv[1:])
