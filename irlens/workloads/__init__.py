"""What runs: the Workload declaration (workload.py), references to a user's own (user_code.py), the built-in
workloads (builtin/: get_workload, resolve_workload), the zoo's real models (zoo/) and GraphNet's samples
(graphnet/)."""
