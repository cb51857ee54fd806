"""The Thunder frontend (frontend.py) and its adapter of Thunder's traces to the common view."""
