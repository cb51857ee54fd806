"""No module in irlens/ is over 600 lines: a module holds one job (the frontends are split into
tables, converters by op family, walker and parser; DESIGN.md's map names them)."""
from __future__ import annotations

from pathlib import Path

import irlens

PACKAGE = Path(irlens.__file__).resolve().parent
LIMIT = 600


def test_no_module_is_over_the_limit():
    lines = {str(p.relative_to(PACKAGE.parent)): len(p.read_text().splitlines()) for p in PACKAGE.rglob("*.py")}
    assert len(lines) > 100  # the package was found
    over = {path: n for path, n in sorted(lines.items()) if n > LIMIT}
    assert over == {}, f"modules over {LIMIT} lines (split them by what they hold): {over}"
