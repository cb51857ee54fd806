"""The one place errors become exit statuses, and the options every subcommand reads typed.

`guarded` wraps each subcommand's `run`: bad input (`irlens.errors.UsageError`: an unknown
name, a bad reference or option, a malformed results file; or `Unavailable`: something asked
for that cannot run here) is one line on stderr and exit status 2; any other exception one line
and exit 1 (IRLENS_DEBUG=1 shows the traceback instead).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Callable, TypeVar

from irlens.cli.frontend_settings import Declared, declared as declared_settings
from irlens.cli.frontend_settings import apply as apply_frontend_settings  # noqa: F401  (the subcommands import it here)
from irlens.errors import Unavailable, UsageError
from irlens.names import BACKENDS, COMPUTE_DTYPES, MODES, PRESETS
from irlens.core.registry import UnknownName

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
T = TypeVar("T")

# a corpus run's --jobs (zoo, graphnet)
JOBS_HELP = ("cells run in parallel, each worker on its own share of the cores (default: 1); on a GPU they "
             "compile side by side while one at a time is timed, so several shorten a run as far as the cores and "
             "the GPU's memory go")


def error(message: str, command: str | None = None) -> None:
    """One line on stderr, named as argparse names a subcommand's errors: `irlens compare: error: ...`."""
    print(f"irlens{' ' + command if command else ''}: error: {message}", file=sys.stderr)


def guarded(run: Callable[..., int]) -> Callable[..., int]:
    @functools.wraps(run)
    def wrapper(args) -> int:
        command = getattr(args, "command", None)
        try:
            return run(args)
        except (UsageError, Unavailable) as e:
            error(str(e) + reference_hint(e, getattr(args, "workloads", None)), command)
            return EXIT_USAGE
        except KeyboardInterrupt:
            error("interrupted", command)
            return 130
        except Exception as e:  # noqa: BLE001  (one line for the user; IRLENS_DEBUG=1 for the traceback)
            if os.environ.get("IRLENS_DEBUG"):
                raise
            error(f"{type(e).__name__}: {e} (set IRLENS_DEBUG=1 for the traceback)", command)
            return EXIT_FAIL

    return wrapper


def read_documents(paths: list[str]) -> list:
    """The results documents `--from` names, each once: a file given twice (or two files with the
    same bytes) would count every row twice."""
    from irlens.matrix import read_document

    seen, docs = set(), []
    for path in paths:
        key = hashlib.sha256(Path(path).read_bytes()).hexdigest() if Path(path).is_file() else path
        if key in seen:
            print(f"irlens: {path} is a document given already: read once", file=sys.stderr)
            continue
        seen.add(key)
        docs.append(read_document(path))
    return docs


def reference_hint(e: Exception, names: list[str] | None) -> str:
    """For an unknown workload named after a `path/to/file.py:NAME` in one comma list: how to
    take several from one file (a bare name is always a built-in's)."""
    if not isinstance(e, UnknownName) or e.kind != "workload" or not names or e.name not in names:
        return ""
    before = [n for n in names[:names.index(e.name)] if ":" in n]
    if not before:
        return ""
    target = before[-1].rpartition(":")[0]
    return f" (a name after a comma is a built-in's: for several from one file write {before[-1]},{target}:{e.name})"


def options(cls: type[T], args) -> T:
    """The dataclass `cls` filled from parsed arguments (a field the namespace lacks keeps its default)."""
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**given)


def csv(text: str) -> list[str]:
    """A comma-separated option value as a list; an empty one is an error (an unset shell variable
    must not mean "all of them")."""
    items = [t for t in (s.strip() for s in text.split(",")) if t]
    if not items:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing: give one name or more, comma-separated "
                                         "(leave the option out for the default)")
    return items


csv.__name__ = "list"  # argparse names the type in its message


def number_type(kind: type, zero_ok: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite `kind` (int or float) above zero (or, `zero_ok`, at least zero)."""
    what = f"{'a non-negative' if zero_ok else 'a positive'} {'whole number' if kind is int else 'number'}"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (value == 0 and not zero_ok):
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    parse.__name__ = kind.__name__
    return parse


positive_int = number_type(int)
non_negative_int = number_type(int, zero_ok=True)
positive_float = number_type(float)


def _writable_below(folder: Path, target: str) -> None:
    """`target`, to be made in `folder` (made too if missing), can be made: the nearest existing of
    `folder` and its ancestors is a folder this process may create entries in (tried, not inferred
    from permission bits: root passes those everywhere)."""
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {target}: {folder} is a file, not a folder")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".irlens-probe-", dir=folder))
    except OSError as e:
        raise argparse.ArgumentTypeError(f"cannot write {target}: {e.strerror} in {folder}") from None


def output_file(text: str) -> str:
    """An argparse type: a file the command will write (made with its folders), checked before any work."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; give a file name")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise argparse.ArgumentTypeError(f"cannot write {text}: permission denied")
    else:
        _writable_below(path.parent, text)
    return text


def output_folder(text: str) -> str:
    """An argparse type: a folder the command will write files into (made if missing), checked before any work."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    _writable_below(path, text)
    return text


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the default means "not given" (None,
    False, an empty list: the help says what happens then) or the help already names it."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        not_given = default is None or default is False or default == argparse.SUPPRESS or \
            (isinstance(default, (list, tuple)) and not default)
        if not action.option_strings or action.nargs == 0 or not_given or "default" in text:  # nargs 0: a flag
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else f"{default:g}" \
            if isinstance(default, float) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"


def checked_csv(choices) -> Callable[[str], list[str]]:
    """A comma-separated option value whose items must be among `choices` (else argparse's usage error, exit 2)."""
    def parse(text: str) -> list[str]:
        items = csv(text)
        bad = [item for item in items if item not in choices]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: each of {', '.join(choices)}, comma-separated")
        return items

    parse.__name__ = "list"  # argparse names the type in its message
    return parse


def add_modes_option(parser, default: tuple[str, ...] = ("fwd", "fwdbwd")) -> None:
    """`--mode fwd|fwdbwd|fwd,fwdbwd` for the commands that run several modes (dest `modes`)."""
    parser.add_argument("--mode", dest="modes", type=checked_csv(MODES), default=list(default), metavar="MODES",
                        help=f"comma-separated, of: {', '.join(MODES)}: the forward, or also the loss and its "
                             f"gradients")


def add_preset_option(parser, default: str | None = "tiny") -> None:
    """`--preset`; a default of None means "not given" (dump tells its frontends apart so), tiny then."""
    parser.add_argument("--preset", choices=PRESETS, default=default,
                        help="shape preset: tiny (CPU, tests) or bench (GPU sizes)"
                             + ("" if default else "; default: tiny"))


def add_dtype_option(parser) -> None:
    parser.add_argument("--dtype", choices=COMPUTE_DTYPES, default=None,
                        help="compute dtype; default: the workload's own (float32 for the built-ins)")


def add_device_option(parser, default: str | None = "cpu") -> None:
    parser.add_argument("--device", choices=["cpu", "cuda"], default=default,
                        help="where it runs" + ("" if default else "; default: cpu"))


def backend_names() -> str:
    """The built-in backends, for a help text."""
    return ", ".join(BACKENDS)


def backend(text: str) -> str:
    """An argparse type: a built-in backend's name (checked here, before anything is imported) or
    a path/to/file.py:NAME reference (loaded when the command runs)."""
    if ":" not in text and text not in BACKENDS:
        raise argparse.ArgumentTypeError(str(UnknownName("backend", text, list(BACKENDS),
                                                         " (or give your own as path/to/file.py:NAME)")))
    return text


def backends(text: str) -> list[str]:
    """An argparse type: comma-separated backends, each as `backend` takes it."""
    return [backend(item) for item in csv(text)]


backends.__name__ = "list"  # argparse names the type in its message


def frontend_settings() -> list[tuple[str, str, Declared]]:
    """(option, argparse name, setting) of every frontend's settings (`Frontend.settings`, read
    without importing the frontends): `--thunder-capture`, thunder_capture."""
    return [(d.option, d.dest, d) for d in declared_settings()]


def add_frontend_settings(parser) -> None:
    for option, _, setting in frontend_settings():
        parser.add_argument(option, default=None, metavar=setting.metavar, help=setting.help)


def add_config_option(parser) -> None:
    """`--config NAME` (irlens.cli.configs, read before parsing: `irlens.cli.SubcommandParser`)."""
    parser.add_argument("--config", metavar="NAME",
                        help="run a named configuration (`irlens list --configs` says what each runs): its "
                             "options, then the ones given beside it, which override its own; default: none, the "
                             "options given alone")


def write_page(doc, page: str, out: Path, stem: str, json_path: str | None) -> None:
    """A corpus run's outputs (zoo, graphnet): OUT/STEM.md, OUT/STEM.json (and --json), the report;
    the page on stdout, what was written on stderr."""
    from irlens.api import report
    from irlens.matrix import write_document

    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.md").write_text(page)
    write_document(doc, out / f"{stem}.json")
    if json_path:
        write_document(doc, json_path)
    paths = report([doc], out, frontends=False)
    print(page)
    print(f"wrote {out / f'{stem}.md'}, {out / f'{stem}.json'}, {paths['html']}", file=sys.stderr)
