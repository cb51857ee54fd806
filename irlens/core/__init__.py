"""The common view and what it needs: the IR (ir.py), the op vocabulary (ops/), its float64 interpreter,
the composite -> primitive pass, the work a graph costs (cost) and the hardware's ceilings it is held
to (ceilings), dtypes, the float32 precision policy (precision), registries and typed JSON values
(json_values). Imports no stack, no runtime and no orchestration (tests/architecture/test_imports.py)."""
