"""The Dynamo frontend (frontend.py) and its adapter of FX and ATen graphs to the common view."""
