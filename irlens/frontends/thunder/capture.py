"""How Thunder captures a workload: `thunder.jit`, or ThunderFX where thunder.jit cannot trace.

`auto` (the default) tries thunder.jit and, where it fails, ThunderFX (Dynamo captures; Thunder
compiles each FX region it can, the others fall back to Inductor: `thunderfx.py`). `jit` and
`thunderfx` take one way only, and its failure is the cell's. The choice is read from the
environment (`IRLENS_THUNDER_CAPTURE`), so that the worker processes a run starts inherit it;
the CLI's `--thunder-capture` and `capture_as` set it.

Where both ways fail, `CaptureFailed` (a `NoNativePath`) says why: Thunder cannot take the workload
at all, and a backend may run through the common view of another frontend's graphs instead; one
that cannot fails with ThunderFX's error.
"""
from __future__ import annotations

import contextlib
import os
import traceback
import time
from typing import Callable, TypeVar

from irlens.errors import CaptureFailed, UsageError

CAPTURES = ("auto", "jit", "thunderfx")
CAPTURE_ENV = "IRLENS_THUNDER_CAPTURE"
T = TypeVar("T")


def chosen_capture() -> str:
    value = os.environ.get(CAPTURE_ENV) or "auto"
    if value not in CAPTURES:
        raise UsageError(f"{CAPTURE_ENV}={value!r}: choose from {', '.join(CAPTURES)}")
    return value


def set_capture(value: str | None) -> None:
    """Make `value` the capture of this process and the workers it starts (None: leave it)."""
    if value is None:
        return
    if value not in CAPTURES:
        raise UsageError(f"unknown Thunder capture {value!r}; choose from: {', '.join(CAPTURES)}")
    os.environ[CAPTURE_ENV] = value


@contextlib.contextmanager
def capture_as(value: str):
    """Within the block, Thunder captures by `value` (e.g. the conformance sweep pins `jit`)."""
    before = os.environ.get(CAPTURE_ENV)
    set_capture(value)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CAPTURE_ENV, None)
        else:
            os.environ[CAPTURE_ENV] = before


def first_line(e: BaseException) -> str:
    """"<type>: <first line>" of an exception; of the backend's own where Dynamo wraps it
    (BackendCompilerFailed's first line names only the backend object). One without a message (a
    bare assert) says where it was raised: its innermost frame and that line."""
    e = getattr(e, "inner_exception", None) or e
    text = next((line.strip() for line in str(e).splitlines() if line.strip()), "")
    if not text and e.__traceback__ is not None:
        frame = traceback.extract_tb(e.__traceback__)[-1]
        where = frame.filename.split("site-packages/")[-1]
        text = f"no message, raised at {where}:{frame.lineno}" + (f" ({frame.line})" if frame.line else "")
    return f"{type(e).__name__}: {text}"[:200]


# thunder.jit failures on a workload's forward in this process: a fwd+bwd cell of the same workload
# traces the same forward first, so it goes to ThunderFX at once (a zoo worker runs both modes)
_FORWARD_FAILED: dict[tuple, BaseException] = {}


class Attempts:
    """The capture's choice for one workload instance and mode, made as the ways are tried: thunder.jit
    first (`first`), ThunderFX where it fails (`jit_failed`), and ThunderFX's own failure
    (`thunderfx_failed`). `inst`: the workload's instance (its name, preset, dtype and device key what
    failed); `mode`: the cell's."""

    def __init__(self, inst, mode: str):
        self.how, self.mode = chosen_capture(), mode
        self.key = (inst.name, inst.preset, inst.dtype, inst.device)
        self.name = inst.name
        self.jit_error: str | None = None
        self._start = 0.0

    def first(self) -> tuple[str, BaseException | None] | None:
        """None: thunder.jit is tried first; else ThunderFX at once: (why, how thunder.jit failed, None
        where it was not tried). `why` is the line a row shows ("thunderfx (asked for)", ...)."""
        if self.how == "thunderfx":
            return "thunderfx (asked for)", None
        if self.how == "auto" and self.mode != "fwd" and self.key in _FORWARD_FAILED:
            jit_failure = _FORWARD_FAILED[self.key]
            self.jit_error = f"{first_line(jit_failure)}, on its forward earlier in this process: not tried again"
            return f"thunderfx (thunder.jit failed: {self.jit_error})", jit_failure
        self._start = time.perf_counter()
        return None

    def jit_failed(self, e: Exception) -> tuple[str, BaseException]:
        """(why, e) for ThunderFX after thunder.jit failed with `e`; raises `e` where the capture takes
        thunder.jit only, or where Thunder is unavailable."""
        from irlens.frontends.base import Unavailable

        if isinstance(e, Unavailable) or self.how == "jit":
            raise e
        self.jit_error = f"{first_line(e)} (after {time.perf_counter() - self._start:.0f} s)"
        if self.mode == "fwd":  # its message is what is read again, not its frames (they hold the model)
            _FORWARD_FAILED[self.key] = e.with_traceback(None)
        return f"thunderfx (thunder.jit failed: {self.jit_error})", e

    def thunderfx_failed(self, e: Exception):
        """Raises what ThunderFX's failure `e` is: itself where it was asked for or Thunder is
        unavailable, else `CaptureFailed` with both ways' errors."""
        from irlens.frontends.base import Unavailable

        if isinstance(e, Unavailable) or self.jit_error is None:
            raise e
        raise CaptureFailed(f"Thunder cannot take {self.name}: thunder.jit failed ({self.jit_error}); "
                            f"ThunderFX failed too ({first_line(e)})") from e


def capture(inst, mode: str, jit: Callable[[], T], thunderfx: Callable[[str, BaseException | None], T]) -> T:
    """`jit()`, or `thunderfx(why, jit_error)` where the capture says so (`Attempts`): `why` is the
    line a row shows, `jit_error` how thunder.jit failed (None where it was not tried)."""
    attempts = Attempts(inst, mode)
    chosen = attempts.first()
    if chosen is None:
        try:
            return jit()
        except Exception as e:  # noqa: BLE001  (any failure of thunder.jit sends auto to ThunderFX)
            chosen = attempts.jit_failed(e)
    try:
        return thunderfx(*chosen)
    except Exception as e:  # noqa: BLE001
        attempts.thunderfx_failed(e)
