"""The jaxpr adapter: its walk (walk.py), its name tables (names.py), its handlers by family
(elementwise.py, shapes.py, structured.py) and their registry (eqn.py)."""
