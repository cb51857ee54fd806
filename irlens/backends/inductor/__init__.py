"""The inductor backend (backend.py) and its readers of Inductor's records."""
