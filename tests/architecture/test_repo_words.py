"""The repository speaks of irlens, not of how it was built: no tracked file names the work's
sittings, its tracker's numbered items, its numbered GPU calls, the agent that wrote a file, the
device kinds it was lent, or paths outside the repository. In Python files only comments and
strings are prose: identifiers (`WorkerSession`, `start_new_session`) and a string that is one
identifier (pytest's scope names) are code. Upstream reports are cited as `owner/repo#N`."""
from __future__ import annotations

import io
import re
import tokenize

import pytest

from tests.support.tracked_files import ROOT, tracked

# each pattern with what it catches; written so that this file's own source does not match them
PATTERNS = {
    "a sitting of the work": re.compile(r"\b[Ss]essions?\b"),
    "a tracker item": re.compile(r"\b[Ii]ssues?\s+#?\d{1,3}\b|\bissue-\d"),
    # a number after the word, unless a noun follows it (a count of workers, kernels, ...) or a range
    "a numbered run": re.compile(r"\b[Rr]uns?\s+#?\d+\b(?!\.\.|\s+(?!and\b|or\b|to\b|of\b)[a-z])"),
    "the agent that wrote it": re.compile(r"\bhelper(?:'s\b|\s+(?:that|who)\s+(?:had|has|was|wrote|read|ran)\b"
                                          r"|,\s+then\b)|\b(?:by|from|of)\s+(?:a|the)\s+helper\b"),
    "a lent machine kind": re.compile(r"\bnvidia-h\d{3}(?:-x\d+)?\b"),
    # an absolute path on the machine a result was made on; not a URL's or a relative path's part
    # (a word character before it), nor one under a home folder (~)
    "a path outside the repository": re.compile(r"(?:\.\./)+shared\b|(?<![\w.~-])/(?:work|root)/"),
}
_ONE_IDENTIFIER = re.compile(r"[rRbBuUfF]*(['\"]{1,3})\w+\1")
_PROSE_TOKENS = {tokenize.COMMENT, tokenize.STRING} | {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}


def prose_lines(text: str, python: bool) -> list[tuple[int, str]]:
    """(line number, text) of what a reader reads as words: a Python file's comments and strings
    (but a string that is one identifier), any other file whole."""
    if not python:
        return list(enumerate(text.splitlines(), 1))
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return list(enumerate(text.splitlines(), 1))
    return [(tok.start[0] + i, line) for tok in tokens
            if tok.type in _PROSE_TOKENS and not _ONE_IDENTIFIER.fullmatch(tok.string)
            for i, line in enumerate(tok.string.splitlines())]


def findings(name: str, text: str) -> list[str]:
    """`file:line: what (the matched words)` for each match."""
    return [f"{name}:{number}: {what} ({m.group(0)!r})" for number, line in prose_lines(text, name.endswith(".py"))
            for what, pattern in PATTERNS.items() for m in pattern.finditer(line)]


def test_no_tracked_file_names_the_development_process():
    found = []
    for path in tracked():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # compressed documents, images
        found += findings(str(path.relative_to(ROOT)), text)
    assert not found, "words about the development process:\n" + "\n".join(found)


S, I, R = "Ses" + "sion", "is" + "sue", "r" + "un"  # spelled apart so that this file stays clean


@pytest.mark.parametrize("text, what", [
    (f"measured in this {S.lower()} on a 2-core machine", "a sitting of the work"),
    (f"the {S.lower()}s' device time", "a sitting of the work"),
    (f"{S} 13 took 936 s", "a sitting of the work"),
    (f"the goal ({I} 28): ten minutes", "a tracker item"),
    (f"{I.title()} 15's unknowns", "a tracker item"),
    (f"see [tables](parallelism.md#tables-{I}-27)", "a tracker item"),
    (f"joined onto the page ({R} 13)", "a numbered run"),
    (f"{R.title()} 12 (2026-11-28): the five models", "a numbered run"),
    (f"{R}s 9 and 13 on two GPUs", "a numbered run"),
    (f"{R} 10's rows", "a numbered run"),
    ("models.py was written by a help" + "er that had not read the code", "the agent that wrote it"),
    ("on one GPU (nvidia-" + "h200-x4)", "a lent machine kind"),
    ("carried in by `..", "a path outside the repository"),
    ("--out /wo" + "rk/zoo_tx --repro", "a path outside the repository"),
    ("4 reproducers in /ro" + "ot/out/thunderfx-repros", "a path outside the repository"),
    ('File "/wo' + 'rk/main/irlens/matrix/cell.py", line 9', "a path outside the repository"),
])
def test_each_pattern_catches_its_words(text, what):
    text = text.replace("`..", "`../" + "shared/gpu`")
    found = findings("x.md", "ok\n" + text)  # named by file and line
    assert len(found) == 1 and found[0].startswith(f"x.md:2: {what} ("), found


@pytest.mark.parametrize("text", [
    f"a {R} 2 workers wide, each {R}s 1 kernel",
    f"names need not {R} 0..N-1",
    "the help" + "er functions that read arguments; a help" + "er called twice",
    f"Lightning-AI/lightning-thunder#799, an upstream {I}",
    "nvidia-smi --query-gpu=name",
    "../../tests/data/h200-bench.json.gz",
    "https://example.org/wo" + "rk/root/x, docs/wo" + "rk/, ~/wo" + "rk/x, the " + "root/ of a tree",
])
def test_ordinary_words_pass(text):
    assert findings("x.md", text) == []


def test_python_identifiers_and_one_word_strings_are_code():
    source = (f"import subprocess\n\n\nclass Worker{S}:\n    pass\n\n\n"
              f"subprocess.Popen(['true'], start_new_{S.lower()}=True)\n"
              f"{S.lower()} = Worker{S}()\n"
              f"SCOPE = \"{S.lower()}\"  # pytest's widest fixture scope\n")
    assert findings("x.py", source) == []
    assert findings("x.py", source + f"# one {S.lower()} per worker\n") == [
        f"x.py:11: a sitting of the work ('{S.lower()}')"]
    assert findings("x.py", source + f'"""Made in {R} 4."""\n') == ["x.py:11: a numbered run ('" + R + " 4')"]
