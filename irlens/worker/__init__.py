"""What a worker process (irlens.runtime) does with a spec: entry.py's `run_spec`, its one entry
point, reached by name (`irlens.matrix.spec.ENTRY`). It stands above everything a worker is asked
to run (the matrix, the bench, repro, explain), so none of them imports it."""
