"""`python -m irlens.core.ops`: the canonical vocabulary, one op per line."""
from irlens.core.ops import describe

print(describe())
