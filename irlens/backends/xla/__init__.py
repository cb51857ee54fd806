"""The xla backend (backend.py) and its readers of XLA's records."""
