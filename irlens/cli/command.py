"""The one place errors become exit statuses, and the options every subcommand reads typed.

`guarded` wraps each subcommand's `run`: bad input (`irlens.errors.UsageError`: an unknown
name, a bad reference or option, a malformed results file; or `Unavailable`: something asked
for that cannot run here) is one line on stderr and exit status 2; any other exception one line
and exit 1 (IRLENS_DEBUG=1 shows the traceback instead).
"""
from __future__ import annotations

import dataclasses
import functools
import os
import sys
from typing import Callable, TypeVar

from irlens.errors import UsageError

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
T = TypeVar("T")


def error(message: str) -> None:
    print(f"irlens: error: {message}", file=sys.stderr)


def guarded(run: Callable[..., int]) -> Callable[..., int]:
    @functools.wraps(run)
    def wrapper(args) -> int:
        from irlens.frontends.base import Unavailable

        try:
            return run(args)
        except (UsageError, Unavailable) as e:
            error(str(e))
            return EXIT_USAGE
        except KeyboardInterrupt:
            error("interrupted")
            return 130
        except Exception as e:  # noqa: BLE001  (one line for the user; IRLENS_DEBUG=1 for the traceback)
            if os.environ.get("IRLENS_DEBUG"):
                raise
            error(f"{type(e).__name__}: {e} (set IRLENS_DEBUG=1 for the traceback)")
            return EXIT_FAIL

    return wrapper


def options(cls: type[T], args) -> T:
    """The dataclass `cls` filled from parsed arguments (a field the namespace lacks keeps its default)."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**given)


def csv(text: str) -> list[str]:
    """A comma-separated option value as a list."""
    return [t for t in (s.strip() for s in text.split(",")) if t]


def add_thunder_capture(parser) -> None:
    parser.add_argument("--thunder-capture", default=None, metavar="auto|jit|thunderfx",
                        help="how Thunder (its frontend, thunder+torchcompile, nvfuser) captures a workload: auto "
                             "(default: thunder.jit, and ThunderFX where it fails), jit, or thunderfx")


def apply_thunder_capture(args) -> None:
    """`--thunder-capture`, for this process and the workers it starts (a bad value: UsageError)."""
    if getattr(args, "thunder_capture", None) is not None:
        from irlens.frontends.thunder.capture import set_capture

        set_capture(args.thunder_capture)
