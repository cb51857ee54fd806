"""The common view and what it needs: the IR (ir.py), the op vocabulary (ops/), its float64 interpreter,
the composite -> primitive pass, the work a graph costs, dtypes and registries. Imports no stack and
no runtime (tests/architecture/test_imports.py)."""
