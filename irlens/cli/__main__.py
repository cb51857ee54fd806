"""`python -m irlens.cli ...`: the same as `irlens ...`."""
from irlens.cli import main

raise SystemExit(main())
