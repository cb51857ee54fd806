"""`python -m irlens.ops`: the canonical vocabulary, one op per line."""
from irlens.ops import describe

print(describe())
