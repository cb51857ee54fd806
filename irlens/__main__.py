"""`python -m irlens ...`: the CLI, for child processes that must use this interpreter."""
from irlens.cli import main

raise SystemExit(main())
