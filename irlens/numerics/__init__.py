"""Judging results: each against the float64 reference and eager's own error, with dtype-aware
tolerances (verdicts: the matrix's, the conformance sweep's and the reproducers' check), and GraphNet's
tolerance ladder against eager (tolerance_ladder: the check its S(t) and ES(t) scores count with).
The float32 precision policy a run computes under is irlens.core.precision (the backends apply it)."""
