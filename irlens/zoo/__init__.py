"""`irlens zoo`'s runs: the zoo's models as a compare plan, sharded and merged (run), and reproducers
of its upstream failures (repro). The models themselves are irlens.workloads.zoo."""
