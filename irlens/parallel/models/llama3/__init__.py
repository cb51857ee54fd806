"""llama3 for the parallel path: the decoder, its config and presets (model.py)."""
