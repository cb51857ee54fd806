"""`irlens explain`: one kernel of one backend's run, in terms of the common view.

    kernel.py  what a kernel reads, writes, keeps inside and reduces, from the graph's dataflow
    text.py    what the command prints: the run's kernels, one explained, its generated source
    run.py     the cell's run in a worker, as a compare cell runs (irlens.worker.entry's `explain`)
"""
