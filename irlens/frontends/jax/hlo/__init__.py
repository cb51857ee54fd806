"""The adapters of XLA's two HLO forms: StableHLO (stablehlo.py) and optimized HLO (walk.py, its
instruction text parser text.py), sharing the opcode tables (names.py) and the handlers by family
(elementwise.py, shapes.py, structured.py; XLA's GPU library calls gpu_calls.py, the bodies XLA's
GPU passes rewrite gpu_bodies.py)."""
