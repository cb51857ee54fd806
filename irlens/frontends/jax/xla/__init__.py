"""What the three adapters share: XLA's structured ops as forms (forms.py; gather and scatter:
gather.py), and the op record HLO's handlers register on (op.py: their registry and `convert`)."""
