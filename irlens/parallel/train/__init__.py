"""`irlens train`: the loop (loop.py) and what it uses: generated token data (data.py), checkpoints
(checkpoint.py), per-step metrics (metrics.py), the profile of where a step's time goes (profile.py)."""
