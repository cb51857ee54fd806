"""The repository stays lean: it travels to the GPU machine (64 MiB with the GPU environment)
and is cloned by every reviewer. Results are committed compressed (`.json.gz`) and reports are
made on demand (docs/results/README.md says how)."""
import pytest

from tests.support.tracked_files import ROOT, tracked

MAX_DOC_FILE = 2 * 1024 * 1024
MAX_TREE = 15 * 1024 * 1024


def test_no_committed_file_under_docs_passes_2_mb():
    big = {str(p.relative_to(ROOT)): p.stat().st_size for p in tracked()
           if p.relative_to(ROOT).parts[0] == "docs" and p.stat().st_size > MAX_DOC_FILE}
    assert not big, f"files under docs/ above 2 MB (compress results as .json.gz, make reports on demand): {big}"


def test_tracked_tree_under_15_mb():
    total = sum(p.stat().st_size for p in tracked())
    assert total < MAX_TREE, f"the tracked tree holds {total / 2**20:.1f} MiB (limit 15 MiB)"


@pytest.mark.parametrize("page", ["README.md", "DESIGN.md", "docs/results/README.md",
                                  *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")),
                                  *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "results").glob("*/README.md"))])
def test_every_local_link_resolves(page):
    """Pages that cite results link files that are there (a figure left out of git breaks them)."""
    import re

    path = ROOT / page
    broken = [target for target in re.findall(r"\]\(([^)#\s]+)", path.read_text())
              if not target.startswith(("http://", "https://")) and not (path.parent / target).exists()]
    assert not broken, f"{page} links files that are not there: {broken}"


def test_no_raw_log_or_generated_reproducer_is_committed():
    """Raw logs and the files `irlens repro` writes are made by their commands, not kept: a
    result set's README gives the command and quotes the lines that matter."""
    import gzip

    def generated(path):
        opened = gzip.open(path, "rt") if path.name.endswith(".py.gz") else path.open()
        with opened as f:
            return f.read(len(GENERATED)) == GENERATED

    kept = [str(p.relative_to(ROOT)) for p in tracked()
            if p.suffix == ".log" or (p.name.endswith((".py", ".py.gz")) and generated(p))]
    assert not kept, f"raw logs or irlens repro files are committed: {kept}"


GENERATED = '"""irlens repro'  # how every file irlens.repro writes begins
